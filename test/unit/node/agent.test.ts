import { expect } from 'chai';
import type { Node } from '../../../src/api/node.js';
import { parseVirtualNodeSpec, type VirtualNodeSpec } from '../../../src/api/virtualnode.js';
import { EventRecorder, type CoreEvent } from '../../../src/kube/events.js';
import { StartupHold } from '../../../src/kube/startuphold.js';
import { NodeAgent, type NodeAgentConfig } from '../../../src/node/agent.js';
import { RuntimeState } from '../../../src/node/runtimestate.js';
import type { NodeHeartbeatAPI } from '../../../src/node/api.js';
import { FakeClock } from '../../../src/util/clock.js';
import { isInvalidArgument } from '../../../src/util/errors.js';
import { FakeNodeAPI, FakeRuntime, RecordingRecorder, flush } from './fakeapi.js';

const T0 = Date.UTC(2026, 0, 1);

function spec(extra: Record<string, unknown> = {}): VirtualNodeSpec {
  const r = parseVirtualNodeSpec({ runtime: { type: 'sim' }, ...extra });
  if (!r.ok) throw new Error(r.message);
  return r.spec;
}

async function advance(clock: FakeClock, ms: number, step = 500): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    clock.advance(Math.min(step, ms - done));
    await flush(5);
  }
}

function setup(over: Partial<NodeAgentConfig> = {}) {
  const clock = new FakeClock(T0);
  const api = new FakeNodeAPI(clock);
  const runtime = new FakeRuntime();
  const recorder = new RecordingRecorder();
  const registered: Node[] = [];
  const cfg: NodeAgentConfig = {
    virtualNodeName: 'vn-1',
    nodeName: 'vn-1',
    spec: spec({ labels: { team: 'a' }, capacity: { cpu: '8', memory: '32Gi', pods: 50 } }),
    internalIP: '127.0.0.2',
    api,
    runtime,
    recorder,
    clock,
    hostNetwork: true,
    onRegistered: (n) => void registered.push(n),
    ...over,
  };
  return { clock, api, runtime, recorder, registered, cfg, agent: new NodeAgent(cfg) };
}

describe('NodeAgent', () => {
  it('validates its config with typed InvalidArgument errors', () => {
    const { cfg } = setup();
    const bad: Partial<NodeAgentConfig>[] = [
      { api: undefined },
      { runtime: undefined },
      { runtime: { version: cfg.runtime.version } as never },
      { recorder: undefined },
      { clock: undefined },
      { nodeName: '' },
      { virtualNodeName: '' },
      { internalIP: 'not-an-ip' },
      { spec: undefined },
      { hostNetwork: undefined as never },
      { daemonPort: 70000 },
      { heartbeatApi: { getLease: cfg.api.getLease } as never },
    ];
    for (const b of bad) {
      let err: unknown;
      try {
        new NodeAgent({ ...cfg, ...b });
      } catch (e) {
        err = e;
      }
      expect(isInvalidArgument(err), JSON.stringify(Object.keys(b))).to.equal(true);
    }
  });

  it('registers the Node, heartbeats and reports Ready; ready resolves', async () => {
    const { clock, api, recorder, registered, agent } = setup();
    agent.start();
    await flush();
    await agent.ready;
    const node = api.nodes.get('vn-1')!;
    expect(node.metadata.labels).to.include({
      'kubernetes.io/hostname': 'vn-1',
      'kubelet-operator.dev/virtual-node': 'vn-1',
      team: 'a',
    });
    expect(node.spec).to.deep.equal({});
    expect(node.status!.capacity).to.deep.equal({
      cpu: '8',
      memory: '32Gi',
      'ephemeral-storage': '100Gi',
      pods: '50',
    });
    expect(node.status!.allocatable).to.deep.equal(node.status!.capacity);
    expect(node.status!.addresses).to.deep.equal([
      { type: 'InternalIP', address: '127.0.0.2' },
      { type: 'Hostname', address: 'vn-1' },
    ]);
    expect(node.status!.daemonEndpoints).to.deep.equal({ kubeletEndpoint: { Port: 10250 } });
    expect(node.status!.nodeInfo!.kubeletVersion).to.equal('v1.37.2-kubelet-operator-0.1.0');
    expect(api.leases.get('vn-1')!.metadata.ownerReferences![0]!.uid).to.equal(node.metadata.uid);
    expect(agent.nodeUID).to.equal(node.metadata.uid);
    expect(registered.map((n) => n.metadata.uid)).to.deep.equal([node.metadata.uid]);
    expect(recorder.reasons()).to.deep.equal([
      'Starting',
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
      'NodeReady',
    ]);
    expect(recorder.events[0]).to.deep.include({ kind: 'Node', uid: 'vn-1', message: 'Starting kubelet.' });
    expect(agent.health()).to.deep.include({
      registered: true,
      ready: true,
      leaseFresh: true,
      lastRenewTime: clock.now(),
      statusWrites: 1,
    });
    await agent.stop();
  });

  it('renews the Lease and updates node status through heartbeatApi, and registers through api', async () => {
    // Status reported every 10 s, so a minute holds several status writes.
    const { clock, api, cfg } = setup({ spec: spec({ heartbeat: { statusReportFrequencySeconds: 10 } }) });
    const viaHeartbeat: string[] = [];
    const heartbeatApi: NodeHeartbeatAPI = {
      getNode: (n) => (viaHeartbeat.push('getNode'), api.getNode(n)),
      patchNodeStatus: (n, p) => (viaHeartbeat.push('patchNodeStatus'), api.patchNodeStatus(n, p)),
      getLease: (n) => (viaHeartbeat.push('getLease'), api.getLease(n)),
      createLease: (l) => (viaHeartbeat.push('createLease'), api.createLease(l)),
      updateLease: (l) => (viaHeartbeat.push('updateLease'), api.updateLease(l)),
    };
    const agent = new NodeAgent({ ...cfg, heartbeatApi });
    agent.start();
    await flush();
    await agent.ready;
    // A status update that has to read the Node (a failed patch drops the seeded copy).
    api.fail('patchNodeStatus', 'Conflict');
    await advance(clock, 60_000);
    await agent.stop();

    const counts = (list: string[]) =>
      list.reduce<Record<string, number>>((m, k) => ((m[k] = (m[k] ?? 0) + 1), m), {});
    const all = counts(api.calls.map((c) => c.method));
    const hb = counts(viaHeartbeat);
    expect(all.createNode, 'registered through api').to.equal(1);
    expect(viaHeartbeat).to.not.include('createNode');
    expect(hb.updateLease).to.be.greaterThan(1);
    expect(hb.patchNodeStatus).to.be.greaterThan(1);
    expect(hb.getNode, 'the status loop reads the Node through heartbeatApi').to.be.greaterThan(0);
    for (const m of ['createLease', 'updateLease', 'patchNodeStatus'])
      expect(hb[m], `every ${m} went through heartbeatApi`).to.equal(all[m]);
  });

  it('uses the heartbeat settings of the spec', async () => {
    const { clock, api, agent } = setup({
      spec: spec({
        heartbeat: { leaseDurationSeconds: 20, renewIntervalSeconds: 2, statusUpdateFrequencySeconds: 5 },
      }),
    });
    agent.start();
    await flush();
    await advance(clock, 20_000);
    expect(api.leases.get('vn-1')!.spec.leaseDurationSeconds).to.equal(20);
    expect(api.count('updateLease')).to.equal(10);
    // Five status rounds in 20 s; the first computes on the Node registration just created, without a GET.
    expect(api.count('getNode')).to.equal(4);
    expect(api.count('patchNodeStatus')).to.be.at.least(1);
    await agent.stop();
  });

  it('writes the first status once firstStatusAfter resolves (the first relist), or after 5 s without it; the Lease goes on', async () => {
    for (const settles of [true, false]) {
      let relisted!: () => void;
      const firstRelist = new Promise<void>((resolve) => (relisted = resolve));
      const { clock, api, agent } = setup({ firstStatusAfter: () => firstRelist });
      agent.start();
      await advance(clock, 2_000);
      expect(api.nodes.has('vn-1'), 'registered at once').to.equal(true);
      expect(api.count('createLease') + api.count('updateLease'), 'the Lease is not held up').to.be.at.least(
        1,
      );
      expect(api.count('patchNodeStatus'), 'no status before the first relist').to.equal(0);
      if (settles) {
        relisted();
        await flush(10);
        expect(api.count('patchNodeStatus'), 'right after the first relist').to.equal(1);
      } else {
        await advance(clock, 2_500);
        expect(api.count('patchNodeStatus')).to.equal(0);
        await advance(clock, 1_000);
        expect(api.count('patchNodeStatus'), 'after FIRST_STATUS_WAIT_MS').to.equal(1);
      }
      await agent.ready;
      await agent.stop();
    }
  });

  it('with the runtime checked healthy first, registers Ready once the first relist is in (bounded), with no NodeReady Event', async () => {
    for (const settles of [true, false]) {
      let relisted!: () => void;
      const firstRelist = new Promise<void>((resolve) => (relisted = resolve));
      let plegHealthy = false;
      const base = setup();
      const runtimeState = new RuntimeState({
        nodeName: 'vn-1',
        runtime: base.runtime,
        clock: base.clock,
        healthChecks: () => (plegHealthy ? [] : ['PLEG is not healthy: pleg has yet to be successful']),
      });
      // The owner checks the runtime before it starts the node (KubeletManagedNode.start).
      await runtimeState.update();
      const { clock } = base;
      const { api, recorder, agent } = setup({
        runtimeState,
        firstStatusAfter: () => firstRelist,
        clock: base.clock,
        runtime: base.runtime,
      });
      agent.start();
      await advance(clock, 1_000);
      expect(api.nodes.has('vn-1'), 'registration waits for the first relist').to.equal(false);
      if (settles) {
        plegHealthy = true;
        relisted();
        await flush(10);
      } else {
        await advance(clock, 4_500);
      }
      expect(api.count('createNode'), `registered (settles: ${settles})`).to.equal(1);
      const ready = api.nodes.get('vn-1')!.status!.conditions!.find((c) => c.type === 'Ready')!;
      if (settles) {
        expect(ready).to.include({ status: 'True', reason: 'KubeletReady' });
      } else {
        expect(ready).to.include({ status: 'False', reason: 'KubeletNotReady' });
        expect(ready.message).to.contain('pleg has yet to be successful');
      }
      await agent.ready;
      // The create was the first report: the first round (at once, it does not wait for the relist a second
      // time) finds nothing changed and writes nothing.
      expect(api.count('patchNodeStatus')).to.equal(0);
      expect(recorder.reasons()).to.not.include('NodeReady');
      if (!settles) {
        plegHealthy = true;
        await advance(clock, 10_000);
        expect(recorder.reasons()).to.include('NodeReady');
        expect(api.count('patchNodeStatus'), 'the change to Ready written').to.equal(1);
      }
      await agent.stop();
    }
  });

  it('a Node it adopts (already there) gets its first status written at once; one it created does not', async () => {
    const created: boolean[] = [];
    const first = setup({ onRegistered: (_n, c) => void created.push(c) });
    first.agent.start();
    await first.agent.ready;
    // Created NotReady (the runtime unchecked here), so the first round wrote the change to Ready.
    expect(first.api.count('patchNodeStatus')).to.equal(1);
    await first.agent.stop();
    // Another agent for the same Node (a restart, another replica): the Node's status is someone's report of
    // an earlier time, not this agent's.
    const second = new NodeAgent({ ...first.cfg });
    second.start();
    await second.ready;
    expect(first.api.count('createNode')).to.equal(2);
    expect(first.api.count('patchNodeStatus'), 'adopted: written at once').to.equal(2);
    // The registration hook tells the two apart (the CSINode of a created Node is created at once).
    expect(created).to.deep.equal([true, false]);
    await second.stop();
  });

  it('creates the Lease of a Node it created only once the other nodes of the process have registered', async () => {
    const clock = new FakeClock(T0);
    const hold = new StartupHold(clock, 5_000);
    const a = setup({ clock, leaseHold: hold });
    const b = new NodeAgent({ ...a.cfg, nodeName: 'vn-2', virtualNodeName: 'vn-2' });
    // vn-2's first create fails: it registers after a back-off of 100 ms.
    a.api.fail('createNode', 'Unavailable');
    b.start();
    await flush();
    a.agent.start();
    await flush();
    expect(a.api.nodes.has('vn-1'), 'vn-1 registered').to.equal(true);
    expect(a.api.leases.has('vn-1'), 'its Lease waits for vn-2').to.equal(false);
    await advance(clock, 500, 100);
    expect(a.api.nodes.has('vn-2')).to.equal(true);
    expect([...a.api.leases.keys()].sort()).to.deep.equal(['vn-1', 'vn-2']);
    await Promise.all([a.agent.ready, b.ready]);
    await Promise.all([a.agent.stop(), b.stop()]);
  });

  it("creates its Lease after at most the hold's bound when another node cannot register", async () => {
    const clock = new FakeClock(T0);
    const hold = new StartupHold(clock, 5_000);
    const a = setup({ clock, leaseHold: hold });
    // Registering for ever (every create fails): it holds the Lease at most 5 s.
    hold.track(new Promise(() => {}));
    a.agent.start();
    await flush();
    expect(a.api.nodes.has('vn-1')).to.equal(true);
    await advance(clock, 4_500);
    expect(a.api.leases.has('vn-1')).to.equal(false);
    await advance(clock, 1_000);
    expect(a.api.leases.has('vn-1')).to.equal(true);
    await a.agent.ready;
    await a.agent.stop();
  });

  it('registers at once, NotReady, when the runtime check failed (no wait for a relist)', async () => {
    const base = setup();
    base.runtime.down = true;
    const runtimeState = new RuntimeState({ nodeName: 'vn-1', runtime: base.runtime, clock: base.clock });
    await runtimeState.update();
    const never = new Promise<void>(() => {});
    const { api, agent } = setup({
      runtimeState,
      firstStatusAfter: () => never,
      clock: base.clock,
      runtime: base.runtime,
    });
    agent.start();
    await flush(10);
    expect(api.nodes.has('vn-1')).to.equal(true);
    const ready = api.nodes.get('vn-1')!.status!.conditions!.find((c) => c.type === 'Ready')!;
    expect(ready.status).to.equal('False');
    await agent.stop();
  });

  it('registers again, with a new UID and Lease owner, when the Node is deleted behind its back', async () => {
    const { clock, api, registered, agent } = setup();
    agent.start();
    await flush();
    await agent.ready;
    const first = agent.nodeUID;
    api.nodes.delete('vn-1');
    await advance(clock, 20_000);
    const second = api.nodes.get('vn-1')!.metadata.uid;
    expect(second).to.be.a('string').and.not.equal(first);
    expect(agent.nodeUID).to.equal(second);
    expect(registered).to.have.length(2);
    expect(api.leases.get('vn-1')!.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'Node', name: 'vn-1', uid: second },
    ]);
    await agent.stop();
  });

  it('keeps retrying registration, and stop() ends it without deleting anything', async () => {
    const { clock, api, agent } = setup();
    api.fail('createNode', 'Unavailable', 1000);
    agent.start();
    await flush();
    await advance(clock, 10_000);
    expect(agent.health().registered).to.equal(false);
    await agent.stop();
    let rejected = false;
    await agent.ready.catch(() => (rejected = true));
    expect(rejected).to.equal(true);
    const calls = api.calls.length;
    await advance(clock, 30_000, 1000);
    expect(api.calls.length).to.equal(calls);
    expect(clock.pendingTimers()).to.equal(0);
  });

  it('stop() leaves the Node and Lease in place and issues no more requests', async () => {
    const { clock, api, agent } = setup();
    agent.start();
    await flush();
    await agent.ready;
    await agent.stop();
    await agent.done;
    const calls = api.calls.length;
    await advance(clock, 60_000, 1000);
    expect(api.calls.length).to.equal(calls);
    expect(api.nodes.has('vn-1')).to.equal(true);
    expect(api.leases.has('vn-1')).to.equal(true);
    expect(api.count('deleteNode') + api.count('deleteLease')).to.equal(0);
  });

  it('gives the Node events it records in one millisecond distinct names (real EventRecorder)', async () => {
    const created: CoreEvent[] = [];
    const clock = new FakeClock(T0);
    const recorder = new EventRecorder(
      { create: async (_ns, e) => void created.push(e), patch: async () => {} },
      clock,
      'vn-1',
    );
    const { agent } = setup({ recorder, clock, api: new FakeNodeAPI(clock) });
    agent.start();
    await flush();
    await agent.ready;
    await recorder.flush();
    expect(created.map((e) => e.reason)).to.deep.equal([
      'Starting',
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
      'NodeReady',
    ]);
    expect(new Set(created.map((e) => e.metadata.name)).size).to.equal(created.length);
    expect(created[0]).to.deep.include({
      source: { component: 'kubelet', host: 'vn-1' },
      metadata: created[0]!.metadata,
    });
    expect(created[0]!.involvedObject).to.deep.equal({ kind: 'Node', name: 'vn-1', uid: 'vn-1' });
    await agent.stop();
  });
});
