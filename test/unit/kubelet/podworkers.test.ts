import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import { effectiveGracePeriod, PodWorkers, type PodSyncer } from '../../../src/kubelet/podworkers.js';
import { FakeClock } from '../../../src/util/clock.js';

const flush = async (n = 10) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

function pod(uid: string, extra: Partial<Pod['metadata']> = {}, grace?: number): Pod {
  return {
    metadata: { uid, name: `p-${uid}`, namespace: 'ns', resourceVersion: '1', ...extra },
    spec: { containers: [{ name: 'c', image: 'busybox' }], terminationGracePeriodSeconds: grace },
  };
}

/** A syncer whose calls can be held open, recording every call. */
class FakeSyncer implements PodSyncer {
  calls: string[] = [];
  concurrent = 0;
  maxConcurrent = 0;
  hold: Promise<void> | undefined;
  terminal = false;
  failSync = 0;
  async syncPod(ctx: { signal: AbortSignal }, type: string, p: Pod) {
    this.enter();
    this.calls.push(`sync ${type} rv=${p.metadata.resourceVersion}`);
    try {
      if (this.hold) {
        await Promise.race([
          this.hold,
          new Promise((_, rej) => ctx.signal.addEventListener('abort', () => rej(new Error('aborted')))),
        ]);
      }
      if (this.failSync > 0) {
        this.failSync--;
        throw new Error('runtime down');
      }
      return { isTerminal: this.terminal };
    } finally {
      this.concurrent--;
    }
  }
  async syncTerminatingPod(_ctx: unknown, _p: Pod, grace: number) {
    this.enter();
    this.calls.push(`terminating grace=${grace}`);
    this.concurrent--;
  }
  async syncTerminatedPod() {
    this.enter();
    this.calls.push('terminated');
    this.concurrent--;
  }
  private enter() {
    this.concurrent++;
    this.maxConcurrent = Math.max(this.maxConcurrent, this.concurrent);
  }
}

describe('PodWorkers', () => {
  it('serializes syncs per UID and coalesces updates to the newest pod', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    let release!: () => void;
    s.hold = new Promise((r) => (release = r));
    const w = new PodWorkers(s, { clock, random: () => 0 });
    w.updatePod({ type: 'create', pod: pod('a') });
    await flush();
    w.updatePod({ type: 'update', pod: pod('a', { resourceVersion: '2' }) });
    w.updatePod({ type: 'update', pod: pod('a', { resourceVersion: '3' }) });
    s.hold = undefined;
    release();
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'sync update rv=3']);
    expect(s.maxConcurrent).to.equal(1);
    w.stop();
  });

  it('runs different UIDs concurrently', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    let release!: () => void;
    s.hold = new Promise((r) => (release = r));
    const w = new PodWorkers(s, { clock });
    w.updatePod({ type: 'create', pod: pod('a') });
    w.updatePod({ type: 'create', pod: pod('b') });
    await flush();
    expect(s.concurrent).to.equal(2);
    release();
    await w.waitIdle();
    w.stop();
  });

  it('a deletion aborts a running sync and terminates with the deletion grace period', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    s.hold = new Promise(() => {});
    const w = new PodWorkers(s, { clock });
    w.updatePod({ type: 'create', pod: pod('a', {}, 30) });
    await flush();
    w.updatePod({
      type: 'update',
      pod: pod('a', { deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 5 }, 30),
    });
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'terminating grace=5', 'terminated']);
    expect(w.state('a')).to.equal('terminated');
    w.stop();
  });

  it('never syncs a terminated UID again and forgets it once undesired', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { clock });
    w.updatePod({ type: 'kill', pod: pod('a'), kill: { gracePeriodSeconds: 2 } });
    await w.waitIdle();
    w.updatePod({ type: 'update', pod: pod('a') });
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['terminating grace=2', 'terminated']);
    w.syncKnownPods(new Set(['a']));
    expect(w.state('a')).to.equal('terminated');
    w.syncKnownPods(new Set());
    expect(w.state('a')).to.equal(undefined);
  });

  it('a pod that became terminal moves to termination without a second syncPod', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    s.terminal = true;
    const w = new PodWorkers(s, { clock });
    w.updatePod({ type: 'create', pod: pod('a', {}, 30) });
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'terminating grace=1', 'terminated']);
  });

  it('grace period: kill override, then deletion, then spec, then 30 s; negatives ignored', () => {
    const p = pod('a', { deletionGracePeriodSeconds: 10 }, 30);
    expect(effectiveGracePeriod(p)).to.equal(10);
    expect(effectiveGracePeriod(p, { gracePeriodSeconds: 0 })).to.equal(0);
    expect(effectiveGracePeriod(pod('b'))).to.equal(30);
    expect(effectiveGracePeriod(pod('c', {}, -5))).to.equal(30);
  });

  it('a second deletion can shorten the grace period of a terminating pod, never lengthen it', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Hold the first termination attempt open so later deletions arrive while terminating.
    s.syncTerminatingPod = async (_ctx, _p, grace) => {
      s.calls.push(`terminating grace=${grace}`);
      if (s.calls.length === 1) {
        await gate;
        throw new Error('retry');
      }
    };
    const w = new PodWorkers(s, { clock, backOffMs: 1000, random: () => 0 });
    const del = (g: number) => pod('a', { deletionTimestamp: 't', deletionGracePeriodSeconds: g });
    w.updatePod({ type: 'update', pod: del(20) });
    await flush();
    w.updatePod({ type: 'update', pod: del(3) });
    w.updatePod({ type: 'update', pod: del(50) });
    release();
    await w.waitIdle();
    clock.advance(1000);
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['terminating grace=20', 'terminating grace=3', 'terminated']);
  });

  it('resyncs after the interval and retries failures after the back-off', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    s.failSync = 1;
    const w = new PodWorkers(s, { clock, resyncIntervalMs: 60_000, backOffMs: 10_000, random: () => 0 });
    w.updatePod({ type: 'create', pod: pod('a') });
    await w.waitIdle();
    expect(s.calls).to.have.length(1);
    clock.advance(9_999);
    await flush();
    expect(s.calls).to.have.length(1);
    clock.advance(1);
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'sync sync rv=1']);
    clock.advance(60_000);
    await w.waitIdle();
    expect(s.calls).to.have.length(3);
    w.stop();
  });

  it('syncs again when syncDue says so, sooner than the resync or the back-off (an active deadline)', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    const due = new Map<string, number>([['a', 5_000]]);
    const w = new PodWorkers(s, {
      clock,
      resyncIntervalMs: 60_000,
      backOffMs: 10_000,
      random: () => 0,
      syncDue: (p) => due.get(p.metadata.uid!),
    });
    w.updatePod({ type: 'create', pod: pod('a') });
    await w.waitIdle();
    clock.advance(4_999);
    await flush();
    expect(s.calls).to.have.length(1);
    clock.advance(1);
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'sync sync rv=1']);
    // After a failed sync too (due instead of the 10 s back-off), and the resync again without an opinion.
    s.failSync = 1;
    due.set('a', 2_000);
    clock.advance(5_000);
    await w.waitIdle();
    expect(s.calls).to.have.length(3);
    due.delete('a');
    clock.advance(2_000);
    await w.waitIdle();
    expect(s.calls).to.have.length(4);
    clock.advance(59_999);
    await flush();
    expect(s.calls).to.have.length(4);
    clock.advance(1);
    await w.waitIdle();
    expect(s.calls).to.have.length(5);
    w.stop();
  });

  it('ignores pods without a UID', async () => {
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { clock: new FakeClock(0) });
    w.updatePod({ type: 'create', pod: { metadata: { name: 'x' }, spec: { containers: [] } } });
    await w.waitIdle();
    expect(s.calls).to.deep.equal([]);
    expect(w.knownPods()).to.deep.equal([]);
  });

  it('a pod vanishing from the desired set is terminated', async () => {
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { clock: new FakeClock(0) });
    w.updatePod({ type: 'create', pod: pod('a') });
    await w.waitIdle();
    w.syncKnownPods(new Set());
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'terminating grace=1', 'terminated']);
    expect(w.couldHaveRunningContainers('a')).to.equal(false);
    w.stop();
  });
});
