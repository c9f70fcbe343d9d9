// The eviction manager's shell on a fake clock: its loop, what it reports, and how it acts on the core's
// decisions (pod kills, Events, node-level reclaim, the wait for cleanup).
import { expect } from 'chai';
import type { Pod } from '../../../../../src/api/core.js';
import {
  EvictionManager,
  EvictionMonitoringPeriodMs,
  PodCleanupTimeoutMs,
  type EvictionManagerDeps,
} from '../../../../../src/kubelet/eviction/shell/loop.js';
import type { PodEviction } from '../../../../../src/kubelet/eviction/message.js';
import type { NodeReclaim } from '../../../../../src/kubelet/eviction/rank.js';
import { evictionConfigFrom } from '../../../../../src/kubelet/eviction/settings.js';
import type { Summary } from '../../../../../src/kubelet/stats/types.js';
import { FakeClock } from '../../../../../src/util/clock.js';
import { ctr, cstats, Gi, Mi, pod, pstats, summary } from '../fixtures.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

interface Harness {
  clock: FakeClock;
  manager: EvictionManager;
  killed: PodEviction[];
  podEvents: {
    pod: string;
    type: string;
    reason: string;
    message: string;
    annotations?: Record<string, string>;
  }[];
  nodeEvents: string[];
  reclaims: NodeReclaim[];
  pressure: (readonly string[])[];
  logs: string[];
  cleaned: Set<string>;
  /** kubelet_evictions and kubelet_eviction_stats_age_seconds observations, in order. */
  metrics: string[];
  set: (s: Summary | Error) => void;
}

function harness(
  pods: Pod[],
  settings: Parameters<typeof evictionConfigFrom>[0] = {},
  over: Partial<EvictionManagerDeps> = {},
): Harness {
  const clock = new FakeClock();
  let current: Summary | Error = summary({ memAvailable: 4 * Gi, memWorkingSet: Gi });
  const h: Omit<Harness, 'manager'> = {
    clock,
    killed: [],
    podEvents: [],
    nodeEvents: [],
    reclaims: [],
    pressure: [],
    logs: [],
    cleaned: new Set(),
    metrics: [],
    set: (s) => (current = s),
  };
  const { config, error } = evictionConfigFrom(settings);
  expect(error).to.equal(undefined);
  const manager = new EvictionManager({
    config,
    clock,
    summary: () => (current instanceof Error ? Promise.reject(current) : Promise.resolve(current)),
    activePods: () => pods.filter((p) => !h.killed.some((k) => k.pod === p)),
    killPod: (e) => {
      h.killed.push(e);
    },
    podCleanedUp: (p) => h.cleaned.has(p.metadata.uid ?? ''),
    nodeReclaim: (kind) => {
      h.reclaims.push(kind);
      return Promise.resolve(kind === 'DeleteAllUnusedContainers');
    },
    recordPod: (p, type, reason, message, annotations) =>
      h.podEvents.push({
        pod: p.metadata.name ?? '',
        type,
        reason,
        message,
        ...(annotations ? { annotations } : {}),
      }),
    recordNode: (type, reason, message) => h.nodeEvents.push(`${type} ${reason} ${message}`),
    onPressureChange: (c) => h.pressure.push([...c]),
    metrics: {
      evicted: (signal) => h.metrics.push(`evictions ${signal}`),
      statsAge: (signal, seconds) => h.metrics.push(`stats age ${signal} ${seconds}`),
    },
    logger: { info: (m) => h.logs.push(m), warn: (m) => h.logs.push(m) },
    ...over,
  });
  return { ...h, manager };
}

const bestEffort = pod('be', [ctr('app')]);
const burstable = pod('burst', [ctr('app', { memory: '512Mi' })]);

describe('eviction manager shell', () => {
  it('under memory pressure: MemoryPressure, EvictionThresholdMet, the BestEffort pod killed as the kubelet evicts', async () => {
    const h = harness([burstable, bestEffort], { evictionHard: { 'memory.available': '500Mi' } });
    h.set(
      summary({ time: h.clock.now() - 1500, memAvailable: 200 * Mi, memWorkingSet: 3 * Gi }, [
        pstats(bestEffort, [cstats('app', { ws: Gi })]),
        pstats(burstable, [cstats('app', { ws: 256 * Mi })]),
      ]),
    );
    h.cleaned.add('uid-be');
    await h.manager.synchronizeOnce();

    expect(h.manager.nodeConditions()).to.deep.equal(['MemoryPressure']);
    expect(h.pressure).to.deep.equal([['MemoryPressure']]);
    expect(h.nodeEvents).to.deep.equal(['Warning EvictionThresholdMet Attempting to reclaim memory']);
    expect(h.reclaims).to.deep.equal([]); // memory has no node-level reclaim
    expect(h.killed).to.have.length(1);
    const e = h.killed[0]!;
    expect(e.pod.metadata.name).to.equal('be');
    expect(e.gracePeriodSeconds).to.equal(1);
    const message =
      'The node was low on resource: memory. Threshold quantity: 500Mi, available: 200Mi. ' +
      'Container app was using 1Gi, request is 0, has larger consumption of memory. ';
    expect(e.status).to.deep.equal({ phase: 'Failed', reason: 'Evicted', message });
    expect(e.condition).to.deep.include({
      type: 'DisruptionTarget',
      status: 'True',
      reason: 'TerminationByKubelet',
      message,
      observedGeneration: 2,
    });
    expect(e.event.annotations).to.deep.equal({
      offending_containers: 'app',
      offending_containers_usage: '1Gi',
      starved_resource: 'memory',
    });
    expect(h.podEvents).to.deep.equal([
      { pod: 'be', type: 'Warning', reason: 'Evicted', message, annotations: e.event.annotations },
    ]);
    expect(e.signal).to.equal('memory.available');
    expect(h.metrics).to.deep.equal(['stats age memory.available 1.5', 'evictions memory.available']);
  });

  it("reads the node's figures alone without pressure or limits, and the pods' stats as well under pressure", async () => {
    const asked: boolean[] = [];
    const withPods = summary({ time: 2000, memAvailable: 200 * Mi, memWorkingSet: 3 * Gi }, [
      pstats(bestEffort, [cstats('app', { ws: Gi })]),
    ]);
    let current = summary({ memAvailable: 4 * Gi, memWorkingSet: Gi });
    const h = harness(
      [bestEffort],
      { evictionHard: { 'memory.available': '500Mi' } },
      {
        summary: ({ pods }) => {
          asked.push(pods);
          // A node-only Summary has no pod in it, as the stats provider builds it.
          return Promise.resolve(pods ? current : { ...current, pods: [] });
        },
      },
    );
    await h.manager.synchronizeOnce();
    expect(asked).to.deep.equal([false]);
    current = withPods;
    h.cleaned.add('uid-be');
    await h.manager.synchronizeOnce();
    expect(asked).to.deep.equal([false, false, true]);
    expect(h.killed.map((e) => e.pod.metadata.name)).to.deep.equal(['be']);
    expect(h.killed[0]!.status.message).to.include('Container app was using 1Gi');
  });

  it("reads the pods' stats at once, in one Summary, when a pod sets a local storage limit", async () => {
    const asked: boolean[] = [];
    const limited = pod('limited', [ctr('app', {}, { 'ephemeral-storage': '1Gi' })]);
    const h = harness(
      [bestEffort, limited],
      { evictionHard: { 'memory.available': '500Mi' } },
      {
        summary: ({ pods }) => {
          asked.push(pods);
          return Promise.resolve(summary({ memAvailable: 4 * Gi, memWorkingSet: Gi }));
        },
      },
    );
    await h.manager.synchronizeOnce();
    expect(asked).to.deep.equal([true]);
  });

  it('admits under memory pressure what the kubelet admits, with its reason and message', async () => {
    const h = harness([], { evictionHard: { 'memory.available': '500Mi' } });
    expect(h.manager.admit(bestEffort)).to.deep.equal({ admit: true });
    h.set(summary({ time: 2000, memAvailable: 100 * Mi, memWorkingSet: 3 * Gi }));
    await h.manager.synchronizeOnce();
    expect(h.manager.admit(bestEffort)).to.deep.equal({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    expect(h.manager.admit(burstable)).to.deep.equal({ admit: true });
  });

  it('keeps a pressure condition for the transition period after the last time it was seen', async () => {
    const h = harness([], {
      evictionHard: { 'memory.available': '500Mi' },
      evictionPressureTransitionPeriod: '30s',
    });
    h.set(summary({ time: 2000, memAvailable: 100 * Mi, memWorkingSet: 3 * Gi }));
    await h.manager.synchronizeOnce();
    h.set(summary({ time: 3000, memAvailable: 3 * Gi, memWorkingSet: Gi }));
    h.clock.advance(20_000);
    await h.manager.synchronizeOnce();
    expect(h.manager.nodeConditions()).to.deep.equal(['MemoryPressure']);
    h.clock.advance(10_000);
    await h.manager.synchronizeOnce();
    expect(h.manager.nodeConditions()).to.deep.equal([]);
    expect(h.pressure).to.deep.equal([['MemoryPressure'], []]);
  });

  it('disk pressure: dead containers first; image GC is not possible here (logged once); relieved, no pod goes', async () => {
    const h = harness([bestEffort], { evictionHard: { 'nodefs.available': '10%' } });
    const full = summary({
      time: 2000,
      memAvailable: 4 * Gi,
      nodefs: { available: 5 * Gi, capacity: 100 * Gi },
    });
    const relieved = summary({
      time: 2500,
      memAvailable: 4 * Gi,
      nodefs: { available: 50 * Gi, capacity: 100 * Gi },
    });
    // Full until the node-level reclaim has run (the round reads the node's figures, then the pods' too).
    const h2: ReturnType<typeof harness> = harness(
      [bestEffort],
      { evictionHard: { 'nodefs.available': '10%' } },
      {
        summary: () => Promise.resolve(h2.reclaims.length === 0 ? full : relieved),
      },
    );
    await h2.manager.synchronizeOnce();
    expect(h2.manager.nodeConditions()).to.deep.equal(['DiskPressure']);
    expect(h2.reclaims).to.deep.equal(['DeleteAllUnusedContainers', 'DeleteUnusedImages']);
    expect(h2.killed).to.deep.equal([]);
    expect(h2.logs.filter((l) => l.includes('not available'))).to.have.length(1);
    expect(h2.logs).to.include('eviction manager: able to reduce resource pressure without evicting pods');
    // Still full after the reclaim: the pod goes; the unsupported reclaim is not logged again.
    h.set(full);
    h.cleaned.add('uid-be');
    await h.manager.synchronizeOnce();
    expect(h.reclaims).to.deep.equal(['DeleteAllUnusedContainers', 'DeleteUnusedImages']);
    expect(h.killed.map((k) => k.status.message)).to.deep.equal([
      'The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, available: 5Gi. ',
    ]);
    h.set(summary({ time: 3000, memAvailable: 4 * Gi, nodefs: { available: 5 * Gi, capacity: 100 * Gi } }));
    await h.manager.synchronizeOnce();
    expect(h.logs.filter((l) => l.includes('not available'))).to.have.length(1);
  });

  it('waits for an evicted pod to be cleaned up, at most 30 s, before its next round', async () => {
    const h = harness([bestEffort], { evictionHard: { 'memory.available': '500Mi' } });
    h.set(summary({ time: 2000, memAvailable: 100 * Mi, memWorkingSet: 3 * Gi }));
    let done = false;
    void h.manager.synchronizeOnce().then(() => (done = true));
    await flush();
    expect(h.killed).to.have.length(1);
    h.clock.advance(5_000);
    await flush();
    expect(done).to.equal(false);
    h.cleaned.add('uid-be');
    h.clock.advance(1_000);
    await flush();
    expect(done).to.equal(true);

    const never = harness([bestEffort], { evictionHard: { 'memory.available': '500Mi' } });
    never.set(summary({ time: 2000, memAvailable: 100 * Mi, memWorkingSet: 3 * Gi }));
    let over = false;
    void never.manager.synchronizeOnce().then(() => (over = true));
    for (let t = 0; t <= PodCleanupTimeoutMs; t += 1_000) {
      await flush();
      never.clock.advance(1_000);
    }
    await flush();
    expect(over).to.equal(true);
    expect(never.logs).to.include('eviction manager: timed out waiting for pods to be cleaned up');
  });

  it('a local storage offender is evicted at once, without a threshold', async () => {
    const limited = pod('ls', [ctr('app', {}, { 'ephemeral-storage': '100Mi' })]);
    const h = harness([limited]);
    h.set(
      summary({ time: 2000, memAvailable: 4 * Gi }, [
        pstats(limited, [cstats('app', { rootfs: 150 * Mi, logs: 10 * Mi })]),
      ]),
    );
    h.cleaned.add('uid-ls');
    await h.manager.synchronizeOnce();
    expect(h.killed).to.have.length(1);
    expect(h.killed[0]!.gracePeriodSeconds).to.equal(1);
    expect(h.killed[0]!.condition).to.equal(undefined);
    expect(h.killed[0]!.status.message).to.match(
      /^Container app exceeded its local ephemeral storage limit "100Mi"\. $/,
    );
    expect(h.manager.nodeConditions()).to.deep.equal([]);
    // No threshold was acted on, so no stats age; the kubelet counts it under its own signal.
    expect(h.metrics).to.deep.equal(['evictions ephemeralcontainerfs.limit']);
  });

  it('runs every 10 s from start, survives a Summary that fails, and stops', async () => {
    let reads = 0;
    const h = harness(
      [],
      {},
      {
        summary: () => {
          reads++;
          return reads === 2
            ? Promise.reject(new Error('no stats'))
            : Promise.resolve(summary({ memAvailable: Gi }));
        },
      },
    );
    h.manager.start();
    h.clock.advance(0);
    await flush();
    expect(reads).to.equal(1);
    h.clock.advance(EvictionMonitoringPeriodMs);
    await flush();
    expect(reads).to.equal(2);
    expect(h.logs).to.include('eviction manager: failed to get summary stats');
    h.clock.advance(EvictionMonitoringPeriodMs);
    await flush();
    expect(reads).to.equal(3);
    await h.manager.stop();
    h.clock.advance(5 * EvictionMonitoringPeriodMs);
    await flush();
    expect(reads).to.equal(3);
  });
});

describe('eviction manager shell: the filesystem layout (KubeletSeparateDiskGC)', () => {
  // `layers` fills its writable layer (rootfs), `logger` its logs: which goes first says what was measured.
  const layers = pod('layers', [ctr('app')]);
  const logger = pod('logger', [ctr('app')]);
  const podStats = [
    pstats(layers, [cstats('app', { rootfs: 8 * Gi, logs: 0 })]),
    pstats(logger, [cstats('app', { rootfs: 0, logs: 4 * Gi })]),
  ];
  const oneFs = { dedicatedImageFs: false, splitContainerImageFs: false };
  const imageFs = { dedicatedImageFs: true, splitContainerImageFs: false };
  const split = { dedicatedImageFs: true, splitContainerImageFs: true };
  const ok = { available: 90 * Gi, capacity: 100 * Gi };
  const low = { available: 5 * Gi, capacity: 100 * Gi };
  // Under imagefs.available's 15% but over nodefs.available's 10%: met only where containerfs follows imagefs.
  const between = { available: 12 * Gi, capacity: 100 * Gi };
  const hard = { 'nodefs.available': '10%', 'imagefs.available': '15%' };

  const both: NodeReclaim[] = ['DeleteAllUnusedContainers', 'DeleteUnusedImages'];
  const dead: NodeReclaim[] = ['DeleteAllUnusedContainers'];
  type Figure = typeof ok;
  const fs = (nodefs: Figure, imagefs: Figure, containerfs: Figure) => ({ nodefs, imagefs, containerfs });
  // [layout, nodefs / imagefs / containerfs, the signal met, the node-level reclaims run, the pod evicted]
  const cases: [string, typeof oneFs, Parameters<typeof summary>[0], string, NodeReclaim[], string][] = [
    // dead containers and images, then the largest user of all
    ['one filesystem, imagefs low', oneFs, fs(ok, low, low), 'imagefs.available', both, 'layers'],
    // nothing to reclaim, the largest logs and volumes go
    ['image filesystem, nodefs low', imageFs, fs(low, ok, ok), 'nodefs.available', [], 'logger'],
    // dead containers and images, then the largest writable layer
    ['image filesystem, imagefs low', imageFs, fs(ok, low, low), 'imagefs.available', both, 'layers'],
    // its threshold is imagefs’s 15%, met
    ['image fs, containerfs between', imageFs, fs(ok, ok, between), 'containerfs.available', both, 'layers'],
    // unused images only; no pod uses the image filesystem, so the first goes
    ['split, imagefs low', split, fs(ok, low, ok), 'imagefs.available', ['DeleteUnusedImages'], 'logger'],
    // dead containers only, then the largest of layers, logs and volumes
    ['split, nodefs low', split, fs(low, ok, low), 'nodefs.available', dead, 'layers'],
  ];
  for (const [name, layout, figures, signal, reclaims, evicted] of cases) {
    it(`${name}: ${reclaims.join(', ') || 'no reclaim'}, then ${evicted} evicted`, async () => {
      const h = harness([logger, layers], { evictionHard: hard }, { filesystemLayout: async () => layout });
      h.set(summary({ memAvailable: 4 * Gi, ...figures }, podStats));
      h.cleaned.add('uid-layers').add('uid-logger');
      await h.manager.synchronizeOnce();
      expect(h.manager.nodeConditions()).to.deep.equal(['DiskPressure']);
      expect(h.reclaims).to.deep.equal(reclaims);
      expect(h.killed.map((k) => [k.pod.metadata.name, k.signal])).to.deep.equal([[evicted, signal]]);
    });
  }

  it('split: containerfs between the two thresholds is not met (it follows nodefs’s 10%)', async () => {
    const h = harness([logger, layers], { evictionHard: hard }, { filesystemLayout: async () => split });
    h.set(summary({ memAvailable: 4 * Gi, nodefs: ok, imagefs: ok, containerfs: between }, podStats));
    await h.manager.synchronizeOnce();
    expect(h.manager.nodeConditions()).to.deep.equal([]);
    expect(h.manager.effectiveConfig()?.thresholds.map((t) => t.signal)).to.deep.equal([
      'nodefs.available',
      'imagefs.available',
      'containerfs.available',
      'containerfs.available',
      'containerfs.inodesFree',
      'containerfs.inodesFree',
    ]);
  });

  it('asks the layout once; a failure skips the round (no pressure seen) and is asked again', async () => {
    let asked = 0;
    const answers: (typeof imageFs | Error)[] = [new Error('imageFs information is unavailable'), imageFs];
    const h = harness(
      [logger, layers],
      {
        evictionHard: hard,
        evictionSoft: { 'containerfs.available': '20%' },
        evictionSoftGracePeriod: { 'containerfs.available': '1m' },
      },
      {
        filesystemLayout: () => {
          const a = answers[asked++]!;
          return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
        },
      },
    );
    h.cleaned.add('uid-layers').add('uid-logger');
    h.set(summary({ memAvailable: 4 * Gi, nodefs: ok, imagefs: low, containerfs: low }, podStats));
    await h.manager.synchronizeOnce();
    expect(h.manager.nodeConditions()).to.deep.equal([]);
    expect(h.manager.effectiveConfig()).to.equal(undefined);
    expect(h.logs).to.include('eviction manager: failed to get HasDedicatedImageFs');
    h.set(
      summary({ time: 2000, memAvailable: 4 * Gi, nodefs: ok, imagefs: low, containerfs: low }, podStats),
    );
    await h.manager.synchronizeOnce();
    expect(h.manager.nodeConditions()).to.deep.equal(['DiskPressure']);
    expect(h.manager.effectiveConfig()?.layout).to.deep.equal(imageFs);
    // The configured soft containerfs threshold is replaced by imagefs's (none soft: a zero one), with the
    // kubelet's warning.
    expect(h.logs.filter((l) => l.includes('conflicting containerfs'))).to.have.length(1);
    h.set(summary({ time: 3000, memAvailable: 4 * Gi, nodefs: ok, imagefs: ok, containerfs: ok }, podStats));
    await h.manager.synchronizeOnce();
    expect(asked).to.equal(2);
  });

  it('without a layout source: the config as given', async () => {
    const h = harness([logger, layers], { evictionHard: hard });
    expect(h.manager.effectiveConfig()?.layout).to.deep.equal(oneFs);
  });
});

describe('eviction settings of a VirtualNode', () => {
  it('defaults to the kubelet evictionHard, 5 min transition, 0 s max grace', () => {
    const r = evictionConfigFrom(undefined);
    expect(r.error).to.equal(undefined);
    expect(r.config.pressureTransitionPeriodMs).to.equal(300_000);
    expect(r.config.maxPodGracePeriodSeconds).to.equal(0);
    expect(r.config.thresholds.map((t) => t.signal)).to.include.members([
      'memory.available',
      'nodefs.available',
      'nodefs.inodesFree',
      'imagefs.available',
      'imagefs.inodesFree',
      'containerfs.available',
      'containerfs.inodesFree',
    ]);
  });

  it('takes soft thresholds with their grace periods, the transition period and the max pod grace period', () => {
    const r = evictionConfigFrom({
      evictionHard: { 'memory.available': '1Gi' },
      evictionSoft: { 'memory.available': '2Gi' },
      evictionSoftGracePeriod: { 'memory.available': '1m30s' },
      evictionPressureTransitionPeriod: '10s',
      evictionMaxPodGracePeriod: 20,
    });
    expect(r.error).to.equal(undefined);
    expect(r.config.pressureTransitionPeriodMs).to.equal(10_000);
    expect(r.config.maxPodGracePeriodSeconds).to.equal(20);
    const memory = r.config.thresholds.filter((t) => t.signal === 'memory.available');
    expect(memory.map((t) => t.gracePeriodMs)).to.deep.equal([0, 90_000]);
  });

  for (const [settings, error] of [
    [
      { evictionHard: { 'memory.available': '-1Mi' } },
      'eviction threshold memory.available must be positive: -1Mi',
    ],
    [{ evictionHard: { 'memory.free': '1Mi' } }, 'unsupported eviction signal memory.free'],
    [
      { evictionSoft: { 'memory.available': '1Gi' } },
      'grace period must be specified for the soft eviction threshold memory.available',
    ],
    [
      { evictionPressureTransitionPeriod: '5 minutes' },
      'evictionPressureTransitionPeriod: time: unknown unit " minutes" in duration "5 minutes"',
    ],
  ] as const) {
    it(`refuses ${JSON.stringify(settings)} with the kubelet's words and runs on the defaults`, () => {
      const r = evictionConfigFrom(settings);
      expect(r.error).to.equal(error);
      expect(r.config.pressureTransitionPeriodMs).to.equal(300_000);
      expect(r.config.thresholds.find((t) => t.signal === 'memory.available')?.value).to.have.nested.property(
        'quantity',
      );
    });
  }
});
