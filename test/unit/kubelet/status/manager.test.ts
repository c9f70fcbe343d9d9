import { expect } from 'chai';
import type { Pod, PodStatus } from '../../../../src/api/core.js';
import { asPodUID, type PodUID } from '../../../../src/kubelet/container/types.js';
import type { PodStatusClient } from '../../../../src/kubelet/status/interfaces.js';
import { StatusManager } from '../../../../src/kubelet/status/manager.js';
import { SYNC_CONCURRENCY } from '../../../../src/kubelet/status/sync.js';
import { wireEqual } from '../../../../src/kubelet/status/wireequal.js';
import { ConfigSourceAnnotationKey } from '../../../../src/kubelet/types/podupdate.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { isInvalidArgument, KindError } from '../../../../src/util/errors.js';
import { FakeApiServer } from '../../../conformance/areas/statusManager-apiserver.js';
import { asMirror, FakePodManager } from '../../../conformance/areas/statusManager-world.js';

const UID = asPodUID('u1');

function testPod(over: Partial<Pod['spec']> = {}, meta: Partial<Pod['metadata']> = {}): Pod {
  return {
    metadata: { uid: 'u1', name: 'p', namespace: 'ns', ...meta },
    spec: { containers: [{ name: 'c1' }, { name: 'c2' }], ...over },
    status: {},
  };
}

function setup(opts: { client?: PodStatusClient; couldRun?: () => boolean } = {}) {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0, 500));
  const server = new FakeApiServer();
  const podManager = new FakePodManager(server);
  const manager = new StatusManager({
    client: opts.client ?? server,
    podManager,
    podDeletionSafety: { podCouldHaveRunningContainers: opts.couldRun ?? (() => false) },
    clock,
  });
  const verbs = () => server.actions.splice(0).map((a) => a.verb);
  return { clock, server, podManager, manager, verbs };
}

const cs = (name: string, extra: object = {}) => ({ name, ready: false, restartCount: 0, ...extra });

/** The fake server as a status client whose answer to a status patch carries the resourceVersion `next` gives. */
function revisionClient(server: FakeApiServer, next: () => string): PodStatusClient {
  return {
    getPod: (ns, name) => server.getPod(ns, name),
    patchPodStatus: async (ns, name, uid, patch) => {
      const stored = await server.patchPodStatus(ns, name, uid, patch);
      return { ...stored, metadata: { ...stored.metadata, resourceVersion: next() } };
    },
    deletePod: (ns, name, uid, grace) => server.deletePod(ns, name, uid, grace),
  };
}

describe('StatusManager', () => {
  it('peekPodStatus is the cached entry itself (no copy), equal to what getPodStatus copies', () => {
    const { manager } = setup();
    manager.setPodStatus(testPod(), { phase: 'Running', message: 'm' });
    const peeked = manager.peekPodStatus(UID);
    expect(peeked).to.deep.equal(manager.getPodStatus(UID));
    expect(manager.peekPodStatus(UID)).to.equal(peeked);
    expect(manager.getPodStatus(UID)).to.not.equal(peeked);
    manager.setPodStatus(testPod(), { phase: 'Running', message: 'n' });
    expect(peeked?.message, 'entries are replaced, never mutated').to.equal('m');
    expect(manager.peekPodStatus(UID)?.message).to.equal('n');
  });

  it('writes the statuses of one batch up to SYNC_CONCURRENCY (4) pods at a time, each pod once', async () => {
    const server = new FakeApiServer();
    let inFlight = 0;
    let most = 0;
    const patched: string[] = [];
    const slow = async <T>(call: () => Promise<T>): Promise<T> => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return call();
    };
    const client: PodStatusClient = {
      getPod: (ns, name) => slow(() => server.getPod(ns, name)),
      patchPodStatus: (ns, name, uid, patch) => {
        patched.push(name);
        return slow(() => server.patchPodStatus(ns, name, uid, patch));
      },
      deletePod: (ns, name, uid, grace) => server.deletePod(ns, name, uid, grace),
    };
    const { manager } = setup({ client });
    const names = Array.from({ length: 10 }, (_, i) => `p${i}`);
    for (const name of names) {
      const pod = testPod({}, { uid: `u-${name}`, name });
      server.put(pod);
      manager.setPodStatus(pod, { phase: 'Running', message: name });
    }
    expect(await manager.syncBatch(false)).to.equal(10);
    expect(most).to.equal(SYNC_CONCURRENCY);
    expect([...patched].sort()).to.deep.equal([...names].sort());
    expect(await manager.syncBatch(false), 'all written').to.equal(0);
  });

  it('keeps a condition transition time while its status holds, re-stamps it when it flips', () => {
    const { manager, clock } = setup();
    const pod = testPod();
    manager.setPodStatus(pod, { message: 'a', conditions: [{ type: 'Ready', status: 'False' }] });
    const first = manager.getPodStatus(UID)?.conditions?.[0]?.lastTransitionTime;
    expect(first).to.equal('2026-01-01T00:00:00Z');
    clock.advance(5000);
    manager.setPodStatus(pod, { message: 'b', conditions: [{ type: 'Ready', status: 'False' }] });
    expect(manager.cachedEntry(UID)?.version).to.equal(2);
    expect(manager.getPodStatus(UID)?.conditions?.[0]?.lastTransitionTime).to.equal(first);
    clock.advance(5000);
    manager.setPodStatus(pod, { message: 'b', conditions: [{ type: 'Ready', status: 'True' }] });
    expect(manager.getPodStatus(UID)?.conditions?.[0]?.lastTransitionTime).to.equal('2026-01-01T00:00:10Z');
  });

  it('reads the cached phase alone, through the mirror translation, without handing out the cache', () => {
    const { manager, podManager, server } = setup();
    expect(manager.getPodPhase(UID)).to.equal(undefined);
    manager.setPodStatus(testPod(), { phase: 'Running' });
    expect(manager.getPodPhase(UID)).to.equal('Running');
    manager.getPodStatus(UID)!.phase = 'Failed';
    expect(manager.getPodPhase(UID)).to.equal('Running');
    const staticPod = testPod({}, { uid: 's1', annotations: { [ConfigSourceAnnotationKey]: 'file' } });
    const mirror = asMirror({ ...testPod(), metadata: { uid: 'm1', name: 'p', namespace: 'ns' } });
    server.put(mirror);
    podManager.add(staticPod);
    podManager.add(mirror);
    manager.setPodStatus(staticPod, { phase: 'Pending' });
    expect(manager.getPodPhase(asPodUID('m1'))).to.equal(manager.getPodStatus(asPodUID('m1'))?.phase);
  });

  it('stores foreign-condition-only changes as no change; a kubelet condition message is one', () => {
    const { manager } = setup();
    const pod = testPod();
    manager.setPodStatus(pod, { conditions: [{ type: 'example.com/x', status: 'True' }] });
    manager.setPodStatus(pod, { conditions: [{ type: 'example.com/x', status: 'False' }] });
    expect(manager.cachedEntry(UID)?.version).to.equal(1);
    manager.setPodStatus(pod, { conditions: [{ type: 'Initialized', status: 'False', message: 'm' }] });
    expect(manager.cachedEntry(UID)?.version).to.equal(2);
  });

  it('takes the first old status from the mirror pod for a static pod', () => {
    const { manager, podManager, server } = setup();
    const staticPod = testPod({}, { annotations: { [ConfigSourceAnnotationKey]: 'file' } });
    const mirror = asMirror({ ...testPod(), metadata: { uid: 'm1', name: 'p', namespace: 'ns' } });
    mirror.status = { startTime: '2025-06-01T00:00:00Z' };
    server.put(mirror);
    podManager.add(staticPod);
    podManager.add(mirror);
    manager.setPodStatus(staticPod, { message: 'x' });
    expect(manager.getPodStatus(asPodUID('m1'))?.startTime).to.equal('2025-06-01T00:00:00Z');
  });

  it('keeps podIsFinished sticky for regular pods only', () => {
    const regular = setup();
    regular.manager.terminatePod(testPod());
    regular.manager.setPodStatus(testPod(), { message: 'later' });
    expect(regular.manager.cachedEntry(UID)?.podIsFinished).to.equal(true);

    const stat = setup();
    const staticPod = testPod({}, { annotations: { [ConfigSourceAnnotationKey]: 'file' } });
    stat.manager.terminatePod(staticPod);
    stat.manager.setPodStatus(staticPod, { message: 'later' });
    expect(stat.manager.cachedEntry(UID)?.podIsFinished).to.equal(false);
  });

  it('coalesces signals: many changes, one pending signal, listeners and waiters woken once', async () => {
    const { manager } = setup();
    let calls = 0;
    const unsubscribe = manager.onUpdate(() => {
      calls++;
      throw new Error('listener failures stay in the listener');
    });
    const waited = manager.waitForUpdate();
    manager.setPodStatus(testPod(), { message: '1' });
    manager.setPodStatus(testPod(), { message: '2' });
    await waited;
    expect(calls).to.equal(1);
    expect(manager.hasPendingUpdate()).to.equal(true);
    expect(await manager.drain()).to.equal(1);
    expect(manager.hasPendingUpdate()).to.equal(false);
    unsubscribe();
    manager.setPodStatus(testPod(), { message: '3' });
    expect(calls).to.equal(1);
  });

  it('sends no PATCH for a stale version whose status the server already has', async () => {
    const { manager, server, verbs } = setup();
    server.put(testPod());
    manager.setPodStatus(testPod(), { message: 'm' });
    expect(await manager.syncBatch(true)).to.equal(1);
    expect(verbs()).to.deep.equal(['get', 'patch/status']);
    manager.apiStatusVersions.set('u1', 0);
    expect(await manager.syncBatch(true)).to.equal(1);
    expect(verbs()).to.deep.equal(['get']);
    expect(manager.apiStatusVersions.get('u1')).to.equal(1);
  });

  it('reconciles when the server status drifts from the cache', async () => {
    const { manager, server, podManager, verbs } = setup();
    server.put(testPod());
    podManager.add(testPod());
    manager.setPodStatus(testPod(), { message: 'm' });
    await manager.drain();
    verbs();
    expect(await manager.syncBatch(true)).to.equal(0);
    server.put({ ...testPod(), status: { message: 'edited by someone' } });
    expect(await manager.syncBatch(true)).to.equal(1);
    expect(verbs()).to.deep.equal(['get', 'patch/status']);
    expect((await server.getPod('ns', 'p')).status?.message).to.equal('m');
  });

  it('does not record a version whose PATCH failed, so the next full sync retries', async () => {
    const server = new FakeApiServer();
    let failNext = true;
    const client: PodStatusClient = {
      getPod: (ns, name) => server.getPod(ns, name),
      patchPodStatus: async (ns, name, uid, patch) => {
        if (failNext) {
          failNext = false;
          throw new KindError('Unavailable', 'apiserver down');
        }
        return server.patchPodStatus(ns, name, uid, patch);
      },
      deletePod: (ns, name, uid, grace) => server.deletePod(ns, name, uid, grace),
    };
    const { manager } = setup({ client });
    server.put(testPod());
    manager.setPodStatus(testPod(), { message: 'm' });
    expect(await manager.drain()).to.equal(1);
    expect(manager.apiStatusVersions.has('u1')).to.equal(false);
    expect(await manager.syncBatch(true)).to.equal(1);
    expect(manager.apiStatusVersions.get('u1')).to.equal(1);
  });

  it("retries a failed write at the next batch another pod's change starts, and skips synced pods", async () => {
    const server = new FakeApiServer();
    let failures = 0;
    const patched: string[] = [];
    const client: PodStatusClient = {
      getPod: (ns, name) => server.getPod(ns, name),
      patchPodStatus: async (ns, name, uid, patch) => {
        if (failures > 0) {
          failures--;
          throw new KindError('Unavailable', 'apiserver down');
        }
        patched.push(name);
        return server.patchPodStatus(ns, name, uid, patch);
      },
      deletePod: (ns, name, uid, grace) => server.deletePod(ns, name, uid, grace),
    };
    const { manager } = setup({ client });
    const a = testPod({}, { uid: 'ua', name: 'a' });
    const b = testPod({}, { uid: 'ub', name: 'b' });
    const c = testPod({}, { uid: 'uc', name: 'c' });
    for (const p of [a, b, c]) server.put(p);
    manager.setPodStatus(c, { message: 'c1' });
    await manager.drain();
    expect(patched).to.deep.equal(['c']);
    failures = 1;
    manager.setPodStatus(a, { message: 'a1' });
    expect(await manager.drain(), 'the write of a fails').to.equal(1);
    expect(manager.apiStatusVersions.has('ua')).to.equal(false);
    manager.setPodStatus(b, { message: 'b1' });
    expect(await manager.drain(), 'b, and a again; c is synced').to.equal(2);
    expect([...patched].sort()).to.deep.equal(['a', 'b', 'c']);
    expect((await server.getPod('ns', 'a')).status?.message).to.equal('a1');
    manager.setPodStatus(b, { message: 'b2' });
    expect(await manager.drain(), 'only b').to.equal(1);
  });

  it('delays the terminal phase and the DELETE while containers may run, then finishes', async () => {
    let couldRun = true;
    const { manager, server, podManager, verbs } = setup({ couldRun: () => couldRun });
    const pod = testPod({}, { deletionTimestamp: '2026-01-01T00:00:00Z' });
    server.put({ ...pod, status: { phase: 'Running' } });
    podManager.add(pod);
    manager.setPodStatus(pod, { phase: 'Running', message: 'up' });
    manager.terminatePod(pod);
    await manager.drain();
    expect(verbs()).to.deep.equal(['get', 'patch/status']);
    expect((await server.getPod('ns', 'p')).status?.phase).to.equal('Running');
    verbs();
    couldRun = false;
    expect(await manager.syncBatch(true)).to.equal(1);
    expect(verbs()).to.deep.equal(['get', 'patch/status', 'delete']);
    expect(manager.getPodStatus(UID)).to.equal(undefined);
  });

  it('never deletes a mirror pod', async () => {
    const { manager, server, podManager, verbs } = setup();
    const staticPod = testPod({}, { annotations: { [ConfigSourceAnnotationKey]: 'file' } });
    const mirror = asMirror({ ...testPod(), metadata: { uid: 'm1', name: 'p', namespace: 'ns' } });
    mirror.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    mirror.status = { phase: 'Failed' };
    server.put(mirror);
    podManager.add(staticPod);
    podManager.add(mirror);
    manager.terminatePod(staticPod);
    await manager.drain();
    expect(verbs()).to.deep.equal(['get', 'patch/status']);
  });

  it('runs concurrent syncBatch calls one after the other', async () => {
    const { manager, server, verbs } = setup();
    server.put(testPod());
    manager.setPodStatus(testPod(), { message: 'm' });
    const [a, b] = await Promise.all([manager.syncBatch(false), manager.syncBatch(false)]);
    expect([a, b]).to.deep.equal([1, 0]);
    expect(verbs()).to.deep.equal(['get', 'patch/status']);
  });

  it('recomputes Ready against readiness gates, appending the conditions it lacks', () => {
    const { manager, podManager } = setup();
    const pod = testPod({
      containers: [{ name: 'c1' }],
      readinessGates: [{ conditionType: 'example.com/gate' }],
    });
    podManager.add(pod);
    manager.setPodStatus(pod, { containerStatuses: [cs('c1', { containerID: 'test://1' })] });
    manager.setContainerReadiness(UID, 'test://1', true);
    const status = manager.getPodStatus(UID);
    expect(status?.conditions?.map((c) => [c.type, c.status, c.reason])).to.deep.equal([
      ['Ready', 'False', 'ReadinessGatesNotReady'],
      ['ContainersReady', 'True', undefined],
    ]);
  });

  it("a readiness change stamps Ready with the pod manager's generation, the status keeps the sync's", () => {
    const { manager, podManager } = setup();
    const synced = testPod({ containers: [{ name: 'c1' }] }, { generation: 2 });
    podManager.add(synced);
    manager.setPodStatus(synced, {
      observedGeneration: 2,
      containerStatuses: [cs('c1', { containerID: 'test://1' })],
    });
    // A spec change (generation 3) reached the pod manager; no sync has run for it yet.
    podManager.add(testPod({ containers: [{ name: 'c1' }] }, { generation: 3 }));
    manager.setContainerReadiness(UID, 'test://1', true);
    const status = manager.getPodStatus(UID);
    expect(status?.observedGeneration).to.equal(2);
    expect(status?.conditions?.map((c) => [c.type, c.observedGeneration])).to.deep.equal([
      ['Ready', 3],
      ['ContainersReady', 3],
    ]);
  });

  it("reads readiness gates from the pod manager's newest pod, not from the cache's stale copy", () => {
    const { manager, podManager, server } = setup();
    const gate = 'k8s.io/test-condition1';
    const pod = testPod({ containers: [{ name: 'c1' }], readinessGates: [{ conditionType: gate }] });
    podManager.add(pod);
    // The cache was generated while the gate was False; someone has set it True on the server since.
    manager.setPodStatus(pod, {
      containerStatuses: [cs('c1', { containerID: 'test://1' })],
      conditions: [{ type: gate, status: 'False' }],
    });
    server.put({ ...pod, status: { conditions: [{ type: gate, status: 'True' }] } });
    manager.setContainerReadiness(UID, 'test://1', true);
    const ready = manager.getPodStatus(UID)?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).to.include({ status: 'True' });
  });

  it('keeps conditions others own out of its patch: the server keeps its value, the kubelet its own', async () => {
    const { manager, podManager, server } = setup();
    const gate = 'k8s.io/test-condition1';
    const pod = testPod({ containers: [{ name: 'c1' }], readinessGates: [{ conditionType: gate }] });
    server.put({ ...pod, status: { conditions: [{ type: gate, status: 'True' }] } });
    podManager.add(pod);
    manager.setPodStatus(pod, {
      conditions: [
        { type: gate, status: 'False' },
        { type: 'Ready', status: 'True' },
      ],
    });
    await manager.drain();
    // The gate may be named in $setElementOrder (the list's order), never among the changed entries.
    const patch = server.actions.find((a) => a.verb === 'patch/status')?.patch;
    const changed = (patch?.status.conditions ?? []) as { type: string }[];
    expect(changed.map((c) => c.type)).to.deep.equal(['Ready']);
    const conditions = (await server.getPod('ns', 'p')).status?.conditions ?? [];
    expect(conditions.map((c) => [c.type, c.status])).to.deep.equal([
      [gate, 'True'],
      ['Ready', 'True'],
    ]);
  });

  describe('sharing the status the informer delivers', () => {
    /** A pod manager whose copy of one pod is a fixed object, as the informer's is until its next event. */
    class PinnedPodManager extends FakePodManager {
      pinned: Pod | undefined;
      override getPodByUID(uid: PodUID): Pod | undefined {
        return this.pinned?.metadata.uid === uid ? this.pinned : super.getPodByUID(uid);
      }
    }

    const statuses = () => [
      cs('c1', { ready: true, containerID: 'containerd://a' }),
      cs('c2', { containerID: 'containerd://b' }),
    ];

    /**
     * A pod at resourceVersion 10 whose status is set (not yet written); the server answers a status patch with
     * 11. `copyOf` is the informer's copy at a version: decoded anew, its status the cached one as a real
     * server serves it (zero times null, zero structs {}).
     */
    function world(pod: Pod) {
      const server = new FakeApiServer();
      const podManager = new PinnedPodManager(server);
      const manager = new StatusManager({
        client: revisionClient(server, () => '11'),
        podManager,
        podDeletionSafety: { podCouldHaveRunningContainers: () => false },
        clock: new FakeClock(Date.UTC(2026, 0, 1)),
      });
      const at10 = { ...pod, metadata: { ...pod.metadata, resourceVersion: '10' } };
      server.put(at10);
      podManager.add(at10);
      manager.setPodStatus(at10, { phase: 'Running', containerStatuses: statuses() });
      const uid = asPodUID(pod.metadata.uid ?? '');
      const ours = manager.getPodStatus(uid)!;
      const copyOf = (resourceVersion: string): Pod => ({
        ...structuredClone(at10),
        metadata: { ...structuredClone(at10.metadata), resourceVersion },
        status: {
          ...structuredClone(ours),
          conditions: ours.conditions?.map((c) => ({ ...c, lastProbeTime: null })),
          containerStatuses: ours.containerStatuses?.map((c) => ({ lastState: {}, ...c })),
        },
      });
      return { server, podManager, manager, uid, copyOf, before: manager.cachedEntry(uid)! };
    }

    it("takes the copy's status object once the copy carries our write; same version, nothing written", async () => {
      const { server, podManager, manager, uid, copyOf, before } = world(testPod());
      await manager.syncBatch(false);
      server.actions.splice(0);
      const own = manager.peekPodStatus(uid);
      podManager.pinned = copyOf('10');
      manager.podManagerUpdated('u1');
      expect(manager.peekPodStatus(uid), 'a copy older than our write').to.equal(own);
      const copy = copyOf('11');
      podManager.pinned = copy;
      manager.podManagerUpdated('u1');
      expect(manager.peekPodStatus(uid)).to.equal(copy.status);
      const { status: now, ...entry } = manager.cachedEntry(uid)!;
      const { status: was, ...entryBefore } = before;
      expect(entry, 'the same version, name and times').to.deep.equal(entryBefore);
      expect(wireEqual(now, was)).to.equal(true);
      expect(await manager.syncBatch(false)).to.equal(0);
      expect(await manager.syncBatch(true)).to.equal(0);
      expect(server.actions).to.deep.equal([]);
      // The next change is judged against the shared status as it was against our own.
      manager.setPodStatus(copy, { phase: 'Running', containerStatuses: statuses() });
      expect(manager.cachedEntry(uid)?.version, 'equal by kubelet rules').to.equal(before.version);
      manager.setContainerReadiness(uid, 'containerd://b', true);
      expect(manager.peekPodStatus(uid)?.containerStatuses?.[1]?.ready).to.equal(true);
      expect(copy.status?.containerStatuses?.[1]?.ready, 'the shared object is not written to').to.equal(
        false,
      );
    });

    it('takes it when the watch delivered our write before the answer to it was read', async () => {
      const { podManager, manager, uid, copyOf } = world(testPod());
      const copy = copyOf('11');
      podManager.pinned = copy;
      manager.podManagerUpdated('u1');
      await manager.syncBatch(false);
      expect(manager.peekPodStatus(uid)).to.equal(copy.status);
      expect(manager.writesAhead).to.equal(0);
    });

    it('keeps its own status while the copy differs in anything', async () => {
      const gated = world(testPod());
      await gated.manager.syncBatch(false);
      const withGate = gated.copyOf('11');
      const other = { type: 'example.com/gate', status: 'True' as const };
      withGate.status!.conditions = [...(withGate.status!.conditions ?? []), other];
      gated.podManager.pinned = withGate;
      const own = gated.manager.peekPodStatus(gated.uid);
      gated.manager.podManagerUpdated('u1');
      expect(gated.manager.peekPodStatus(gated.uid), 'another writer added a condition').to.equal(own);

      const moved = world(testPod());
      await moved.manager.syncBatch(false);
      moved.manager.setContainerReadiness(moved.uid, 'containerd://b', true);
      const ours = moved.manager.peekPodStatus(moved.uid);
      moved.podManager.pinned = moved.copyOf('11');
      moved.manager.podManagerUpdated('u1');
      expect(moved.manager.peekPodStatus(moved.uid), 'the cache moved on since the write').to.equal(ours);
    });
  });

  it('hands out copies and forgets orphans', () => {
    const { manager } = setup();
    manager.setPodStatus(testPod(), { message: 'm' });
    const copy = manager.getPodStatus(UID) as PodStatus;
    copy.message = 'mutated';
    expect(manager.getPodStatus(UID)?.message).to.equal('m');
    manager.removeOrphanedStatuses(new Set(['u1']));
    expect(manager.getPodStatus(UID)).to.not.equal(undefined);
    manager.removeOrphanedStatuses(new Set());
    expect(manager.getPodStatus(UID)).to.equal(undefined);
  });

  it('with readFromCache, keeps its last write only until the pod manager holds a copy as new', async () => {
    const server = new FakeApiServer();
    const podManager = new FakePodManager(server);
    // The server's answer to a status patch carries the pod's next resourceVersion.
    let revision = 10;
    const manager = new StatusManager({
      client: revisionClient(server, () => String(++revision)),
      podManager,
      podDeletionSafety: { podCouldHaveRunningContainers: () => false },
      clock: new FakeClock(Date.UTC(2026, 0, 1)),
      readFromCache: true,
    });
    const copy = (rv: string): Pod => testPod({}, { resourceVersion: rv });
    server.put(copy('10'));
    podManager.add(copy('10'));
    manager.setPodStatus(copy('10'), { phase: 'Running' });
    await manager.syncBatch(false);
    expect(server.actions.map((a) => a.verb)).to.deep.equal(['patch/status']);
    expect(manager.writesAhead, 'the copy (10) is older than the write (11)').to.equal(1);
    manager.podManagerUpdated('u1');
    expect(manager.writesAhead, 'nothing newer arrived').to.equal(1);
    podManager.add(copy('11'));
    manager.podManagerUpdated('other');
    expect(manager.writesAhead, 'another pod').to.equal(1);
    manager.podManagerUpdated('u1');
    expect(manager.writesAhead, 'the informer delivered our write').to.equal(0);
    manager.setPodStatus(copy('11'), { phase: 'Running', message: 'next' });
    await manager.syncBatch(false);
    expect(manager.statusReads(), 'the next write reads the copy').to.deep.equal({ cache: 2, get: 0 });
  });

  it('rejects malformed input with InvalidArgument before touching the cache', () => {
    const { manager } = setup();
    expect(() => manager.setPodStatus(testPod({}, { uid: '' }), {}))
      .to.throw()
      .that.satisfies(isInvalidArgument);
    const badStatus = { conditions: [{ status: 'True' }] } as unknown as PodStatus;
    expect(() => manager.setPodStatus(testPod(), badStatus))
      .to.throw()
      .that.satisfies(isInvalidArgument);
    const badPolicy = testPod({ restartPolicy: 'Sometimes' as never });
    expect(() => manager.terminatePod(badPolicy))
      .to.throw()
      .that.satisfies(isInvalidArgument);
    expect(manager.getPodStatus(UID)).to.equal(undefined);
    expect(() => new StatusManager({} as never))
      .to.throw()
      .that.satisfies(isInvalidArgument);
  });
});

describe('StatusManager input edges', () => {
  it('ignores a malformed previous status from the pod manager instead of failing', () => {
    const { manager, podManager } = setup();
    const staticPod = testPod({}, { annotations: { [ConfigSourceAnnotationKey]: 'file' } });
    const mirror = asMirror({ ...testPod(), metadata: { uid: 'm1', name: 'p', namespace: 'ns' } });
    mirror.status = { conditions: 'garbage' } as unknown as PodStatus;
    podManager.add(staticPod);
    podManager.add(mirror);
    manager.setPodStatus(staticPod, { message: 'x' });
    expect(manager.getPodStatus(UID)?.message).to.equal('x');
  });

  it('rejects a non-boolean readiness', () => {
    const { manager } = setup();
    expect(() => manager.setContainerReadiness(UID, 'test://1', 'yes' as never))
      .to.throw()
      .that.satisfies(isInvalidArgument);
  });
});
