import { expect } from 'chai';
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

  beforeEach(() => {
    clock = new FakeClock();
    store = new FakeLeaseStore();
    nodes = Array.from({ length: 10 }, (_, i) => ({ name: `vn-${i}` }));
    replicas = [];
  });

  afterEach(async () => {
    for (const r of replicas) {
      r.api.cut = false;
      r.serving.clear();
      const stopping = r.coordinator.stop();
      await run(200);
      await stopping;
    }
  });

  function add(id: string, host = ''): Replica {
    const r = new Replica(id, store, clock, () => nodes, host);
    replicas.push(r);
    r.start();
    return r;
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
    add('a');
    add('b');
    await run(12_000);
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
    add('a');
    add('b');
    await run(12_000);
    const [a, b] = replicas as [Replica, Replica];
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

  it('renews each held Lease once per interval, not per Lease event', async () => {
    add('a');
    add('b');
    await run(12_000);
    const before = store.writes.length;
    await run(20_000);
    const renewals = store.writes.slice(before).filter((w) => w.verb === 'update');
    // 10 node Leases + 2 replica Leases, every 5 s, for 20 s.
    expect(renewals.length).to.be.within(44, 52);
  });
});
