// One round of the eviction manager at a time (src/kubelet/eviction/manager.ts, message.ts): rounds are
// driven with a fake time (a number) and Summaries built per case; the state of one round feeds the next.
// The messages, annotations and rankings expected here were checked against the v1.37.2 kubelet's own
// evictionMessage and rank functions run on the same figures.
import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import {
  initialEvictionState,
  needsPodStats,
  reclaimResolved,
  synchronize,
  type EvictionConfig,
  type EvictionState,
  type SynchronizeResult,
} from '../../../../src/kubelet/eviction/manager.js';
import { DefaultPressureTransitionPeriodMs } from '../../../../src/kubelet/eviction/signals.js';
import {
  parseThresholdConfig,
  type EvictionThresholdConfig,
} from '../../../../src/kubelet/eviction/thresholds.js';
import type { Summary } from '../../../../src/kubelet/stats/types.js';
import { cstats, ctr, Gi, Mi, pod, pstats, summary } from './fixtures.js';

const oneFs = { dedicatedImageFs: false, splitContainerImageFs: false };

function config(t: EvictionThresholdConfig, extra: Partial<EvictionConfig> = {}): EvictionConfig {
  return {
    thresholds: parseThresholdConfig(t),
    pressureTransitionPeriodMs: DefaultPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: 0,
    localStorageCapacityIsolation: true,
    layout: oneFs,
    ...extra,
  };
}

/** Runs rounds in order; each round's Summary is stamped with its own time, so every reading is fresh. */
function rounds(
  cfg: EvictionConfig,
  steps: { at: number; summary: (time: number) => Summary; pods?: Pod[] }[],
): SynchronizeResult[] {
  let state: EvictionState = initialEvictionState;
  const out: SynchronizeResult[] = [];
  for (const s of steps) {
    const r = synchronize({
      config: cfg,
      state,
      summary: s.summary(s.at),
      activePods: s.pods ?? [],
      now: s.at,
    });
    state = r.state;
    out.push(r);
  }
  return out;
}

describe('eviction manager: memory', () => {
  const besteffort = pod('besteffort', [ctr('app')], { terminationGracePeriodSeconds: 30 });
  const burstable = pod('burstable', [ctr('app', { memory: '1Gi' }), ctr('side', { memory: '100Mi' })]);
  // A static pod (its mirror, as the API shows it): ranked first here, never evicted.
  const critical: Pod = {
    ...pod('critical', [ctr('app')]),
    metadata: { name: 'critical', uid: 'uid-critical', annotations: { 'kubernetes.io/config.mirror': 'h' } },
  };
  const pods = [burstable, besteffort];
  const podStats = [
    pstats(besteffort, [cstats('app', { ws: 600 * Mi })]),
    pstats(burstable, [cstats('app', { ws: 200 * Mi }), cstats('side', { ws: 300 * Mi })]),
    pstats(critical, [cstats('app', { ws: 5 * Gi })]),
  ];
  const low = (time: number) => summary({ time, memAvailable: 50 * Mi, memWorkingSet: 8 * Gi }, podStats);
  const fine = (time: number) => summary({ time, memAvailable: 2 * Gi, memWorkingSet: 6 * Gi }, podStats);

  it('a hard threshold evicts at once, with the kubelet message, annotations and condition', () => {
    const [r] = rounds(config({ evictionHard: { 'memory.available': '100Mi' } }), [
      { at: 1000, summary: low, pods: [critical, ...pods] },
    ]);
    expect(r?.nodeConditions).to.deep.equal(['MemoryPressure']);
    expect(r?.reclaim?.resource).to.equal('memory');
    expect(r?.reclaim?.event).to.deep.equal({
      type: 'Warning',
      reason: 'EvictionThresholdMet',
      message: 'Attempting to reclaim memory',
    });
    expect(r?.reclaim?.nodeReclaim).to.deep.equal([]);
    expect(r?.reclaim?.ranked.map((p) => p.metadata.name)).to.deep.equal([
      'critical',
      'besteffort',
      'burstable',
    ]);
    const e = r?.reclaim?.eviction;
    const message =
      'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ' +
      'Container app was using 600Mi, request is 0, has larger consumption of memory. ';
    expect(e?.pod.metadata.name).to.equal('besteffort');
    expect(e?.gracePeriodSeconds).to.equal(1);
    expect(e?.status).to.deep.equal({ phase: 'Failed', reason: 'Evicted', message });
    expect(e?.condition).to.deep.equal({
      type: 'DisruptionTarget',
      status: 'True',
      reason: 'TerminationByKubelet',
      message,
      observedGeneration: 2,
    });
    expect(e?.event).to.deep.equal({
      type: 'Warning',
      reason: 'Evicted',
      message,
      annotations: {
        offending_containers: 'app',
        offending_containers_usage: '600Mi',
        starved_resource: 'memory',
      },
    });
  });

  it('names every container over its request', () => {
    const [r] = rounds(config({ evictionHard: { 'memory.available': '100Mi' } }), [
      { at: 1000, summary: low, pods: [burstable] },
    ]);
    expect(r?.reclaim?.eviction?.status.message).to.equal(
      'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ' +
        'Container side was using 300Mi, request is 100Mi, has larger consumption of memory. ',
    );
    expect(r?.reclaim?.eviction?.event.annotations).to.deep.equal({
      offending_containers: 'side',
      offending_containers_usage: '300Mi',
      starved_resource: 'memory',
    });
  });

  it('with pod-level resources, the pod is named too', () => {
    const pl = pod('pl', [ctr('app')], {
      resources: { requests: { memory: '256Mi' }, limits: { memory: '1Gi' } },
    });
    const s = (time: number) =>
      summary({ time, memAvailable: 50 * Mi, memWorkingSet: 8 * Gi }, [
        pstats(pl, [cstats('app', { ws: 400 * Mi })]),
      ]);
    const [r] = rounds(config({ evictionHard: { 'memory.available': '100Mi' } }), [
      { at: 1, summary: s, pods: [pl] },
    ]);
    expect(r?.reclaim?.eviction?.status.message).to.equal(
      'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ' +
        'Pod pl was using 400Mi, request is 256Mi, has larger consumption of memory. ' +
        'Container app was using 400Mi, request is 0, has larger consumption of memory. ',
    );
    expect(r?.reclaim?.eviction?.event.annotations).to.include({
      offending_pod: 'pl',
      offending_pod_usage: '400Mi',
    });
  });

  it('a pod without stats gets the node part alone and no annotations', () => {
    const ghost = pod('ghost', [ctr('app')]);
    const [r] = rounds(config({ evictionHard: { 'memory.available': '100Mi' } }), [
      { at: 1, summary: low, pods: [ghost] },
    ]);
    expect(r?.reclaim?.eviction?.status.message).to.equal(
      'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ',
    );
    expect(r?.reclaim?.eviction?.event.annotations).to.deep.equal({});
  });

  it('only critical pods: pressure, nothing to evict', () => {
    const [r] = rounds(config({ evictionHard: { 'memory.available': '100Mi' } }), [
      { at: 1, summary: low, pods: [critical] },
    ]);
    expect(r?.reclaim?.ranked).to.have.length(1);
    expect(r?.reclaim?.eviction).to.equal(undefined);
  });

  it('a soft threshold waits its grace period, then grants min(pod, evictionMaxPodGracePeriod)', () => {
    const cfg = config(
      {
        evictionSoft: { 'memory.available': '1Gi' },
        evictionSoftGracePeriod: { 'memory.available': '1m30s' },
      },
      { maxPodGracePeriodSeconds: 20 },
    );
    const rs = rounds(cfg, [
      { at: 0, summary: low, pods },
      { at: 60_000, summary: low, pods },
      { at: 90_000, summary: low, pods },
    ]);
    expect(rs.map((r) => r.nodeConditions)).to.deep.equal([
      ['MemoryPressure'],
      ['MemoryPressure'],
      ['MemoryPressure'],
    ]);
    expect(rs.map((r) => r.reclaim?.eviction?.pod.metadata.name)).to.deep.equal([
      undefined,
      undefined,
      'besteffort',
    ]);
    expect(rs[2]?.reclaim?.eviction?.gracePeriodSeconds).to.equal(20);
    expect(rs[2]?.reclaim?.eviction?.status.message).to.match(
      /^The node was low on resource: memory\. Threshold quantity: 1Gi, available: 50Mi\. /,
    );
  });

  const graceCases: [string, number | undefined, number, number][] = [
    ['pod 30 s, max 20 s', 30, 20, 20],
    ['pod 5 s, max 20 s', 5, 20, 5],
    ['pod unset, max 20 s', undefined, 20, 20],
    ['pod 30 s, max 0 (the default)', 30, 0, 0],
  ];
  for (const [name, own, max, want] of graceCases) {
    it(`soft eviction grace period: ${name} -> ${want}`, () => {
      const p = pod('p', [ctr('app')], own === undefined ? {} : { terminationGracePeriodSeconds: own });
      const s = (time: number) =>
        summary({ time, memAvailable: 50 * Mi, memWorkingSet: 8 * Gi }, [
          pstats(p, [cstats('app', { ws: Mi })]),
        ]);
      const cfg = config(
        {
          evictionSoft: { 'memory.available': '1Gi' },
          evictionSoftGracePeriod: { 'memory.available': '0s' },
        },
        { maxPodGracePeriodSeconds: max },
      );
      // A zero grace period makes the threshold hard, as in the kubelet.
      const [r] = rounds(cfg, [{ at: 0, summary: s, pods: [p] }]);
      expect(r?.reclaim?.eviction?.gracePeriodSeconds).to.equal(1);
      const soft = config(
        {
          evictionSoft: { 'memory.available': '1Gi' },
          evictionSoftGracePeriod: { 'memory.available': '1s' },
        },
        { maxPodGracePeriodSeconds: max },
      );
      const rs = rounds(soft, [
        { at: 0, summary: s, pods: [p] },
        { at: 1000, summary: s, pods: [p] },
      ]);
      expect(rs[1]?.reclaim?.eviction?.gracePeriodSeconds).to.equal(want);
    });
  }

  it('a soft threshold relieved before its grace period restarts its clock', () => {
    const cfg = config({
      evictionSoft: { 'memory.available': '1Gi' },
      evictionSoftGracePeriod: { 'memory.available': '1m' },
    });
    const rs = rounds(cfg, [
      { at: 0, summary: low, pods },
      { at: 30_000, summary: fine, pods },
      { at: 60_000, summary: low, pods },
      { at: 100_000, summary: low, pods },
      { at: 120_000, summary: low, pods },
    ]);
    expect(rs.map((r) => r.reclaim?.eviction !== undefined)).to.deep.equal([
      false,
      false,
      false,
      false,
      true,
    ]);
  });

  it('the pressure condition stays for the transition period after the last time it was seen', () => {
    const cfg = config({ evictionHard: { 'memory.available': '100Mi' } });
    const rs = rounds(cfg, [
      { at: 0, summary: low },
      { at: 10_000, summary: fine },
      { at: 299_999, summary: fine },
      { at: 300_000, summary: fine },
    ]);
    expect(rs.map((r) => r.nodeConditions)).to.deep.equal([
      ['MemoryPressure'],
      ['MemoryPressure'],
      ['MemoryPressure'],
      [],
    ]);
    expect(rs.map((r) => r.thresholds.length)).to.deep.equal([1, 0, 0, 0]);
  });

  it('minimum reclaim keeps a met threshold until that much more is free', () => {
    const cfg = config({
      evictionHard: { 'memory.available': '100Mi' },
      evictionMinimumReclaim: { 'memory.available': '500Mi' },
    });
    const at = (available: number) => (time: number) =>
      summary({ time, memAvailable: available, memWorkingSet: 8 * Gi }, podStats);
    const rs = rounds(cfg, [
      { at: 0, summary: at(200 * Mi), pods },
      { at: 10_000, summary: at(50 * Mi), pods },
      { at: 20_000, summary: at(400 * Mi), pods },
      { at: 30_000, summary: at(700 * Mi), pods },
    ]);
    expect(rs.map((r) => r.thresholds.length)).to.deep.equal([0, 1, 1, 0]);
    // The message is the threshold's own quantity, without the minimum reclaim.
    expect(rs[2]?.reclaim?.eviction?.status.message).to.match(
      /Threshold quantity: 100Mi, available: 400Mi\. /,
    );
  });

  it('a reading not newer than last round is not acted on again (the condition stays)', () => {
    const cfg = config({ evictionHard: { 'memory.available': '100Mi' } });
    const stale = () => low(5000);
    const rs = rounds(cfg, [
      { at: 10_000, summary: stale, pods },
      { at: 20_000, summary: stale, pods },
    ]);
    expect(rs.map((r) => r.reclaim !== undefined)).to.deep.equal([true, false]);
    expect(rs[1]?.nodeConditions).to.deep.equal(['MemoryPressure']);
  });

  it('allocatableMemory.available starves memory against the pods cgroup', () => {
    const cfg = config({ evictionHard: { 'memory.available': '100Mi' }, enforceNodeAllocatable: ['pods'] });
    const s = (time: number): Summary => {
      const base = summary({ time, memAvailable: 4 * Gi, memWorkingSet: 4 * Gi }, podStats);
      base.node.systemContainers = [
        { name: 'pods', startTime: 0, memory: { time, availableBytes: 10 * Mi, workingSetBytes: 3 * Gi } },
      ];
      return base;
    };
    const [r] = rounds(cfg, [{ at: 1, summary: s, pods }]);
    expect(r?.reclaim?.threshold.signal).to.equal('allocatableMemory.available');
    expect(r?.reclaim?.eviction?.status.message).to.match(
      /^The node was low on resource: memory\. Threshold quantity: 100Mi, available: 10Mi\. /,
    );
  });

  it('nothing configured and no local storage isolation: nothing observed, state unchanged', () => {
    const cfg = config({}, { localStorageCapacityIsolation: false });
    const r = synchronize({
      config: cfg,
      state: initialEvictionState,
      summary: low(1),
      activePods: pods,
      now: 1,
    });
    expect(r.state).to.equal(initialEvictionState);
    expect(r.reclaim).to.equal(undefined);
  });
});

describe('eviction manager: disk and pids', () => {
  it('nodefs on one filesystem: reclaim containers and images first, then the pod over its request', () => {
    // The kubelet's own case: "eviction due to disk pressure; no image fs".
    const below = pod('below-requests', [
      ctr('c', { 'ephemeral-storage': '1Gi' }, { 'ephemeral-storage': '1Gi' }),
    ]);
    const above = pod('above-requests', [
      ctr('c', { 'ephemeral-storage': '100Mi' }, { 'ephemeral-storage': '1Gi' }),
    ]);
    const s = (time: number) =>
      summary({ time, nodefs: { available: 1.5 * Gi, capacity: 100 * Gi } }, [
        pstats(below, [cstats('c', { rootfs: 900 * Mi, logs: 0 })]),
        pstats(above, [cstats('c', { rootfs: 700 * Mi, logs: 0 })]),
      ]);
    const cfg = config({ evictionHard: { 'nodefs.available': '2Gi' } });
    const [r] = rounds(cfg, [{ at: 1, summary: s, pods: [below, above] }]);
    expect(r?.nodeConditions).to.deep.equal(['DiskPressure']);
    expect(r?.reclaim?.nodeReclaim).to.deep.equal(['DeleteAllUnusedContainers', 'DeleteUnusedImages']);
    expect(r?.reclaim?.event.message).to.equal('Attempting to reclaim ephemeral-storage');
    expect(r?.reclaim?.eviction?.status.message).to.equal(
      'The node was low on resource: ephemeral-storage. Threshold quantity: 2Gi, available: 1536Mi. ' +
        'Container c was using 700Mi, request is 100Mi, has larger consumption of ephemeral-storage. ',
    );
    expect(reclaimResolved(cfg.thresholds, s(2))).to.equal(false);
    expect(
      reclaimResolved(
        cfg.thresholds,
        summary({ time: 2, nodefs: { available: 3 * Gi, capacity: 100 * Gi } }),
      ),
    ).to.equal(true);
  });

  it('a percentage threshold prints the truncated float32 share of capacity', () => {
    const p = pod('p', [ctr('c')]);
    const s = (time: number) =>
      summary({ time, nodefs: { available: 100 * Mi, capacity: 10 * Gi } }, [
        pstats(p, [cstats('c', { rootfs: Mi, logs: 1000 })]),
      ]);
    const [r] = rounds(config({ evictionHard: { 'nodefs.available': '10%' } }), [
      { at: 1, summary: s, pods: [p] },
    ]);
    // float32(0.1) is 13421773/2^27, so 10 GiB gives 1073741840 bytes (not 1Gi), which 1024 does not divide.
    expect(r?.reclaim?.eviction?.status.message).to.equal(
      'The node was low on resource: ephemeral-storage. Threshold quantity: 1073741840, available: 100Mi. ' +
        'Container c was using 1049576, request is 0, has larger consumption of ephemeral-storage. ',
    );
  });

  it('inodes: no container figures, and the imagefs reclaim', () => {
    const p = pod('p', [ctr('c')]);
    const s = (time: number) =>
      summary(
        {
          time,
          nodefs: { available: 50 * Gi, capacity: 100 * Gi, inodesFree: 900_000, inodes: 1_000_000 },
          imagefs: { available: 50 * Gi, capacity: 100 * Gi, inodesFree: 1000, inodes: 1_000_000 },
        },
        [pstats(p, [cstats('c', { rootfs: Mi, logs: 0 })])],
      );
    const cfg = config(
      { evictionHard: { 'imagefs.inodesFree': '5%' } },
      { layout: { dedicatedImageFs: true, splitContainerImageFs: false } },
    );
    const [r] = rounds(cfg, [{ at: 1, summary: s, pods: [p] }]);
    expect(r?.reclaim?.nodeReclaim).to.deep.equal(['DeleteAllUnusedContainers', 'DeleteUnusedImages']);
    expect(r?.reclaim?.eviction?.status.message).to.equal(
      'The node was low on resource: inodes. Threshold quantity: 50000, available: 1k. ',
    );
    expect(r?.reclaim?.eviction?.event.annotations).to.deep.equal({
      offending_containers: '',
      offending_containers_usage: '',
      starved_resource: 'inodes',
    });
  });

  it('pids: the kubelet case (threshold 1200, 500 available)', () => {
    const lowPrio = pod('pod1', [ctr('c')], { priority: -1 });
    const defPrio = pod('pod2', [ctr('c')]);
    const s = (time: number) =>
      summary({ time, pids: { max: 2000, used: 1500 } }, [
        pstats(lowPrio, [], { process_stats: { process_count: 500 } }),
        pstats(defPrio, [], { process_stats: { process_count: 500 } }),
      ]);
    const [r] = rounds(config({ evictionHard: { 'pid.available': '1200' } }), [
      { at: 1, summary: s, pods: [defPrio, lowPrio] },
    ]);
    expect(r?.nodeConditions).to.deep.equal(['PIDPressure']);
    expect(r?.reclaim?.eviction?.pod.metadata.name).to.equal('pod1');
    expect(r?.reclaim?.eviction?.status.message).to.equal(
      'The node was low on resource: pids. Threshold quantity: 1200, available: 500. ',
    );
  });

  it('memory is reclaimed before disk when both are starved; both conditions are set', () => {
    const p = pod('p', [ctr('c')]);
    const s = (time: number) =>
      summary(
        { time, memAvailable: 10 * Mi, memWorkingSet: Gi, nodefs: { available: Gi, capacity: 100 * Gi } },
        [pstats(p, [cstats('c', { ws: Mi, rootfs: Mi, logs: 0 })])],
      );
    const cfg = config({ evictionHard: { 'nodefs.available': '10%', 'memory.available': '100Mi' } });
    const [r] = rounds(cfg, [{ at: 1, summary: s, pods: [p] }]);
    expect(r?.nodeConditions).to.deep.equal(['MemoryPressure', 'DiskPressure']);
    expect(r?.thresholds.map((t) => t.signal)).to.deep.equal(['memory.available', 'nodefs.available']);
    expect(r?.reclaim?.resource).to.equal('memory');
  });
});

describe('eviction manager: when a round needs the pods stats (needsPodStats)', () => {
  const cfg = config({ evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' } });
  const plain = pod('plain', [ctr('app', { memory: '1Gi' })]);
  const limited = pod('limited', [ctr('app', {}, { 'ephemeral-storage': '1Gi' })]);
  const initLimited = pod('init', [ctr('app')], {
    initContainers: [ctr('setup', {}, { 'ephemeral-storage': '1Gi' })],
  });
  const sized = pod('sized', [ctr('app')], {
    volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Gi' } }],
  });
  const unsized = pod('unsized', [ctr('app')], { volumes: [{ name: 'scratch', emptyDir: {} }] });
  const fine = (time: number, podStats: ReturnType<typeof pstats>[] = []) =>
    summary(
      { time, memAvailable: 2 * Gi, memWorkingSet: Gi, nodefs: { available: 50 * Gi, capacity: 100 * Gi } },
      podStats,
    );
  const low = (time: number) =>
    summary({
      time,
      memAvailable: 50 * Mi,
      memWorkingSet: 8 * Gi,
      nodefs: { available: 50 * Gi, capacity: 100 * Gi },
    });

  it('no pressure and no local storage limit: not needed, and the round is the same with the pods stats', () => {
    const pods = [plain, unsized];
    expect(
      needsPodStats({ config: cfg, state: initialEvictionState, summary: fine(1000), activePods: pods }),
    ).to.equal(false);
    // The pods far over any disk figure: with no limit set and no threshold met, nothing reads them.
    const heavy = [plain, unsized].map((p) =>
      pstats(p, [cstats('app', { ws: 9 * Gi, rootfs: 90 * Gi, logs: 9 * Gi })]),
    );
    const lean = synchronize({
      config: cfg,
      state: initialEvictionState,
      summary: fine(1000),
      activePods: pods,
      now: 1000,
    });
    const full = synchronize({
      config: cfg,
      state: initialEvictionState,
      summary: fine(1000, heavy),
      activePods: pods,
      now: 1000,
    });
    expect({ ...lean, state: { ...lean.state, lastObservations: undefined } }).to.deep.equal({
      ...full,
      state: { ...full.state, lastObservations: undefined },
    });
  });

  it('a pod with an ephemeral-storage limit (an init container too) or an emptyDir sizeLimit: needed', () => {
    for (const p of [limited, initLimited, sized]) {
      const input = { config: cfg, state: initialEvictionState, summary: fine(1000), activePods: [plain, p] };
      expect(needsPodStats(input), p.metadata.name).to.equal(true);
      const off = { ...input, config: { ...cfg, localStorageCapacityIsolation: false } };
      expect(needsPodStats(off), `${p.metadata.name}, isolation off`).to.equal(false);
    }
  });

  it('a threshold met now, or acted on last round: needed', () => {
    expect(
      needsPodStats({ config: cfg, state: initialEvictionState, summary: low(1000), activePods: [plain] }),
    ).to.equal(true);
    const [r] = rounds(cfg, [{ at: 1000, summary: low, pods: [plain] }]);
    expect(r!.state.thresholdsMet).to.have.length(1);
    expect(
      needsPodStats({ config: cfg, state: r!.state, summary: fine(2000), activePods: [plain] }),
    ).to.equal(true);
  });

  it('no thresholds and isolation off: never needed', () => {
    const none = config({}, { localStorageCapacityIsolation: false });
    expect(
      needsPodStats({ config: none, state: initialEvictionState, summary: low(1000), activePods: [limited] }),
    ).to.equal(false);
  });
});
