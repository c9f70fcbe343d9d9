import { expect } from 'chai';
import type { Lease } from '../../../../src/api/node.js';
import { ShardCoordinator } from '../../../../src/operator/shard/coordinator.js';
import type { ShardNode } from '../../../../src/operator/shard/plan.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { createLogger, silentLogger } from '../../../../src/util/logger.js';
import { FakeLeaseStore } from './fakeleases.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

/** One replica: a coordinator and, standing in for the controller, the set of nodes it serves. */
class Replica {
  readonly serving = new Set<string>();
  readonly coordinator: ShardCoordinator;
  readonly api;
  started: Promise<void> | undefined;

  constructor(
    readonly id: string,
    store: FakeLeaseStore,
    clock: FakeClock,
    private readonly nodes: () => ShardNode[],
    host = '',
  ) {
    this.api = store.forReplica(id);
    this.coordinator = new ShardCoordinator({
      api: this.api,
      namespace: 'ops',
      identity: id,
      host,
      clock,
      logger: process.env.DBG ? createLogger('debug') : silentLogger,
      leaseDurationMs: 15_000,
      renewIntervalMs: 5_000,
    });
  }

  start(): void {
    this.started = this.coordinator.start(this.nodes, (name) => {
      // The controller: serve while owned; otherwise stop and say so.
      if (this.coordinator.owns(name)) this.serving.add(name);
      else {
        this.serving.delete(name);
        this.coordinator.stopped(name);
      }
    });
  }
}

describe('ShardCoordinator', () => {
  let clock: FakeClock;
  let store: FakeLeaseStore;
  let nodes: ShardNode[];
  let replicas: Replica[];

  /** Advances the clock in 100 ms steps, checking after each that no node is served twice. */
  async function run(ms: number): Promise<void> {
    for (let t = 0; t < ms; t += 100) {
      clock.advance(100);
      await flush();
      const seen = new Map<string, string>();
      for (const r of replicas)
        for (const n of r.serving) {
          expect(seen.get(n), `${n} served by ${seen.get(n)} and ${r.id}`).to.equal(undefined);
          seen.set(n, r.id);
        }
    }
  }

  const counts = (): number[] => replicas.map((r) => r.serving.size);

  /** VirtualNode Leases each replica took since write `from`. */
  const takesSince = (from: number): Record<string, number> => {
    const out: Record<string, number> = {};
    for (const w of store.writes.slice(from))
      if (w.name.startsWith('vn-') && w.take) out[w.by] = (out[w.by] ?? 0) + 1;
    return out;
  };
  /** VirtualNode Leases written free since `from`. */
  const handBacksSince = (from: number): number =>
    store.writes.slice(from).filter((w) => w.name.startsWith('vn-') && w.verb === 'update' && !w.holder)
      .length;

  beforeEach(() => {
    clock = new FakeClock();
    store = new FakeLeaseStore(clock);
    nodes = Array.from({ length: 10 }, (_, i) => ({ name: `vn-${i}` }));
    replicas = [];
  });

  afterEach(async () => {
    for (const r of replicas) {
      r.api.cut = false;
      r.api.latencyMs = 0;
      r.serving.clear();
      let stopped = false;
      const stopping = r.coordinator.stop().then(() => (stopped = true));
      // Writes already in flight take their latency.
      for (let t = 0; t < 200 || (!stopped && t < 5_000); t += 100) await run(100);
      await stopping;
    }
  });

  function add(id: string, host = ''): Replica {
    const r = new Replica(id, store, clock, () => nodes, host);
    replicas.push(r);
    r.start();
    return r;
  }

  /** Replicas a and b started and settled on their 5/5 split. */
  async function twoReplicas(): Promise<[Replica, Replica]> {
    const pair: [Replica, Replica] = [add('a'), add('b')];
    await run(12_000);
    return pair;
  }

  it('splits 10 nodes 5/5 between two replicas, then 4/3/3 when a third joins, without a gap', async () => {
    add('a');
    await run(1_000);
    expect(counts()).to.deep.equal([10]);
    add('b');
    await run(12_000);
    expect(counts()).to.deep.equal([5, 5]);
    add('c');
    await run(12_000);
    expect(counts()).to.deep.equal([4, 3, 3]);
    expect(replicas.reduce((n, r) => n + r.serving.size, 0)).to.equal(10);
  });

  it('a stopping replica hands its nodes back and the others take them at once', async () => {
    await twoReplicas();
    expect(counts()).to.deep.equal([5, 5]);
    const b = replicas[1]!;
    const stopping = b.coordinator.stop();
    // The controller stopped b's nodes before calling stop().
    b.serving.clear();
    await run(200);
    await stopping;
    replicas.pop();
    // Well before the next periodic round (5 s): the hand-back and b's leaving are watched.
    await run(1_000);
    expect(counts()).to.deep.equal([10]);
  });

  it('a replica cut off from the API stops its nodes before their Leases expire; the other takes them after', async () => {
    const [a, b] = await twoReplicas();
    const bNodes = [...b.serving];
    b.api.cut = true;
    const cutAt = clock.now();
    let droppedAt: number | undefined;
    let takenAt: number | undefined;
    for (let t = 0; t < 30_000; t += 100) {
      await run(100);
      if (droppedAt === undefined && b.serving.size === 0) droppedAt = clock.now();
      if (takenAt === undefined && bNodes.every((n) => a.serving.has(n))) takenAt = clock.now();
    }
    expect(droppedAt, 'b dropped its nodes').to.not.equal(undefined);
    expect(takenAt, 'a took them').to.not.equal(undefined);
    expect(droppedAt! - cutAt).to.be.below(15_000);
    expect(takenAt!).to.be.above(droppedAt!);
    // Within one Lease duration (plus a round's latency) after b's last renewal, not a renew interval later.
    expect(takenAt! - cutAt).to.be.at.most(16_000);
    expect(a.serving.size).to.equal(10);
  });

  it('gives a pinned node only to the replica on its host, outside the fair share', async () => {
    nodes.push({ name: 'cri-x', host: 'host-x' });
    add('a');
    add('b', 'host-x');
    await run(12_000);
    expect(replicas[1]!.serving.has('cri-x')).to.equal(true);
    expect(replicas[0]!.serving.has('cri-x')).to.equal(false);
    expect(counts()).to.deep.equal([5, 6]);
  });

  it('takes a new VirtualNode soon after the controller reports it, not at the next round', async () => {
    add('a');
    await run(1_000);
    nodes.push({ name: 'vn-new' });
    replicas[0]!.coordinator.stopped('vn-new');
    await run(300);
    expect(replicas[0]!.serving.has('vn-new')).to.equal(true);
  });

  it('deletes the Lease of a VirtualNode that is gone', async () => {
    add('a');
    await run(1_000);
    expect(store.store.has('vn-vn-3')).to.equal(true);
    nodes = nodes.filter((n) => n.name !== 'vn-3');
    await run(6_000);
    expect(replicas[0]!.serving.has('vn-3')).to.equal(false);
    expect(store.store.has('vn-vn-3')).to.equal(false);
  });

  it('renews each membership Lease once per interval and each node Lease once per four, not per Lease event', async () => {
    await twoReplicas();
    const before = store.writes.length;
    await run(60_000);
    const renewals = store.writes.slice(before).filter((w) => w.verb === 'update');
    const members = renewals.filter((w) => w.name.startsWith('replica-'));
    // 2 replica Leases every 5 s and 10 node Leases every 20 s, for 60 s (a 60 s node Lease).
    expect(members.length).to.be.within(22, 26);
    expect(renewals.length - members.length).to.be.within(28, 32);
    expect(store.store.get('vn-vn-0')?.spec.leaseDurationSeconds).to.equal(60);
  });
  it('a replica that dies with the API server up is taken over one Lease duration after its last renewal', async () => {
    const [a, b] = await twoReplicas();
    const bNodes = [...b.serving];
    // The process dies: no write ever again, its nodes stop with it.
    b.api.cut = true;
    b.serving.clear();
    const lastWrite = Math.max(...store.writes.filter((w) => w.by === 'b').map((w) => w.at));
    let takenAt: number | undefined;
    for (let t = 0; t < 30_000 && takenAt === undefined; t += 100) {
      await run(100);
      if (bNodes.every((n) => a.serving.has(n))) takenAt = clock.now();
    }
    expect(takenAt, 'a took them').to.not.equal(undefined);
    // Its Leases run out 15 s after a saw them last renewed; a looks then, not at its next periodic round.
    expect(takenAt! - lastWrite).to.be.within(15_000, 15_200);
    expect(a.serving.size).to.equal(10);
  });

  it('a replica whose membership Lease is refused drops its nodes though their own Leases are renewed, and takes none', async () => {
    const [a, b] = await twoReplicas();
    const bNodes = [...b.serving];
    const from = store.writes.length;
    const cutAt = clock.now();
    b.api.refuse = (name) => name === 'replica-b';
    let droppedAt: number | undefined;
    let takenAt: number | undefined;
    for (let t = 0; t < 30_000 && takenAt === undefined; t += 100) {
      await run(100);
      if (droppedAt === undefined && b.serving.size === 0) droppedAt = clock.now();
      if (bNodes.every((n) => a.serving.has(n))) takenAt = clock.now();
    }
    expect(droppedAt, 'b dropped its nodes').to.not.equal(undefined);
    expect(takenAt, 'a took them').to.not.equal(undefined);
    // At b's membership renew deadline (8 s after its last accepted renewal, seen at a round), well before a
    // counts it gone (15 s after it saw that renewal) and long before its node Leases (60 s) run out.
    expect(droppedAt! - cutAt).to.be.below(15_000);
    expect(takenAt! - cutAt).to.be.at.most(16_000);
    await run(30_000);
    expect(takesSince(from).b, 'b took nothing').to.equal(undefined);
    expect(counts()).to.deep.equal([10, 0]);
  });

  it("leaves a Lease of an earlier version's replica until it expires, though that replica's own Lease lapsed", async () => {
    // An earlier version renews each node Lease as often as its own (15 s Leases) and serves while it does.
    const old = store.forReplica('old');
    const body: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: 'vn-vn-0',
        namespace: 'ops',
        labels: { 'kubelet-operator.dev/shard': 'virtualnode' },
        annotations: { 'kubelet-operator.dev/virtualnode': 'vn-0' },
      },
      spec: { holderIdentity: 'old', leaseDurationSeconds: 15, renewTime: '2026-12-07T00:00:00.000000Z' },
    };
    let lease = await old.create(body);
    const a = add('a');
    let renewing = true;
    let stoppedAt = 0;
    for (let t = 0; t < 45_000; t += 5_000) {
      await run(5_000);
      if (renewing) {
        lease = await old.update({
          ...lease,
          spec: { ...lease.spec, renewTime: new Date(clock.now()).toISOString().replace('Z', '000Z') },
        });
      }
      // No membership Lease of 'old' anywhere, yet its node Lease is renewed: not a's to take.
      if (renewing) expect(a.serving.has('vn-0'), `taken at ${t} ms`).to.equal(false);
      if (t === 20_000) {
        renewing = false;
        stoppedAt = clock.now();
      }
    }
    // Once it stopped renewing, taken when its own 15 s ran out.
    expect(a.serving.has('vn-0')).to.equal(true);
    const taken = store.writes.find((w) => w.name === 'vn-vn-0' && w.by === 'a' && w.take)!;
    expect(taken.at - stoppedAt).to.be.within(15_000, 15_300);
    expect(a.serving.size).to.equal(10);
  });

  it("on a slow API server, takes a dead replica's 200 nodes side by side and keeps renewing its own", async () => {
    nodes = Array.from({ length: 400 }, (_, i) => ({ name: `vn-${i}` }));
    const [a, b] = await twoReplicas();
    expect(counts()).to.deep.equal([200, 200]);
    a.api.latencyMs = 500;
    b.api.cut = true;
    b.serving.clear();
    const lastWrite = Math.max(...store.writes.filter((w) => w.by === 'b').map((w) => w.at));
    const from = store.writes.length;
    let takenAt: number | undefined;
    for (let t = 0; t < 60_000 && takenAt === undefined; t += 100) {
      await run(100);
      if (a.serving.size === 400) takenAt = clock.now();
    }
    expect(takenAt, 'a took them all').to.not.equal(undefined);
    // One at a time, 200 writes of 500 ms would take 100 s; side by side, one write's latency after expiry.
    expect(takenAt! - lastWrite).to.be.within(15_000, 17_000);
    // Meanwhile each of a's own 200 Leases was renewed at least once every node renew interval (20 s) or so.
    await run(Math.max(0, lastWrite + 21_000 - clock.now()));
    const renewedSince = new Map<string, number>();
    for (const w of store.writes.slice(from))
      if (w.by === 'a' && w.verb === 'update' && w.holder === 'a') renewedSince.set(w.name, w.at);
    expect(renewedSince.size).to.be.at.least(200);
  });

  for (const downMs of [12_000, 60_000, 120_000])
    it(`after ${downMs / 1000} s without an API server, each replica takes back only its share: 5/5, nothing moved twice`, async () => {
      await twoReplicas();
      expect(counts()).to.deep.equal([5, 5]);
      for (const r of replicas) r.api.cut = true;
      // Nothing renewable: each drops its nodes at its renew deadline (checked for double serving meanwhile).
      await run(downMs);
      expect(counts()).to.deep.equal([0, 0]);
      const from = store.writes.length;
      const backAt = clock.now();
      for (const r of replicas) r.api.cut = false;
      let splitAt: number | undefined;
      for (let t = 0; t < 60_000; t += 100) {
        await run(100);
        if (splitAt === undefined && counts().join('/') === '5/5') splitAt = clock.now();
      }
      expect(splitAt, 'a 5/5 split').to.not.equal(undefined);
      // Each replica's first round after the return (one renew interval at most) takes its share.
      expect(splitAt! - backAt).to.be.at.most(5_200);
      expect(counts()).to.deep.equal([5, 5]);
      // Every node taken exactly once, nothing handed back to be taken again.
      expect(takesSince(from)).to.deep.equal({ a: 5, b: 5 });
      expect(handBacksSince(from)).to.equal(0);
      // Each listed the Leases again at its first round back, not when its watch's back-off ended.
      for (const r of replicas)
        expect(r.api.listedAt.find((t) => t > backAt)! - backAt, r.id).to.be.at.most(5_200);
    });

  it('after a short outage that cost one replica one renewal and the other two, nothing is moved twice', async () => {
    await twoReplicas();
    expect(counts()).to.deep.equal([5, 5]);
    const lastRenewal = (id: string): number =>
      Math.max(...store.writes.filter((w) => w.name === `replica-${id}`).map((w) => w.at));
    // Each renews its membership Lease every 5 s; the rounds a Lease event brings on put them in step. A
    // round of a's own (a node it does not hold reported stopped) 3.5 s after b's renewal puts a out of it.
    await run(lastRenewal('b') + 3_400 - clock.now());
    replicas[0]!.coordinator.stopped('vn-elsewhere');
    await run(10_000);
    // p renews d ms after q.
    const aAfterB = (((lastRenewal('a') - lastRenewal('b')) % 5_000) + 5_000) % 5_000;
    const [p, q] = (aAfterB >= 500 && aAfterB <= 4_500 ? replicas : [...replicas].reverse()) as [
      Replica,
      Replica,
    ];
    const d = p.id === 'a' ? aAfterB : 5_000 - aAfterB;
    expect(d, 'the two phases apart').to.be.within(500, 4_500);
    const seen = lastRenewal(q.id);
    while (lastRenewal(q.id) === seen) await run(100);
    const tq = lastRenewal(q.id);
    // Away from just after p's renewal (at tq + d) until between q's second failed one (tq + 10 s) and p's
    // next (tq + d + 10 s): p misses one renewal and keeps its nodes; q misses two and drops its nodes.
    await run(tq + d + 100 - clock.now());
    expect(lastRenewal(p.id)).to.be.above(tq);
    for (const r of replicas) r.api.cut = true;
    await run(tq + 10_000 + d / 2 - clock.now());
    expect([p.serving.size, q.serving.size]).to.deep.equal([5, 0]);
    const from = store.writes.length;
    // Back, and slow for q: its first renewal lands a little after its Lease ran out in p's view (p looks
    // then, at a round that renews nothing: p renewed 1.5 s before).
    q.api.latencyMs = 200;
    for (const r of replicas) r.api.cut = false;
    await run(40_000);
    expect(counts()).to.deep.equal([5, 5]);
    expect(takesSince(from)).to.deep.equal({ [q.id]: 5 });
    expect(handBacksSince(from)).to.equal(0);
  });

  it('after an outage, a replica that never came back is taken over when the grace window ends', async () => {
    const [a, b] = await twoReplicas();
    for (const r of replicas) r.api.cut = true;
    await run(60_000);
    const from = store.writes.length;
    const backAt = clock.now();
    // b's process died during the outage: it never writes again.
    a.api.cut = false;
    let halfAt: number | undefined;
    let allAt: number | undefined;
    for (let t = 0; t < 60_000 && allAt === undefined; t += 100) {
      await run(100);
      if (halfAt === undefined && a.serving.size === 5) halfAt = clock.now();
      if (a.serving.size === 10) allAt = clock.now();
    }
    expect(b.serving.size).to.equal(0);
    expect(halfAt, 'a took its share first').to.not.equal(undefined);
    expect(allAt, 'a took everything').to.not.equal(undefined);
    // Its own share at its first round; b counted live for one Lease duration after a's first accepted
    // write, then its nodes (long expired) taken at once.
    expect(halfAt! - backAt).to.be.at.most(5_200);
    expect(allAt! - halfAt!).to.be.within(15_000, 15_200);
    expect(allAt! - backAt).to.be.at.most(15_000 + 15_000 + 5_000);
    expect(takesSince(from)).to.deep.equal({ a: 10 });
    expect(handBacksSince(from)).to.equal(0);
  });
  it('after an outage, three replicas of which one never came back: shares only grow, nothing moves twice', async () => {
    add('a');
    add('b');
    add('c');
    await run(12_000);
    expect(counts()).to.deep.equal([4, 3, 3]);
    for (const r of replicas) r.api.cut = true;
    await run(60_000);
    const from = store.writes.length;
    replicas[0]!.api.cut = false;
    replicas[1]!.api.cut = false;
    // c counted live through the grace window: 4/3 and c's share left free, then 5/5.
    await run(5_200);
    expect(counts()).to.deep.equal([4, 3, 0]);
    await run(15_000);
    expect(counts()).to.deep.equal([5, 5, 0]);
    expect(takesSince(from)).to.deep.equal({ a: 5, b: 5 });
    expect(handBacksSince(from)).to.equal(0);
  });
});
