// NodeAgent against a real kube-apiserver + etcd: registration, Lease heartbeat, status writes only on change,
// Ready following the runtime, and deleteNode. The runtime is a small fake (version/status only): this test is
// about the Node, not containers. Also the Event sink itself: a create, an aggregating patch, metadata-only answers.
import { expect } from 'chai';
import type { Lease, Node } from '../../src/api/node.js';
import { parseVirtualNodeSpec } from '../../src/api/virtualnode.js';
import { KubeClient, PartialObjectMetadataJSON } from '../../src/kube/client.js';
import { EventRecorder, type CoreEvent } from '../../src/kube/events.js';
import { NodeAgent } from '../../src/node/agent.js';
import { restEventSink, restNodeAPI } from '../../src/node/api.js';
import { deleteNode } from '../../src/node/registration.js';
import type { RuntimeStatus, RuntimeVersion } from '../../src/runtime/types.js';
import { RealClock } from '../../src/util/clock.js';
import { KindError, errorKind } from '../../src/util/errors.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';

const COLD_BUILD_TIMEOUT_MS = 20 * 60_000;
const NODE = 'vn-int-1';

class FakeRuntime {
  down = false;
  async version(): Promise<RuntimeVersion> {
    return { version: 'v1', runtimeName: 'fakeruntime', runtimeVersion: '9.8.7', runtimeApiVersion: 'v1' };
  }
  async status(): Promise<RuntimeStatus> {
    if (this.down) throw new KindError('Unavailable', 'connection refused');
    return {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        // Host networking: a NetworkReady=false runtime must not make the node NotReady.
        {
          type: 'NetworkReady',
          status: false,
          reason: 'NetworkPluginNotReady',
          message: 'cni config uninitialized',
        },
      ],
      handlers: [],
    };
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const readyOf = (n: Node) => n.status?.conditions?.find((c) => c.type === 'Ready');

describe('NodeAgent against a real API server', function () {
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let agent: NodeAgent;
  let recorder: EventRecorder;
  const runtime = new FakeRuntime();
  const requests: { verb: string; resource: string; code: number; at: number }[] = [];

  const getNode = () => client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` });
  const getLease = () =>
    client.request<Lease>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`,
    });
  const statusPatches = () => requests.filter((r) => r.verb === 'PATCH' && r.resource === 'nodes/status');

  before(async function () {
    this.timeout(COLD_BUILD_TIMEOUT_MS);
    cp = await startControlPlane();
    client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), {
      onRequest: (verb, resource, code) => requests.push({ verb, resource, code, at: Date.now() }),
    });
    const parsed = parseVirtualNodeSpec({
      runtime: { type: 'cri', cri: { endpoint: 'unix:///run/fake.sock' } },
      labels: { 'example.com/team': 'node' },
      capacity: { cpu: '8', memory: '32Gi', pods: 50 },
      heartbeat: {
        leaseDurationSeconds: 10,
        renewIntervalSeconds: 1,
        statusUpdateFrequencySeconds: 1,
        statusReportFrequencySeconds: 300,
      },
    });
    if (!parsed.ok) throw new Error(parsed.message);
    const clock = new RealClock();
    recorder = new EventRecorder(restEventSink(client), clock, NODE);
    agent = new NodeAgent({
      virtualNodeName: 'vn-int',
      nodeName: NODE,
      spec: parsed.spec,
      internalIP: '127.0.0.2',
      api: restNodeAPI(client),
      runtime,
      recorder,
      clock,
      hostNetwork: true,
    });
    agent.start();
    await agent.ready;
  });

  after(async function () {
    this.timeout(30_000);
    await agent?.stop();
    client?.close();
    const failed = this.test?.parent?.tests.some((t) => t.state === 'failed') ?? false;
    await cp?.stop({ keepDir: failed });
  });

  it('registers a Ready Node with the kubelet labels, addresses, daemonEndpoints and nodeInfo', async () => {
    const node = await getNode();
    expect(node.metadata.labels).to.include({
      'kubernetes.io/hostname': NODE,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
      type: 'virtual-kubelet',
      'node.kubernetes.io/instance-type': 'virtual',
      'kubelet-operator.dev/virtual-node': 'vn-int',
      'example.com/team': 'node',
    });
    // We register without taints; the API server's TaintNodesByCondition admission adds not-ready, which
    // the node lifecycle controller (not running here) removes once the Node is Ready, as for a kubelet.
    expect((node.spec?.taints ?? []).filter((t) => t.key !== 'node.kubernetes.io/not-ready')).to.deep.equal(
      [],
    );
    expect(node.status!.addresses).to.deep.equal([
      { type: 'InternalIP', address: '127.0.0.2' },
      { type: 'Hostname', address: NODE },
    ]);
    expect(node.status!.daemonEndpoints).to.deep.equal({ kubeletEndpoint: { Port: 10250 } });
    expect(node.status!.nodeInfo).to.include({
      kubeletVersion: 'v1.37.2-kubelet-operator-0.1.0',
      containerRuntimeVersion: 'fakeruntime://9.8.7',
      operatingSystem: 'linux',
      architecture: 'amd64',
    });
    expect(node.status!.capacity).to.include({ cpu: '8', memory: '32Gi', pods: '50' });
    expect(readyOf(node)).to.include({ status: 'True', reason: 'KubeletReady' });
    expect(node.status!.conditions!.map((c) => c.type)).to.include.members([
      'MemoryPressure',
      'DiskPressure',
      'PIDPressure',
      'Ready',
    ]);
    expect(agent.nodeUID).to.equal(node.metadata.uid);

    await recorder.flush();
    const events = await client.request<{ items: CoreEvent[] }>({
      method: 'GET',
      path: '/api/v1/namespaces/default/events',
      query: { fieldSelector: `involvedObject.name=${NODE}` },
    });
    const reasons = events.items.map((e) => e.reason);
    expect(reasons).to.include.members([
      'Starting',
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
      'NodeReady',
    ]);
    const starting = events.items.find((e) => e.reason === 'Starting')!;
    expect(starting.message).to.equal('Starting kubelet.');
    expect(starting.source).to.deep.equal({ component: 'kubelet', host: NODE });
    expect(starting.involvedObject).to.include({ kind: 'Node', name: NODE, uid: NODE });
  });

  it('keeps the Lease owned by the Node and renews it on time', async function () {
    this.timeout(20_000);
    const node = await getNode();
    const lease = await getLease();
    expect(lease.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'Node', name: NODE, uid: node.metadata.uid },
    ]);
    expect(lease.spec).to.include({ holderIdentity: NODE, leaseDurationSeconds: 10 });
    expect(lease.spec.renewTime).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    // Sample the Lease for ~6 s and measure the gaps between renewTimes.
    const seen: number[] = [];
    const until = Date.now() + 6_000;
    while (Date.now() < until) {
      const t = Date.parse((await getLease()).spec.renewTime!);
      if (seen.at(-1) !== t) seen.push(t);
      await sleep(50);
    }
    const gaps = seen.slice(1).map((t, i) => t - seen[i]!);
    const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
    console.log(
      `      lease renewals: ${gaps.length} gaps, mean ${mean.toFixed(1)} ms, min ${Math.min(...gaps)} ms, max ${Math.max(...gaps)} ms`,
    );
    expect(gaps.length).to.be.within(4, 7);
    for (const g of gaps) expect(g).to.be.within(900, 1300);
    // The renewTime is fresh: the last renewal is within one interval of now.
    expect(Date.now() - seen.at(-1)!).to.be.below(1_500);
  });

  it('does not write node status again while nothing changes', async function () {
    this.timeout(20_000);
    const before = statusPatches().length;
    const gets = requests.filter((r) => r.verb === 'GET' && r.resource === 'nodes').length;
    await sleep(5_000);
    expect(statusPatches().length).to.equal(before);
    // ...while the loop did run: about one Node read per second.
    const reads = requests.filter((r) => r.verb === 'GET' && r.resource === 'nodes').length - gets;
    expect(reads).to.be.within(4, 7);
    expect(agent.health()).to.include({ ready: true, leaseFresh: true });
  });

  it('goes Ready=False (KubeletNotReady) within one status interval when the runtime is down, and back', async function () {
    this.timeout(20_000);
    const down = Date.now();
    runtime.down = true;
    const notReady = await eventually(
      async () => {
        const r = readyOf(await getNode());
        return r?.status === 'False' ? r : undefined;
      },
      5_000,
      'Ready=False',
    );
    const tookDown = Date.now() - down;
    expect(notReady).to.include({ reason: 'KubeletNotReady', message: 'container runtime is down' });
    expect(tookDown).to.be.below(1_000 + 500);

    const up = Date.now();
    runtime.down = false;
    const ready = await eventually(
      async () => {
        const r = readyOf(await getNode());
        return r?.status === 'True' ? r : undefined;
      },
      5_000,
      'Ready=True',
    );
    const tookUp = Date.now() - up;
    console.log(`      Ready=False after ${tookDown} ms, Ready=True again after ${tookUp} ms`);
    expect(ready.reason).to.equal('KubeletReady');
    expect(tookUp).to.be.below(1_500);
    await recorder.flush();
    const events = await client.request<{ items: CoreEvent[] }>({
      method: 'GET',
      path: '/api/v1/namespaces/default/events',
      query: { fieldSelector: `involvedObject.name=${NODE},reason=NodeNotReady` },
    });
    expect(events.items).to.have.length(1);
  });

  it('registers the Node again when it is deleted behind its back, and moves the Lease owner to it', async function () {
    this.timeout(20_000);
    const oldUID = (await getNode()).metadata.uid;
    await client.request({ method: 'DELETE', path: `/api/v1/nodes/${NODE}` });
    const node = await eventually(
      async () => {
        const n = await getNode();
        return n.metadata.uid !== oldUID && readyOf(n)?.status === 'True' ? n : undefined;
      },
      10_000,
      'the Node registered again',
    );
    // The new Node can be seen before the agent has handled its own create response: wait for it.
    await eventually(
      async () => (agent.nodeUID === node.metadata.uid ? true : undefined),
      5_000,
      'the agent to adopt the new Node UID',
    );
    const lease = await eventually(
      async () => {
        const l = await getLease();
        return l.metadata.ownerReferences?.[0]?.uid === node.metadata.uid ? l : undefined;
      },
      5_000,
      'the Lease owned by the new Node',
    );
    expect(lease.metadata.ownerReferences).to.have.length(1);
  });

  it('writes Events through the REST sink: a create, an aggregating patch, answers of metadata alone', async () => {
    const sink = restEventSink(client);
    const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const event: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'p.1875f0c0aaaa0001', namespace: 'default' },
      involvedObject: { kind: 'Pod', namespace: 'default', name: 'p', uid: 'u-1', apiVersion: 'v1' },
      reason: 'Pulled',
      message: 'Container image "busybox" already present on machine',
      source: { component: 'kubelet', host: 'node-a' },
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
      type: 'Normal',
      reportingComponent: 'kubelet',
      reportingInstance: 'node-a',
    };
    await sink.create('default', event);
    await sink.patch('default', event.metadata.name, { count: 2, lastTimestamp: at, message: event.message });
    const stored = await client.request<CoreEvent>({
      method: 'GET',
      path: `/api/v1/namespaces/${'default'}/events/${event.metadata.name}`,
    });
    expect(stored).to.include({ reason: 'Pulled', count: 2, message: event.message });

    // What the sink asks for, asked directly: the server answers both verbs with the metadata alone.
    const created = await client.request<Record<string, unknown>>({
      method: 'POST',
      path: `/api/v1/namespaces/${'default'}/events`,
      body: { ...event, metadata: { name: 'p.1875f0c0aaaa0002', namespace: 'default' } },
      accept: PartialObjectMetadataJSON,
    });
    expect(created.kind).to.equal('PartialObjectMetadata');
    expect(created).to.not.have.property('reason');
  });

  it('deleteNode removes the Node and its Lease', async () => {
    await agent.stop();
    await deleteNode(restNodeAPI(client), NODE);
    const gone = async (fn: () => Promise<unknown>): Promise<boolean> => {
      try {
        await fn();
        return false;
      } catch (err) {
        return errorKind(err) === 'NotFound';
      }
    };
    expect(await gone(getNode)).to.equal(true);
    expect(await gone(getLease)).to.equal(true);
  });
});
