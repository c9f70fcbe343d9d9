// The targets of issue #17 as a table under the scale scenario's figures: each row is a figure of this run,
// the target it is held to and whether it met it. Ratios need both sides (not with --no-kwok); the live
// heap per pod needs --heap-snapshots.
import { readFileSync } from 'node:fs';
import { requestsBesidesEvents, requestsPerPod, STATUS_WRITE, type RequestCounts } from './audit.js';
import { median, ratio } from './stats.js';
import { duration, formatTable, num, times } from './table.js';

/** The parts of a side's run the targets read (scale.ts SideRun). */
export interface TargetInputs {
  nodes: number;
  pods: number;
  podsPerSec: number;
  readyLatency: { p99: number };
  createCpuSec: number;
  /** The create phase's CPU until the Events of the pods' start were written too (absent in older results). */
  createWithEventsCpuSec?: number;
  rssAtAllReadyMiB: number;
  nodesReadyMs: number;
  eventLoopP99Ms: number;
  statusUpdatesPerPod: number;
  createRequests?: RequestCounts;
  deleteRequests?: RequestCounts;
  /**
   * Live heap bytes per pod from the heap snapshots (nodes only, and all pods Ready once their Events are
   * written), compiled code left out; NaN without them.
   */
  liveHeapPerPodBytes: number;
  /** Events of the measured namespace: reason -> [objects, sum of counts]. */
  eventsByReason: Record<string, [number, number]>;
}

/** Event reasons of a pod's termination; every other reason belongs to its start. */
const DELETE_REASONS = new Set(['Killing', 'FailedKillPod', 'ExceededGracePeriod', 'FailedPreStopHook']);

/**
 * API requests per pod for starting it, with its Events counted by reason rather than by when they were
 * written: a node writes its Events one at a time (as a kubelet's event broadcaster does), so under a burst
 * many of the start's Events are written during the delete phase and a count by time window would miss
 * them (and the audit log leaves Events out unless --audit-events: see auditPolicy). Each Event object is one
 * create plus (count - 1) patches.
 */
export function startRequestsPerPod(r: TargetInputs): number {
  const c = r.createRequests;
  if (!c) return Number.NaN;
  const nonEvent = requestsBesidesEvents(c);
  let events = 0;
  for (const [reason, [, count]] of Object.entries(r.eventsByReason))
    if (!DELETE_REASONS.has(reason)) events += count;
  return (nonEvent + events) / r.pods;
}

/**
 * Live bytes in a V8 heap snapshot (V8 collects before writing one): the self size of every node, and of it
 * the compiled code (bytecode, machine code and their metadata), which grows with how long the hot paths have
 * run, not with how many pods there are.
 */
export function snapshotLiveBytes(file: string): { total: number; code: number } {
  const s = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
  };
  const fields = s.snapshot.meta.node_fields;
  const nf = fields.length;
  const self = fields.indexOf('self_size');
  const type = fields.indexOf('type');
  const codeType = s.snapshot.meta.node_types[0].indexOf('code');
  let total = 0;
  let code = 0;
  for (let i = 0; i < s.nodes.length; i += nf) {
    total += s.nodes[i + self]!;
    if (s.nodes[i + type] === codeType) code += s.nodes[i + self]!;
  }
  return { total, code };
}

/**
 * One target row of a run: its figure, the target and the test of it, the value to test, and how it reads.
 * The status-write row tests a difference (writes minus changes) and reads as both figures.
 */
export interface TargetRow {
  figure: string;
  value: number;
  /** The value as this run's table shows it. */
  shown: string;
  /** A value of this row (a run's, or the median of several) as a summary shows it. */
  format: (v: number) => string;
  target: string;
  meets: (v: number) => boolean;
}

/** Rows for `ours` (and ratios against `kwok` when given). */
export function targetRows(ours: TargetInputs, kwok: TargetInputs | undefined): TargetRow[] {
  const row = (
    figure: string,
    value: number,
    format: (v: number) => string,
    target: string,
    meets: (v: number) => boolean,
    shown = format(value),
  ): TargetRow => ({ figure, value, shown, format, target, meets });
  const x = (v: number): string => times(v);
  const tp = ratio(ours.podsPerSec, kwok?.podsPerSec ?? Number.NaN);
  const p99 = ratio(ours.readyLatency.p99, kwok?.readyLatency.p99 ?? Number.NaN);
  // A pod's start includes its Events: counted until they are written, which a burst leaves queued past Ready.
  const startCpu = (r: TargetInputs): number => (r.createWithEventsCpuSec ?? r.createCpuSec) / r.pods;
  const cpu = ratio(startCpu(ours), kwok ? startCpu(kwok) : Number.NaN);
  const writes =
    requestsPerPod(ours.createRequests, ours.pods, STATUS_WRITE) +
    requestsPerPod(ours.deleteRequests, ours.pods, STATUS_WRITE);
  const reqs = startRequestsPerPod(ours);
  return [
    row('throughput, ours / kwok', tp, x, '>= 1.0x', (v) => v >= 1),
    row('create -> Ready p99, ours / kwok', p99, x, '<= 1.0x', (v) => v <= 1),
    row('CPU per pod, create phase with its Events, ours / kwok', cpu, x, '<= 1.5x', (v) => v <= 1.5),
    row(
      'RSS when all pods are Ready',
      ours.rssAtAllReadyMiB,
      (v) => num(v, 0, 'MiB'),
      '<= 300 MiB',
      (v) => v <= 300,
    ),
    row(
      'live heap per pod (heap snapshots, settled)',
      ours.liveHeapPerPodBytes,
      (v) => (Number.isFinite(v) ? num(v / 1000, 1, 'KB') : 'n/a (--heap-snapshots)'),
      '<= 8 KB',
      (v) => v <= 8000,
    ),
    row(
      `${ours.nodes} VirtualNodes Ready after start`,
      ours.nodesReadyMs,
      duration,
      `<= ${nodesReadyTargetMs(ours.nodes) / 1000} s`,
      (v) => v <= nodesReadyTargetMs(ours.nodes),
    ),
    row(
      'event-loop lag p99, create phase',
      ours.eventLoopP99Ms,
      (v) => num(v, 1, 'ms'),
      '<= 100 ms',
      (v) => v <= 100,
    ),
    row(
      'API requests per pod, create (Events by reason)',
      reqs,
      (v) => num(v, 2),
      '<= 3',
      (v) => v <= 3,
    ),
    row(
      'status writes per lifecycle / status changes',
      writes - ours.statusUpdatesPerPod,
      (v) => `${v >= 0 ? '+' : ''}${num(v, 2)} (writes - changes)`,
      'equal',
      (v) => Math.abs(v) < 0.005,
      `${num(writes, 2)} / ${num(ours.statusUpdatesPerPod, 2)}`,
    ),
  ];
}

/** Issue #17: 100 VirtualNodes Ready within 2 s of the start; issue #58: 1,000 within 10 s. */
export function nodesReadyTargetMs(nodes: number): number {
  return nodes <= 100 ? 2000 : 10_000;
}

/** What the ceiling targets (issue #58) read from a run of ours (scale.ts SideRun). */
export interface CeilingInputs {
  nodes: number;
  pods: number;
  ready: number;
  nodesReadyMs: number;
  rssAtAllReadyMiB: number;
  health?: { leases: { late: number; maxGapMs: number }; leasesLateBy10s: number; maxNotReady: number };
  lagP99ByPhaseMs?: { startup: number; create: number; hold: number; delete: number };
  /** With replicas: each one's RSS peak. */
  replicas?: { maxRssMiB: number[] };
  podsPerSec?: number;
  createWithEventsCpuSec?: number;
}

/** kwok with the kubelet's start Events, the fair peer of issue #58 (its side in the same run). */
export type FairPeer = Pick<CeilingInputs, 'pods' | 'podsPerSec' | 'createWithEventsCpuSec'>;

/**
 * Issue #58's targets for the ceiling run (100,000 pods on 1,000 VirtualNodes in one process), read at
 * whatever size this run had: all Ready, RSS at Ready <= 1.5 GiB, no Node NotReady at any moment, no Lease
 * renewal 10 s late, the event-loop delay p99 <= 100 ms in every phase, the nodes Ready <= 10 s after start;
 * with replicas each one's RSS <= 600 MiB; with kwok's Events side, throughput >= 1.2x and CPU per pod <= 1.0x
 * of it.
 */
export function ceilingTargetsTable(r: CeilingInputs, peer?: FairPeer): string {
  const nan = Number.NaN;
  const lag = r.lagP99ByPhaseMs;
  const worstLag = lag
    ? Math.max(...[lag.startup, lag.create, lag.hold, lag.delete].filter((v) => !Number.isNaN(v)))
    : nan;
  const rows: [string, number, string, string, boolean][] = [
    ['pods Running+Ready', r.ready, num(r.ready), `${num(r.pods)}`, r.ready === r.pods],
    [
      'RSS when all Ready',
      r.rssAtAllReadyMiB,
      num(r.rssAtAllReadyMiB, 0, 'MiB'),
      '<= 1,536 MiB',
      r.rssAtAllReadyMiB <= 1536,
    ],
    [
      'Nodes NotReady at any moment',
      r.health?.maxNotReady ?? nan,
      num(r.health?.maxNotReady ?? nan),
      '0',
      r.health?.maxNotReady === 0,
    ],
    [
      'Lease renewals 10 s late (gap > 20 s)',
      r.health?.leasesLateBy10s ?? nan,
      `${num(r.health?.leasesLateBy10s ?? nan)} (gaps > 12 s: ${num(r.health?.leases.late ?? nan)}, longest ${duration(r.health?.leases.maxGapMs ?? nan)})`,
      '0',
      r.health?.leasesLateBy10s === 0,
    ],
    [
      'event-loop delay p99, worst phase',
      worstLag,
      worstLag === Infinity ? '> 5 s' : num(worstLag, 0, 'ms'),
      '<= 100 ms',
      worstLag <= 100,
    ],
    [
      `${num(r.nodes)} VirtualNodes Ready after start`,
      r.nodesReadyMs,
      duration(r.nodesReadyMs),
      `<= ${nodesReadyTargetMs(r.nodes) / 1000} s`,
      r.nodesReadyMs <= nodesReadyTargetMs(r.nodes),
    ],
  ];
  if (r.replicas) {
    const worst = Math.max(...r.replicas.maxRssMiB.filter((v) => !Number.isNaN(v)));
    rows.push([
      `RSS peak of each of ${r.replicas.maxRssMiB.length} replicas, most`,
      worst,
      num(worst, 0, 'MiB'),
      '<= 600 MiB',
      worst <= 600,
    ]);
  }
  if (peer) {
    const throughput = (r.podsPerSec ?? nan) / (peer.podsPerSec ?? nan);
    const perPod = (x: FairPeer): number => (x.createWithEventsCpuSec ?? nan) / x.pods;
    const cpu = perPod(r) / perPod(peer);
    rows.push(
      [
        'throughput against kwok with Events',
        throughput,
        `${num(throughput, 2)}x`,
        '>= 1.2x',
        throughput >= 1.2,
      ],
      [
        'CPU per pod (with its Events) against kwok with Events',
        cpu,
        `${num(cpu, 2)}x`,
        '<= 1.0x',
        cpu <= 1.0,
      ],
    );
  }
  return formatTable(
    ['target (issue #58)', 'measured', 'target', 'met'],
    rows.map(([f, v, shown, t, met]) => [f, shown, t, Number.isNaN(v) ? 'n/a' : met ? 'met' : 'no']),
  );
}

function metCell(row: TargetRow, v: number): string {
  return Number.isFinite(v) ? (row.meets(v) ? 'met' : 'no') : 'n/a';
}

export function targetsTable(ours: TargetInputs, kwok: TargetInputs | undefined): string {
  const rows = targetRows(ours, kwok).map((r) => [r.figure, r.shown, r.target, metCell(r, r.value)]);
  return formatTable(['target (issue #17)', 'measured', 'target', 'met'], rows);
}

/**
 * The targets over several runs of the same scenario (`--runs N`): each run's figure, their median, and
 * whether the median meets the target, with the runs that met it. One run on this machine swings a ratio by
 * a quarter (bench/README.md), so the median of three says more than any one of them.
 */
export function targetsSummaryTable(runs: readonly { ours: TargetInputs; kwok?: TargetInputs }[]): string {
  const perRun = runs.map((r) => targetRows(r.ours, r.kwok));
  const rows = perRun[0]!.map((first, i) => {
    const row = perRun.map((rows) => rows[i]!);
    const m = median(row.map((r) => r.value));
    const met = row.filter((r) => Number.isFinite(r.value) && r.meets(r.value)).length;
    const counted = row.filter((r) => Number.isFinite(r.value)).length;
    return [
      first.figure,
      ...row.map((r) => r.shown),
      first.format(m),
      first.target,
      metCell(first, m),
      counted ? `${met} of ${counted}` : 'n/a',
    ];
  });
  const header = [
    'target (issue #17)',
    ...runs.map((_, i) => `run ${i + 1}`),
    'median',
    'target',
    'met',
    'runs met',
  ];
  return formatTable(header, rows);
}
