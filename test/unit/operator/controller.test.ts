// The VirtualNode controller against an in-memory API and recording ManagedNodes: finalizer first, spec
// validation reported in status, one ManagedNode per VirtualNode (updated in place or restarted), pods
// routed by spec.nodeName, status written only on change, drain-then-remove on delete, retries with
// back-off. Time is a FakeClock; nothing here talks to a real API server.
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import { FINALIZER, type VirtualNode } from '../../../src/api/virtualnode.js';
import { Operator } from '../../../src/operator/controller.js';
import { VIRTUAL_NODE_LABEL } from '../../../src/node/registration.js';
import { FakeClock } from '../../../src/util/clock.js';
import { isInvalidArgument } from '../../../src/util/errors.js';
import { MemoryLogger } from '../../../src/util/logger.js';
import { FakeOperatorAPI, flush } from './fakeapi.js';
import { FakeFactory } from './fakenode.js';
import type { ShardGate } from '../../../src/operator/shard/coordinator.js';
import type { ShardNode } from '../../../src/operator/shard/plan.js';

const STATUS_PERIOD = 10_000;
const DRAIN_RECHECK = 1_000;

function virtualNode(name: string, spec: Record<string, unknown> = {}): VirtualNode {
  return {
    apiVersion: 'kubelet-operator.dev/v1alpha1',
    kind: 'VirtualNode',
    metadata: { name },
    spec: { runtime: { type: 'sim', sim: { podCIDR: '10.1.0.0/24' } }, ...spec },
  };
}

function pod(name: string, nodeName: string, phase = 'Pending'): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { nodeName, containers: [{ name: 'app', image: 'busybox' }] },
    status: { phase },
  } as Pod;
}

const condition = (vn: VirtualNode | undefined, type: string) =>
  vn?.status?.conditions?.find((c) => c.type === type);

describe('operator: VirtualNode controller', () => {
  let clock: FakeClock;
  let api: FakeOperatorAPI;
  let factory: FakeFactory;
  let logger: MemoryLogger;
  let op: Operator | undefined;

  beforeEach(() => {
    clock = new FakeClock();
    api = new FakeOperatorAPI();
    factory = new FakeFactory();
    logger = new MemoryLogger();
  });

  afterEach(async () => {
    await op?.stop();
    op = undefined;
  });

  async function startOperator(shard?: ShardGate): Promise<Operator> {
    op = new Operator({
      api,
      factory,
      clock,
      logger,
      workers: 2,
      statusPeriodMs: STATUS_PERIOD,
      drainRecheckMs: DRAIN_RECHECK,
      ...(shard ? { shard } : {}),
    });
    await op.start();
    await flush();
    return op;
  }

  /** Advances the fake clock in steps, letting the controller's promises settle between them. */
  async function advance(ms: number, step = 100): Promise<void> {
    for (let t = 0; t < ms; t += step) {
      clock.advance(Math.min(step, ms - t));
      await flush(5);
    }
    await flush();
  }

  it('needs a client or an api', () => {
    expect(() => new Operator({ factory, clock, logger }))
      .to.throw()
      .that.satisfies(isInvalidArgument);
  });

  it('adds the finalizer first, then starts the node, hands it its pods and reports Ready', async () => {
    api.podStore.create(pod('early', 'vn-a'));
    api.podStore.create(pod('elsewhere', 'other-node'));
    api.vns.create(virtualNode('vn-a'));
    await startOperator();

    expect(api.writes[0]).to.deep.include({ method: 'patchFinalizers', name: 'vn-a', body: [FINALIZER] });
    const node = factory.node('vn-a');
    expect(factory.created).to.have.length(1);
    expect(node.events).to.deep.equal(['start', 'add early']);
    expect(op!.servedNodes()).to.deep.equal(['vn-a']);
    expect(op!.ready()).to.equal(undefined);

    const stored = api.vns.get('vn-a')!;
    expect(stored.metadata.finalizers).to.deep.equal([FINALIZER]);
    expect(stored.status).to.deep.include({
      observedGeneration: 1,
      nodeName: 'vn-a',
      internalIP: '10.0.0.9',
      podCIDR: '10.1.0.0/24',
      runtime: { name: 'fake', version: '1.0' },
    });
    expect(condition(stored, 'Ready')).to.deep.include({
      status: 'True',
      reason: 'NodeReady',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-01T00:00:00Z',
    });
    expect(condition(stored, 'RuntimeReady')).to.deep.include({
      status: 'True',
      reason: 'RuntimeReady',
      message: 'fake 1.0',
    });
  });

  it('registers the node under spec.nodeName and routes pod events by spec.nodeName', async () => {
    api.vns.create(virtualNode('vn-a', { nodeName: 'node-a' }));
    api.vns.create(virtualNode('vn-b', { runtime: { type: 'sim', sim: { podCIDR: '10.2.0.0/24' } } }));
    await startOperator();
    const a = factory.node('node-a');
    const b = factory.node('vn-b');

    api.podStore.create(pod('p1', 'node-a'));
    api.podStore.create(pod('p2', 'vn-b'));
    api.podStore.create(pod('stray', 'not-served'));
    await flush();
    api.podStore.update('default/p1', (p) => (p.status = { phase: 'Running' }));
    api.podStore.delete('default/p2');
    await flush();

    expect(a.events.filter((e) => e !== 'start')).to.deep.equal(['add p1', 'update-pod p1']);
    expect(b.events.filter((e) => e !== 'start')).to.deep.equal(['add p2', 'delete p2']);
    expect(op!.podsOfNode('node-a').map((p) => p.metadata.name)).to.deep.equal(['p1']);
    expect(api.vns.get('vn-a')!.status?.nodeName).to.equal('node-a');
  });

  it("hands every served node one watch of the VirtualNodes' Nodes, each reading its own by name", async () => {
    const label = { [VIRTUAL_NODE_LABEL]: 'vn-a', color: 'blue' };
    api.nodeStore.create({ metadata: { name: 'vn-a', labels: label } });
    api.nodeStore.create({ metadata: { name: 'real-node' } });
    api.vns.create(virtualNode('vn-a'));
    api.vns.create(virtualNode('vn-b', { runtime: { type: 'sim', sim: { podCIDR: '10.2.0.0/24' } } }));
    await startOperator();
    const informer = factory.node('vn-a').watches!.node!;
    expect(factory.node('vn-b').watches!.node, 'one informer for all').to.equal(informer);
    // A Node no VirtualNode registered is not cached here.
    expect(informer.list().map((n) => n.metadata.name)).to.deep.equal(['vn-a']);
    expect(api.nodeStore.watching).to.equal(1);
    api.nodeStore.update('vn-a', (n) => (n.metadata.labels = { ...label, color: 'red' }));
    api.nodeStore.create({ metadata: { name: 'vn-b', labels: { [VIRTUAL_NODE_LABEL]: 'vn-b' } } });
    await flush();
    expect(informer.get('vn-a')?.metadata.labels?.color).to.equal('red');
    expect(informer.get('vn-b')).to.not.equal(undefined);

    // A node that stops leaves the watch to the others; the process's stop ends it.
    api.vns.update('vn-a', (o) => (o.metadata.finalizers = []));
    api.vns.delete('vn-a');
    await flush();
    expect(api.nodeStore.watching).to.equal(1);
    await op!.stop();
    op = undefined;
    expect(api.nodeStore.watching).to.equal(0);
  });

  it("lists and watches a node's PodCertificateRequests from its first pod with a podCertificate source", async () => {
    api.vns.create(virtualNode('vn-a'));
    api.podStore.create(pod('plain', 'vn-a'));
    await startOperator();
    const view = api.requestViews.get('vn-a')!;
    expect(view.lists, 'no pod reads them yet').to.equal(0);
    expect(api.requestStore.watching).to.equal(0);

    const withCert = pod('cert', 'vn-a');
    withCert.spec.volumes = [
      {
        name: 'creds',
        projected: {
          sources: [
            {
              podCertificate: { signerName: 'example.com/s', keyType: 'ED25519', credentialBundlePath: 'b' },
            },
          ],
        },
      },
    ];
    api.podStore.create(withCert);
    await flush();
    expect(view.lists).to.equal(1);
    expect(api.requestStore.watching).to.equal(1);
    expect(factory.node('vn-a').events).to.deep.equal(['start', 'add plain', 'add cert']);

    api.vns.update('vn-a', (o) => (o.metadata.finalizers = []));
    api.vns.delete('vn-a');
    await flush();
    expect(api.requestStore.watching).to.equal(0);
  });

  it('watches the pods of served nodes only, one watch per node, ended when the node stops', async () => {
    api.vns.create(virtualNode('vn-a'));
    api.vns.create(virtualNode('vn-b', { runtime: { type: 'sim', sim: { podCIDR: '10.2.0.0/24' } } }));
    api.podStore.create(pod('elsewhere', 'real-node'));
    await startOperator();
    expect([...api.podViews.keys()].sort()).to.deep.equal(['vn-a', 'vn-b']);
    expect(api.podViews.get('vn-a')!.lists).to.equal(1);
    expect(api.podStore.lists).to.equal(0);
    expect(api.podStore.watching).to.equal(2);

    // Created unbound, then bound: it starts to match the node's selector and arrives as an add.
    api.podStore.create(pod('late', ''));
    await flush();
    api.podStore.update('default/late', (p) => (p.spec.nodeName = 'vn-a'));
    await flush();
    expect(factory.node('vn-a').events).to.deep.equal(['start', 'add late']);
    expect(factory.node('vn-b').events).to.deep.equal(['start']);
    expect(op!.podsOfNode('real-node')).to.deep.equal([]);

    api.vns.update('vn-b', (o) => (o.metadata.finalizers = []));
    api.vns.delete('vn-b');
    await flush();
    expect(api.podStore.watching).to.equal(1);
    api.podStore.create(pod('after', 'vn-b'));
    await flush();
    expect(factory.node('vn-b').events).to.deep.equal(['start', 'stop']);
  });

  it('reports an invalid spec as Ready=False/InvalidSpec naming the field, and starts when it is fixed', async () => {
    api.vns.create(virtualNode('bad', { capacity: { pods: -1 } }));
    await startOperator();

    expect(factory.created).to.have.length(0);
    let stored = api.vns.get('bad')!;
    expect(condition(stored, 'Ready')).to.deep.include({ status: 'False', reason: 'InvalidSpec' });
    expect(condition(stored, 'Ready')!.message).to.contain('spec.capacity.pods');
    expect(condition(stored, 'RuntimeReady')).to.deep.include({ status: 'Unknown', reason: 'InvalidSpec' });

    clock.advance(5_000);
    api.vns.update('bad', (o) => (o.spec = virtualNode('bad').spec));
    await flush();
    stored = api.vns.get('bad')!;
    expect(factory.created).to.have.length(1);
    expect(condition(stored, 'Ready')).to.deep.include({
      status: 'True',
      observedGeneration: 2,
      // Ready went False -> True: the transition time moves.
      lastTransitionTime: '2026-01-01T00:00:05Z',
    });
  });

  it('applies a changed spec in place, and restarts the node when the factory says so', async () => {
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    const first = factory.node('vn-a');

    api.vns.update('vn-a', (o) => ((o.spec as { labels?: unknown }).labels = { tier: 'gold' }));
    await flush();
    expect(factory.created).to.have.length(1);
    expect(first.events).to.deep.equal(['start', 'update {"tier":"gold"}']);
    expect(api.vns.get('vn-a')!.status?.observedGeneration).to.equal(2);

    api.vns.update(
      'vn-a',
      (o) => ((o.spec as { runtime: unknown }).runtime = { type: 'sim', sim: { podCIDR: '10.9.0.0/24' } }),
    );
    await flush();
    expect(factory.created).to.have.length(2);
    expect(first.events.at(-1)).to.equal('stop');
    expect(factory.node('vn-a').events).to.deep.equal(['start']);
    expect(api.vns.get('vn-a')!.status?.podCIDR).to.equal('10.9.0.0/24');
  });

  it('compares specs only when the VirtualNode object changed, not every status round', async () => {
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    const node = factory.node('vn-a');
    await advance(STATUS_PERIOD);
    const checks = factory.restartChecks;
    await advance(3 * STATUS_PERIOD);
    expect(factory.restartChecks, 'same object: rounds skip the comparison').to.equal(checks);

    api.vns.update('vn-a', (o) => ((o.spec as { labels?: unknown }).labels = { tier: 'gold' }));
    await flush();
    expect(node.events).to.deep.equal(['start', 'update {"tier":"gold"}']);
    const changed = factory.restartChecks;
    expect(changed, 'a new spec object is compared').to.be.greaterThan(checks);
    await advance(3 * STATUS_PERIOD);
    expect(factory.restartChecks).to.equal(changed);
    expect(node.events).to.have.length(2);
  });

  it('writes status only when it changed, not for a heartbeat alone', async () => {
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    const node = factory.node('vn-a');
    const writes = () => api.statusWrites('vn-a').length;
    expect(writes()).to.equal(1);

    await advance(STATUS_PERIOD);
    expect(writes(), 'nothing changed').to.equal(1);

    node.observation.lastHeartbeatTime = '2026-01-01T00:00:10Z';
    await advance(STATUS_PERIOD);
    expect(writes(), 'heartbeat only').to.equal(1);

    node.observation.pods = { total: 2, running: 1, pending: 1 };
    await advance(STATUS_PERIOD);
    expect(writes(), 'pod counts changed').to.equal(2);
    expect(api.vns.get('vn-a')!.status?.pods).to.deep.equal({ total: 2, running: 1, pending: 1 });

    node.observation.problems = ['PLEG is not healthy'];
    await advance(STATUS_PERIOD);
    expect(writes()).to.equal(3);
    expect(condition(api.vns.get('vn-a'), 'Ready')).to.deep.include({
      status: 'False',
      reason: 'NodeNotReady',
      message: 'PLEG is not healthy',
    });
  });

  it('writes the first status once the start settles, and Registering only for a start that takes over 2 s', async () => {
    let finishA!: () => void;
    let finishB!: () => void;
    factory.prepare = (n) => {
      n.startWaits = new Promise((res) =>
        n.vn.metadata.name === 'vn-a' ? (finishA = res) : (finishB = res),
      );
      n.observation.registered = false;
    };
    api.vns.create(virtualNode('vn-a'));
    api.vns.create(virtualNode('vn-b', { runtime: { type: 'sim', sim: { podCIDR: '10.2.0.0/24' } } }));
    await startOperator();
    await advance(500);
    expect(api.statusWrites('vn-a'), 'nothing while the start is moments away').to.have.length(0);
    factory.node('vn-a').observation.registered = true;
    finishA();
    await advance(100);
    expect(api.statusWrites('vn-a'), 'one write, straight to Ready').to.have.length(1);
    expect(condition(api.vns.get('vn-a'), 'Ready')).to.deep.include({ status: 'True', reason: 'NodeReady' });

    await advance(1_500);
    expect(api.statusWrites('vn-b')).to.have.length(1);
    expect(condition(api.vns.get('vn-b'), 'Ready')).to.deep.include({
      status: 'False',
      reason: 'Registering',
    });
    factory.node('vn-b').observation.registered = true;
    finishB();
    await advance(100);
    expect(condition(api.vns.get('vn-b'), 'Ready')).to.deep.include({ status: 'True', reason: 'NodeReady' });
  });

  it('reports a node that failed to start as StartFailed', async () => {
    factory.prepare = (n) => (n.startError = new Error('runtime socket missing'));
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    await advance(STATUS_PERIOD);
    expect(condition(api.vns.get('vn-a'), 'Ready')).to.deep.include({
      status: 'False',
      reason: 'StartFailed',
      message: 'runtime socket missing',
    });
    expect(logger.lines.map((l) => l.msg)).to.include('virtual node failed to start');
  });

  it('on delete: drains until no pod is left, then stops, removes the node and drops the finalizer', async () => {
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    const node = factory.node('vn-a');
    node.podsLeft = 2;

    api.vns.delete('vn-a');
    await flush();
    // Drained (the Draining status write brings one more sync), but pods are left: nothing removed yet.
    expect(node.events.filter((e) => e !== 'drain')).to.deep.equal(['start']);
    expect(node.events).to.include('drain');
    expect(condition(api.vns.get('vn-a'), 'Ready')).to.deep.include({ status: 'False', reason: 'Draining' });
    // The RuntimeReady condition is not reported while draining.
    expect(condition(api.vns.get('vn-a'), 'RuntimeReady')).to.equal(undefined);
    expect(api.vns.get('vn-a')!.metadata.finalizers).to.deep.equal([FINALIZER]);

    await advance(2 * DRAIN_RECHECK);
    expect(node.events.slice(-3)).to.deep.equal(['drain', 'stop', 'remove']);
    expect(node.events.filter((e) => e === 'drain')).to.have.length(3);
    expect(api.vns.get('vn-a'), 'finalizer dropped, object gone').to.equal(undefined);
    expect(op!.servedNodes()).to.deep.equal([]);
  });

  it("on delete: waits for the node's graceful shutdown before it drains and removes the node", async () => {
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    const node = factory.node('vn-a');
    let shutdownsLeft = 2;
    // A node with a shutdown grace period: done at its third look.
    Object.assign(node, {
      shutdown: async (): Promise<boolean> => {
        node.events.push('shutdown');
        return shutdownsLeft-- <= 0;
      },
    });

    api.vns.delete('vn-a');
    await flush();
    expect(node.events).to.include('shutdown');
    expect(node.events).to.not.include('drain');
    expect(condition(api.vns.get('vn-a'), 'Ready')).to.deep.include({ status: 'False', reason: 'Draining' });
    expect(api.vns.get('vn-a')!.metadata.finalizers).to.deep.equal([FINALIZER]);

    await advance(2 * DRAIN_RECHECK);
    await advance(2 * DRAIN_RECHECK);
    expect(node.events.slice(1)).to.deep.equal([
      'shutdown',
      'shutdown',
      'shutdown',
      'drain',
      'stop',
      'remove',
    ]);
    expect(api.vns.get('vn-a'), 'finalizer dropped, object gone').to.equal(undefined);
  });

  it('never serves again a VirtualNode it finalized while its cache still shows it deleting', async () => {
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    const node = factory.node('vn-a');
    let stopped = (): void => {};
    node.stopWaits = new Promise((r) => (stopped = r));
    api.vns.delete('vn-a');
    await flush();
    expect(node.events.slice(-2)).to.deep.equal(['drain', 'stop']);
    // While the node stops, the periodic status sync comes due, and the watch lags: the object's going
    // reaches the cache only after that sync ran on the stale copy (deleting, finalizer on).
    const release = api.vns.holdWatches();
    await advance(STATUS_PERIOD);
    stopped();
    await flush();
    expect(node.events.at(-1)).to.equal('remove');
    expect(api.vns.get('vn-a'), 'finalizer dropped, object gone').to.equal(undefined);
    release();
    await flush();
    // A node served again would have registered the Node just removed, and nothing would remove it again.
    expect(factory.created).to.have.length(1);
    expect(op!.servedNodes()).to.deep.equal([]);
  });

  it('serves a VirtualNode found already deleting, so that its pods are drained before it goes', async () => {
    api.vns.create({ ...virtualNode('vn-a'), metadata: { name: 'vn-a', finalizers: [FINALIZER] } });
    api.vns.delete('vn-a');
    await startOperator();
    // Its start settles first (a worker never waits for it), then the drain.
    await advance(DRAIN_RECHECK);
    expect(factory.node('vn-a').events).to.deep.equal(['start', 'drain', 'stop', 'remove']);
    expect(api.vns.get('vn-a')).to.equal(undefined);
  });

  it('drops the finalizer of a deleted VirtualNode whose spec never started anything', async () => {
    api.vns.create({
      ...virtualNode('bad', { capacity: { pods: -1 } }),
      metadata: { name: 'bad', finalizers: [FINALIZER, 'example.com/other'] },
    });
    api.vns.delete('bad');
    await startOperator();
    expect(factory.created).to.have.length(0);
    expect(api.vns.get('bad')!.metadata.finalizers).to.deep.equal(['example.com/other']);
  });

  it('stops serving a VirtualNode that disappears without the finalizer', async () => {
    api.vns.create(virtualNode('vn-a'));
    await startOperator();
    const node = factory.node('vn-a');
    // Someone strips the finalizer and deletes it: no drain, the node just stops being served.
    api.vns.update('vn-a', (o) => (o.metadata.finalizers = []));
    api.vns.delete('vn-a');
    await flush();
    expect(node.events).to.deep.equal(['start', 'stop']);
    expect(op!.servedNodes()).to.deep.equal([]);
  });

  it('retries a failed sync with back-off and logs it', async () => {
    api.fail('patchStatus', 'Conflict');
    api.vns.create(virtualNode('vn-a'));
    // Finalizer already in place: no update event of ours brings the sync back early.
    api.vns.update('vn-a', (o) => (o.metadata.finalizers = [FINALIZER]));
    await startOperator();
    expect(api.statusWrites('vn-a')).to.have.length(1);
    expect(api.vns.get('vn-a')!.status).to.equal(undefined);
    expect(logger.lines.find((l) => l.msg === 'virtual node sync failed; will retry')?.meta).to.deep.include({
      virtualNode: 'vn-a',
    });
    await advance(500);
    expect(api.statusWrites('vn-a')).to.have.length(2);
    expect(condition(api.vns.get('vn-a'), 'Ready')?.status).to.equal('True');
    expect(factory.created, 'the node is not started twice').to.have.length(1);
  });

  it('defaults a distinct pod CIDR per simulated node and keeps it in status', async () => {
    const sim = { runtime: { type: 'sim', sim: {} } };
    api.vns.create(virtualNode('vn-a', sim));
    api.vns.create(virtualNode('vn-b', sim));
    await startOperator();
    const a = api.vns.get('vn-a')!.status?.podCIDR;
    const b = api.vns.get('vn-b')!.status?.podCIDR;
    expect(a).to.match(/^10\.\d+\.\d+\.0\/24$/);
    expect(b).to.match(/^10\.\d+\.\d+\.0\/24$/);
    expect(a).to.not.equal(b);
    const spec = factory.node('vn-a').spec;
    expect(spec.runtime.type === 'sim' && spec.runtime.sim.podCIDR).to.equal(a);
  });

  it('stop() stops every node without removing anything', async () => {
    api.vns.create(virtualNode('vn-a'));
    api.vns.create(virtualNode('vn-b', { runtime: { type: 'sim', sim: { podCIDR: '10.2.0.0/24' } } }));
    await startOperator();
    await op!.stop();
    const nodes = factory.created;
    op = undefined;
    for (const n of nodes) expect(n.events).to.deep.equal(['start', 'stop']);
    expect(api.vns.keys()).to.have.members(['vn-a', 'vn-b']);
    expect(clock.pendingTimers(), 'no status refresh left armed').to.equal(0);
  });

  describe('specs that cannot serve a Node', () => {
    const at = (vn: VirtualNode, creationTimestamp: string): VirtualNode => ({
      ...vn,
      metadata: { ...vn.metadata, creationTimestamp },
    });

    it('leaves a Node to the VirtualNode that claimed it first, and hands it over once that one is gone', async () => {
      api.vns.create(at(virtualNode('vn-first', { nodeName: 'shared' }), '2026-01-01T00:00:00Z'));
      api.vns.create(
        at(
          virtualNode('vn-later', {
            nodeName: 'shared',
            runtime: { type: 'sim', sim: { podCIDR: '10.2.0.0/24' } },
          }),
          '2026-01-01T00:00:05Z',
        ),
      );
      api.podStore.create(pod('p1', 'shared'));
      await startOperator();
      expect(factory.created.map((n) => n.vn.metadata.name)).to.deep.equal(['vn-first']);
      expect(condition(api.vns.get('vn-later'), 'Ready')).to.deep.include({
        status: 'False',
        reason: 'NodeNameConflict',
        message: 'Node shared is served by VirtualNode vn-first, which claimed it first',
      });
      const first = factory.node('shared');
      expect(first.events).to.deep.equal(['start', 'add p1']);

      // Deleting the later one touches nothing of the Node it never served.
      api.vns.delete('vn-later');
      await flush();
      expect(api.vns.get('vn-later'), 'finalizer dropped at once').to.equal(undefined);
      expect(first.events).to.deep.equal(['start', 'add p1']);
      expect(factory.created).to.have.length(1);

      // A third claim waits while the first drains, then serves the Node once the first is gone.
      api.vns.create(
        at(
          virtualNode('vn-third', {
            nodeName: 'shared',
            runtime: { type: 'sim', sim: { podCIDR: '10.3.0.0/24' } },
          }),
          '2026-01-01T00:00:09Z',
        ),
      );
      await flush();
      expect(condition(api.vns.get('vn-third'), 'Ready')?.reason).to.equal('NodeNameConflict');
      api.vns.delete('vn-first');
      await flush();
      expect(first.events.slice(-3)).to.deep.equal(['drain', 'stop', 'remove']);
      await advance(STATUS_PERIOD);
      expect(factory.created.map((n) => n.vn.metadata.name)).to.deep.equal(['vn-first', 'vn-third']);
      expect(condition(api.vns.get('vn-third'), 'Ready')?.reason).to.equal('NodeReady');
    });

    it('reports a runtime that cannot be built as StartFailed, and lets such a VirtualNode be deleted', async () => {
      const create = factory.create.bind(factory);
      factory.create = (vn, spec, nodeName) => {
        if (vn.metadata.name === 'vn-bad') throw new Error('sim runtime: capacity 8Ei is out of range');
        return create(vn, spec, nodeName);
      };
      api.vns.create(virtualNode('vn-bad'));
      api.vns.create(virtualNode('vn-good', { runtime: { type: 'sim', sim: { podCIDR: '10.2.0.0/24' } } }));
      await startOperator();
      expect(condition(api.vns.get('vn-bad'), 'Ready')).to.deep.include({
        status: 'False',
        reason: 'StartFailed',
        message: 'sim runtime: capacity 8Ei is out of range',
      });
      expect(condition(api.vns.get('vn-good'), 'Ready')?.reason).to.equal('NodeReady');
      expect(logger.lines.map((l) => l.msg)).to.include('virtual node cannot be served');
      api.vns.delete('vn-bad');
      await flush();
      expect(api.vns.get('vn-bad')).to.equal(undefined);
      expect(op!.servedNodes()).to.deep.equal(['vn-good']);
    });

    it('never holds a worker on a start that does not settle, also while deleting', async () => {
      factory.prepare = (n) => {
        if (n.vn.metadata.name?.startsWith('stuck')) n.start = () => new Promise<void>(() => undefined);
      };
      for (let i = 0; i < 3; i++)
        api.vns.create(
          virtualNode(`stuck-${i}`, { runtime: { type: 'sim', sim: { podCIDR: `10.${10 + i}.0.0/24` } } }),
        );
      await startOperator();
      for (let i = 0; i < 3; i++) api.vns.delete(`stuck-${i}`);
      await advance(3 * DRAIN_RECHECK);
      // Two workers, three deletions waiting on starts that never end: a new VirtualNode is still served.
      api.vns.create(virtualNode('vn-new', { runtime: { type: 'sim', sim: { podCIDR: '10.20.0.0/24' } } }));
      await advance(DRAIN_RECHECK);
      expect(condition(api.vns.get('vn-new'), 'Ready')?.reason).to.equal('NodeReady');
      expect(condition(api.vns.get('stuck-0'), 'Ready')?.reason).to.equal('Draining');
    });

    it('refuses a Node name longer than a hostname label', async () => {
      api.vns.create(virtualNode(`vn-${'x'.repeat(70)}`));
      await startOperator();
      expect(factory.created).to.have.length(0);
      const ready = condition(api.vns.get(`vn-${'x'.repeat(70)}`), 'Ready');
      expect(ready).to.deep.include({ status: 'False', reason: 'InvalidSpec' });
      expect(ready?.message).to.match(/has 73 characters; .*at most 63: set spec.nodeName$/);
    });

    it('gives a pod CIDR to the VirtualNode that named it first; an unusable one blocks no other', async () => {
      api.vns.create(at(virtualNode('vn-a'), '2026-01-01T00:00:00Z'));
      api.vns.create(at(virtualNode('vn-b'), '2026-01-01T00:00:01Z'));
      api.vns.create(
        at(
          virtualNode('vn-all', { runtime: { type: 'sim', sim: { podCIDR: '0.0.0.0/0' } } }),
          '2026-01-01T00:00:02Z',
        ),
      );
      api.vns.create(
        at(virtualNode('vn-default', { runtime: { type: 'sim', sim: {} } }), '2026-01-01T00:00:03Z'),
      );
      await startOperator();
      expect(condition(api.vns.get('vn-a'), 'Ready')?.reason).to.equal('NodeReady');
      expect(condition(api.vns.get('vn-b'), 'Ready')).to.deep.include({
        status: 'False',
        reason: 'PodCIDRUnavailable',
        message: 'spec.runtime.sim.podCIDR 10.1.0.0/24 overlaps the pod CIDR of VirtualNode vn-a',
      });
      expect(condition(api.vns.get('vn-all'), 'Ready')).to.deep.include({
        status: 'False',
        reason: 'InvalidSpec',
        message: 'spec.runtime.sim.podCIDR: the simulated runtime needs an IPv4 CIDR from /8 to /30',
      });
      expect(condition(api.vns.get('vn-default'), 'Ready')?.reason).to.equal('NodeReady');
      expect(api.vns.get('vn-default')!.status?.podCIDR).to.match(/^10\.\d+\.\d+\.0\/24$/);
    });

    it('drains a deleted VirtualNode no process served with the pod CIDR its status kept', async () => {
      api.vns.create({
        ...virtualNode('vn-a', { runtime: { type: 'sim', sim: {} } }),
        metadata: { name: 'vn-a', finalizers: [FINALIZER] },
        status: { podCIDR: '10.200.3.0/24' },
      });
      api.vns.delete('vn-a');
      await startOperator();
      await advance(DRAIN_RECHECK);
      const node = factory.created[0]!;
      expect(node.spec.runtime.type === 'sim' && node.spec.runtime.sim.podCIDR).to.equal('10.200.3.0/24');
      expect(node.events).to.deep.equal(['start', 'drain', 'stop', 'remove']);
    });
  });

  describe('with a shard gate', () => {
    /** A gate whose ownership the test sets; records what the controller reports. */
    class ScriptedGate implements ShardGate {
      readonly owned = new Set<string>();
      readonly stoppedNames: string[] = [];
      readonly order: string[] = [];
      changed: (name: string) => void = () => undefined;
      nodes: () => ShardNode[] = () => [];
      async start(nodes: () => ShardNode[], changed: (name: string) => void): Promise<void> {
        this.nodes = nodes;
        this.changed = changed;
      }
      owns(name: string): boolean {
        return this.owned.has(name);
      }
      stopped(name: string): void {
        this.stoppedNames.push(name);
      }
      async stop(): Promise<void> {
        this.order.push('gate stop');
      }
      set(name: string, owned: boolean): void {
        if (owned) this.owned.add(name);
        else this.owned.delete(name);
        this.changed(name);
      }
    }

    it('serves only what the gate says it owns, and stops a node before reporting it handed back', async () => {
      const gate = new ScriptedGate();
      api.vns.create(virtualNode('vn-a'));
      api.vns.create(
        virtualNode('vn-b', {
          runtime: { type: 'cri', cri: { endpoint: 'unix:///run/x.sock', host: 'h1' } },
        }),
      );
      await startOperator(gate);
      await advance(500);
      expect(gate.nodes()).to.deep.equal([{ name: 'vn-a' }, { name: 'vn-b', host: 'h1' }]);
      // Not owned: nothing started, no finalizer, no status written.
      expect(factory.created).to.have.length(0);
      expect(api.writes).to.deep.equal([]);

      gate.set('vn-a', true);
      await advance(500);
      expect(op!.servedNodes()).to.deep.equal(['vn-a']);
      expect(api.vns.get('vn-a')!.metadata.finalizers).to.deep.equal([FINALIZER]);

      gate.set('vn-a', false);
      await advance(500);
      expect(op!.servedNodes()).to.deep.equal([]);
      expect(factory.node('vn-a').events).to.deep.equal(['start', 'stop']);
      expect(gate.stoppedNames).to.include('vn-a');
      // No status refresh of a node handed back.
      const writes = api.writes.length;
      await advance(3 * STATUS_PERIOD, 1000);
      expect(api.writes.length).to.equal(writes);
    });

    it('leaves a deleting VirtualNode it does not own to its owner', async () => {
      const gate = new ScriptedGate();
      const vn = virtualNode('vn-a');
      vn.metadata.finalizers = [FINALIZER];
      api.vns.create(vn);
      api.vns.delete('vn-a');
      await startOperator(gate);
      await advance(500);
      expect(factory.created).to.have.length(0);
      expect(api.vns.get('vn-a')!.metadata.finalizers).to.deep.equal([FINALIZER]);
    });

    it('hands everything back only after every node stopped', async () => {
      const gate = new ScriptedGate();
      api.vns.create(virtualNode('vn-a'));
      await startOperator(gate);
      gate.set('vn-a', true);
      await advance(500);
      const node = factory.node('vn-a');
      const stop = node.stop.bind(node);
      node.stop = async () => {
        gate.order.push('node stop');
        await stop();
      };
      await op!.stop();
      op = undefined;
      expect(gate.order).to.deep.equal(['node stop', 'gate stop']);
    });
  });
});
