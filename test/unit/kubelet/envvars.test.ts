import { expect } from 'chai';
import type { Container, Pod } from '../../../src/api/core.js';
import {
  envFileKey,
  envFileRefs,
  envSourceRefs,
  expand,
  expandContainerCommandAndArgs,
  makeEnvironmentVariables,
  type EnvContext,
  type EnvFileRead,
  type EnvSources,
} from '../../../src/kubelet/envvars.js';

import { kindThrown } from '../../support/throws.js';

const ctx: EnvContext = {
  podIP: '10.88.0.5',
  podIPs: ['10.88.0.5', 'fd00::5'],
  hostIP: '192.168.1.10',
  hostIPs: ['192.168.1.10', 'fd00::10'],
  nodeName: 'node-a',
  serviceAccountName: 'builder',
};

function pod(container: Container): Pod {
  return {
    metadata: {
      name: 'web',
      namespace: 'prod',
      uid: 'uid-1',
      labels: { app: 'web', tier: 'front' },
      annotations: { note: 'a "quoted" value' },
    },
    spec: { nodeName: 'node-a', serviceAccountName: 'builder', containers: [container] },
  };
}

function sources(
  configMaps: Record<string, Record<string, string>> = {},
  secrets: Record<string, Record<string, string>> = {},
): EnvSources {
  return { configMaps: new Map(Object.entries(configMaps)), secrets: new Map(Object.entries(secrets)) };
}

function env(container: Container, src: EnvSources = sources(), c: EnvContext = ctx): Record<string, string> {
  const r = makeEnvironmentVariables(pod(container), container, src, c);
  return Object.fromEntries(r.env.map((e) => [e.name, e.value]));
}

const thrown = kindThrown;

describe('envvars: $(VAR) expansion', () => {
  const map = (m: Record<string, string>) => (name: string) => m[name];

  it('expands known references and keeps unknown ones as written', () => {
    expect(expand('$(A)-$(B)', map({ A: 'x' }))).to.equal('x-$(B)');
  });

  it('treats $$ as an escaped $ and keeps a lone or unclosed $', () => {
    expect(expand('$$(A)', map({ A: 'x' }))).to.equal('$(A)');
    expect(expand('cost: $5 and $', map({}))).to.equal('cost: $5 and $');
    expect(expand('$(A', map({ A: 'x' }))).to.equal('$(A');
    expect(expand('a$$b', map({}))).to.equal('a$b');
  });

  it('expands command and args against the final environment', () => {
    const out = expandContainerCommandAndArgs(
      { command: ['echo', '$(GREETING)'], args: ['$(WHO)', '$(MISSING)'] },
      [
        { name: 'GREETING', value: 'hello' },
        { name: 'WHO', value: 'world' },
      ],
    );
    expect(out).to.deep.equal({ command: ['echo', 'hello'], args: ['world', '$(MISSING)'] });
    expect(expandContainerCommandAndArgs({}, [])).to.deep.equal({});
  });
});

describe('envvars: makeEnvironmentVariables', () => {
  it('resolves literals in order, expanding references to earlier variables only', () => {
    const c: Container = {
      name: 'app',
      env: [
        { name: 'A', value: 'a' },
        { name: 'B', value: '$(A)-b-$(C)' },
        { name: 'C', value: 'c' },
      ],
    };
    expect(env(c)).to.deep.equal({ A: 'a', B: 'a-b-$(C)', C: 'c' });
  });

  it('takes envFrom first, with prefixes, and lets env override it (position kept)', () => {
    const c: Container = {
      name: 'app',
      envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'S_', secretRef: { name: 'sec' } }],
      env: [{ name: 'MODE', value: 'override-$(S_TOKEN)' }],
    };
    const r = makeEnvironmentVariables(
      pod(c),
      c,
      sources({ cfg: { MODE: 'prod', LEVEL: '3' } }, { sec: { TOKEN: 't0k' } }),
      ctx,
    );
    expect(r.env).to.deep.equal([
      { name: 'MODE', value: 'override-t0k' },
      { name: 'LEVEL', value: '3' },
      { name: 'S_TOKEN', value: 't0k' },
    ]);
    expect(r.skipped).to.deep.equal([]);
  });

  it('skips unusable envFrom keys and reports them (relaxed by default, strict on request)', () => {
    const c: Container = { name: 'app', envFrom: [{ configMapRef: { name: 'cfg' } }] };
    const data = { GOOD: '1', 'has=equals': '2', '1starts-with-digit': '3' };
    const relaxed = makeEnvironmentVariables(pod(c), c, sources({ cfg: data }), ctx);
    expect(relaxed.env.map((e) => e.name)).to.deep.equal(['GOOD', '1starts-with-digit']);
    expect(relaxed.skipped).to.deep.equal([{ kind: 'ConfigMap', name: 'cfg', keys: ['has=equals'] }]);
    const strict = makeEnvironmentVariables(pod(c), c, sources({ cfg: data }), {
      ...ctx,
      envVarNames: 'strict',
    });
    expect(strict.env.map((e) => e.name)).to.deep.equal(['GOOD']);
    expect(strict.skipped[0]?.keys).to.deep.equal(['1starts-with-digit', 'has=equals']);
  });

  it('ignores missing optional sources and keys', () => {
    const c: Container = {
      name: 'app',
      envFrom: [{ configMapRef: { name: 'absent', optional: true } }],
      env: [
        { name: 'X', valueFrom: { configMapKeyRef: { name: 'absent', key: 'k', optional: true } } },
        { name: 'Y', valueFrom: { secretKeyRef: { name: 'sec', key: 'nope', optional: true } } },
        { name: 'Z', value: 'z' },
      ],
    };
    expect(env(c, sources({}, { sec: {} }))).to.deep.equal({ Z: 'z' });
  });

  it('fails with the kubelet messages on missing objects and keys', () => {
    const cm = (name: string, key: string): Container => ({
      name: 'app',
      env: [{ name: 'V', valueFrom: { configMapKeyRef: { name, key } } }],
    });
    const sk = (name: string, key: string): Container => ({
      name: 'app',
      env: [{ name: 'V', valueFrom: { secretKeyRef: { name, key } } }],
    });
    let e = thrown(() => env(cm('x', 'k')));
    expect(e.kind).to.equal('NotFound');
    expect(e.message).to.equal('configmap "x" not found');
    e = thrown(() => env(sk('s', 'k')));
    expect(e.message).to.equal('secret "s" not found');
    e = thrown(() => env(cm('x', 'k'), sources({ x: {} })));
    expect(e.message).to.equal("couldn't find key k in ConfigMap prod/x");
    e = thrown(() => env(sk('s', 'k'), sources({}, { s: {} })));
    expect(e.message).to.equal("couldn't find key k in Secret prod/s");
    e = thrown(() => env({ name: 'app', envFrom: [{ secretRef: { name: 'gone' } }] }));
    expect(e.message).to.equal('secret "gone" not found');
  });

  it('resolves the downward API field references', () => {
    const ref = (fieldPath: string) => ({ valueFrom: { fieldRef: { fieldPath } } });
    const c: Container = {
      name: 'app',
      env: [
        { name: 'NAME', ...ref('metadata.name') },
        { name: 'NS', ...ref('metadata.namespace') },
        { name: 'UID', ...ref('metadata.uid') },
        { name: 'APP', ...ref("metadata.labels['app']") },
        { name: 'NONE', ...ref("metadata.labels['none']") },
        { name: 'NOTE', ...ref("metadata.annotations['note']") },
        { name: 'LABELS', ...ref('metadata.labels') },
        { name: 'NODE', ...ref('spec.nodeName') },
        { name: 'SA', ...ref('spec.serviceAccountName') },
        { name: 'HOST_IP', ...ref('status.hostIP') },
        { name: 'HOST_IPS', ...ref('status.hostIPs') },
        { name: 'POD_IP', ...ref('status.podIP') },
        { name: 'POD_IPS', ...ref('status.podIPs') },
      ],
    };
    expect(env(c)).to.deep.equal({
      NAME: 'web',
      NS: 'prod',
      UID: 'uid-1',
      APP: 'web',
      NONE: '',
      NOTE: 'a "quoted" value',
      LABELS: 'app="web"\ntier="front"',
      NODE: 'node-a',
      SA: 'builder',
      HOST_IP: '192.168.1.10',
      HOST_IPS: '192.168.1.10,fd00::10',
      POD_IP: '10.88.0.5',
      POD_IPS: '10.88.0.5,fd00::5',
    });
  });

  it('formats whole label and annotation maps as the volume does (Go %q, UTF-8 key order)', () => {
    const p = pod({
      name: 'app',
      env: [{ name: 'ALL', valueFrom: { fieldRef: { fieldPath: 'metadata.annotations' } } }],
    });
    p.metadata.annotations = { '😀': 'x', '～': 'bell\u0007 del\u007f é\u200b', a: 'tab\t' };
    const r = makeEnvironmentVariables(p, p.spec.containers[0]!, sources(), ctx);
    // JSON.stringify would write \u0007 and keep U+007F and U+200B raw, and sort the astral key first.
    expect(r.env.find((e) => e.name === 'ALL')?.value).to.equal(
      'a="tab\\t"\n～="bell\\a del\\x7f é\\u200b"\n😀="x"',
    );
  });

  it('rejects unsupported field paths and versions', () => {
    const c = (fieldPath: string, apiVersion?: string): Container => ({
      name: 'app',
      env: [{ name: 'V', valueFrom: { fieldRef: { fieldPath, ...(apiVersion ? { apiVersion } : {}) } } }],
    });
    expect(thrown(() => env(c('spec.hostname'))).message).to.equal(
      'field label not supported: spec.hostname',
    );
    expect(thrown(() => env(c('status.phase'))).message).to.equal('unsupported fieldPath: status.phase');
    expect(thrown(() => env(c('metadata.name', 'v2'))).message).to.equal('unsupported pod version: v2');
  });

  it('resolves resource references with divisors, rounding up, and node allocatable for unset limits', () => {
    const c: Container = {
      name: 'app',
      resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '1500m' } },
      env: [
        { name: 'CPU_REQ', valueFrom: { resourceFieldRef: { resource: 'requests.cpu' } } },
        { name: 'CPU_REQ_M', valueFrom: { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } } },
        { name: 'CPU_LIM', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
        {
          name: 'MEM_REQ_MI',
          valueFrom: { resourceFieldRef: { resource: 'requests.memory', divisor: '1Mi' } },
        },
        { name: 'MEM_LIM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Gi' } } },
      ],
    };
    expect(env(c, sources(), { ...ctx, nodeAllocatable: { cpu: '4', memory: '8Gi' } })).to.deep.equal({
      CPU_REQ: '1',
      CPU_REQ_M: '250',
      CPU_LIM: '2',
      MEM_REQ_MI: '64',
      MEM_LIM: '8',
    });
    const bad: Container = {
      name: 'app',
      env: [{ name: 'V', valueFrom: { resourceFieldRef: { resource: 'limits.gpu' } } }],
    };
    expect(thrown(() => env(bad)).message).to.equal('unsupported container resource : limits.gpu');
  });

  it('falls back to pod-level limits before node allocatable (PodLevelResources); requests do not', () => {
    const c: Container = {
      name: 'app',
      resources: { limits: { memory: '128Mi' } },
      env: [
        { name: 'CPU_LIM_M', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
        {
          name: 'MEM_LIM_MI',
          valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } },
        },
        { name: 'MEM_REQ', valueFrom: { resourceFieldRef: { resource: 'requests.memory' } } },
      ],
    };
    const p = pod(c);
    p.spec.resources = { requests: { memory: '256Mi' }, limits: { cpu: '500m', memory: '256Mi' } };
    const r = makeEnvironmentVariables(p, c, sources(), {
      ...ctx,
      nodeAllocatable: { cpu: '4', memory: '8Gi' },
    });
    expect(Object.fromEntries(r.env.map((e) => [e.name, e.value]))).to.deep.equal({
      CPU_LIM_M: '500', // the pod's, not the node's 4 cpus
      MEM_LIM_MI: '128', // the container's own
      MEM_REQ: '0', // requests never fall back
    });
  });

  it('adds service variables last, without overriding the container', () => {
    const c: Container = {
      name: 'app',
      env: [
        { name: 'KUBERNETES_SERVICE_HOST', value: 'mine' },
        { name: 'URL', value: 'http://$(SVC_HOST)' },
      ],
    };
    const r = env(c, sources(), {
      ...ctx,
      serviceEnv: { KUBERNETES_SERVICE_HOST: '10.0.0.1', SVC_HOST: 'svc' },
    });
    expect(r).to.deep.equal({ KUBERNETES_SERVICE_HOST: 'mine', URL: 'http://svc', SVC_HOST: 'svc' });
  });

  it('lists every reference to a config map or secret in the order the kubelet reads them', () => {
    expect(
      envSourceRefs({
        envFrom: [{ configMapRef: { name: 'a' } }, { secretRef: { name: 's', optional: true } }],
        env: [
          { name: 'L', value: 'literal' },
          { name: 'X', valueFrom: { configMapKeyRef: { name: 'a', key: 'k' } } },
          { name: 'Y', valueFrom: { configMapKeyRef: { name: 'b', key: 'k', optional: true } } },
          { name: 'Z', valueFrom: { secretKeyRef: { name: 't', key: 'k' } } },
        ],
      }),
    ).to.deep.equal([
      { kind: 'configMap', name: 'a', optional: false },
      { kind: 'secret', name: 's', optional: true },
      { kind: 'configMap', name: 'a', optional: false },
      { kind: 'configMap', name: 'b', optional: true },
      { kind: 'secret', name: 't', optional: false },
    ]);
  });
});

describe('envvars: fileKeyRef (EnvFiles)', () => {
  const HOST = '/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/config/config.env';
  const ref = (key: string, optional?: boolean, volumeName = 'config', path = 'config.env') => ({
    name: key,
    valueFrom: { fileKeyRef: { volumeName, path, key, ...(optional !== undefined && { optional }) } },
  });
  const withFile = (file: EnvFileRead | undefined): EnvSources => ({
    ...sources(),
    envFiles: new Map(file ? [[envFileKey('config', 'config.env'), file]] : []),
  });
  const read = (content: string): EnvFileRead => ({ kind: 'read', path: HOST, content });

  it('lists each file once, in order, and only for entries without a value', () => {
    const c: Container = {
      name: 'app',
      image: 'busybox',
      env: [
        ref('A'),
        ref('B'),
        { ...ref('C', false, 'other', 'x.env'), value: 'literal' },
        ref('D', true, 'other', 'y.env'),
      ],
    };
    expect(envFileRefs(c)).to.deep.equal([
      { volumeName: 'config', path: 'config.env' },
      { volumeName: 'other', path: 'y.env' },
    ]);
  });

  it('sets the variable from the file, without expanding it, in env order', () => {
    const c: Container = {
      name: 'app',
      image: 'busybox',
      env: [
        { name: 'FIRST', value: 'f' },
        ref('CONFIG_1'),
        ref('CONFIG_2'),
        { name: 'X', value: '$(CONFIG_1)!' },
      ],
    };
    const src = withFile(read("CONFIG_1='value1'\nCONFIG_2='$(FIRST)'\n"));
    expect(env(c, src)).to.deep.equal({ FIRST: 'f', CONFIG_1: 'value1', CONFIG_2: '$(FIRST)', X: 'value1!' });
  });

  const failures: [string, Container['env'], EnvFileRead | undefined, string][] = [
    [
      'no such volume',
      [ref('A', true)],
      undefined,
      'cannot find the volume "config" referenced by FileKeyRef',
    ],
    [
      'the file cannot be read, even when optional',
      [ref('A', true)],
      { kind: 'unreadable', path: HOST, error: 'ENOENT' },
      "couldn't parse env file",
    ],
    ['the file is malformed before the key', [ref('B')], read("A=x\nB='y'\n"), "couldn't parse env file"],
    [
      'the join fails',
      [ref('A')],
      { kind: 'badPath', error: 'SecureJoin /v/x: too many levels of symbolic links' },
      'SecureJoin /v/x: too many levels of symbolic links',
    ],
    [
      'the key is absent',
      [ref('A')],
      read("B='y'\n"),
      `environment variable key "A" not found in file "${HOST}"`,
    ],
    [
      'the key is empty',
      [ref('A', false)],
      read("A=''\n"),
      `environment variable key "A" not found in file "${HOST}"`,
    ],
  ];
  for (const [name, vars, file, message] of failures) {
    it(`fails when ${name}: ${message}`, () => {
      const c: Container = { name: 'app', image: 'busybox', env: vars ?? [] };
      expect(thrown(() => env(c, withFile(file))).message).to.equal(message);
    });
  }

  it('skips an optional key that is absent or empty, keeping an earlier definition', () => {
    const c: Container = {
      name: 'app',
      image: 'busybox',
      envFrom: [{ configMapRef: { name: 'cm' } }],
      env: [ref('A', true), ref('B', true), ref('C')],
    };
    const src = { ...withFile(read("B=''\nC='c'\n")), configMaps: new Map([['cm', { A: 'from-cm' }]]) };
    expect(env(c, src)).to.deep.equal({ A: 'from-cm', C: 'c' });
  });

  it('a malformed line after the key goes unnoticed', () => {
    const c: Container = { name: 'app', image: 'busybox', env: [ref('A')] };
    expect(env(c, withFile(read("A='a'\nbroken\n")))).to.deep.equal({ A: 'a' });
  });
});
