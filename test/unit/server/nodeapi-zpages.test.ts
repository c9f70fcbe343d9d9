/**
 * /statusz and /flagz as the kubelet writes them (k8s.io/apiserver statusz and flagz, v0.37.2). The expected
 * bodies and headers are what those handlers answered, run from the module cache with the same data. Then
 * the three pages through a NodeApiServer: per node by the dialled address, and authorized as the kubelet does.
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import type http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { KUBELET_VERSION } from '../../../src/node/nodestatus.js';
import type { Runtime } from '../../../src/runtime/types.js';
import { WebhookAuth, type AuthApi } from '../../../src/server/nodeapi/auth.js';
import type { NodeKubeletSettings } from '../../../src/server/nodeapi/configz.js';
import { parseAccept, type NegotiationRequest } from '../../../src/server/nodeapi/negotiate.js';
import { NodeApiRegistry, type NodeApiTarget } from '../../../src/server/nodeapi/registry.js';
import { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import { RealClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';
import { nodeServingCert } from '../../support/nodeapi.js';
import {
  aggregatePaths,
  flagzAnswer,
  kubeletVersionInfo,
  statuszAnswer,
  statuszText,
  unixDate,
  type StatuszData,
} from '../../../src/server/nodeapi/zpages.js';

const WARNING =
  'Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.';
const START = Date.UTC(2026, 11, 6, 16, 6, 44, 700);
const DATA: StatuszData = {
  startTime: START,
  now: START,
  goVersion: 'go1.26.8',
  binaryVersion: '1.37.2',
  emulationVersion: '1.37',
  paths: ['/configz', '/healthz', '/metrics', '/pods', '/stats'],
};
const FLAGS = { 'node-ip': '10.0.0.1', v: '2', 'cluster-dns': '[10.96.0.10]' };

const req = (accept?: string, more: Partial<NegotiationRequest> = {}): NegotiationRequest => ({
  ...(accept === undefined ? {} : { accept }),
  query: new URLSearchParams(more.rawQuery ?? ''),
  rawQuery: '',
  ...more,
});

const STATUSZ_JSON =
  '{"kind":"Statusz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"kubelet"},"startTime":"2026-12-06T16:06:44Z","uptimeSeconds":0,"goVersion":"go1.26.8","binaryVersion":"1.37.2","emulationVersion":"1.37","paths":["/configz","/healthz","/metrics","/pods","/stats"]}\n';
const STATUSZ_YAML =
  'apiVersion: config.k8s.io/v1beta1\nbinaryVersion: 1.37.2\nemulationVersion: "1.37"\ngoVersion: go1.26.8\nkind: Statusz\nmetadata:\n  name: kubelet\npaths:\n- /configz\n- /healthz\n- /metrics\n- /pods\n- /stats\nstartTime: "2026-12-06T16:06:44Z"\nuptimeSeconds: 0\n';
const STATUS_406 = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'only the following media types are accepted: application/json, application/yaml, text/plain',
  reason: 'NotAcceptable',
  code: 406,
};
const STATUS_406_INDENTED = JSON.stringify(STATUS_406, null, 2);
const STATUS_406_COMPACT = `${JSON.stringify(STATUS_406)}\n`;
const STATUS_406_YAML =
  "apiVersion: v1\ncode: 406\nkind: Status\nmessage: 'only the following media types are accepted: application/json, application/yaml,\n  text/plain'\nmetadata: {}\nreason: NotAcceptable\nstatus: Failure\n";

describe('node API: /statusz and /flagz', () => {
  it('statusz text: header, warning, then the fields with the drawn delimiter', () => {
    const body = (d: string): string =>
      `\nkubelet statusz\n${WARNING}\n\nStarted${d} Sun Dec  6 16:06:44 UTC 2026\nUp${d} 0 hr 00 min 00 sec\nGo version${d} go1.26.8\nBinary version${d} 1.37.2\nEmulation version${d} 1.37\nPaths${d} /configz /healthz /metrics /pods /stats\n`;
    for (const d of [':', ': ', '=', ' ']) expect(statuszText(DATA, d)).to.equal(body(d));
    // No emulation version: its line stays, empty. Uptime counts from the start's whole second.
    const later = { ...DATA, emulationVersion: '', now: START + 3_723_400 };
    expect(statuszText(later, ':')).to.contain('\nUp: 1 hr 02 min 04 sec\n');
    expect(statuszText(later, ':')).to.contain('Binary version: 1.37.2\n\nPaths: ');
  });

  it('statusz answers text, JSON and YAML by Accept, as the apiserver library negotiates them', () => {
    const text = statuszText(DATA, ':');
    const cases: [accept: string | undefined, type: string, body: string][] = [
      [undefined, 'text/plain; charset=utf-8', text],
      ['  ', 'text/plain; charset=utf-8', text],
      ['text/plain', 'text/plain; charset=utf-8', text],
      ['*/*', 'text/plain; charset=utf-8', text],
      ['text/*', 'text/plain; charset=utf-8', text],
      ['application/json, text/plain', 'text/plain; charset=utf-8', text],
      ['text/plain;q=0', 'text/plain; charset=utf-8', text],
      ['application/json;v=foo;g=config.k8s.io;as=Statusz,*/*', 'text/plain; charset=utf-8', text],
      [
        'application/json;as=Statusz;g=config.k8s.io;v=v1beta1',
        'application/json;g=config.k8s.io;v=v1beta1;as=Statusz',
        STATUSZ_JSON,
      ],
      [
        '*/*;as=Statusz;g=config.k8s.io;v=v1beta1',
        'application/json;g=config.k8s.io;v=v1beta1;as=Statusz',
        STATUSZ_JSON,
      ],
      [
        'application/*;as=Statusz;g=config.k8s.io;v=v1beta1',
        'application/json;g=config.k8s.io;v=v1beta1;as=Statusz',
        STATUSZ_JSON,
      ],
      [
        'application/yaml;as=Statusz;g=config.k8s.io;v=v1beta1',
        'application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz',
        STATUSZ_YAML,
      ],
      [
        'application/json;q=0.5, application/yaml;as=Statusz;g=config.k8s.io;v=v1beta1;q=0.9',
        'application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz',
        STATUSZ_YAML,
      ],
      [
        'application/json;as=Statusz;g=config.k8s.io;v=v1beta1;q=0.5, application/yaml;as=Statusz;g=config.k8s.io;v=v1beta1',
        'application/yaml;g=config.k8s.io;v=v1beta1;as=Statusz',
        STATUSZ_YAML,
      ],
    ];
    for (const [accept, type, body] of cases) {
      const a = statuszAnswer(req(accept), DATA, ':');
      expect(a, String(accept)).to.deep.equal({ status: 200, headers: { 'Content-Type': type }, body });
    }
  });

  it('v1alpha1 is served with a deprecation warning', () => {
    const a = statuszAnswer(req('application/json;as=Statusz;g=config.k8s.io;v=v1alpha1'), DATA, ':');
    expect(a.headers).to.deep.equal({
      'Content-Type': 'application/json;g=config.k8s.io;v=v1alpha1;as=Statusz',
      Warning: '299 - "This version of the statusz endpoint is deprecated. Please use a newer version."',
    });
    expect(a.body).to.equal(STATUSZ_JSON.replace('v1beta1', 'v1alpha1'));
  });

  it('pretty JSON for ?pretty=true, a pretty=1 parameter, and curl, wget or a browser', () => {
    const pretty = JSON.stringify(JSON.parse(STATUSZ_JSON), null, 2);
    const accept = 'application/json;as=Statusz;g=config.k8s.io;v=v1beta1';
    expect(statuszAnswer(req(accept, { rawQuery: 'pretty=true' }), DATA, ':').body).to.equal(pretty);
    expect(statuszAnswer(req(`${accept};pretty=1`), DATA, ':').body).to.equal(pretty);
    for (const ua of ['curl/8.5.0', 'Wget/1.21', 'Mozilla/5.0 (X11)'])
      expect(statuszAnswer(req(accept, { userAgent: ua }), DATA, ':').body, ua).to.equal(pretty);
    expect(
      statuszAnswer(req(accept, { rawQuery: 'pretty=false', userAgent: 'curl/8' }), DATA, ':').body,
    ).to.equal(STATUSZ_JSON);
    expect(statuszAnswer(req(accept, { userAgent: 'kubectl/v1.37.2' }), DATA, ':').body).to.equal(
      STATUSZ_JSON,
    );
  });

  it('406 with a Status in what the Accept still allows, else indented JSON', () => {
    const cases: [accept: string, type: string, body: string][] = [
      ['application/json', 'application/json', STATUS_406_COMPACT],
      ['*/*;stream=watch', 'application/json', STATUS_406_COMPACT],
      ['application/yaml', 'application/yaml', STATUS_406_YAML],
      ['application/xml', 'application/json', STATUS_406_INDENTED],
      ['text/html', 'application/json', STATUS_406_INDENTED],
      ['application/json;v=v1beta1;g=config.k8s.io', 'application/json', STATUS_406_INDENTED],
      ['application/json;as=Statusz;g=config.k8s.io;v=v2', 'application/json', STATUS_406_INDENTED],
      ['application/json;as=Flagz;g=config.k8s.io;v=v1beta1', 'application/json', STATUS_406_INDENTED],
      ['text/plain;as=Statusz;g=config.k8s.io;v=v1beta1', 'application/json', STATUS_406_INDENTED],
      ['application/cbor;as=Statusz;g=config.k8s.io;v=v1beta1', 'application/json', STATUS_406_INDENTED],
      [
        'application/json;as=Statusz;g=config.k8s.io;v=v1beta1;stream=watch',
        'application/json',
        STATUS_406_INDENTED,
      ],
      ['application/json;sv=v1', 'application/json', STATUS_406_INDENTED],
    ];
    for (const [accept, type, body] of cases) {
      const a = statuszAnswer(req(accept), DATA, ':');
      expect(a, accept).to.deep.equal({ status: 406, headers: { 'Content-Type': type }, body });
    }
    // A pretty-printing client gets the Status indented too.
    expect(statuszAnswer(req('application/json', { userAgent: 'curl/8' }), DATA, ':').body).to.equal(
      STATUS_406_INDENTED,
    );
  });

  it('flagz: sorted name<separator>value lines; Flagz JSON and YAML; 406 for another kind', () => {
    expect(flagzAnswer(req(), FLAGS, ':')).to.deep.equal({
      status: 200,
      headers: { 'Content-Type': 'text/plain; charset=utf-8' },
      body: `\nkubelet flagz\n${WARNING}\ncluster-dns:[10.96.0.10]\nnode-ip:10.0.0.1\nv:2\n`,
    });
    expect(flagzAnswer(req('text/plain'), FLAGS, '=').body).to.contain('\nnode-ip=10.0.0.1\n');
    expect(flagzAnswer(req('application/json;as=Flagz;g=config.k8s.io;v=v1beta1'), FLAGS, ':')).to.deep.equal(
      {
        status: 200,
        headers: { 'Content-Type': 'application/json;g=config.k8s.io;v=v1beta1;as=Flagz' },
        body: '{"kind":"Flagz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"kubelet"},"flags":{"cluster-dns":"[10.96.0.10]","node-ip":"10.0.0.1","v":"2"}}\n',
      },
    );
    expect(
      flagzAnswer(req('application/yaml;as=Flagz;g=config.k8s.io;v=v1alpha1'), FLAGS, ':'),
    ).to.deep.equal({
      status: 200,
      headers: {
        'Content-Type': 'application/yaml;g=config.k8s.io;v=v1alpha1;as=Flagz',
        Warning: '299 - "This version of the flagz endpoint is deprecated. Please use a newer version."',
      },
      body: 'apiVersion: config.k8s.io/v1alpha1\nflags:\n  cluster-dns: \'[10.96.0.10]\'\n  node-ip: 10.0.0.1\n  v: "2"\nkind: Flagz\nmetadata:\n  name: kubelet\n',
    });
    const wrongKind = flagzAnswer(req('application/json;as=Statusz;g=config.k8s.io;v=v1beta1'), FLAGS, ':');
    expect(wrongKind).to.deep.equal({
      status: 406,
      headers: { 'Content-Type': 'application/json' },
      body: STATUS_406_INDENTED,
    });
    // No flags: the structured form leaves `flags` out (omitempty).
    expect(flagzAnswer(req('application/json;as=Flagz;g=config.k8s.io;v=v1beta1'), {}, ':').body).to.equal(
      '{"kind":"Flagz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"kubelet"}}\n',
    );
  });

  it('parses Accept as goautoneg: by quality, concrete before wildcard, malformed clauses dropped', () => {
    const order = (h: string): string[] => parseAccept(h).map((c) => `${c.type}/${c.subType};q=${c.q}`);
    expect(order('*/*, text/plain;q=0.5, application/json')).to.deep.equal([
      // goautoneg's Less is no strict order: Go's insertion sort leaves the wildcard last.
      'application/json;q=1',
      'text/plain;q=0.5',
      '*/*;q=1',
    ]);
    expect(order('text, */*;q=x, a/b/c, application/*')).to.deep.equal(['application/*;q=1', '*/*;q=0']);
    expect(order('*')).to.deep.equal(['*/*;q=1']);
    expect([
      ...parseAccept('application/json; as=Statusz ;g=config.k8s.io;v=;x=a=b')[0]!.params,
    ]).to.deep.equal([
      ['as', 'Statusz'],
      ['g', 'config.k8s.io'],
    ]);
  });

  it('lists paths by first segment; versions as the kubelet derives them; the start in Go UnixDate', () => {
    expect(
      aggregatePaths(['/metrics/resource', '/healthz', '/configz', '/metrics', '/api/v1', '/', '']),
    ).to.deep.equal(['/configz', '/healthz', '/metrics']);
    expect(kubeletVersionInfo('v1.37.2-kubelet-operator-0.1.0')).to.deep.equal({
      binaryVersion: '1.37.2-kubelet-operator-0.1.0',
      emulationVersion: '1.37',
    });
    expect(unixDate(Date.UTC(2026, 0, 15, 3, 4, 5))).to.equal('Thu Jan 15 03:04:05 UTC 2026');
  });
});

describe('NodeApiServer: /configz, /flagz and /statusz per node', function () {
  this.timeout(30_000);
  let dir: string;
  let server: NodeApiServer;
  let port: number;
  let cert: Buffer;
  /** The subresources the fake SubjectAccessReview allows, and those it was asked about. */
  let allowed = new Set<string>(['configz', 'statusz', 'proxy']);
  const asked: string[] = [];
  const authApi: AuthApi = {
    request: <T>(r: { path: string; body: unknown }): Promise<T> => {
      if (r.path.endsWith('tokenreviews')) {
        // The token is the user: each phase of a test asks as someone new, past the decision cache.
        const token = (r.body as { spec: { token: string } }).spec.token;
        return Promise.resolve({ status: { authenticated: true, user: { username: token } } } as T);
      }
      const sub = (r.body as { spec: { resourceAttributes: { subresource: string } } }).spec
        .resourceAttributes.subresource;
      asked.push(sub);
      return Promise.resolve({ status: { allowed: allowed.has(sub) } } as T);
    },
  };
  const settingsOf = (nodeName: string, nodeIP: string): NodeKubeletSettings => ({
    nodeName,
    nodeIP,
    clusterDNS: ['10.96.0.10'],
    clusterDomain: 'cluster.local',
    cpuCFSQuotaPeriodMs: 100,
    resolvConf: '',
    maxPods: 110,
    syncFrequencyMs: 60_000,
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    allowedUnsafeSysctls: [],
    labels: {},
    taints: [],
  });

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-zpages-'));
    const tls = await nodeServingCert(dir, ['127.0.0.1', '127.0.0.2', '127.0.0.3']);
    cert = tls.cert;
    const registry = new NodeApiRegistry();
    const runtime = {} as Runtime;
    const target = (nodeName: string, internalIP: string): NodeApiTarget => ({
      nodeName,
      internalIP,
      runtime,
      pods: () => [],
      pod: () => undefined,
    });
    registry.register({
      ...target('n1', '127.0.0.1'),
      kubeletSettings: () => settingsOf('n1', '127.0.0.1'),
      startTime: START,
    });
    registry.register({ ...target('n2', '127.0.0.2'), kubeletSettings: () => settingsOf('n2', '127.0.0.2') });
    registry.register(target('bare', '127.0.0.3'));
    server = new NodeApiServer({
      lookup: registry,
      auth: new WebhookAuth(authApi, new RealClock()),
      tls,
      clock: new RealClock(),
      logger: silentLogger,
      settings: {
        address: '127.0.0.1',
        port: 10250,
        clientCAFile: '',
        operatorFlags: { 'log-level': 'info' },
      },
    });
    port = await server.listen(0, '127.0.0.1');
    for (const host of ['127.0.0.2', '127.0.0.3']) {
      const extra = net.createServer();
      await new Promise<void>((resolve) => extra.listen(port, host, resolve));
      server.adopt(extra);
    }
  });

  after(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const get = (
    host: string,
    p: string,
    headers: Record<string, string> = {},
    user = 'u',
  ): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> =>
    new Promise((resolve, reject) => {
      https
        .get(
          { host, port, path: p, ca: cert, headers: { Authorization: `Bearer ${user}`, ...headers } },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (d: string) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
          },
        )
        .on('error', reject);
    });

  it('answers for the node whose address was dialled', async () => {
    const c1 = await get('127.0.0.1', '/configz');
    expect(c1.status).to.equal(200);
    expect(c1.headers['content-type']).to.equal('application/json');
    expect(c1.headers['x-content-type-options']).to.equal('nosniff');
    const cfg = (JSON.parse(c1.body) as { kubeletconfig: Record<string, unknown> }).kubeletconfig;
    expect(cfg).to.include({
      kind: 'KubeletConfiguration',
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      port: 10250,
    });
    const f2 = await get('127.0.0.2', '/flagz', {
      Accept: 'application/json;as=Flagz;g=config.k8s.io;v=v1beta1',
    });
    const flags = (JSON.parse(f2.body) as { flags: Record<string, string> }).flags;
    expect(flags).to.include({ 'hostname-override': 'n2', 'node-ip': '127.0.0.2', 'log-level': 'info' });
    const s1 = await get('127.0.0.1', '/statusz', {
      Accept: 'application/json;as=Statusz;g=config.k8s.io;v=v1beta1',
    });
    const st = JSON.parse(s1.body) as Record<string, unknown>;
    expect(st).to.include({
      kind: 'Statusz',
      startTime: '2026-12-06T16:06:44Z',
      goVersion: '',
      binaryVersion: KUBELET_VERSION.slice(1),
      emulationVersion: '1.37',
    });
    expect(st.paths).to.deep.equal(['/configz', '/flagz', '/healthz']);
    const text = await get('127.0.0.2', '/statusz');
    expect(text.headers['content-type']).to.equal('text/plain; charset=utf-8');
    expect(text.body).to.match(
      /^\nkubelet statusz\nWarning: .*\n\nStarted(:|: |=| ) \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}\n/,
    );
    // A node that reports no settings has no /configz or /flagz, and does not list them.
    expect((await get('127.0.0.3', '/configz')).status).to.equal(404);
    expect((await get('127.0.0.3', '/flagz')).status).to.equal(404);
    expect((await get('127.0.0.3', '/statusz')).body).to.match(/\nPaths(:|: |=| ) \/healthz\n$/);
    expect((await get('127.0.0.1', '/statusz', { Accept: 'application/json' })).status).to.equal(406);
  });

  it('authorizes /statusz as nodes/statusz only, /flagz as nodes/configz only, /configz then proxy', async () => {
    allowed = new Set(['statusz']);
    asked.length = 0;
    expect((await get('127.0.0.2', '/statusz', {}, 'statusz-only')).status).to.equal(200);
    const configz = await get('127.0.0.2', '/configz', {}, 'statusz-only');
    expect(configz.status).to.equal(403);
    expect(configz.body).to.equal(
      'Forbidden (user=statusz-only, verb=get, resource=nodes, subresource(s)=[configz proxy])\n',
    );
    const flagz = await get('127.0.0.2', '/flagz', {}, 'statusz-only');
    expect(flagz.status).to.equal(403);
    expect(flagz.body).to.contain('subresource(s)=[configz])');
    expect(asked).to.deep.equal(['statusz', 'configz', 'proxy']); // /flagz's configz was cached as denied
    // nodes/proxy opens /configz but neither /statusz nor /flagz.
    allowed = new Set(['proxy']);
    expect((await get('127.0.0.1', '/statusz', {}, 'proxy-only')).status).to.equal(403);
    expect((await get('127.0.0.1', '/flagz', {}, 'proxy-only')).status).to.equal(403);
    expect((await get('127.0.0.1', '/configz', {}, 'proxy-only')).status).to.equal(200);
  });
});
