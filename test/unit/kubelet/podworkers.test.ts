import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import { emptyPodStatus, PodCache } from '../../../src/kubelet/container/cache.js';
import { asPodUID, type PodUID, type RuntimePodStatus } from '../../../src/kubelet/container/types.js';
import {
  effectiveGracePeriod,
  PodWorkers,
  type PodSyncer,
  type RunningPodRef,
} from '../../../src/kubelet/podworkers.js';
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

/** A PLEG cache that is always fresh: every pod reads as nothing on the runtime. */
const freshCache = {
  getNewerThan: (uid: string) => Promise.resolve({ status: emptyPodStatus(uid), error: undefined }),
};

/** A syncer whose calls can be held open, recording every call. */
class FakeSyncer implements PodSyncer {
  calls: string[] = [];
  concurrent = 0;
  maxConcurrent = 0;
  hold: Promise<void> | undefined;
  terminal = false;
  failSync = 0;
  statuses: RuntimePodStatus[] = [];
  async syncPod(ctx: { signal: AbortSignal }, type: string, p: Pod, status: RuntimePodStatus) {
    this.statuses.push(status);
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
  async syncTerminatingPod(_ctx: unknown, _p: Pod, _status: RuntimePodStatus, grace: number) {
    this.enter();
    this.calls.push(`terminating grace=${grace}`);
    this.concurrent--;
  }
  async syncTerminatingRuntimePod(_ctx: unknown, running: RunningPodRef) {
    this.enter();
    this.calls.push(`terminating runtime pod ${running.namespace}/${running.name}`);
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

/** A one-minute resync and a 10 s back-off without jitter. */
const RESYNC_AND_BACKOFF = { resyncIntervalMs: 60_000, backOffMs: 10_000, random: () => 0 };

/** The next sync comes exactly `ms` from now: none a millisecond before, one at it. */
async function expectSyncAt(w: PodWorkers, s: FakeSyncer, clock: FakeClock, ms: number): Promise<void> {
  const before = s.calls.length;
  clock.advance(ms - 1);
  await flush();
  expect(s.calls, `no sync before ${ms} ms`).to.have.length(before);
  clock.advance(1);
  await w.waitIdle();
  expect(s.calls, `one sync at ${ms} ms`).to.have.length(before + 1);
}

describe('PodWorkers', () => {
  it('serializes syncs per UID and coalesces updates to the newest pod', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    let release!: () => void;
    s.hold = new Promise((r) => (release = r));
    const w = new PodWorkers(s, { podCache: freshCache, clock, random: () => 0 });
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
    const w = new PodWorkers(s, { podCache: freshCache, clock });
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
    const w = new PodWorkers(s, { podCache: freshCache, clock });
    w.updatePod({ type: 'create', pod: pod('a', {}, 30) });
    await flush();
    w.updatePod({
      type: 'update',
      pod: pod('a', { deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 5 }, 30),
    });
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'terminating grace=5', 'terminated']);
    expect(w.state(asPodUID('a'))).to.equal('terminated');
    w.stop();
  });

  it('never syncs a terminated UID again and forgets it once undesired', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { podCache: freshCache, clock });
    w.updatePod({ type: 'kill', pod: pod('a'), kill: { gracePeriodSeconds: 2 } });
    await w.waitIdle();
    w.updatePod({ type: 'update', pod: pod('a') });
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['terminating grace=2', 'terminated']);
    w.syncKnownPods(new Set([asPodUID('a')]));
    expect(w.state(asPodUID('a'))).to.equal('terminated');
    w.syncKnownPods(new Set<PodUID>());
    expect(w.state(asPodUID('a'))).to.equal(undefined);
  });

  it('moves its generation with every worker made or forgotten and every state change, and only then', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { podCache: freshCache, clock, ...RESYNC_AND_BACKOFF });
    const seen: number[] = [w.generation];
    const moved = (): boolean => {
      const g = w.generation;
      const changed = g !== seen[seen.length - 1];
      seen.push(g);
      return changed;
    };
    w.updatePod({ type: 'create', pod: pod('a', {}, 5) });
    expect(moved(), 'a worker made').to.equal(true);
    await w.waitIdle();
    expect(moved(), 'a sync that changes no state').to.equal(false);
    w.updatePod({ type: 'update', pod: pod('a', { resourceVersion: '2' }, 5) });
    await w.waitIdle();
    expect(moved(), 'an update').to.equal(false);
    clock.advance(60_000);
    await w.waitIdle();
    expect(moved(), 'a resync').to.equal(false);
    w.syncKnownPods(new Set([asPodUID('a')]));
    expect(moved(), 'a pod still desired').to.equal(false);
    w.updatePod({ type: 'kill', pod: pod('a', {}, 5), kill: { gracePeriodSeconds: 1 } });
    expect(moved(), 'terminating').to.equal(true);
    await w.waitIdle();
    expect(w.state(asPodUID('a'))).to.equal('terminated');
    expect(moved(), 'terminated').to.equal(true);
    w.syncKnownPods(new Set<PodUID>());
    expect(moved(), 'forgotten').to.equal(true);
    w.stop();
  });

  it('a pod that became terminal moves to termination without a second syncPod', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    s.terminal = true;
    const w = new PodWorkers(s, { podCache: freshCache, clock });
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
    s.syncTerminatingPod = async (_ctx, _p, _status, grace) => {
      s.calls.push(`terminating grace=${grace}`);
      if (s.calls.length === 1) {
        await gate;
        throw new Error('retry');
      }
    };
    const w = new PodWorkers(s, { podCache: freshCache, clock, backOffMs: 1000, random: () => 0 });
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
    const w = new PodWorkers(s, { podCache: freshCache, clock, ...RESYNC_AND_BACKOFF });
    w.updatePod({ type: 'create', pod: pod('a') });
    await w.waitIdle();
    expect(s.calls).to.have.length(1);
    await expectSyncAt(w, s, clock, 10_000);
    expect(s.calls).to.deep.equal(['sync create rv=1', 'sync sync rv=1']);
    clock.advance(60_000);
    await w.waitIdle();
    expect(s.calls).to.have.length(3);
    w.stop();
  });

  it('an idle worker takes a status-only version of its pod (same spec) for its next resync', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { podCache: freshCache, clock, resyncIntervalMs: 60_000, random: () => 0 });
    const v1 = pod('a');
    w.updatePod({ type: 'create', pod: v1 });
    await w.waitIdle();
    w.refreshIdle({
      ...v1,
      metadata: { ...v1.metadata, resourceVersion: '2' },
      status: { phase: 'Running' },
    });
    // A different spec object is not a status-only change: the worker keeps what it has.
    w.refreshIdle({ ...v1, metadata: { ...v1.metadata, resourceVersion: '3' }, spec: { ...v1.spec } });
    // Unknown pods are ignored.
    w.refreshIdle(pod('b'));
    clock.advance(60_000);
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'sync sync rv=2']);
    // A busy worker is left alone: it keeps the version it syncs.
    let release = (): void => {};
    s.hold = new Promise<void>((r) => (release = r));
    clock.advance(60_000);
    await flush();
    expect(s.calls).to.have.length(3);
    w.refreshIdle({
      ...v1,
      metadata: { ...v1.metadata, resourceVersion: '4' },
      status: { phase: 'Running' },
    });
    s.hold = undefined;
    release();
    await w.waitIdle();
    clock.advance(60_000);
    await w.waitIdle();
    expect(s.calls.slice(2)).to.deep.equal(['sync sync rv=2', 'sync sync rv=2']);
    w.stop();
  });

  it('syncs again when syncDue says so, sooner than the resync or the back-off (an active deadline)', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    const due = new Map<string, number>([['a', 5_000]]);
    const w = new PodWorkers(s, {
      podCache: freshCache,
      clock,
      ...RESYNC_AND_BACKOFF,
      syncDue: (p) => due.get(p.metadata.uid!),
    });
    w.updatePod({ type: 'create', pod: pod('a') });
    await w.waitIdle();
    await expectSyncAt(w, s, clock, 5_000);
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
    await expectSyncAt(w, s, clock, 60_000);
    expect(s.calls).to.have.length(5);
    w.stop();
  });

  it('ignores pods without a UID', async () => {
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { podCache: freshCache, clock: new FakeClock(0) });
    w.updatePod({ type: 'create', pod: { metadata: { name: 'x' }, spec: { containers: [] } } });
    await w.waitIdle();
    expect(s.calls).to.deep.equal([]);
    expect(w.knownPods()).to.deep.equal([]);
  });

  it('a pod vanishing from the desired set is terminated', async () => {
    const s = new FakeSyncer();
    const w = new PodWorkers(s, { podCache: freshCache, clock: new FakeClock(0) });
    w.updatePod({ type: 'create', pod: pod('a') });
    await w.waitIdle();
    w.syncKnownPods(new Set<PodUID>());
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'terminating grace=1', 'terminated']);
    expect(w.couldHaveRunningContainers(asPodUID('a'))).to.equal(false);
    w.stop();
  });

  describe('reads the runtime only through the PLEG cache', () => {
    const running = (uid: string): RuntimePodStatus => ({
      ...emptyPodStatus(uid),
      containers: [
        {
          id: 'c1',
          name: 'c',
          state: 'running',
          image: 'busybox',
          imageRef: 'busybox',
          createdAt: 0,
          startedAt: 0,
          finishedAt: 0,
          exitCode: 0,
          restartCount: 0,
          hash: '',
        } as unknown as RuntimePodStatus['containers'][number],
      ],
    });

    it('each sync waits for an entry newer than the end of the previous sync', async () => {
      const clock = new FakeClock(1_000);
      const cache = new PodCache();
      const s = new FakeSyncer();
      const w = new PodWorkers(s, { podCache: cache, clock, resyncIntervalMs: 60_000, random: () => 0 });
      w.updatePod({ type: 'create', pod: pod('a') });
      await flush();
      expect(s.calls, 'no relist yet: the first sync waits').to.deep.equal([]);
      cache.set('a', running('a'), undefined, 1_001);
      await flush();
      expect(s.calls).to.deep.equal(['sync create rv=1']);
      expect(s.statuses[0]!.containers.map((c) => c.id)).to.deep.equal(['c1']);
      // The sync ended at 1 000 and the entry was written at 1 001: an update goes at once, ending at 6 000...
      clock.advance(5_000);
      w.updatePod({ type: 'update', pod: pod('a', { resourceVersion: '2' }) });
      await flush();
      expect(s.calls).to.have.length(2);
      // ...after which the same entry is too old: the next sync waits for a relist after 6 000.
      w.updatePod({ type: 'update', pod: pod('a', { resourceVersion: '3' }) });
      await flush();
      expect(s.calls).to.have.length(2);
      cache.updateTime(clock.now());
      await flush();
      expect(s.calls, 'a relist at the very end of the sync is not newer').to.have.length(2);
      cache.updateTime(clock.now() + 1);
      await flush();
      expect(s.calls).to.deep.equal(['sync create rv=1', 'sync update rv=2', 'sync update rv=3']);
      w.stop();
    });

    it('a failed inspection fails the sync (retried after the back-off)', async () => {
      const clock = new FakeClock(1_000);
      const cache = new PodCache();
      const s = new FakeSyncer();
      const w = new PodWorkers(s, { podCache: cache, clock, backOffMs: 10_000, random: () => 0 });
      cache.set('a', emptyPodStatus('a'), new Error('runtime down'), 1_001);
      w.updatePod({ type: 'create', pod: pod('a') });
      await flush();
      expect(s.calls).to.deep.equal([]);
      cache.set('a', running('a'), undefined, 11_500);
      clock.advance(10_000);
      await flush();
      expect(s.calls).to.deep.equal(['sync sync rv=1']);
      w.stop();
    });

    it('a kill ends the wait for the cache and terminates the pod', async () => {
      const clock = new FakeClock(1_000);
      const cache = new PodCache();
      const s = new FakeSyncer();
      const w = new PodWorkers(s, { podCache: cache, clock });
      w.updatePod({ type: 'create', pod: pod('a') });
      await flush();
      w.updatePod({ type: 'kill', pod: pod('a'), kill: { gracePeriodSeconds: 2 } });
      await flush();
      expect(s.calls).to.deep.equal([]);
      cache.set('a', running('a'), undefined, 1_001);
      await w.waitIdle();
      expect(s.calls).to.deep.equal(['terminating grace=2', 'terminated']);
      w.stop();
    });
  });

  describe('pods only the runtime knows, and who may remove what', () => {
    const orphan = { uid: asPodUID('o'), name: 'gone', namespace: 'ns' };

    it('a runtime-only pod is stopped by a worker (syncTerminatingRuntimePod), never synced', async () => {
      const s = new FakeSyncer();
      const w = new PodWorkers(s, { podCache: freshCache, clock: new FakeClock(0) });
      w.updatePod({ type: 'sync', runningPod: orphan });
      await w.waitIdle();
      expect(s.calls).to.deep.equal([]);
      w.updatePod({ type: 'kill', runningPod: orphan });
      await w.waitIdle();
      expect(s.calls).to.deep.equal(['terminating runtime pod ns/gone']);
      expect(w.state(asPodUID('o'))).to.equal('terminated');
      expect(w.couldHaveRunningContainers(asPodUID('o'))).to.equal(false);
      w.syncKnownPods(new Set<PodUID>());
      expect(w.knownPods()).to.deep.equal([]);
      w.stop();
    });

    it('unknown UIDs could be running until the workers have been synced with the API once', () => {
      const w = new PodWorkers(new FakeSyncer(), { podCache: freshCache, clock: new FakeClock(0) });
      expect(w.couldHaveRunningContainers(asPodUID('x'))).to.equal(true);
      expect(w.shouldPodContentBeRemoved(asPodUID('x'))).to.equal(false);
      expect(w.shouldPodRuntimeBeRemoved(asPodUID('x'))).to.equal(false);
      w.syncKnownPods(new Set<PodUID>());
      expect(w.couldHaveRunningContainers(asPodUID('x'))).to.equal(false);
      expect(w.shouldPodContentBeRemoved(asPodUID('x'))).to.equal(true);
      expect(w.shouldPodRuntimeBeRemoved(asPodUID('x'))).to.equal(true);
      w.stop();
    });

    it('content of a finished pod stays while its API object does; an evicted pod loses it at once', async () => {
      const s = new FakeSyncer();
      const w = new PodWorkers(s, { podCache: freshCache, clock: new FakeClock(0) });
      w.updatePod({ type: 'create', pod: pod('ev') });
      await w.waitIdle();
      s.terminal = true;
      w.updatePod({ type: 'create', pod: pod('done') });
      await w.waitIdle();
      w.updatePod({ type: 'kill', pod: pod('ev'), kill: { reason: 'Evicted', gracePeriodSeconds: 0 } });
      await w.waitIdle();
      expect(w.state(asPodUID('done'))).to.equal('terminated');
      expect(w.shouldPodRuntimeBeRemoved(asPodUID('done'))).to.equal(true);
      expect(w.shouldPodContentBeRemoved(asPodUID('done')), 'finished, still in the API').to.equal(false);
      expect(w.shouldPodContentBeRemoved(asPodUID('ev')), 'evicted').to.equal(true);
      w.syncKnownPods(new Set([asPodUID('ev')]));
      expect(w.shouldPodContentBeRemoved(asPodUID('done')), 'gone from the API').to.equal(true);
      w.stop();
    });
  });

  it('with onDue, a due resync goes through the sync loop and runs only when handed back', async () => {
    const clock = new FakeClock(0);
    const s = new FakeSyncer();
    const due: string[] = [];
    const w = new PodWorkers(s, {
      podCache: freshCache,
      clock,
      resyncIntervalMs: 1_000,
      random: () => 0,
      onDue: (uid) => due.push(uid),
    });
    w.updatePod({ type: 'create', pod: pod('a') });
    await w.waitIdle();
    clock.advance(1_000);
    await flush();
    expect(due).to.deep.equal(['a']);
    expect(s.calls).to.have.length(1);
    w.resync(asPodUID('a'));
    await w.waitIdle();
    expect(s.calls).to.deep.equal(['sync create rv=1', 'sync sync rv=1']);
    w.resync(asPodUID('a'));
    await w.waitIdle();
    expect(s.calls, 'a resync that is not due does nothing').to.have.length(2);
    w.stop();
  });
});
