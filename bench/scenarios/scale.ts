// Scale on the simulated runtime, our operator and kwok side by side on one API server: N nodes x M pods
// created with nodeName set, time until all are Running+Ready, then deleted until all are gone. Each side
// runs alone (the other stopped), in its own namespace, after its own warm-up round; ours first unless
// `kwokFirst` (a set of runs alternates, see bench/run.ts).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  countRequests,
  readAuditLog,
  requestsBesidesEvents,
  requestsPerPod,
  STATUS_WRITE,
  type AuditRecord,
  type RequestCounts,
} from '../lib/audit.js';
import {
  buildOperator,
  ensureKwok,
  heapSnapshot,
  heapSnapshotNodeArgs,
  pinnedKwokVersion,
  KWOK_NODE_ANNOTATION,
  startKwok,
  startOperatorProcess,
  type AgentProcess,
} from '../lib/agents.js';
import type { AgentAuth } from '../lib/args.js';
import { startBenchCluster, type BenchCluster } from '../lib/cluster.js';
import {
  createKwokNodes,
  createSimVirtualNodes,
  nodeNames,
  SERVED_BY,
  warmVirtualNodeStorage,
  waitNodesReady,
} from '../lib/nodes.js';
import { ProcSampler, readMachine, readProc, windowUsage } from '../lib/procstat.js';
import { podPlan } from '../lib/pods.js';
import { APISERVER_PROFILING_FLAG, apiserverCpuProfile, pprofTop } from '../lib/apiserverprofile.js';
import {
  apiserverPhase,
  readApiserver,
  worstLevel,
  type ApiserverPhase,
  type ApiserverReading,
} from '../lib/apiservermetrics.js';
import { AllocWindow, allocProfileNodeArgs, logAllocations, type ProfileNode } from '../lib/allocprofile.js';
import { joinCadences, leaseCadence, LeaseWatch, type LeaseCadence } from '../lib/leases.js';
import { failOver, groupProcReader, replicaGroup, type Failover } from '../lib/replicas.js';
import { shardFlags } from '../../test/support/shards.js';
import type { PodWatch } from '../lib/pods.js';
import { growthMilestones, NodeReadyWatch, phaseQuantile } from '../lib/scalehealth.js';
import {
  NOT_SCRAPED,
  podRound,
  scrape,
  tallyEvents,
  waitEventsSettled,
  type Scraped,
} from '../lib/scaleround.js';
import { ceilingTargetsTable, snapshotLiveBytes, targetsTable } from '../lib/scaletargets.js';
import { ratio, summarize } from '../lib/stats.js';
import { duration, formatTable, num, times } from '../lib/table.js';

export interface ScaleOptions {
  nodes: number;
  podsPerNode: number;
  concurrency: number;
  kwok: boolean;
  /** Run our side (default true); false runs kwok's sides alone, and the table has no ratios to ours. */
  ours?: boolean;
  /**
   * Each side on a fresh control plane of its own (default: one for all), for sizes where one API server and
   * etcd cannot hold both sides one after the other.
   */
  planePerSide?: boolean;
  /** Flags for the operator's node process. */
  nodeArgs?: string[];
  /** Write the operator's heap snapshots (nodes only, all Ready, all Ready with Events written) here; off when unset. */
  heapSnapshots?: string;
  /** Count what the operator allocates from the first create until all are Ready, profile written here. */
  allocProfile?: string;
  /** Write the API server's CPU profile of each side's first seconds of creates here; off when unset. */
  apiserverProfile?: string;
  /** How the agents authenticate (default token). */
  agentAuth?: AgentAuth;
  /**
   * Run kwok's side first, then ours (default: ours first). The second side meets the first one's leftovers
   * on the shared API server and etcd (its Events, the history of its writes), so a set of runs alternates.
   */
  kwokFirst?: boolean;
  /** The audit log records Event writes too (default: left out, see bench/lib/audit.ts). */
  auditEvents?: boolean;
  /** Minutes the pods are held Ready (their start's Events written) before the delete; default 0. */
  holdMinutes?: number;
  /** At most this many creates started per second (default: the concurrency alone bounds them). */
  ratePerSec?: number;
  /** kwok's sides: kwokctl's default stages, with the kubelet's start Events, or one of each (args.ts). */
  kwokEvents?: 'default' | 'events' | 'both';
  /** Our side as this many replicas sharing the nodes by shard Leases; one is killed after the hold (default 1). */
  replicas?: number;
}

/** Our side as replicas: each one's RSS, and the fail-over of the one killed after the hold. */
export interface ReplicaRun {
  count: number;
  /** Per replica (in start order): RSS with the nodes alone, when all pods were Ready, and its peak. */
  rssIdleMiB: number[];
  rssAtAllReadyMiB: number[];
  maxRssMiB: number[];
  failover?: Failover;
}

/** One row of the growth table: the operator when `pods` pods were Ready, CPU counted from the first create. */
export interface GrowthPoint {
  pods: number;
  atMs: number;
  rssMiB: number;
  heapUsedMiB: number;
  cpuSec: number;
}

/** Whether the nodes stayed alive from all Ready after start until the last pod was gone. */
export interface NodeHealth {
  /** Lease gaps over 12 s (a renewal 2 s behind its 10 s interval) and over 20 s (10 s behind). */
  leases: LeaseCadence;
  leasesLateBy10s: number;
  /** The most Nodes NotReady at one moment, and how many went NotReady at all. */
  maxNotReady: number;
  nodesWentNotReady: number;
}

/** Seconds of the API server's CPU profile from a side's first create (kwok's creates take 17 to 22 s). */
const APISERVER_PROFILE_SECONDS = 20;

/** What one side measured; times are epoch ms, durations ms. */
export interface SideRun {
  name: string;
  /**
   * What the API server measured in each phase: its Lease PUTs' latency, API Priority and Fairness' queue
   * waits and rejections by priority level (absent in older results).
   */
  apiserverByPhase?: Record<'create' | 'hold' | 'delete', ApiserverPhase>;
  user: string;
  nodes: number;
  nodesReadyMs: number;
  pods: number;
  ready: number;
  gone: number;
  /** Until the last create call returned (the driver's own pace). */
  allCreatedMs: number;
  allReadyMs: number;
  podsPerSec: number;
  readyLatency: ReturnType<typeof summarize>;
  createCpuSec: number;
  /**
   * From the first create until all were Ready and the Events of their start were written (absent in older
   * results), and that CPU.
   */
  startEventsWrittenMs?: number;
  createWithEventsCpuSec?: number;
  deleteCpuSec: number;
  maxRssMiB: number;
  rssIdleMiB: number;
  rssAtAllReadyMiB: number;
  heapUsedAtAllReadyMiB: number;
  /** V8 heap committed when all are Ready, and its young generation (absent in older results). */
  heapCommittedAtAllReadyMiB?: number;
  youngCommittedAtAllReadyMiB?: number;
  /** Live heap bytes per pod, from the heap snapshots (NaN without --heap-snapshots). */
  liveHeapPerPodBytes: number;
  /** Bytes allocated per pod from the first create until all were Ready (only with --alloc-profile). */
  allocatedPerPodBytes?: number;
  /** The Events in the measured namespace afterwards: reason -> [Event objects, sum of their counts]. */
  eventsByReason: Record<string, [number, number]>;
  eventLoopP99Ms: number;
  /** Until the last delete call returned. */
  allDeletedMs: number;
  deleteAllGoneMs: number;
  statusUpdatesPerPod: number;
  stateChangesPerPod: number;
  /** [agent started, nodes Ready], [start, all Ready] and [delete sent, all gone], epoch ms. */
  windows: { startup: [number, number]; create: [number, number]; delete: [number, number] };
  /**
   * CPU seconds the rest of the machine used from the first create until all were Ready (absent in older
   * results): the API server, etcd, the benchmark's own driver process, and every CPU of the machine.
   */
  createPhaseCpuSec?: { apiserver: number; etcd: number; driver: number; machine: number };
  startupRequests?: RequestCounts;
  createRequests?: RequestCounts;
  deleteRequests?: RequestCounts;
  /** CPU seconds from the agent's start until all nodes were Ready (absent in older results). */
  startupCpuSec?: { agent: number; apiserver: number; etcd: number; machine: number };
  /** The operator at 10k, 25k, 50k, 100k pods Ready and at all Ready (absent in older results). */
  growth?: GrowthPoint[];
  health?: NodeHealth;
  /** Event-loop delay p99 of each phase, from the cumulative histogram (its bucket bound), ms. */
  lagP99ByPhaseMs?: { startup: number; create: number; hold: number; delete: number };
  /** How long the pods were held, and the operator's CPU and RSS at its end. */
  holdMs?: number;
  holdCpuSec?: number;
  rssEndOfHoldMiB?: number;
  /** The operator's Event writes by outcome at the end (kubelet_operator_events_total). */
  eventWrites?: Scraped['events'];
  /** With --replicas N (N > 1): the replicas one by one; the side's CPU, RSS and metrics are their sums. */
  replicas?: ReplicaRun;
}

/** The pods' readiness probe period (benchPod's default). */
const PROBE_PERIOD_MS = 10_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Samples the operator as the Ready count passes each milestone: RSS from /proc, V8 heap used from its
 * /metrics, CPU since the first create. A milestone passed while the previous sample is being taken is
 * sampled right after it (one scrape at a time).
 */
class GrowthRecorder {
  readonly points: GrowthPoint[] = [];
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private next = 0;
  private t0 = 0;

  constructor(
    private readonly milestones: readonly number[],
    private readonly sampler: ProcSampler,
    private readonly read: () => Promise<Scraped>,
  ) {}

  follow(watch: PodWatch): void {
    this.t0 = Date.now();
    this.timer = setInterval(() => void this.tick(watch), 250);
  }

  private async tick(watch: PodWatch): Promise<void> {
    if (this.busy || this.next >= this.milestones.length) return;
    const pods = this.milestones[this.next]!;
    if (watch.readyCount < pods) return;
    this.busy = true;
    this.next++;
    try {
      const atMs = Date.now() - this.t0;
      const rssMiB = this.sampler.sample()?.rssMiB ?? Number.NaN;
      const cpuSec = windowUsage(this.sampler.between(this.t0, Date.now())).cpuSec;
      // The last one is all Ready, where the run scrapes anyway (a scrape resets prom-client's lag p99).
      const last = this.next === this.milestones.length;
      const heapUsedMiB = last ? Number.NaN : (await this.read()).heapMiB;
      this.points.push({ pods, atMs, rssMiB, heapUsedMiB, cpuSec });
    } finally {
      this.busy = false;
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

async function runSide(
  bc: BenchCluster,
  side: {
    name: string;
    user: string;
    tag: string;
    hasMetrics: boolean;
    start(): Promise<AgentProcess>;
    /** Takes a heap snapshot named label, if this run takes them; resolves to its file. */
    snapshot?(agent: AgentProcess, label: string): Promise<string>;
    /** The window of the agent's allocation profile, if this run counts allocations. */
    allocations?: AllocWindow;
    /** Replicas only: kills one after the hold and times the fail-over (bench/lib/replicas.ts failOver). */
    failover?(agent: AgentProcess, leases: LeaseWatch, readiness: NodeReadyWatch): Promise<Failover>;
  },
  nodes: string[],
  opts: ScaleOptions,
  log: (s: string) => void,
): Promise<SideRun> {
  const tSetup = Date.now();
  // The start-up's CPU: the API server's, etcd's and the machine's over the window; the agent's is all it used.
  const pidOf = (name: string): number | undefined => bc.cp.processes().find((p) => p.name === name)?.pid;
  const cpuOf = (pid: number | undefined): number =>
    pid === undefined ? Number.NaN : (readProc(pid)?.cpuSec ?? Number.NaN);
  const startupFrom = {
    apiserver: cpuOf(pidOf('kube-apiserver')),
    etcd: cpuOf(pidOf('etcd')),
    machine: readMachine()?.cpuSec ?? Number.NaN,
  };
  const agent = await side.start();
  const upSince = Date.now();
  try {
    if (!(await waitNodesReady(bc.driver, nodes, 120_000)))
      throw new Error(`${side.name}: not all ${nodes.length} nodes Ready after 120 s`);
    const nodesReadyMs = Date.now() - tSetup;
    const startupCpuSec = {
      agent: cpuOf(agent.pid),
      apiserver: cpuOf(pidOf('kube-apiserver')) - startupFrom.apiserver,
      etcd: cpuOf(pidOf('etcd')) - startupFrom.etcd,
      machine: (readMachine()?.cpuSec ?? Number.NaN) - startupFrom.machine,
    };
    log(
      `${side.name}: ${nodes.length} nodes Ready in ${duration(nodesReadyMs)} ` +
        `(process ready after ${duration(upSince - tSetup)}); warm-up round`,
    );
    const nodesReadyAt = Date.now();
    const leases = new LeaseWatch(bc.driver, new Set(nodes));
    const readiness = new NodeReadyWatch(bc.driver, new Set(nodes));
    leases.start();
    readiness.start();
    // The delay histogram is cumulative since the process started: this reading closes the start-up phase.
    const atNodesReady = await scrape(agent, side.hasMetrics);
    const members = agent.members ?? [];
    const sampler = new ProcSampler(
      agent.pid,
      1000,
      members.length ? groupProcReader(members.map((m) => m.pid)) : undefined,
    ).start();
    const memberSamplers = members.map((m) => new ProcSampler(m.pid, 1000).start());
    let failover: Failover | undefined;
    // The agent shares two cores with these: what it and its requests cost them sets the creates' pace.
    const apiserverPid = pidOf('kube-apiserver');
    const etcdPid = pidOf('etcd');
    const others = {
      apiserver: apiserverPid === undefined ? undefined : new ProcSampler(apiserverPid, 1000).start(),
      etcd: etcdPid === undefined ? undefined : new ProcSampler(etcdPid, 1000).start(),
      driver: new ProcSampler(process.pid, 1000).start(),
      machine: new ProcSampler(0, 1000, readMachine).start(),
    };
    const warm = await podRound(bc, `warm-${side.tag}`, podPlan(nodes, 1, 'warm'), opts.concurrency);
    if (!warm.ready || !warm.gone) throw new Error(`${side.name}: the warm-up round did not finish`);
    // A kubelet delays the first probe of a pod by a random part of the period while it has been up for
    // less than one period (after a restart); measure a settled agent, not that start-up jitter.
    await sleep(Math.max(2000, PROBE_PERIOD_MS + 1000 - (Date.now() - upSince)));
    const beforeCreate = await scrape(agent, side.hasMetrics);
    const first = await readApiserver(bc, log);
    const server: Record<'beforeCreate' | 'beforeHold' | 'beforeDelete' | 'afterDelete', ApiserverReading> = {
      beforeCreate: first,
      beforeHold: first,
      beforeDelete: first,
      afterDelete: first,
    };
    const rssIdle = sampler.sample()?.rssMiB ?? Number.NaN;
    const membersIdle = memberSamplers.map((m) => m.sample()?.rssMiB ?? Number.NaN);
    let membersAtReady: number[] = [];
    const snapBase = await side.snapshot?.(agent, 'nodes-only');
    let snapReady: string | undefined;
    let snapSettled: string | undefined;

    const plan = podPlan(nodes, opts.podsPerNode, 'pod');
    log(`${side.name}: creating ${plan.length} pods`);
    let atReady = NOT_SCRAPED;
    let rssAtReady = Number.NaN;
    let allocated: ProfileNode | undefined;
    let startEventsAt: number | undefined;
    let beforeHold = NOT_SCRAPED;
    let beforeDelete = NOT_SCRAPED;
    let holdMs = 0;
    let holdCpuSec = Number.NaN;
    let rssEndOfHold = Number.NaN;
    const growth = new GrowthRecorder(growthMilestones(plan.length), sampler, () =>
      scrape(agent, side.hasMetrics),
    );
    await side.allocations?.open();
    const serverProfile = opts.apiserverProfile
      ? path.join(opts.apiserverProfile, `apiserver-create-${side.tag}.pprof`)
      : undefined;
    const profiled = serverProfile
      ? apiserverCpuProfile(bc, APISERVER_PROFILE_SECONDS, serverProfile).then(
          () => serverProfile,
          (err: unknown) => {
            log(`${side.name}: the API server's profile failed: ${String(err)}`);
            return undefined;
          },
        )
      : undefined;
    const r = await podRound(bc, `bench-${side.tag}`, plan, opts.concurrency, {
      afterReady: async () => {
        rssAtReady = sampler.sample()?.rssMiB ?? Number.NaN;
        membersAtReady = memberSamplers.map((m) => m.sample()?.rssMiB ?? Number.NaN);
        atReady = await scrape(agent, side.hasMetrics);
        allocated = await side.allocations?.close();
        snapReady = await side.snapshot?.(agent, `all-ready-${plan.length}`);
        // A node writes its Events one at a time, as a kubelet's broadcaster does, so a burst's Events are
        // still being written when the last pod is Ready. The start of the pods is their Events too: the
        // create phase's CPU is also counted until they are written, and the deletes wait for them.
        const written = await waitEventsSettled(bc, `bench-${side.tag}`, 300_000);
        startEventsAt = written.changedAt;
        if (written.changedAt !== undefined)
          log(`${side.name}: the start's Events written ${duration(written.ms)} after all were Ready`);
        // The pods' Events still queued at Ready are in flight, not kept per pod: snapshot again once written.
        snapSettled = await side.snapshot?.(agent, `settled-${plan.length}`);
        beforeHold = await scrape(agent, side.hasMetrics);
        server.beforeHold = await readApiserver(bc, log);
        if (opts.holdMinutes) {
          log(`${side.name}: ${plan.length} pods Ready; holding them ${opts.holdMinutes} min`);
          const h0 = Date.now();
          await sleep(opts.holdMinutes * 60_000);
          holdMs = Date.now() - h0;
          holdCpuSec = windowUsage(sampler.between(h0, Date.now())).cpuSec;
          rssEndOfHold = sampler.sample()?.rssMiB ?? Number.NaN;
        }
        if (side.failover) failover = await side.failover(agent, leases, readiness);
        beforeDelete = await scrape(agent, side.hasMetrics);
        server.beforeDelete = await readApiserver(bc, log);
        log(`${side.name}: ${plan.length} pods Ready; deleting them`);
      },
      onWatch: (w) => growth.follow(w),
      ...(opts.ratePerSec ? { ratePerSec: opts.ratePerSec } : {}),
    });
    growth.stop();
    const lastPoint = growth.points[growth.points.length - 1];
    if (lastPoint?.pods === plan.length) lastPoint.heapUsedMiB = atReady.heapMiB;
    const afterDelete = await scrape(agent, side.hasMetrics);
    server.afterDelete = await readApiserver(bc, log);
    await Promise.all([leases.stop(), readiness.stop()]);
    const apiserverByPhase = {
      create: apiserverPhase(server.beforeCreate, server.beforeHold),
      hold: apiserverPhase(server.beforeHold, server.beforeDelete),
      delete: apiserverPhase(server.beforeDelete, server.afterDelete),
    };
    for (const [phase, p] of Object.entries(apiserverByPhase)) {
      const levels = Object.entries(p.levels)
        .map(
          ([l, v]) =>
            `${l} ${v.executed} (p99 wait ${v.waitP99Ms} ms${v.rejected ? `, ${v.rejected} rejected` : ''})`,
        )
        .join(', ');
      log(
        `${side.name}, ${phase}: Lease PUTs ${p.leasePuts} (server p99 ${p.leasePutP99Ms} ms); APF levels: ${levels || 'none'}`,
      );
    }
    const healthEnd = r.t3;
    // With a fail-over, the nodes' health outside it: before the kill, and after every node was served again.
    const healthWindows: [number, number][] = failover
      ? [
          [nodesReadyAt, failover.killedAt],
          // From just after the last node's first renewal: each node's gap is then measured from its return.
          [failover.servedAt + 1, healthEnd],
        ]
      : [[nodesReadyAt, healthEnd]];
    const cadence = (lateMs: number): LeaseCadence =>
      joinCadences(
        healthWindows.map(([from, to]) =>
          leaseCadence(leases.renewals, from, to, { intervalMs: 10_000, lateMs, durationMs: 40_000 }),
        ),
      );
    const health: NodeHealth = {
      leases: cadence(12_000),
      leasesLateBy10s: cadence(20_000).late,
      maxNotReady: Math.max(...healthWindows.map(([from, to]) => readiness.timeline.maxBetween(from, to))),
      nodesWentNotReady: readiness.timeline.wentNotReady.size,
    };
    const p99 = (a: Scraped, b: Scraped): number =>
      phaseQuantile(a.loopDelayBuckets, b.loopDelayBuckets, 0.99) * 1000;
    const lagP99ByPhaseMs = {
      startup: p99(NOT_SCRAPED, atNodesReady),
      create: p99(beforeCreate, beforeHold),
      hold: opts.holdMinutes ? p99(beforeHold, beforeDelete) : Number.NaN,
      delete: p99(beforeDelete, afterDelete),
    };
    sampler.stop();
    for (const m of memberSamplers) m.stop();
    for (const o of Object.values(others)) o?.stop();
    const profileFile = await profiled;
    if (profileFile)
      log(
        `${side.name}: the API server's CPU in the first ${APISERVER_PROFILE_SECONDS} s of creates ` +
          `(${profileFile}):\n${await pprofTop(profileFile)}`,
      );
    // A node writes its Events one at a time, as a kubelet does, so after a burst its queue is written for a
    // while after the last pod is gone. Counted before that, the start's Events looked fewer than they are
    // (and with them the requests per pod): count them once they are all written, outside every window.
    const { ms: eventsMs } = await waitEventsSettled(bc, `bench-${side.tag}`, 300_000);
    if (eventsMs > 4000)
      log(`${side.name}: Events settled ${duration(eventsMs)} after the last pod was gone`);
    const eventsByReason = await tallyEvents(bc, `bench-${side.tag}`);
    const lat: number[] = [];
    for (const p of r.watch.pods.values())
      if (p.readyAt !== undefined && p.createdAt !== undefined) lat.push(p.readyAt - p.createdAt);
    const ready = r.watch.count((p) => p.readyAt !== undefined);
    const pods = plan.length;
    // CPU seconds of a sampled process (or the machine) from the first create until all were Ready.
    const createOf = (o: ProcSampler | undefined): number =>
      o ? windowUsage(o.between(r.t0, r.t1 + 1000)).cpuSec : Number.NaN;
    const startEventsEnd = Math.max(r.t1, startEventsAt ?? r.t1);
    const createWithEventsUse = windowUsage(sampler.between(r.t0, startEventsEnd + 1000));
    const deleteUse = windowUsage(sampler.between(r.t2, r.t3 + 1000));
    const all = windowUsage(sampler.between(r.t0, r.t3 + 1000));
    let updates = 0;
    let changes = 0;
    for (const p of r.watch.pods.values()) {
      updates += p.statusUpdates;
      changes += p.stateChanges;
    }
    const allocatedPerPodBytes = allocated
      ? logAllocations(allocated, {
          pods: plan.length,
          during: 'from the first create to all Ready',
          top: 12,
          log: (s) => log(`${side.name}: ${s}`),
        })
      : undefined;
    let liveHeapPerPodBytes = Number.NaN;
    if (snapBase && snapReady && snapSettled) {
      try {
        const base = snapshotLiveBytes(snapBase);
        const atReady = snapshotLiveBytes(snapReady);
        const settled = snapshotLiveBytes(snapSettled);
        const perPod = (a: number, b: number): string => `${((a - b) / plan.length / 1000).toFixed(1)} KB`;
        liveHeapPerPodBytes = (settled.total - settled.code - (base.total - base.code)) / plan.length;
        log(
          `${side.name}: live heap per pod ${perPod(atReady.total, base.total)} at Ready, ` +
            `${perPod(settled.total, base.total)} with the Events written, of which compiled code ` +
            `${perPod(settled.code, base.code)}: ${(liveHeapPerPodBytes / 1000).toFixed(1)} KB of data`,
        );
      } catch (err) {
        log(`${side.name}: heap snapshots not read (${(err as Error).message})`);
      }
    }
    return {
      name: side.name,
      user: side.user,
      nodes: nodes.length,
      nodesReadyMs,
      pods,
      ready,
      gone: r.watch.count((p) => p.goneAt !== undefined),
      allCreatedMs: r.created - r.t0,
      allReadyMs: r.ready ? r.t1 - r.t0 : Number.NaN,
      podsPerSec: r.ready ? pods / ((r.t1 - r.t0) / 1000) : Number.NaN,
      readyLatency: summarize(lat),
      createCpuSec: createOf(sampler),
      createPhaseCpuSec: {
        apiserver: createOf(others.apiserver),
        etcd: createOf(others.etcd),
        driver: createOf(others.driver),
        machine: createOf(others.machine),
      },
      createWithEventsCpuSec: createWithEventsUse.cpuSec,
      startEventsWrittenMs: startEventsEnd - r.t0,
      deleteCpuSec: deleteUse.cpuSec,
      maxRssMiB: all.maxRssMiB,
      rssIdleMiB: rssIdle,
      rssAtAllReadyMiB: rssAtReady,
      heapUsedAtAllReadyMiB: atReady.heapMiB,
      heapCommittedAtAllReadyMiB: atReady.heapCommittedMiB,
      youngCommittedAtAllReadyMiB: atReady.youngCommittedMiB,
      liveHeapPerPodBytes,
      ...(allocatedPerPodBytes !== undefined ? { allocatedPerPodBytes } : {}),
      eventsByReason,
      eventLoopP99Ms: atReady.lagP99Ms,
      allDeletedMs: r.deleted - r.t2,
      deleteAllGoneMs: r.gone ? r.t3 - r.t2 : Number.NaN,
      statusUpdatesPerPod: updates / pods,
      stateChangesPerPod: changes / pods,
      windows: { startup: [tSetup, tSetup + nodesReadyMs], create: [r.t0, r.t1], delete: [r.t2, r.t3] },
      startupCpuSec,
      growth: growth.points,
      health,
      lagP99ByPhaseMs,
      apiserverByPhase,
      ...(opts.holdMinutes ? { holdMs, holdCpuSec, rssEndOfHoldMiB: rssEndOfHold } : {}),
      eventWrites: afterDelete.events,
      ...(members.length
        ? {
            replicas: {
              count: members.length,
              rssIdleMiB: membersIdle,
              rssAtAllReadyMiB: membersAtReady,
              maxRssMiB: memberSamplers.map((m) => windowUsage(m.between(r.t0, r.t3 + 1000)).maxRssMiB),
              ...(failover ? { failover } : {}),
            },
          }
        : {}),
    };
  } finally {
    await agent.stop();
  }
}

/** Adds the API server's counts of each side's requests in its create and delete windows. */
export function attachCounts(runs: SideRun[], audit: readonly AuditRecord[]): void {
  for (const s of runs) {
    s.startupRequests = countRequests(audit, s.user, s.windows.startup[0], s.windows.startup[1]);
    // The create window runs until the delete starts (late status writes of the create phase land there).
    s.createRequests = countRequests(audit, s.user, s.windows.create[0], s.windows.delete[0]);
    s.deleteRequests = countRequests(audit, s.user, s.windows.delete[0], s.windows.delete[1] + 500);
  }
}

/** The side-by-side table; the last column is ours / kwok. */
export function scaleTable(runs: SideRun[]): string {
  const cols = runs.map((r) => r.name);
  const rows: string[][] = [];
  // ours / each other side (kwok, and kwok with Events when both ran).
  const row = (label: string, f: (r: SideRun) => number, fmt: (v: number) => string): void => {
    const vals = runs.map(f);
    rows.push([label, ...vals.map(fmt), ...vals.slice(1).map((v) => times(ratio(vals[0]!, v)))]);
  };
  const ms = duration;
  const lag = (v: number): string => (v === Infinity ? '> 5 s' : num(v, 0, 'ms'));
  // The API server's histograms end at 60 s (request latency) and 30 s (APF waits).
  const served = (v: number): string => (v === Infinity ? 'over its top bucket' : num(v, 0, 'ms'));
  const mib = (v: number): string => num(v, 0, 'MiB');
  const sec = (v: number): string => num(v, 1, 's');
  const n2 = (v: number): string => num(v, 2);
  const writes = (c: RequestCounts | undefined, pods: number): number =>
    requestsPerPod(c, pods, STATUS_WRITE);
  // The same with or without --audit-events: Events are counted by reason (the last rows, and the targets).
  const besidesEvents = (c: RequestCounts | undefined, pods: number): number =>
    c ? requestsBesidesEvents(c) / pods : Number.NaN;
  const spec: [string, (r: SideRun) => number, (v: number) => string][] = [
    ['nodes Ready after start', (r) => r.nodesReadyMs, ms],
    ['API requests / node, start-up', (r) => (r.startupRequests?.total ?? Number.NaN) / r.nodes, n2],
    ['CPU, start-up: the agent', (r) => r.startupCpuSec?.agent ?? Number.NaN, sec],
    ['  kube-apiserver', (r) => r.startupCpuSec?.apiserver ?? Number.NaN, sec],
    ['  etcd', (r) => r.startupCpuSec?.etcd ?? Number.NaN, sec],
    ['  the whole machine', (r) => r.startupCpuSec?.machine ?? Number.NaN, sec],
    ['pods Running+Ready', (r) => r.ready, (v) => num(v)],
    ['all create calls answered', (r) => r.allCreatedMs, ms],
    ['time until all Ready', (r) => r.allReadyMs, ms],
    ['throughput', (r) => r.podsPerSec, (v) => num(v, 1, 'pods/s')],
    ['create -> Ready p50', (r) => r.readyLatency.p50, ms],
    ['create -> Ready p99', (r) => r.readyLatency.p99, ms],
    ['CPU, create phase', (r) => r.createCpuSec, sec],
    ['  kube-apiserver in the same window', (r) => r.createPhaseCpuSec?.apiserver ?? Number.NaN, sec],
    ['  etcd', (r) => r.createPhaseCpuSec?.etcd ?? Number.NaN, sec],
    ["  the benchmark's driver", (r) => r.createPhaseCpuSec?.driver ?? Number.NaN, sec],
    ['  the whole machine (all CPUs busy)', (r) => r.createPhaseCpuSec?.machine ?? Number.NaN, sec],
    [
      '  the whole machine per pod',
      (r) => ((r.createPhaseCpuSec?.machine ?? Number.NaN) * 1000) / r.pods,
      (v) => num(v, 2, 'ms'),
    ],
    ["start's Events all written after", (r) => r.startEventsWrittenMs ?? Number.NaN, ms],
    ['CPU, create phase with its Events', (r) => r.createWithEventsCpuSec ?? Number.NaN, sec],
    ['RSS before the pods (nodes only)', (r) => r.rssIdleMiB, mib],
    ['RSS when all Ready', (r) => r.rssAtAllReadyMiB, mib],
    ['RSS peak (create+delete)', (r) => r.maxRssMiB, mib],
    ['V8 heap used when all Ready', (r) => r.heapUsedAtAllReadyMiB, mib],
    ['V8 heap committed when all Ready', (r) => r.heapCommittedAtAllReadyMiB ?? Number.NaN, mib],
    ['  of which young generation', (r) => r.youngCommittedAtAllReadyMiB ?? Number.NaN, mib],
    ['event-loop lag p99, create phase', (r) => r.eventLoopP99Ms, (v) => num(v, 1, 'ms')],
    ['API requests / pod, create, Events aside', (r) => besidesEvents(r.createRequests, r.pods), n2],
    ['status writes / pod, create', (r) => writes(r.createRequests, r.pods), n2],
    ['all delete calls answered', (r) => r.allDeletedMs, ms],
    ['time until all gone (delete)', (r) => r.deleteAllGoneMs, ms],
    ['CPU, delete phase', (r) => r.deleteCpuSec, sec],
    ['API requests / pod, delete, Events aside', (r) => besidesEvents(r.deleteRequests, r.pods), n2],
    ['status writes / pod, delete', (r) => writes(r.deleteRequests, r.pods), n2],
    [
      'status writes / pod, lifecycle',
      (r) => writes(r.createRequests, r.pods) + writes(r.deleteRequests, r.pods),
      n2,
    ],
    [
      'Events / pod (sum of counts)',
      (r) => Object.values(r.eventsByReason).reduce((a, [, c]) => a + c, 0) / r.pods,
      n2,
    ],
    ['status changes seen by watch / pod', (r) => r.statusUpdatesPerPod, n2],
    ['  of which new states', (r) => r.stateChangesPerPod, n2],
    ['event-loop delay p99, start-up (histogram)', (r) => r.lagP99ByPhaseMs?.startup ?? Number.NaN, lag],
    ['event-loop delay p99, create with its Events', (r) => r.lagP99ByPhaseMs?.create ?? Number.NaN, lag],
    ['event-loop delay p99, hold', (r) => r.lagP99ByPhaseMs?.hold ?? Number.NaN, lag],
    ['event-loop delay p99, delete', (r) => r.lagP99ByPhaseMs?.delete ?? Number.NaN, lag],
    [
      'Lease PUT at the API server p99, create',
      (r) => r.apiserverByPhase?.create.leasePutP99Ms ?? Number.NaN,
      served,
    ],
    ['  hold', (r) => r.apiserverByPhase?.hold.leasePutP99Ms ?? Number.NaN, served],
    ['  delete', (r) => r.apiserverByPhase?.delete.leasePutP99Ms ?? Number.NaN, served],
    [
      'APF queue wait p99, longest of its levels, create',
      (r) => (r.apiserverByPhase ? worstLevel(r.apiserverByPhase.create).waitP99Ms : Number.NaN),
      served,
    ],
    [
      'requests APF rejected (429), create to gone',
      (r) =>
        r.apiserverByPhase
          ? Object.values(r.apiserverByPhase).reduce((a, p) => a + worstLevel(p).rejected, 0)
          : Number.NaN,
      (v) => num(v),
    ],
    ['hold', (r) => r.holdMs ?? Number.NaN, ms],
    ['CPU, hold', (r) => r.holdCpuSec ?? Number.NaN, sec],
    ['RSS at the end of the hold', (r) => r.rssEndOfHoldMiB ?? Number.NaN, mib],
    ['Lease renewals seen, ready -> all gone', (r) => r.health?.leases.renewals ?? Number.NaN, (v) => num(v)],
    ['  of a perfect 10 s heartbeat', (r) => r.health?.leases.expected ?? Number.NaN, (v) => num(v)],
    ['Lease gaps > 12 s', (r) => r.health?.leases.late ?? Number.NaN, (v) => num(v)],
    ['Lease gaps > 20 s (10 s late)', (r) => r.health?.leasesLateBy10s ?? Number.NaN, (v) => num(v)],
    ['longest Lease gap', (r) => r.health?.leases.maxGapMs ?? Number.NaN, ms],
    ['Nodes NotReady at once, most', (r) => r.health?.maxNotReady ?? Number.NaN, (v) => num(v)],
    ['Nodes that went NotReady', (r) => r.health?.nodesWentNotReady ?? Number.NaN, (v) => num(v)],
    ['Event writes created (operator)', (r) => r.eventWrites?.created ?? Number.NaN, (v) => num(v)],
    ['  dropped, queue full', (r) => r.eventWrites?.droppedQueueFull ?? Number.NaN, (v) => num(v)],
    ['  dropped by the spam filter', (r) => r.eventWrites?.filtered ?? Number.NaN, (v) => num(v)],
    ['  failed', (r) => r.eventWrites?.failed ?? Number.NaN, (v) => num(v)],
    ['  still queued at the end', (r) => r.eventWrites?.pending ?? Number.NaN, (v) => num(v)],
  ];
  for (const [label, f, fmt] of spec) row(label, f, fmt);
  const first = runs[0]?.name === 'kubelet-operator' ? 'ours' : runs[0]?.name;
  return formatTable(['', ...cols, ...runs.slice(1).map((r) => `${first}/${r.name}`)], rows);
}

/**
 * The growth table: each side when 10k, 25k, 50k and 100k pods (as reached) and all were Ready: RSS, V8 heap
 * used and CPU per pod since the first create.
 */
export function growthTable(runs: SideRun[]): string {
  const sizes = [...new Set(runs.flatMap((r) => (r.growth ?? []).map((g) => g.pods)))].sort((a, b) => a - b);
  const rows = sizes.map((pods) => [
    num(pods),
    ...runs.flatMap((r) => {
      const g = r.growth?.find((p) => p.pods === pods);
      return g
        ? [
            duration(g.atMs),
            num(g.rssMiB, 0, 'MiB'),
            num(g.heapUsedMiB, 0, 'MiB'),
            num((g.cpuSec * 1000) / pods, 2, 'ms'),
          ]
        : ['', '', '', ''];
    }),
  ]);
  const header = [
    'pods Ready',
    ...runs.flatMap((r) => [`${r.name}: after`, 'RSS', 'heap used', 'CPU / pod']),
  ];
  return formatTable(header, rows);
}

/** Our replicas one by one (RSS), and the fail-over of the one killed; '' for one process. */
export function replicaTable(run: SideRun): string {
  const r = run.replicas;
  if (!r) return '';
  const mib = (v: number | undefined): string => num(v ?? Number.NaN, 0, 'MiB');
  const rows = Array.from({ length: r.count }, (_, i) => [
    `replica ${i}`,
    mib(r.rssIdleMiB[i]),
    mib(r.rssAtAllReadyMiB[i]),
    mib(r.maxRssMiB[i]),
  ]);
  let out = formatTable(['', 'RSS, nodes only', 'RSS when all Ready', 'RSS peak (create+delete)'], rows);
  const f = r.failover;
  if (f) {
    out +=
      '\n\n' +
      formatTable(
        ['fail-over (SIGKILL after the hold)', ''],
        [
          ['replica killed, VirtualNodes it held', `${f.replica}, ${num(f.nodes)}`],
          ['split before -> after', `${f.splitBefore} -> ${f.splitAfter}`],
          ["all its nodes' shard Leases held by others after", duration(f.takenMs)],
          ["all its nodes' Node Leases renewed after", duration(f.servedMs)],
          ['longest Node Lease gap of its nodes', duration(f.maxLeaseGapMs)],
          [
            '  gaps > 20 s / > 40 s (the Node Lease duration)',
            `${num(f.leaseGapsOver20s)} / ${num(f.leaseGapsOver40s)}`,
          ],
          ['Nodes NotReady at once, most (kill -> served + 1 min)', num(f.maxNotReady)],
        ],
      );
  }
  return out;
}

export async function runScale(
  opts: ScaleOptions,
  log: (s: string) => void,
): Promise<Record<string, unknown>> {
  const meta: Record<string, unknown> = { ...opts };
  const t = Date.now();
  meta.operatorBuildMs = await buildOperator(opts.nodeArgs);
  log(`operator compiled by tsc into dist/ in ${duration(meta.operatorBuildMs as number)}`);
  let kwokDir = '';
  if (opts.kwok) {
    const k = await ensureKwok();
    kwokDir = k.dir;
    meta.kwokVersion = pinnedKwokVersion();
    meta.kwokEnsureMs = k.ms;
    log(`kwok ${meta.kwokVersion} ready in ${duration(k.ms)} (${kwokDir})`);
  }
  if (opts.apiserverProfile) await mkdir(opts.apiserverProfile, { recursive: true });
  const startCluster = async (): Promise<BenchCluster> => {
    const bc = await startBenchCluster({
      apiserverArgs: opts.apiserverProfile ? [APISERVER_PROFILING_FLAG] : [],
      auth: opts.agentAuth ?? 'token',
      auditEvents: !!opts.auditEvents,
      ...(opts.kwok ? { kwokDir } : {}),
    });
    log(`control plane up in ${duration(bc.cp.startMs)} (${bc.dir}); agents authenticate with ${bc.auth}s`);
    try {
      await warmVirtualNodeStorage(bc.driver);
    } catch (err) {
      await bc.stop();
      throw err;
    }
    return bc;
  };
  const ourNodes = nodeNames('vn', opts.nodes);
  const replicas = opts.replicas ?? 1;
  const allocFile = opts.allocProfile
    ? path.join(opts.allocProfile, `create-${new Date().toISOString().replace(/[:.]/g, '-')}.heapprofile`)
    : undefined;
  const oursSide = (bc: BenchCluster): Promise<SideRun> =>
    runSide(
      bc,
      {
        name: 'kubelet-operator',
        user: bc.operator.user,
        tag: 'ours',
        hasMetrics: true,
        start: async () => {
          const nodeArgs = [
            ...(opts.nodeArgs ?? []),
            ...(opts.heapSnapshots ? heapSnapshotNodeArgs(opts.heapSnapshots) : []),
            ...(allocFile ? allocProfileNodeArgs(allocFile) : []),
          ];
          const selector = `kubelet-operator.dev/served-by=${SERVED_BY}`;
          let agent: AgentProcess;
          if (replicas > 1) {
            // All replicas announce themselves before the first VirtualNode exists, so none takes more than
            // its share at the start.
            const ids = Array.from({ length: replicas }, (_, i) => `bench-replica-${i}`);
            const members = await Promise.all(
              ids.map(async (id) => ({
                ...(await startOperatorProcess({
                  kubeconfig: bc.operator.kubeconfig,
                  selector,
                  logPath: path.join(bc.dir, `operator-${id}.log`),
                  nodeArgs,
                  extraArgs: shardFlags(id),
                })),
                name: id,
              })),
            );
            agent = replicaGroup(members);
          } else {
            agent = await startOperatorProcess({
              kubeconfig: bc.operator.kubeconfig,
              selector,
              logPath: path.join(bc.dir, 'operator.log'),
              nodeArgs,
            });
          }
          await createSimVirtualNodes(bc.driver, ourNodes, opts.podsPerNode);
          return agent;
        },
        ...(replicas > 1
          ? {
              failover: (agent: AgentProcess, leases: LeaseWatch, readiness: NodeReadyWatch) =>
                failOver(bc.driver, agent.members ?? [], leases, readiness, (s) =>
                  log(`kubelet-operator: ${s}`),
                ),
            }
          : {}),
        ...(allocFile ? { allocations: new AllocWindow(allocFile) } : {}),
        snapshot: opts.heapSnapshots
          ? async (agent, label) => {
              const file = await heapSnapshot(agent, opts.heapSnapshots!, label);
              log(`kubelet-operator: heap snapshot ${file}`);
              return file;
            }
          : undefined,
      },
      ourNodes,
      opts,
      log,
    );
  // With Events, kwok manages Nodes of its own annotation value and names: the first kwok's Nodes stay
  // behind on the API server, and the second must not heartbeat them too.
  const kwokSide = (bc: BenchCluster, events: boolean): Promise<SideRun> => {
    const kwokIdentity = bc.kwok;
    if (!kwokIdentity) throw new Error('the benchmark cluster was started without an identity for kwok');
    const tag = events ? 'kwokev' : 'kwok';
    const annotation = events ? 'fake-events' : KWOK_NODE_ANNOTATION.value;
    const kwokNodes = nodeNames(tag, opts.nodes);
    return runSide(
      bc,
      {
        name: events ? 'kwok+Events' : 'kwok',
        user: kwokIdentity.user,
        tag,
        hasMetrics: false,
        start: async () => {
          await createKwokNodes(bc.driver, kwokNodes, opts.podsPerNode, undefined, annotation);
          return startKwok({
            kwokDir,
            kubeconfig: kwokIdentity.kubeconfig,
            logPath: path.join(bc.dir, `${tag}.log`),
            configPath: path.join(bc.dir, `${tag}.yaml`),
            events,
            nodeAnnotationValue: annotation,
          });
        },
      },
      kwokNodes,
      opts,
      log,
    );
  };
  const which = opts.kwokEvents ?? 'default';
  const kwokSides: ((bc: BenchCluster) => Promise<SideRun>)[] = !opts.kwok
    ? []
    : [
        ...(which !== 'events' ? [(bc: BenchCluster) => kwokSide(bc, false)] : []),
        ...(which !== 'default' ? [(bc: BenchCluster) => kwokSide(bc, true)] : []),
      ];
  const ours = opts.ours === false ? [] : [oursSide];
  const order = opts.kwokFirst ? [...kwokSides, ...ours] : [...ours, ...kwokSides];
  // The sides in the order they ran; each side's requests are read from its own control plane's audit log.
  const ran: SideRun[] = [];
  if (opts.planePerSide) {
    for (const side of order) {
      const bc = await startCluster();
      try {
        const r = await side(bc);
        attachCounts([r], await readAuditLog(bc.auditLog));
        ran.push(r);
      } finally {
        await bc.stop();
      }
    }
  } else {
    const bc = await startCluster();
    try {
      for (const side of order) ran.push(await side(bc));
      attachCounts(ran, await readAuditLog(bc.auditLog));
    } finally {
      await bc.stop();
    }
  }
  // The table reads ours first and kwok after, whichever ran first.
  const runs = [
    ...ran.filter((r) => r.name === 'kubelet-operator'),
    ...ran.filter((r) => r.name !== 'kubelet-operator'),
  ];
  meta.totalMs = Date.now() - t;
  const replicaRows = replicaTable(runs[0]!);
  const growth = `${scaleTable(runs)}\n\nGrowth, sampled as the Ready count passed each size:\n${growthTable(runs)}`;
  // The targets are ours: without our side the table stops at the growth.
  const table =
    opts.ours === false
      ? growth
      : `${growth}\n\n` +
        (replicaRows ? `Our replicas:\n${replicaRows}\n\n` : '') +
        `${targetsTable(runs[0]!, runs[1])}\n\n${ceilingTargetsTable(
          runs[0]!,
          runs.find((r) => r.name === 'kwok+Events'),
        )}`;
  return { scenario: 'scale', ...meta, sides: runs, table };
}
