import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../../src/api/core.js';
import { VirtualNodeSpecSchema, type VirtualNodeSpec } from '../../../src/api/virtualnode.js';
import type { KubeClient, RequestOptions } from '../../../src/kube/client.js';
import { MemoryVolumeFS } from '../../../src/kubelet/volume/memfs.js';
import { RealVolumeFS } from '../../../src/kubelet/volume/shell/realfs.js';
import { MemoryMounter, RealMounter } from '../../../src/kubelet/volume/shell/mounter.js';
import type { VolumeSources } from '../../../src/kubelet/volume/sources.js';
import {
  defaultPodsDir,
  podEnvironmentFor,
  type NodePodEnvironment,
  type PodEnvironmentSettings,
} from '../../../src/app/podenvironment.js';
import { FakeClock } from '../../../src/util/clock.js';
import { MemoryLogger } from '../../../src/util/logger.js';
import { formatRFC3339 } from '../../../src/util/rfc3339.js';

const SIM = { runtime: { type: 'sim' } };
const CRI = { runtime: { type: 'cri', cri: { endpoint: 'unix:///run/containerd/containerd.sock' } } };

function spec(base: object, kubelet: Record<string, unknown> = {}): VirtualNodeSpec {
  return VirtualNodeSpecSchema.parse({ ...base, kubelet });
}

/** Answers TokenRequest POSTs with `token-<n>`, valid for the requested lifetime. */
class FakeClient {
  readonly requests: RequestOptions[] = [];
  constructor(private readonly clock: FakeClock) {}
  async request<T>(opts: RequestOptions): Promise<T> {
    this.requests.push(opts);
    const body = opts.body as { spec: { expirationSeconds?: number } };
    const seconds = body.spec.expirationSeconds ?? 3600;
    return {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: {},
      spec: body.spec,
      status: {
        token: `token-${this.requests.length}`,
        expirationTimestamp: formatRFC3339(this.clock.now() + seconds * 1000),
      },
    } as T;
  }
}

const pod = (serviceAccountName?: string): Pod => ({
  metadata: { name: 'web-0', namespace: 'prod', uid: 'uid-1' },
  spec: {
    ...(serviceAccountName !== undefined ? { serviceAccountName } : {}),
    containers: [{ name: 'app', image: 'busybox' }],
  },
});

describe('podenvironment (podEnvironmentFor)', () => {
  let clock: FakeClock;
  let client: FakeClient;
  let logger: MemoryLogger;
  let made: NodePodEnvironment[];

  function settings(over: Partial<PodEnvironmentSettings> = {}): PodEnvironmentSettings {
    return {
      client: client as unknown as KubeClient,
      clock,
      logger,
      stateDir: '/var/lib/kubelet-operator/',
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
      ...over,
    };
  }

  function make(
    s: VirtualNodeSpec,
    over: Partial<PodEnvironmentSettings> = {},
    recordNode?: () => void,
  ): NodePodEnvironment {
    const e = podEnvironmentFor(s, 'node-a', settings(over), recordNode);
    made.push(e);
    return e;
  }

  beforeEach(() => {
    clock = new FakeClock();
    client = new FakeClient(clock);
    logger = new MemoryLogger();
    made = [];
  });
  afterEach(() => {
    for (const e of made) e.stop();
  });

  it('defaultPodsDir: <state dir>/nodes/<node>/pods', () => {
    expect(defaultPodsDir('/state', 'n1')).to.equal('/state/nodes/n1/pods');
    expect(defaultPodsDir('/state//', 'n1')).to.equal('/state/nodes/n1/pods');
  });

  describe('sim nodes', () => {
    it('keep everything in memory, simulate tokens, and use the operator defaults', () => {
      const e = make(spec(SIM));
      expect(e.memory).to.be.instanceOf(MemoryVolumeFS);
      expect(e.env.fs).to.equal(e.memory);
      expect(e.env.mounter).to.be.instanceOf(MemoryMounter);
      expect(e.env.podsDir).to.equal('/var/lib/kubelet-operator/nodes/node-a/pods');
      expect(e.env.clusterDNS).to.deep.equal(['10.96.0.10']);
      expect(e.env.clusterDomain).to.equal('cluster.local');
      // Simulated tokens: no token source (the kubelet's default is the simulated one), nothing to forget.
      expect(e.env.tokens).to.equal(undefined);
      expect(e.env.onPodUnmounted).to.equal(undefined);
      // No host files: the kubelet's simulated defaults apply.
      expect(e.env.hostResolvConf).to.equal(undefined);
      expect(e.env.nodeHostsFile).to.equal(undefined);
      expect(clock.pendingTimers()).to.equal(0);
    });

    it('each node gets its own memory', () => {
      expect(make(spec(SIM)).memory).to.not.equal(make(spec(SIM)).memory);
    });

    it('take podsDir, clusterDNS and clusterDomain from the spec over the operator defaults', () => {
      const e = make(
        spec(SIM, { podsDir: '/pods', clusterDNS: ['10.0.0.10', 'fd00::a'], clusterDomain: 'corp.local' }),
      );
      expect(e.env.podsDir).to.equal('/pods');
      expect(e.env.clusterDNS).to.deep.equal(['10.0.0.10', 'fd00::a']);
      expect(e.env.clusterDomain).to.equal('corp.local');
    });

    it('pass the shared sources, services and node recorder through, and leave them unset otherwise', () => {
      const sources = {} as VolumeSources;
      const services = () => [];
      const recordNode = () => undefined;
      const e = make(spec(SIM), { sources, services }, recordNode);
      expect(e.env.sources).to.equal(sources);
      expect(e.env.services).to.equal(services);
      expect(e.env.recordNode).to.equal(recordNode);
      const bare = make(spec(SIM));
      for (const k of ['sources', 'services', 'recordNode'] as const)
        expect(bare.env).to.not.have.property(k);
    });

    it('request real tokens when the spec says Request', async () => {
      const e = make(spec(SIM, { serviceAccountTokens: 'Request' }));
      expect(await e.env.tokens!(pod('builder'), { path: 'token' })).to.equal('token-1');
      expect(client.requests).to.have.length(1);
    });
  });

  describe('cri nodes', () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'kubelet-operator-podenv-'));
    });
    afterEach(() => rm(dir, { recursive: true, force: true }));

    it('use the node disk and real mounts, and request tokens through the token manager', () => {
      const e = make(spec(CRI));
      expect(e.memory).to.equal(undefined);
      expect(e.env.fs).to.be.instanceOf(RealVolumeFS);
      expect(e.env.mounter).to.be.instanceOf(RealMounter);
      expect(e.env.tokens).to.be.a('function');
      expect(e.env.onPodUnmounted).to.be.a('function');
      // The token manager's cleanup timer, until stop().
      expect(clock.pendingTimers()).to.equal(1);
      e.stop();
      expect(clock.pendingTimers()).to.equal(0);
    });

    it('simulate tokens when the spec says Simulated', () => {
      const e = make(spec(CRI, { serviceAccountTokens: 'Simulated' }));
      expect(e.env.tokens).to.equal(undefined);
      expect(clock.pendingTimers()).to.equal(0);
    });

    it('ask the API server for a TokenRequest bound to the pod, cache it, and forget it when the pod is unmounted', async () => {
      const e = make(spec(CRI));
      const projection = { path: 'token', audience: 'vault', expirationSeconds: 600 };
      expect(await e.env.tokens!(pod('builder'), projection)).to.equal('token-1');
      expect(client.requests).to.have.length(1);
      expect(client.requests[0]).to.deep.include({
        method: 'POST',
        path: '/api/v1/namespaces/prod/serviceaccounts/builder/token',
      });
      expect((client.requests[0]!.body as { spec: unknown }).spec).to.deep.equal({
        audiences: ['vault'],
        expirationSeconds: 600,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web-0', uid: 'uid-1' },
      });
      expect(await e.env.tokens!(pod('builder'), projection)).to.equal('token-1');
      expect(client.requests).to.have.length(1);
      e.env.onPodUnmounted!('uid-1');
      expect(await e.env.tokens!(pod('builder'), projection)).to.equal('token-2');
    });

    it('use the default service account and the one-hour default lifetime', async () => {
      const e = make(spec(CRI));
      await e.env.tokens!(pod(''), { path: 'token' });
      expect(client.requests[0]!.path).to.equal('/api/v1/namespaces/prod/serviceaccounts/default/token');
      expect((client.requests[0]!.body as { spec: Record<string, unknown> }).spec).to.deep.equal({
        expirationSeconds: 3600,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web-0', uid: 'uid-1' },
      });
    });

    it("read the host's resolv.conf: the spec's path over the operator's", async () => {
      await writeFile(
        path.join(dir, 'spec.conf'),
        'nameserver 10.0.0.53\nsearch corp.example. lab.example\noptions ndots:2\n',
      );
      await writeFile(path.join(dir, 'operator.conf'), 'nameserver 9.9.9.9\n');
      const fromSpec = make(spec(CRI, { resolvConf: path.join(dir, 'spec.conf') }), {
        resolvConf: path.join(dir, 'operator.conf'),
      });
      expect(await fromSpec.env.hostResolvConf!()).to.deep.equal({
        servers: ['10.0.0.53'],
        searches: ['corp.example', 'lab.example'],
        options: ['ndots:2'],
      });
      const fromOperator = make(spec(CRI), { resolvConf: path.join(dir, 'operator.conf') });
      expect((await fromOperator.env.hostResolvConf!())?.servers).to.deep.equal(['9.9.9.9']);
      expect(logger.lines).to.deep.equal([]);
    });

    it('a missing resolv.conf is no host resolver, logged', async () => {
      const e = make(spec(CRI, { resolvConf: path.join(dir, 'missing.conf') }));
      expect(await e.env.hostResolvConf!()).to.equal(undefined);
      expect(logger.lines.map((l) => [l.level, l.msg, l.meta['node'], l.meta['path']])).to.deep.equal([
        ['warn', 'cannot read resolv.conf', 'node-a', path.join(dir, 'missing.conf')],
      ]);
    });

    it('a malformed resolv.conf is logged and passed on with its error', async () => {
      await writeFile(path.join(dir, 'bad.conf'), 'nameserver\nnameserver 10.0.0.53\n');
      const e = make(spec(CRI, { resolvConf: path.join(dir, 'bad.conf') }));
      const conf = (await e.env.hostResolvConf!()) as { servers: string[]; error?: string };
      expect(conf.servers).to.deep.equal(['10.0.0.53']);
      expect(conf.error).to.equal('nameserver list is empty ');
      expect(logger.lines.map((l) => l.msg)).to.deep.equal(['unusable resolv.conf']);
    });

    it("read the host's hosts file from the operator setting", async () => {
      await writeFile(path.join(dir, 'hosts'), '127.0.0.1 localhost\n10.0.0.2 host-1\n');
      const e = make(spec(CRI), { hostsFile: path.join(dir, 'hosts') });
      expect(await e.env.nodeHostsFile!()).to.equal('127.0.0.1 localhost\n10.0.0.2 host-1\n');
    });
  });
});
