import { expect } from 'chai';
import type { Node, NodeStatus } from '../../../src/api/node.js';
import {
  NodeStatusLoop,
  RUNTIME_DOWN,
  RUNTIME_NOT_CHECKED,
  nodeConditionEvents,
  readinessErrors,
  systemInfo,
  type NodeStatusParams,
} from '../../../src/node/nodestatus.js';
import { withCachedNodeReads } from '../../../src/node/api.js';
import { RuntimeState } from '../../../src/node/runtimestate.js';
import { nodeStatusChanged } from '../../../src/node/setters.js';
import { FakeClock } from '../../../src/util/clock.js';
import { FakeNodeAPI, FakeRuntime, NODE_STATUS_PARAMS, RecordingRecorder, flush } from './fakeapi.js';

const T0 = Date.UTC(2026, 0, 1);

async function advance(clock: FakeClock, ms: number, step = 500): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    clock.advance(Math.min(step, ms - done));
    await flush(5);
  }
}

const params: NodeStatusParams = NODE_STATUS_PARAMS;

describe('readinessErrors', () => {
  const ok = (runtime: boolean, network: boolean) => ({
    state: 'ok' as const,
    conditions: [
      {
        type: 'RuntimeReady',
        status: runtime,
        reason: runtime ? '' : 'Broken',
        message: runtime ? '' : 'boom',
      },
      {
        type: 'NetworkReady',
        status: network,
        reason: network ? '' : 'NoCNI',
        message: network ? '' : 'cni',
      },
    ],
  });

  it('uses the kubelet wording for each runtime state', () => {
    expect(readinessErrors({ state: 'unchecked' }, false, [])).to.deep.equal([RUNTIME_NOT_CHECKED]);
    expect(readinessErrors({ state: 'failed', error: 'x' }, false, [])).to.deep.equal([RUNTIME_DOWN]);
    expect(readinessErrors(ok(true, true), false, [])).to.deep.equal([]);
    expect(readinessErrors(ok(false, true), false, [])).to.deep.equal([
      'container runtime not ready: RuntimeReady=false reason:Broken message:boom',
    ]);
    expect(readinessErrors(ok(true, false), false, [])).to.deep.equal([
      'container runtime network not ready: NetworkReady=false reason:NoCNI message:cni',
    ]);
  });

  it('ignores NetworkReady for host-network nodes and appends health errors before network', () => {
    expect(readinessErrors(ok(true, false), true, [])).to.deep.equal([]);
    expect(readinessErrors(ok(true, false), false, ['PLEG is not healthy: x'])).to.deep.equal([
      'PLEG is not healthy: x',
      'container runtime network not ready: NetworkReady=false reason:NoCNI message:cni',
    ]);
    expect(readinessErrors({ state: 'ok', conditions: [] }, false, [])).to.have.length(2);
  });
});

describe('systemInfo', () => {
  it('fills versions honestly and derives stable, distinct IDs from the node name', () => {
    const rv = { version: 'v1', runtimeName: 'containerd', runtimeVersion: '2.1.0', runtimeApiVersion: 'v1' };
    const a = systemInfo({ ...params, runtimeVersion: rv });
    const again = systemInfo({ ...params, runtimeVersion: rv });
    const b = systemInfo({ ...params, nodeName: 'vn-2', runtimeVersion: rv });
    expect(a).to.deep.equal(again);
    expect(a).to.include({
      containerRuntimeVersion: 'containerd://2.1.0',
      kubeletVersion: 'v1.37.2-kubelet-operator-0.1.0',
      kubeProxyVersion: '',
      operatingSystem: 'linux',
      architecture: 'amd64',
    });
    expect(a.machineID).to.match(/^[0-9a-f]{32}$/);
    expect(a.systemUUID).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.bootID).to.not.equal(a.systemUUID);
    expect(b.machineID).to.not.equal(a.machineID);
    expect(systemInfo({ ...params, runtimeVersion: undefined }).containerRuntimeVersion).to.equal('');
  });
});

describe('nodeConditionEvents', () => {
  const cond = (type: string, status: 'True' | 'False') => ({ type, status });
  it('reports pressure conditions when first seen and on flips, Ready only on flips', () => {
    const first = [
      cond('MemoryPressure', 'False'),
      cond('DiskPressure', 'False'),
      cond('PIDPressure', 'False'),
      cond('Ready', 'False'),
    ];
    expect(nodeConditionEvents(undefined, first)).to.deep.equal([
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
    ]);
    const ready = first.map((c) => (c.type === 'Ready' ? cond('Ready', 'True') : c));
    expect(nodeConditionEvents(first, ready)).to.deep.equal(['NodeReady']);
    expect(nodeConditionEvents(ready, ready)).to.deep.equal([]);
    expect(nodeConditionEvents(ready, first)).to.deep.equal(['NodeNotReady']);
    expect(
      nodeConditionEvents([cond('MemoryPressure', 'False')], [cond('MemoryPressure', 'True')]),
    ).to.deep.equal(['NodeHasInsufficientMemory']);
  });
});

describe('nodeStatusChanged against a status as the API server returns it', () => {
  const ours: NodeStatus = {
    capacity: { cpu: '4', memory: '17179869184', pods: '110' },
    conditions: [
      {
        type: 'MemoryPressure',
        status: 'False',
        reason: 'R',
        message: 'm',
        lastHeartbeatTime: 'a',
        lastTransitionTime: 't',
      },
      {
        type: 'Ready',
        status: 'True',
        reason: 'KubeletReady',
        message: 'ok',
        lastHeartbeatTime: 'a',
        lastTransitionTime: 't',
      },
    ],
    nodeInfo: { ...systemInfo({ ...params, runtimeVersion: undefined }) },
  };
  it('ignores key order, quantity spelling, condition order and omitted zero values', () => {
    const server = {
      nodeInfo: Object.fromEntries(
        Object.entries(ours.nodeInfo!)
          .reverse()
          .filter(([, v]) => v !== ''),
      ),
      conditions: [
        {
          lastTransitionTime: 't',
          lastHeartbeatTime: 'b',
          message: 'ok',
          reason: 'KubeletReady',
          status: 'True',
          type: 'Ready',
        },
        {
          message: 'm',
          reason: 'R',
          status: 'False',
          type: 'MemoryPressure',
          lastHeartbeatTime: 'b',
          lastTransitionTime: 't',
        },
      ],
      capacity: { pods: '110', memory: '16Gi', cpu: '4' },
    } as unknown as NodeStatus;
    expect(nodeStatusChanged(server, ours, 0, 1000)).to.equal(false);
    const flipped = { ...ours, conditions: [{ ...ours.conditions![1]!, status: 'False' as const }] };
    expect(nodeStatusChanged(server, flipped, 0, 1000)).to.equal(true);
    expect(
      nodeStatusChanged(server, { ...ours, capacity: { ...ours.capacity, cpu: '5' } }, 0, 1000),
    ).to.equal(true);
  });
});

function setup(opts: { hostNetwork?: boolean; healthChecks?: () => string[] } = {}) {
  const clock = new FakeClock(T0);
  const api = new FakeNodeAPI(clock);
  const runtime = new FakeRuntime();
  const recorder = new RecordingRecorder();
  let missing = 0;
  const runtimeState = new RuntimeState({
    nodeName: 'vn-1',
    runtime,
    clock,
    ...(opts.healthChecks ? { healthChecks: opts.healthChecks } : {}),
  });
  const loop = new NodeStatusLoop({
    api,
    clock,
    runtimeState,
    recorder,
    params,
    hostNetwork: opts.hostNetwork ?? false,
    onNodeMissing: () => missing++,
  });
  const register = async (): Promise<Node> => {
    const status = await loop.initialStatus();
    return api.createNode({ metadata: { name: 'vn-1' }, status });
  };
  return { clock, api, runtime, recorder, loop, runtimeState, register, missing: () => missing };
}

const readyOf = (api: FakeNodeAPI) =>
  api.nodes.get('vn-1')!.status!.conditions!.find((c) => c.type === 'Ready')!;

describe('NodeStatusLoop', () => {
  it('registers NotReady (runtime not checked yet), then turns Ready on the first sync', async () => {
    const { api, loop, register, recorder } = setup();
    const node = await register();
    const initialReady = node.status!.conditions!.find((c) => c.type === 'Ready')!;
    expect(initialReady).to.include({
      status: 'False',
      reason: 'KubeletNotReady',
      message: RUNTIME_NOT_CHECKED,
    });
    expect(node.status!.nodeInfo!.containerRuntimeVersion).to.equal('fake://1.2.3');
    expect(recorder.reasons()).to.deep.equal([
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
    ]);
    loop.start();
    await flush();
    await loop.ready;
    expect(readyOf(api)).to.include({
      status: 'True',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
    });
    expect(recorder.reasons().slice(3)).to.deep.equal(['NodeReady']);
    expect(recorder.events.at(-1)).to.deep.include({
      kind: 'Node',
      name: 'vn-1',
      uid: 'vn-1',
      type: 'Normal',
      message: 'Node vn-1 status is now: NodeReady',
    });
    expect(api.count('patchNodeStatus')).to.equal(1);
    await loop.stop();
  });

  it('writes only on change, or every report frequency', async () => {
    const { clock, api, loop, register } = setup();
    await register();
    loop.start();
    await flush();
    expect(api.count('patchNodeStatus')).to.equal(1);
    await advance(clock, 60_000);
    expect(api.count('getNode')).to.equal(7);
    expect(api.count('patchNodeStatus')).to.equal(1);
    await advance(clock, 5 * 60_000 - 60_000);
    expect(api.count('patchNodeStatus')).to.equal(2);
    await loop.stop();
  });

  it('goes NotReady within one interval when the runtime is down, and Ready again after', async () => {
    const { clock, api, runtime, loop, register, recorder } = setup();
    await register();
    loop.start();
    await flush();
    runtime.down = true;
    await advance(clock, 10_000);
    const ready = readyOf(api);
    expect(ready).to.include({ status: 'False', reason: 'KubeletNotReady', message: RUNTIME_DOWN });
    expect(ready.lastTransitionTime).to.equal('2026-01-01T00:00:10Z');
    expect(loop.isReady()).to.equal(false);
    runtime.down = false;
    runtime.runtimeReady = false;
    await advance(clock, 10_000);
    expect(readyOf(api).message).to.equal(
      'container runtime not ready: RuntimeReady=false reason:Broken message:',
    );
    runtime.runtimeReady = true;
    await advance(clock, 10_000);
    expect(readyOf(api)).to.include({ status: 'True', lastTransitionTime: '2026-01-01T00:00:30Z' });
    expect(recorder.reasons().filter((r) => r === 'NodeReady' || r === 'NodeNotReady')).to.deep.equal([
      'NodeReady',
      'NodeNotReady',
      'NodeReady',
    ]);
    expect(api.count('patchNodeStatus')).to.equal(4);
    await loop.stop();
  });

  it('lets NetworkReady=false pass for host-network nodes only', async () => {
    const host = setup({ hostNetwork: true });
    host.runtime.networkReady = false;
    await host.register();
    host.loop.start();
    await flush();
    expect(readyOf(host.api).status).to.equal('True');
    await host.loop.stop();

    const cni = setup({ hostNetwork: false });
    cni.runtime.networkReady = false;
    await cni.register();
    cni.loop.start();
    await flush();
    expect(readyOf(cni.api)).to.include({ status: 'False', reason: 'KubeletNotReady' });
    expect(readyOf(cni.api).message).to.match(/^container runtime network not ready: NetworkReady=false/);
    await cni.loop.stop();
  });

  it('hands the pod CIDR the control plane assigns to the runtime once, and turns Ready in that round', async () => {
    const { clock, api, runtime, loop, register } = setup({ hostNetwork: false });
    runtime.networkReady = false;
    runtime.cniFromPodCIDR = true;
    await register();
    loop.start();
    await flush();
    expect(readyOf(api).message).to.match(/^container runtime network not ready/);
    // Until it is first Ready, a new node reads its Node every second (kubelet fastStatusUpdateOnce).
    await advance(clock, 3_000);
    expect(api.count('getNode')).to.equal(1 + 3);
    expect(runtime.podCIDRs).to.deep.equal([]);

    // kube-controller-manager's node IPAM assigns the node a range.
    api.nodes.get('vn-1')!.spec = { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] };
    await advance(clock, 1_000);
    expect(runtime.podCIDRs).to.deep.equal(['10.244.1.0/24']);
    expect(readyOf(api).status).to.equal('True');
    expect(loop.isReady()).to.equal(true);

    // Ready: back to the update frequency, and the same range is not handed over again.
    const reads = api.count('getNode');
    await advance(clock, 30_000);
    expect(api.count('getNode') - reads).to.equal(3);
    expect(runtime.podCIDRs).to.deep.equal(['10.244.1.0/24']);
    await loop.stop();
  });

  it('reads fast only during the grace period while a node never turns Ready', async () => {
    const { clock, api, runtime, loop, register } = setup({ hostNetwork: false });
    runtime.networkReady = false;
    await register();
    loop.start();
    await flush();
    await advance(clock, 120_000, 1_000);
    const fast = api.count('getNode');
    expect(fast).to.be.within(119, 121);
    await advance(clock, 60_000, 1_000);
    expect(api.count('getNode') - fast).to.be.within(5, 7);
    await loop.stop();
  });

  it('reports injected health check errors (PLEG)', async () => {
    let errors: string[] = [];
    const { clock, api, loop, register } = setup({ healthChecks: () => errors });
    await register();
    loop.start();
    await flush();
    errors = ['PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s'];
    await advance(clock, 10_000);
    expect(readyOf(api)).to.include({ status: 'False', message: errors[0] });
    await loop.stop();
  });

  it('retries a failed round at once, as the kubelet (5 tries), and tells its owner when the Node is gone', async () => {
    const { clock, api, loop, register, missing } = setup();
    await register();
    api.fail('patchNodeStatus', 'Unavailable');
    loop.start();
    await flush();
    expect(loop.writes).to.equal(1);
    expect(loop.lastError).to.equal(undefined);
    expect(api.count('getNode')).to.equal(2);
    // A round that fails five times waits for the next period.
    api.fail('getNode', 'Unavailable', 5);
    await advance(clock, 10_000);
    expect(loop.lastError).to.match(/injected Unavailable/);
    expect(api.count('getNode')).to.equal(7);
    await advance(clock, 10_000);
    expect(loop.lastError).to.equal(undefined);
    expect(missing()).to.equal(0);
    api.nodes.delete('vn-1');
    await advance(clock, 10_000);
    expect(missing()).to.equal(1);
    await loop.stop();
  });

  it('reads past a watch cache that has not seen a new Node yet: Ready in the first round', async () => {
    const { api, loop, register, missing } = setup();
    await register();
    api.fail('getNode', 'NotFound'); // the cached read (resourceVersion=0) misses the Node just created
    loop.start();
    await flush();
    await loop.ready;
    expect(readyOf(api)).to.include({ status: 'True' });
    expect(api.count('getNode')).to.equal(2);
    expect(missing()).to.equal(0);
  });

  it('times out a runtime that does not answer', async () => {
    const { clock, api, runtime, loop, register } = setup();
    await register();
    loop.start();
    await flush();
    runtime.status = () => new Promise(() => {});
    await advance(clock, 10_000 + 5_000);
    expect(readyOf(api)).to.include({ status: 'False', message: RUNTIME_DOWN });
    await loop.stop();
  });
});

describe('withCachedNodeReads', () => {
  const node = (rv: string): Node => ({ metadata: { name: 'n1', resourceVersion: rv }, status: {} }) as Node;

  it("answers the API server's cache reads from the watch and sends the others on", async () => {
    const sent: { name: string; fromCache: boolean }[] = [];
    const api = {
      getNode: (name: string, opts?: { fromCache?: boolean }) => {
        sent.push({ name, fromCache: !!opts?.fromCache });
        return Promise.resolve(node('server'));
      },
    };
    const watched = new Map([['n1', node('watch')]]);
    const cached = withCachedNodeReads(api, (name) => watched.get(name));
    expect((await cached.getNode('n1', { fromCache: true })).metadata.resourceVersion).to.equal('watch');
    expect(sent).to.deep.equal([]);
    // A retry reads the latest write; a node the watch has not seen yet is read from the server's cache.
    expect((await cached.getNode('n1')).metadata.resourceVersion).to.equal('server');
    expect((await cached.getNode('n2', { fromCache: true })).metadata.resourceVersion).to.equal('server');
    expect(sent).to.deep.equal([
      { name: 'n1', fromCache: false },
      { name: 'n2', fromCache: true },
    ]);
  });
});
