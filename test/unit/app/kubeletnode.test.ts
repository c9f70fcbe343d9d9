// One served VirtualNode assembled for real (SimRuntime via runtimeFor, NodeAgent, Kubelet) against an
// in-memory API behind a fake KubeClient, under a FakeClock: start registers the Node and its Lease through
// the NodeAgent and runs the node's pods; a spec update keeps the kubelet (and its containers); drain deletes
// the node's pods; stop leaves the runtime and the API objects alone; remove deletes the Node and Lease.
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import type { Node } from '../../../src/api/node.js';
import {
  parseVirtualNodeSpec,
  type VirtualNode,
  type VirtualNodeSpec,
} from '../../../src/api/virtualnode.js';
import type { KubeClient, RequestOptions } from '../../../src/kube/client.js';
import { Informer, stripManagedFields } from '../../../src/kube/informer.js';
import { PodsByNodeIndex } from '../../../src/kubelet/shell/podmanager.js';
import type { VolumeSources } from '../../../src/kubelet/volume/sources.js';
import {
  KubeletManagedNode,
  kubeletNodeFactory,
  type ManagedNodeDeps,
} from '../../../src/app/kubeletnode.js';
import { SimRuntime } from '../../../src/runtime/sim/index.js';
import { NodeApiRegistry } from '../../../src/server/nodeapi/registry.js';
import { FakeClock } from '../../../src/util/clock.js';
import { KindError } from '../../../src/util/errors.js';
import { silentLogger } from '../../../src/util/logger.js';
import { FakeNodeAPI } from '../node/fakeapi.js';
import { FakeCollection } from '../operator/fakeapi.js';

const NODE = 'vn-test';
const IMAGE = 'registry.local/app:1';
const LEASES = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases';

const flush = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

/**
 * A KubeClient over in-memory state: Nodes and Leases in a FakeNodeAPI, pods in the collection the pod
 * informer watches (a DELETE marks a pod deleting, as the API server does with a grace period), Events and
 * every request recorded.
 */
class FakeKubeClient {
  readonly requests: { method: string; path: string; body?: unknown }[] = [];
  constructor(
    readonly nodes: FakeNodeAPI,
    readonly pods: FakeCollection<Pod & { metadata: { name: string } }>,
  ) {}

  async request<T>(req: RequestOptions): Promise<T> {
    this.requests.push({ method: req.method, path: req.path, body: req.body });
    return (await this.route(req)) as T;
  }

  private async route(req: RequestOptions): Promise<unknown> {
    const { method, path } = req;
    const node = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(path);
    if (path === '/api/v1/nodes' && method === 'POST') return this.nodes.createNode(req.body as never);
    if (node) {
      const name = decodeURIComponent(node[1]!);
      if (node[2]) return this.nodes.patchNodeStatus(name, req.body);
      if (method === 'GET') return this.nodes.getNode(name);
      if (method === 'PATCH') return this.nodes.patchNode(name, req.body);
      if (method === 'DELETE') {
        const uid = (req.body as { preconditions?: { uid?: string } } | undefined)?.preconditions?.uid;
        return this.nodes.deleteNode(name, uid ? { uid } : {});
      }
    }
    if (path === LEASES && method === 'POST') return this.nodes.createLease(req.body as never);
    if (path.startsWith(`${LEASES}/`)) {
      const name = decodeURIComponent(path.slice(LEASES.length + 1));
      if (method === 'GET') return this.nodes.getLease(name);
      if (method === 'PUT') return this.nodes.updateLease(req.body as never);
      if (method === 'DELETE') return this.nodes.deleteLease(name);
    }
    if (/^\/api\/v1\/namespaces\/[^/]+\/events/.test(path)) return {};
    const pod = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)(\/status)?$/.exec(path);
    if (pod) {
      const key = `${pod[1]}/${pod[2]}`;
      const cur = this.pods.get(key);
      if (!cur) throw new KindError('NotFound', `pods "${pod[2]}" not found`);
      if (method === 'DELETE') {
        // The kubelet's final delete has grace 0 and removes the pod; a plain one starts a graceful delete.
        const grace = (req.body as { gracePeriodSeconds?: number } | undefined)?.gracePeriodSeconds;
        this.pods.delete(key, { graceful: grace !== 0 });
        return {};
      }
      if (method === 'PATCH' && pod[3]) {
        const status = (req.body as { status?: Pod['status'] }).status ?? {};
        return this.pods.update(key, (p) => (p.status = { ...p.status, ...status }));
      }
      return cur;
    }
    throw new KindError('NotFound', `${method} ${path}: not served by the fake`);
  }
}

function spec(extra: Record<string, unknown> = {}): VirtualNodeSpec {
  const r = parseVirtualNodeSpec({
    runtime: { type: 'sim', sim: { podCIDR: '10.77.0.0/24' } },
    labels: { team: 'a' },
    ...extra,
  });
  if (!r.ok) throw new Error(r.message);
  return r.spec;
}

const vn: VirtualNode = {
  apiVersion: 'kubelet-operator.dev/v1alpha1',
  kind: 'VirtualNode',
  metadata: { name: 'vn-test', uid: 'vn-uid' },
  spec: {},
};

function pod(name: string): Pod & { metadata: { name: string } } {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}`, creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: {
      nodeName: NODE,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: IMAGE }],
    },
    status: { phase: 'Pending' },
  };
}

/** Mutating runtime calls, recorded by name. */
const MUTATIONS = [
  'runPodSandbox',
  'stopPodSandbox',
  'removePodSandbox',
  'createContainer',
  'startContainer',
  'stopContainer',
  'removeContainer',
] as const;

function setup(
  over: (sibling: () => FakeKubeClient) => Partial<ManagedNodeDeps> = () => ({}),
  nodeSpec: VirtualNodeSpec = spec(),
) {
  const clock = new FakeClock();
  const nodeAPI = new FakeNodeAPI(clock);
  const pods = new FakeCollection<Pod & { metadata: { name: string } }>();
  const client = new FakeKubeClient(nodeAPI, pods);
  const runtime = new SimRuntime({ clock, nodeIP: '10.0.0.7', images: [IMAGE], idSeed: NODE });
  const mutations: string[] = [];
  for (const m of MUTATIONS) {
    const original = runtime[m].bind(runtime) as (...args: unknown[]) => Promise<unknown>;
    (runtime as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => {
      mutations.push(m);
      return original(...args);
    };
  }
  const informer = new Informer<Pod>(pods, { clock, name: 'pods', transform: stripManagedFields });
  informer.addIndex(PodsByNodeIndex, (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
  informer.start();
  const registry = new NodeApiRegistry();
  const runtimeFor: string[] = [];
  const deps: ManagedNodeDeps = {
    client: client as unknown as KubeClient,
    clock,
    logger: silentLogger,
    defaultInternalIP: '10.0.0.7',
    nodeApiPort: 10250,
    nodeApi: registry,
    stateDir: '/nonexistent/state',
    localApis: false,
    runtimeFor: (s, nodeName, ip) => {
      runtimeFor.push(`${nodeName} ${ip} ${s.runtime.type}`);
      return runtime;
    },
    // Another client over the same in-memory API, with its own record of requests.
    ...over(() => new FakeKubeClient(nodeAPI, pods)),
  };
  // The Node as the controller's informer has it (set by a test; apart from the one FakeNodeAPI registers).
  const liveNodes = new FakeCollection<Node & { metadata: { name: string } }>();
  const nodeInformer = new Informer<Node>(liveNodes, { clock, name: 'node' });
  nodeInformer.start();
  const node = new KubeletManagedNode(vn, nodeSpec, NODE, deps, { pods: informer, node: nodeInformer });
  // Pod events reach the node as the operator routes them.
  informer.addHandlers({
    add: (p) => node.podAdded(p),
    update: (o, p) => node.podUpdated(o, p),
    delete: (p) => node.podDeleted(p),
  });
  return {
    clock,
    nodeAPI,
    pods,
    client,
    runtime,
    mutations,
    informer,
    liveNodes,
    registry,
    runtimeFor,
    node,
  };
}

async function advance(clock: FakeClock, ms: number, step = 100): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(Math.min(step, ms - t));
    await flush(5);
  }
  await flush();
}

/** start() resolves once the Node is registered; the fake clock must move for the lease and status loops. */
async function start(s: ReturnType<typeof setup>): Promise<void> {
  let done = false;
  let failed: unknown;
  s.node.start().then(
    () => (done = true),
    (err: unknown) => (failed = err),
  );
  for (let i = 0; i < 200 && !done && failed === undefined; i++) await advance(s.clock, 100);
  if (failed !== undefined) throw failed;
  expect(done, 'start resolved').to.equal(true);
}

describe('KubeletManagedNode', () => {
  let s: ReturnType<typeof setup>;

  beforeEach(() => {
    s = setup();
  });

  afterEach(async () => {
    await s.node.stop();
    await s.informer.stop();
  });

  it('builds its runtime through runtimeFor with the node name and address', () => {
    expect(s.runtimeFor).to.deep.equal([`${NODE} 10.0.0.7 sim`]);
  });

  it('start registers the Node and its Lease through the NodeAgent and reports the node healthy', async () => {
    await start(s);
    const node = s.nodeAPI.nodes.get(NODE);
    expect(node, 'Node registered').to.not.equal(undefined);
    expect(node!.metadata.labels).to.deep.include({ team: 'a', 'kubernetes.io/hostname': NODE });
    expect(s.nodeAPI.leases.get(NODE), 'Lease created').to.not.equal(undefined);
    expect(s.registry.nodes().map((n) => n.nodeName)).to.deep.equal([NODE]);

    await advance(s.clock, 2_000);
    const o = s.node.observe();
    expect(o).to.deep.include({ registered: true, runtimeReady: true, internalIP: '10.0.0.7' });
    expect(o.runtime?.name).to.equal('kubelet-operator-sim');
    expect(o.lastHeartbeatTime).to.match(/^2026-01-01T00:00:\d\dZ$/);
    expect(o.pods).to.deep.equal({ total: 0, running: 0, pending: 0 });
  });

  it('runs the pods bound to it, and a spec update keeps the kubelet and its containers', async () => {
    await start(s);
    s.pods.create(pod('web'));
    await advance(s.clock, 3_000);
    const running = (await s.runtime.listContainers()).filter((c) => c.state === 'running');
    expect(running.map((c) => c.metadata.name)).to.deep.equal(['app']);
    expect(s.pods.get('default/web')!.status?.phase).to.equal('Running');
    expect(s.node.observe().pods).to.deep.equal({ total: 1, running: 1, pending: 0 });
    const before = s.mutations.length;

    await s.node.update(spec({ labels: { team: 'b' } }));
    await advance(s.clock, 3_000);
    expect(s.nodeAPI.nodes.get(NODE)!.metadata.labels).to.deep.include({ team: 'b' });
    expect(s.mutations.slice(before), 'no runtime mutation on a spec update').to.deep.equal([]);
    const after = (await s.runtime.listContainers()).filter((c) => c.state === 'running');
    expect(after.map((c) => c.id)).to.deep.equal(running.map((c) => c.id));
  });

  it('admits against the Node as it is now: labels and extended resources others put there, then a fresh read', async () => {
    await start(s);
    const wanting = (name: string, extra: Partial<Pod['spec']>): Pod & { metadata: { name: string } } => {
      const p = pod(name);
      Object.assign(p.spec, extra);
      return p;
    };
    // As the e2e framework advertises a fake resource and labels a node, then schedules at once.
    s.liveNodes.create({
      metadata: { name: NODE, labels: { color: 'blue' } },
      status: { capacity: { 'scheduling.k8s.io/foo': '5' }, allocatable: { 'scheduling.k8s.io/foo': '5' } },
    });
    s.pods.create(wanting('blue', { nodeSelector: { color: 'blue' } }));
    s.pods.create(
      wanting('foo', {
        containers: [
          { name: 'app', image: IMAGE, resources: { requests: { 'scheduling.k8s.io/foo': '2' } } },
        ],
      }),
    );
    // Labelled a moment ago: the informer has not heard yet, the kubelet's second look (a GET) has.
    s.nodeAPI.nodes.get(NODE)!.metadata.labels = {
      ...s.nodeAPI.nodes.get(NODE)!.metadata.labels,
      shape: 'round',
    };
    s.pods.create(wanting('round', { nodeSelector: { shape: 'round' } }));
    s.pods.create(wanting('square', { nodeSelector: { shape: 'square' } }));
    await advance(s.clock, 3_000);
    const phase = (n: string) => [
      s.pods.get(`default/${n}`)!.status?.phase,
      s.pods.get(`default/${n}`)!.status?.reason,
    ];
    expect(phase('blue')).to.deep.equal(['Running', undefined]);
    expect(phase('foo')).to.deep.equal(['Running', undefined]);
    expect(phase('round')).to.deep.equal(['Running', undefined]);
    expect(phase('square')).to.deep.equal(['Failed', 'NodeAffinity']);
  });

  it('drain deletes the pods bound to it once each, and reports empty only when none is left', async () => {
    await start(s);
    s.pods.create(pod('a'));
    s.pods.create(pod('b'));
    await advance(s.clock, 3_000);
    const drainDeletes = () =>
      s.client.requests
        .filter((r) => r.method === 'DELETE' && r.path.includes('/pods/'))
        .filter((r) => (r.body as { gracePeriodSeconds?: number }).gracePeriodSeconds !== 0)
        .map((r) => r.path);

    expect(await s.node.drain()).to.equal(false);
    expect(drainDeletes()).to.have.members([
      '/api/v1/namespaces/default/pods/a',
      '/api/v1/namespaces/default/pods/b',
    ]);
    // Both are deleting now: a second drain deletes nothing again.
    expect(await s.node.drain()).to.equal(false);
    expect(drainDeletes()).to.have.length(2);

    // The kubelet stops their containers and makes the final delete; then the node is empty.
    await advance(s.clock, 5_000);
    expect(s.pods.keys()).to.deep.equal([]);
    expect(await s.node.drain()).to.equal(true);
    expect(drainDeletes()).to.have.length(2);
    expect((await s.runtime.listContainers()).filter((c) => c.state === 'running')).to.deep.equal([]);
  });

  it('stop leaves the runtime, the Node and the Lease alone; remove deletes the Node and Lease', async () => {
    await start(s);
    s.pods.create(pod('web'));
    await advance(s.clock, 3_000);
    const before = s.mutations.length;
    const nodeCalls = s.nodeAPI.calls.length;

    await s.node.stop();
    await s.node.stop(); // idempotent
    await advance(s.clock, 30_000, 1_000);
    expect(s.mutations.slice(before), 'no runtime mutation on stop').to.deep.equal([]);
    expect((await s.runtime.listContainers()).map((c) => c.state)).to.deep.equal(['running']);
    expect(s.nodeAPI.calls.slice(nodeCalls), 'no Node or Lease call after stop').to.deep.equal([]);
    expect(s.nodeAPI.nodes.has(NODE)).to.equal(true);
    expect(s.registry.nodes(), 'node API unregistered').to.deep.equal([]);

    await s.node.remove();
    expect(s.nodeAPI.nodes.has(NODE)).to.equal(false);
    expect(s.nodeAPI.leases.has(NODE)).to.equal(false);
    await s.node.remove(); // already gone: still fine
  });

  it('a stop while the first runtime check is out starts nothing once it answers', async () => {
    let answer = (): void => {};
    const answered = new Promise<void>((r) => (answer = r));
    const version = s.runtime.version.bind(s.runtime);
    s.runtime.version = async () => {
      await answered;
      return version();
    };
    const started = s.node.start().then(
      () => 'resolved',
      (err: unknown) => (err as Error).message,
    );
    await flush();
    await s.node.stop();
    answer();
    expect(await started).to.match(/stopped/);
    await advance(s.clock, 10_000, 1_000);
    expect(s.nodeAPI.nodes.has(NODE), 'no Node registered').to.equal(false);
    expect(s.registry.nodes(), 'no node API route').to.deep.equal([]);
    expect(s.mutations).to.deep.equal([]);
  });
});

describe('KubeletManagedNode clients and sources', () => {
  it('heartbeats on heartbeatClient, events on eventClient, registration and pods on client', async () => {
    let heartbeat!: FakeKubeClient;
    let events!: FakeKubeClient;
    let eventClientsMade = 0;
    const s = setup((sibling) => {
      heartbeat = sibling();
      events = sibling();
      return {
        heartbeatClient: heartbeat as unknown as KubeClient,
        // A bucket per node: the factory form, called once by the node it serves.
        eventClient: () => {
          eventClientsMade++;
          return events as unknown as KubeClient;
        },
      };
    });
    try {
      await start(s);
      s.pods.create(pod('web'));
      await advance(s.clock, 60_000, 500);
      // The Node was created with its status; the next report is due after the report frequency (5 min).
      await advance(s.clock, 250_000, 5_000);
      const calls = (c: FakeKubeClient) => c.requests.map((r) => `${r.method} ${r.path}`);
      const main = calls(s.client);
      expect(main).to.include('POST /api/v1/nodes');
      expect(main.filter((c) => c.includes('/pods/web')).length, 'pod status on client').to.be.greaterThan(0);
      expect(
        main.filter((c) => c.includes('/leases') || (c.endsWith('/status') && c.includes('/nodes/'))),
      ).to.deep.equal([]);
      expect(main.filter((c) => c.includes('/events'))).to.deep.equal([]);

      const hb = calls(heartbeat);
      expect(hb).to.include(`PUT ${LEASES}/${NODE}`);
      expect(hb).to.include(`PATCH /api/v1/nodes/${NODE}/status`);
      expect(
        hb.every(
          (c) => c.includes('/leases') || c.startsWith(`GET /api/v1/nodes/${NODE}`) || c.endsWith('/status'),
        ),
      ).to.equal(true);
      const ev = calls(events);
      expect(eventClientsMade).to.equal(1);
      expect(ev.length).to.be.greaterThan(0);
      expect(
        ev.every((c) => /^(POST|PATCH) \/api\/v1\/namespaces\/[^/]+\/events/.test(c)),
        ev.join('\n'),
      ).to.equal(true);
    } finally {
      await s.node.stop();
      await s.informer.stop();
    }
  });

  it('runs on the defaults when eviction or image GC settings are refused, and says so on the VirtualNode', async () => {
    let events!: FakeKubeClient;
    const s = setup(
      (sibling) => {
        events = sibling();
        return { eventClient: () => events as unknown as KubeClient };
      },
      spec({
        kubelet: {
          evictionHard: { 'memory.available': 'plenty' },
          imageGCHighThresholdPercent: 10,
          imageGCLowThresholdPercent: 50,
        },
      }),
    );
    try {
      await start(s);
      await advance(s.clock, 5_000, 500);
      const refused = events.requests
        .map((r) => r.body as { reason?: string; message?: string; involvedObject?: { kind?: string } })
        .filter((e) => e?.involvedObject?.kind === 'VirtualNode')
        .map((e) => `${e.reason}: ${e.message}`);
      expect(refused).to.have.length(2);
      expect(refused[0]).to.match(
        /^InvalidEvictionSettings: spec\.kubelet eviction settings refused, the kubelet's defaults are used: /,
      );
      expect(refused[1]).to.match(
        /^InvalidImageGCSettings: spec\.kubelet image GC settings refused, the kubelet's defaults are used: /,
      );
    } finally {
      await s.node.stop();
      await s.informer.stop();
    }
  });

  it('says so on the VirtualNode when image pull credential settings or the credential provider config are refused', async () => {
    let events!: FakeKubeClient;
    const s = setup(
      (sibling) => {
        events = sibling();
        return { eventClient: () => events as unknown as KubeClient };
      },
      spec({
        kubelet: {
          imagePullCredentialsVerificationPolicy: 'AlwaysVerify',
          preloadedImagesVerificationAllowlist: ['registry.io/*'],
          imageCredentialProviderConfigPath: '/nonexistent/credential-provider-config.yaml',
          imageCredentialProviderBinDir: '/nonexistent',
        },
      }),
    );
    try {
      await start(s);
      await advance(s.clock, 5_000, 500);
      const refused = events.requests
        .map((r) => r.body as { reason?: string; message?: string; involvedObject?: { kind?: string } })
        .filter((e) => e?.involvedObject?.kind === 'VirtualNode')
        .map((e) => `${e.reason}: ${e.message}`);
      expect(refused).to.deep.equal([
        'InvalidImagePullCredentialsSettings: spec.kubelet image pull credentials settings refused, the kubelet\'s defaults are used: invalid configuration: can\'t set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"',
        "InvalidCredentialProviderConfig: spec.kubelet image credential provider settings refused, the kubelet's defaults are used: failed to load external credential provider config: ENOENT: no such file or directory, open '/nonexistent/credential-provider-config.yaml'",
      ]);
    } finally {
      await s.node.stop();
      await s.informer.stop();
    }
  });

  it('reads container env references through the shared sources, never by GETs of its own', async () => {
    const asked: string[] = [];
    const sources: VolumeSources = {
      getConfigMap: async (ns, n) => (asked.push(`cm ${ns}/${n}`), { data: { A: '1' } }),
      getSecret: async (ns, n) => (
        asked.push(`secret ${ns}/${n}`),
        { data: { B: Buffer.from('2').toString('base64') } }
      ),
      getPersistentVolumeClaim: async () => undefined,
      getPersistentVolume: async () => undefined,
    };
    const s = setup(() => ({ sources }));
    try {
      await start(s);
      const p = pod('env');
      p.spec!.containers[0]!.env = [
        { name: 'A', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'A' } } },
        { name: 'B', valueFrom: { secretKeyRef: { name: 'sec', key: 'B' } } },
      ];
      s.pods.create(p);
      await advance(s.clock, 3_000);
      expect(s.pods.get('default/env')!.status?.phase).to.equal('Running');
      expect(asked).to.include.members(['cm default/cfg', 'secret default/sec']);
      expect(s.client.requests.filter((r) => /\/(configmaps|secrets)\//.test(r.path))).to.deep.equal([]);
    } finally {
      await s.node.stop();
      await s.informer.stop();
    }
  });
});

describe('KubeletManagedNode spec.kubelet.allowedUnsafeSysctls (kubelet --allowed-unsafe-sysctls)', () => {
  const withSysctl = (name: string, sysctl: string): Pod & { metadata: { name: string } } => {
    const p = pod(name);
    p.spec.securityContext = { sysctls: [{ name: sysctl, value: '1' }] };
    return p;
  };

  it('admits the unsafe sysctls the spec allows and refuses the others with SysctlForbidden', async () => {
    const s = setup(undefined, spec({ kubelet: { allowedUnsafeSysctls: ['kernel.msg*'] } }));
    try {
      await start(s);
      s.pods.create(withSysctl('allowed', 'kernel.msgmax'));
      s.pods.create(withSysctl('forbidden', 'kernel.shm_rmid_forced.x'));
      await advance(s.clock, 3_000);
      expect(s.pods.get('default/allowed')!.status?.phase).to.equal('Running');
      expect(s.pods.get('default/forbidden')!.status).to.include({
        phase: 'Failed',
        reason: 'SysctlForbidden',
      });
    } finally {
      await s.node.stop();
      await s.informer.stop();
    }
  });

  it('does not build a node whose pattern is not namespaced, in the kubelet words', () => {
    expect(() => setup(undefined, spec({ kubelet: { allowedUnsafeSysctls: ['*'] } }))).to.throw(
      /allowedUnsafeSysctls: the sysctls "" are not known to be namespaced/,
    );
  });
});

describe('KubeletManagedNode spec.kubelet.crashLoopBackOff (KubeletCrashLoopBackOffMax)', () => {
  for (const [what, kubelet, ms] of [
    ['the configured period', { crashLoopBackOff: { maxContainerRestartPeriodSeconds: 20 } }, 20_000],
    ["the kubelet's default 300 s", {}, 300_000],
  ] as const) {
    it(`caps the node's restart back-off at ${what}, as its /configz says`, async () => {
      const s = setup(undefined, spec({ kubelet }));
      try {
        await start(s);
        const settings = s.registry.nodes()[0]!.kubeletSettings!();
        expect(settings.maxContainerRestartPeriodMs).to.equal(ms);
      } finally {
        await s.node.stop();
        await s.informer.stop();
      }
    });
  }
});

describe('kubeletNodeFactory.needsRestart', () => {
  const factory = kubeletNodeFactory({
    client: {} as KubeClient,
    clock: new FakeClock(),
    logger: silentLogger,
    defaultInternalIP: '10.0.0.1',
    nodeApiPort: 10250,
  });

  it('restarts for another runtime, kubelet setting, address or node name; not for labels or capacity', () => {
    const base = spec();
    const restart = [
      spec({ runtime: { type: 'sim', sim: { podCIDR: '10.78.0.0/24' } } }),
      spec({ kubelet: { allowedUnsafeSysctls: ['net.*'] } }),
      spec({ internalIP: '10.0.0.9' }),
      spec({ nodeName: 'other' }),
    ];
    for (const s of restart) expect(factory.needsRestart(base, s), JSON.stringify(s)).to.equal(true);
    const inPlace = [
      spec({ labels: { team: 'b' } }),
      spec({ capacity: { pods: 10 } }),
      spec({ taints: [{ key: 'k', effect: 'NoSchedule' }] }),
    ];
    for (const s of inPlace) expect(factory.needsRestart(base, s), JSON.stringify(s)).to.equal(false);
  });
});
