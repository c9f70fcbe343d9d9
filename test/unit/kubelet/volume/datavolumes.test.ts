import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import type { ServiceAccountTokenProjection, Volume } from '../../../../src/api/volumes.js';
import {
  simulatedServiceAccountToken,
  SimulatedTokenIssuer,
} from '../../../../src/kubelet/token/simulated.js';
import { setUpDataVolume } from '../../../../src/kubelet/volume/datavolumes.js';
import type { SetUpResult } from '../../../../src/kubelet/volume/plugin.js';
import { findPlugin } from '../../../../src/kubelet/volume/plugins.js';
import { setUpVolume } from '../../../../src/kubelet/volume/setup.js';
import {
  b64,
  ctxOf,
  dirs,
  harness,
  modeOf,
  NS,
  podWith,
  text,
  type Harness,
} from '../volumemanager/fixtures.js';

/** SetUp of `vol` for `pod` through the plugin dispatch, as the volume manager calls it. */
async function setUp(h: Harness, vol: Volume, pod: Pod = podWith([vol])): Promise<SetUpResult> {
  const match = findPlugin(vol);
  if (!match.ok) return expect.fail(match.message);
  return setUpVolume(ctxOf(h), { pod, volume: vol, kind: match.kind });
}

function failure(r: SetUpResult): string {
  if (r.ok) return expect.fail('expected a failure');
  expect(r.stage).to.equal('mount');
  return r.message;
}

/** name -> [content, mode] of the user-visible files of a volume directory (following its links). */
async function visible(h: Harness, dir: string, names: string[]): Promise<Record<string, [string, number]>> {
  const out: Record<string, [string, number]> = {};
  for (const n of names)
    out[n] = [await text(h.fs, `${dir}/${n}`), (await modeOf(h.fs, `${dir}/${n}`)) ?? -1];
  return out;
}

/** The user-visible entries (no `..` names). */
async function entries(h: Harness, dir: string): Promise<string[]> {
  return (await h.fs.readdir(dir)).filter((n) => !n.startsWith('..'));
}

const cmVolume = (over: Partial<NonNullable<Volume['configMap']>> = {}): Volume => ({
  name: 'config',
  configMap: { name: 'app-config', ...over },
});

const secretVolume = (over: Partial<NonNullable<Volume['secret']>> = {}): Volume => ({
  name: 'creds',
  secret: { secretName: 'db-creds', ...over },
});

describe('volumemanager/datavolumes', () => {
  describe('configMap', () => {
    it('projects every key with the default mode 0644, read-only, on the node disk', async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/app-config`, { data: { 'app.conf': 'level=debug\n', port: '8080' } });
      const r = await setUp(h, cmVolume());
      expect(r).to.deep.equal({
        ok: true,
        volume: { hostPath: dirs.configMap('config'), readOnly: true, selinuxRelabel: true },
      });
      expect(await entries(h, dirs.configMap('config'))).to.deep.equal(['app.conf', 'port']);
      expect(await visible(h, dirs.configMap('config'), ['app.conf', 'port'])).to.deep.equal({
        'app.conf': ['level=debug\n', 0o644],
        port: ['8080', 0o644],
      });
      expect((await h.fs.lstat(`${dirs.configMap('config')}/port`))?.kind).to.equal('symlink');
      expect(await h.fs.readlink(`${dirs.configMap('config')}/port`)).to.equal('..data/port');
      expect(h.mounter.mountCalls).to.deep.equal([]);
      expect(h.sources.calls).to.deep.equal([`configmaps/${NS}/app-config`]);
    });

    const modes: [string, Partial<NonNullable<Volume['configMap']>>, Record<string, [string, number]>][] = [
      ['defaultMode applies to every key', { defaultMode: 0o400 }, { a: ['1', 0o400], b: ['2', 0o400] }],
      [
        'items pick keys, with their own mode or the defaultMode',
        {
          defaultMode: 0o440,
          items: [
            { key: 'a', path: 'first', mode: 0o600 },
            { key: 'b', path: 'nested/second' },
          ],
        },
        { first: ['1', 0o600], 'nested/second': ['2', 0o440] },
      ],
      ['binaryData is decoded', { items: [{ key: 'bin', path: 'blob' }] }, { blob: ['\u0001binary', 0o644] }],
      [
        'an executable mode is kept exactly',
        { items: [{ key: 'a', path: 'run.sh', mode: 0o755 }] },
        { 'run.sh': ['1', 0o755] },
      ],
    ];
    for (const [what, src, want] of modes) {
      it(what, async () => {
        const h = harness({ umask: 0o077 });
        h.sources.configMaps.set(`${NS}/app-config`, {
          data: { a: '1', b: '2' },
          binaryData: { bin: b64('\u0001binary') },
        });
        expect((await setUp(h, cmVolume(src))).ok).to.equal(true);
        expect(await visible(h, dirs.configMap('config'), Object.keys(want))).to.deep.equal(want);
      });
    }

    const failures: [string, Partial<NonNullable<Volume['configMap']>>, string][] = [
      ['a missing ConfigMap', {}, 'configmap "app-config" not found'],
      ['a missing ConfigMap named elsewhere', { name: 'other' }, 'configmap "other" not found'],
    ];
    for (const [what, src, message] of failures) {
      it(`fails on ${what}: ${message}`, async () => {
        const h = harness();
        expect(failure(await setUp(h, cmVolume(src)))).to.equal(message);
      });
    }

    it('fails on a missing key: configmap references non-existent config key', async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/app-config`, { data: { a: '1' } });
      expect(failure(await setUp(h, cmVolume({ items: [{ key: 'nokey', path: 'x' }] })))).to.equal(
        'configmap references non-existent config key: nokey',
      );
    });

    it('fails on an API error with the fetch error', async () => {
      const h = harness();
      h.sources.failures.set(
        `configmaps/${NS}/app-config`,
        new Error('the server is currently unable to handle the request'),
      );
      expect(failure(await setUp(h, cmVolume()))).to.equal(
        'failed to get configmap "app-config": the server is currently unable to handle the request',
      );
    });

    it('an optional missing ConfigMap (or key) gives an empty volume', async () => {
      const h = harness();
      expect((await setUp(h, cmVolume({ optional: true }))).ok).to.equal(true);
      expect(await entries(h, dirs.configMap('config'))).to.deep.equal([]);
      h.sources.configMaps.set(`${NS}/app-config`, { data: { a: '1' } });
      const r = await setUp(
        h,
        cmVolume({
          optional: true,
          items: [
            { key: 'a', path: 'a' },
            { key: 'gone', path: 'g' },
          ],
        }),
      );
      expect(r.ok).to.equal(true);
      expect(await entries(h, dirs.configMap('config'))).to.deep.equal(['a']);
    });

    it('a failed SetUp leaves nothing half-written', async () => {
      const h = harness();
      await setUp(h, cmVolume());
      expect(await h.fs.lstat(`${dirs.configMap('config')}/..data`)).to.equal(undefined);
    });

    it('gives the fsGroup every file and directory: group read bits, setgid on directories', async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/app-config`, { data: { a: '1', b: '2' } });
      const pod = podWith([cmVolume()], { fsGroup: 3000 });
      const vol = cmVolume({
        items: [
          { key: 'a', path: 'a', mode: 0o600 },
          { key: 'b', path: 'sub/b', mode: 0o400 },
        ],
      });
      expect((await setUp(h, vol, pod)).ok).to.equal(true);
      const dir = dirs.configMap('config');
      const tsDir = `${dir}/${await h.fs.readlink(`${dir}/..data`)}`;
      const want: [string, number][] = [
        [dir, 0o2777],
        [tsDir, 0o2755],
        [`${tsDir}/sub`, 0o2755],
        [`${tsDir}/a`, 0o640],
        [`${tsDir}/sub/b`, 0o440],
      ];
      for (const [p, mode] of want) {
        const st = await h.fs.lstat(p);
        expect(st?.gid, p).to.equal(3000);
        expect(st?.mode, p).to.equal(mode);
      }
      // The links are made after the ownership walk (as upstream: setPerms runs before the ..data swap); a
      // symlink's group grants nothing anyway.
      for (const link of [`${dir}/..data`, `${dir}/a`, `${dir}/sub`]) {
        expect((await h.fs.lstat(link))?.kind, link).to.equal('symlink');
      }
    });

    it('a SetUp with unchanged data writes nothing; changed data is published atomically', async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/app-config`, { data: { a: '1' } });
      await setUp(h, cmVolume());
      const first = await h.fs.readlink(`${dirs.configMap('config')}/..data`);
      h.clock.advance(1000);
      await setUp(h, cmVolume());
      expect(await h.fs.readlink(`${dirs.configMap('config')}/..data`)).to.equal(first);
      h.sources.configMaps.set(`${NS}/app-config`, { data: { a: '2', b: 'new' } });
      h.clock.advance(1000);
      await setUp(h, cmVolume());
      expect(await h.fs.readlink(`${dirs.configMap('config')}/..data`)).to.not.equal(first);
      expect(await visible(h, dirs.configMap('config'), ['a', 'b'])).to.deep.equal({
        a: ['2', 0o644],
        b: ['new', 0o644],
      });
      // The old version is gone.
      expect(await h.fs.lstat(`${dirs.configMap('config')}/${first}`)).to.equal(undefined);
    });
  });

  describe('secret', () => {
    it('projects the decoded values on a tmpfs sized as a Memory emptyDir, read-only', async () => {
      const h = harness();
      h.sources.secrets.set(`${NS}/db-creds`, { data: { user: b64('admin'), password: b64('s3cr3t') } });
      const r = await setUp(h, secretVolume());
      expect(r).to.deep.equal({
        ok: true,
        volume: { hostPath: dirs.secret('creds'), readOnly: true, selinuxRelabel: true },
      });
      expect(await visible(h, dirs.secret('creds'), ['password', 'user'])).to.deep.equal({
        password: ['s3cr3t', 0o644],
        user: ['admin', 0o644],
      });
      // Sized as a Memory emptyDir: the node's allocatable memory (8Gi in the fixture), no pod limit set.
      expect(h.mounter.mountCalls).to.deep.equal([{ dir: dirs.secret('creds'), sizeBytes: 8 * 2 ** 30 }]);
      expect(await h.mounter.mountPoint(dirs.secret('creds'))).to.deep.equal({ fstype: 'tmpfs' });
      expect(await modeOf(h.fs, dirs.secret('creds'))).to.equal(0o777);
    });

    it('mounts its tmpfs once across SetUps', async () => {
      const h = harness();
      h.sources.secrets.set(`${NS}/db-creds`, { data: { user: b64('admin') } });
      await setUp(h, secretVolume());
      await setUp(h, secretVolume());
      expect(h.mounter.mountCalls).to.have.length(1);
    });

    const modes: [string, Partial<NonNullable<Volume['secret']>>, Record<string, [string, number]>][] = [
      ['defaultMode', { defaultMode: 0o400 }, { user: ['admin', 0o400], password: ['pw', 0o400] }],
      [
        'items with and without a mode',
        {
          defaultMode: 0o440,
          items: [
            { key: 'user', path: 'u', mode: 0o600 },
            { key: 'password', path: 'p/w' },
          ],
        },
        { u: ['admin', 0o600], 'p/w': ['pw', 0o440] },
      ],
    ];
    for (const [what, src, want] of modes) {
      it(`modes: ${what}`, async () => {
        const h = harness();
        h.sources.secrets.set(`${NS}/db-creds`, { data: { user: b64('admin'), password: b64('pw') } });
        expect((await setUp(h, secretVolume(src))).ok).to.equal(true);
        expect(await visible(h, dirs.secret('creds'), Object.keys(want))).to.deep.equal(want);
      });
    }

    const failures: [string, Partial<NonNullable<Volume['secret']>>, string][] = [
      ['a missing Secret', {}, 'secret "db-creds" not found'],
      [
        'a missing key',
        { items: [{ key: 'token', path: 't' }] },
        'references non-existent secret key: token',
      ],
    ];
    for (const [what, src, message] of failures) {
      it(`fails on ${what}: ${message}`, async () => {
        const h = harness();
        if (src.items) h.sources.secrets.set(`${NS}/db-creds`, { data: { user: b64('admin') } });
        expect(failure(await setUp(h, secretVolume(src)))).to.equal(message);
      });
    }

    it('fails on an API error with the fetch error', async () => {
      const h = harness();
      h.sources.failures.set(`secrets/${NS}/db-creds`, new Error('secrets "db-creds" is forbidden'));
      expect(failure(await setUp(h, secretVolume()))).to.equal(
        'failed to get secret "db-creds": secrets "db-creds" is forbidden',
      );
    });

    it('an optional missing Secret gives an empty volume', async () => {
      const h = harness();
      expect((await setUp(h, secretVolume({ optional: true }))).ok).to.equal(true);
      expect(await entries(h, dirs.secret('creds'))).to.deep.equal([]);
    });

    it('on a node that may not mount tmpfs, is a plain directory and says so in the log once', async () => {
      const h = harness({ tmpfsAllowed: false });
      h.sources.secrets.set(`${NS}/db-creds`, { data: { user: b64('admin') } });
      h.sources.secrets.set(`${NS}/other`, { data: { k: b64('v') } });
      expect((await setUp(h, secretVolume())).ok).to.equal(true);
      expect((await setUp(h, { name: 'second', secret: { secretName: 'other' } })).ok).to.equal(true);
      expect(h.mounter.mountCalls).to.deep.equal([]);
      expect(await text(h.fs, `${dirs.secret('creds')}/user`)).to.equal('admin');
      expect(h.warnings.map((w) => w.msg)).to.deep.equal([
        'tmpfs mounts are refused (no CAP_SYS_ADMIN?): secret and projected volumes are plain directories on this node',
      ]);
    });

    it('when a tmpfs mount is refused, falls back to a plain directory and stops trying', async () => {
      const h = harness();
      h.mounter.refuse = new Error('mount: permission denied');
      h.sources.secrets.set(`${NS}/db-creds`, { data: { user: b64('admin') } });
      expect((await setUp(h, secretVolume())).ok).to.equal(true);
      expect((await setUp(h, { name: 'again', secret: { secretName: 'db-creds' } })).ok).to.equal(true);
      expect(h.mounter.mountCalls).to.have.length(1);
      expect(h.deps.tmpfs.allowed).to.equal(false);
      expect(h.warnings).to.have.length(1);
      expect(await text(h.fs, `${dirs.secret('again')}/user`)).to.equal('admin');
    });
  });

  describe('downwardAPI', () => {
    it('projects pod metadata and resource limits (node allocatable when unset), on disk', async () => {
      const h = harness({ allocatable: { cpu: '4', memory: '8Gi' } });
      const vol: Volume = {
        name: 'info',
        downwardAPI: {
          items: [
            { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' }, mode: 0o600 },
            {
              path: 'mem',
              resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: '1Mi' },
            },
          ],
        },
      };
      const pod = podWith([vol], { labels: { app: 'web', tier: 'front' } });
      const r = await setUp(h, vol, pod);
      expect(r).to.deep.equal({
        ok: true,
        volume: { hostPath: dirs.downwardAPI('info'), readOnly: true, selinuxRelabel: true },
      });
      expect(await visible(h, dirs.downwardAPI('info'), ['name', 'labels', 'mem'])).to.deep.equal({
        name: ['web-0', 0o644],
        labels: ['app="web"\ntier="front"', 0o600],
        mem: ['8192', 0o644],
      });
      expect(h.mounter.mountCalls).to.deep.equal([]);
    });

    it('follows label changes at the next SetUp', async () => {
      const h = harness();
      const vol: Volume = {
        name: 'info',
        downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
      };
      await setUp(h, vol, podWith([vol], { labels: { v: '1' } }));
      h.clock.advance(1000);
      await setUp(h, vol, podWith([vol], { labels: { v: '2' } }));
      expect(await text(h.fs, `${dirs.downwardAPI('info')}/labels`)).to.equal('v="2"');
    });

    it('fails with the field path error', async () => {
      const h = harness();
      const vol: Volume = {
        name: 'info',
        downwardAPI: { items: [{ path: 'x', fieldRef: { fieldPath: 'spec.nodeName' } }] },
      };
      expect(failure(await setUp(h, vol))).to.equal('unsupported fieldPath: spec.nodeName');
    });
  });

  describe('projected', () => {
    const tokenProjection: ServiceAccountTokenProjection = { path: 'token', expirationSeconds: 3607 };
    const kubeApiAccess = (defaultMode?: number): Volume => ({
      name: 'kube-api-access-x7k2p',
      projected: {
        ...(defaultMode !== undefined ? { defaultMode } : {}),
        sources: [
          { serviceAccountToken: tokenProjection },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          {
            downwardAPI: {
              items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
            },
          },
        ],
      },
    });

    function withCA(h: Harness): void {
      h.sources.configMaps.set(`${NS}/kube-root-ca.crt`, {
        data: { 'ca.crt': '-----BEGIN CERTIFICATE-----' },
      });
    }

    it('projects kube-api-access: the token from the token source, the CA bundle, the namespace, on a tmpfs', async () => {
      const h = harness();
      withCA(h);
      const vol = kubeApiAccess(0o644);
      const r = await setUp(h, vol);
      expect(r).to.deep.equal({
        ok: true,
        volume: { hostPath: dirs.projected(vol.name), readOnly: true, selinuxRelabel: true },
      });
      expect(await visible(h, dirs.projected(vol.name), ['token', 'ca.crt', 'namespace'])).to.deep.equal({
        token: ['jwt-token', 0o644],
        'ca.crt': ['-----BEGIN CERTIFICATE-----', 0o644],
        namespace: [NS, 0o644],
      });
      expect(h.tokenCalls).to.deep.equal([{ pod: 'web-0', projection: tokenProjection }]);
      expect(h.mounter.mountCalls).to.deep.equal([{ dir: dirs.projected(vol.name), sizeBytes: 8 * 2 ** 30 }]);
    });

    const tokenModes: [
      string,
      { fsGroup?: number; runAsUser?: number },
      number | undefined,
      { mode: number; uid: number; gid: number },
    ][] = [
      ['the defaultMode without fsGroup or fsUser', {}, 0o644, { mode: 0o644, uid: 0, gid: 0 }],
      ['the API default 0644 when defaultMode is absent', {}, undefined, { mode: 0o644, uid: 0, gid: 0 }],
      [
        '0600 owned by the fsUser (every container runs as it)',
        { runAsUser: 1000 },
        0o644,
        { mode: 0o600, uid: 1000, gid: 0 },
      ],
      // projected.ts makes it 0600, then SetVolumeOwnership adds the read-only group mask (0440): 0640.
      ['0600 widened to 0640 for the fsGroup', { fsGroup: 2000 }, 0o644, { mode: 0o640, uid: 0, gid: 2000 }],
      [
        '0600 for fsUser and fsGroup, 0640 on disk',
        { fsGroup: 2000, runAsUser: 1000 },
        0o444,
        { mode: 0o640, uid: 1000, gid: 2000 },
      ],
    ];
    for (const [what, sc, defaultMode, want] of tokenModes) {
      it(`token file mode: ${what}`, async () => {
        const h = harness();
        withCA(h);
        const vol = kubeApiAccess(defaultMode);
        const pod = podWith([vol], sc);
        expect((await setUp(h, vol, pod)).ok).to.equal(true);
        const st = await h.fs.stat(`${dirs.projected(vol.name)}/token`);
        expect({ mode: st?.mode, uid: st?.uid, gid: st?.gid }).to.deep.equal(want);
      });
    }

    it('the other files keep the defaultMode (plus the group mask) when the token gets 0600', async () => {
      const h = harness();
      withCA(h);
      const vol = kubeApiAccess(0o644);
      await setUp(h, vol, podWith([vol], { fsGroup: 2000 }));
      expect(await modeOf(h.fs, `${dirs.projected(vol.name)}/ca.crt`)).to.equal(0o644);
      expect(await modeOf(h.fs, `${dirs.projected(vol.name)}/namespace`)).to.equal(0o644);
    });

    it('fails with the token source error', async () => {
      const h = harness();
      withCA(h);
      h.token.value = new Error('failed to fetch token: serviceaccounts "builder" not found');
      expect(failure(await setUp(h, kubeApiAccess()))).to.equal(
        'failed to fetch token: serviceaccounts "builder" not found',
      );
    });

    it('asks once per distinct token request', async () => {
      const h = harness();
      const vol: Volume = {
        name: 'tokens',
        projected: {
          sources: [
            { serviceAccountToken: { path: 'a', audience: 'vault' } },
            { serviceAccountToken: { path: 'b', audience: 'vault' } },
            { serviceAccountToken: { path: 'c', audience: 'nats' } },
          ],
        },
      };
      expect((await setUp(h, vol)).ok).to.equal(true);
      expect(h.tokenCalls.map((c) => c.projection.audience)).to.deep.equal(['vault', 'nats']);
      expect(await entries(h, dirs.projected('tokens'))).to.deep.equal(['a', 'b', 'c']);
    });

    it('aggregates the errors of every source, in source order', async () => {
      const h = harness();
      const vol: Volume = {
        name: 'mixed',
        projected: {
          sources: [
            { configMap: { name: 'cm-a' } },
            { secret: { name: 'sec-b' } },
            { configMap: { name: 'cm-c', optional: true } },
          ],
        },
      };
      expect(failure(await setUp(h, vol))).to.equal('[configmap "cm-a" not found, secret "sec-b" not found]');
    });

    it('merges secret and configMap sources with their items and modes', async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/cm`, { data: { k: 'from-cm', shared: 'cm' } });
      h.sources.secrets.set(`${NS}/sec`, { data: { s: b64('from-secret'), shared: b64('secret') } });
      const vol: Volume = {
        name: 'all',
        projected: {
          defaultMode: 0o440,
          sources: [
            { configMap: { name: 'cm' } },
            {
              secret: {
                name: 'sec',
                items: [
                  { key: 's', path: 'sub/s', mode: 0o400 },
                  { key: 'shared', path: 'shared' },
                ],
              },
            },
          ],
        },
      };
      expect((await setUp(h, vol)).ok).to.equal(true);
      expect(await visible(h, dirs.projected('all'), ['k', 'shared', 'sub/s'])).to.deep.equal({
        k: ['from-cm', 0o440],
        shared: ['secret', 0o440],
        'sub/s': ['from-secret', 0o400],
      });
    });

    it('a new token reaches the file at the next SetUp', async () => {
      const h = harness();
      withCA(h);
      await setUp(h, kubeApiAccess());
      h.token.value = 'jwt-token-2';
      h.clock.advance(60_000);
      await setUp(h, kubeApiAccess());
      expect(await text(h.fs, `${dirs.projected('kube-api-access-x7k2p')}/token`)).to.equal('jwt-token-2');
    });

    it('writes a simulated token when given the simulated token source', async () => {
      const h = harness();
      withCA(h);
      h.deps.tokens = (p, projection) =>
        Promise.resolve(simulatedServiceAccountToken(p, projection, h.clock.now()));
      await setUp(h, kubeApiAccess());
      const token = await text(h.fs, `${dirs.projected('kube-api-access-x7k2p')}/token`);
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<
        string,
        unknown
      >;
      expect(claims['iss']).to.equal(SimulatedTokenIssuer);
      expect(claims['sub']).to.equal(`system:serviceaccount:${NS}:builder`);
    });
  });

  describe('token/simulated', () => {
    const pod: Pod = {
      metadata: { name: 'web-0', namespace: 'prod', uid: 'u-42' },
      spec: { containers: [{ name: 'app', image: 'busybox' }] },
    };
    const decode = (part: string): unknown => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));

    it('is an unsigned JWT (alg none, empty signature) with the claims of a bound token', () => {
      const now = Date.UTC(2026, 0, 1, 0, 0, 0, 999);
      const token = simulatedServiceAccountToken(
        pod,
        { path: 'token', audience: 'vault', expirationSeconds: 600 },
        now,
      );
      const [header, payload, signature] = token.split('.');
      expect(signature).to.equal('');
      expect(decode(header!)).to.deep.equal({ alg: 'none', typ: 'JWT' });
      const iat = Math.floor(now / 1000);
      expect(decode(payload!)).to.deep.equal({
        iss: 'kubelet-operator/simulated',
        sub: 'system:serviceaccount:prod:default',
        aud: ['vault'],
        iat,
        nbf: iat,
        exp: iat + 600,
        'kubernetes.io': {
          namespace: 'prod',
          serviceaccount: { name: 'default' },
          pod: { name: 'web-0', uid: 'u-42' },
        },
      });
    });

    it('defaults: no audience, one hour, the pod service account', () => {
      const p: Pod = { ...pod, spec: { ...pod.spec, serviceAccountName: 'builder' } };
      const claims = decode(simulatedServiceAccountToken(p, { path: 't' }, 0).split('.')[1]!) as Record<
        string,
        unknown
      >;
      expect(claims['aud']).to.deep.equal([]);
      expect(claims['exp']).to.equal(3600);
      expect(claims['sub']).to.equal('system:serviceaccount:prod:builder');
    });
  });

  it('setUpDataVolume refuses a volume kind that is not a data volume', async () => {
    const h = harness();
    const r = await setUpDataVolume(ctxOf(h), {
      pod: podWith([]),
      volume: { name: 'x', emptyDir: {} },
      kind: 'emptyDir',
    });
    expect(r).to.deep.equal({ ok: false, stage: 'mount', message: 'not a data volume: emptyDir' });
  });
});
