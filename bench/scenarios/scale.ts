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
import { ProcSampler, readMachine, windowUsage } from '../lib/procstat.js';
import { podPlan } from '../lib/pods.js';
import { APISERVER_PROFILING_FLAG, apiserverCpuProfile, pprofTop } from '../lib/apiserverprofile.js';
import { AllocWindow, allocProfileNodeArgs, logAllocations, type ProfileNode } from '../lib/allocprofile.js';
import { NOT_SCRAPED, podRound, scrape, tallyEvents, waitEventsSettled } from '../lib/scaleround.js';
import { snapshotLiveBytes, targetsTable } from '../lib/scaletargets.js';
import { ratio, summarize } from '../lib/stats.js';
import { duration, formatTable, num, times } from '../lib/table.js';

export interface ScaleOptions {
  nodes: number;
  podsPerNode: number;
  concurrency: number;
  kwok: boolean;
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
}

/** Seconds of the API server's CPU profile from a side's first create (kwok's creates take 17 to 22 s). */
const APISERVER_PROFILE_SECONDS = 20;

/** What one side measured; times are epoch ms, durations ms. */
export interface SideRun {
  name: string;
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
}

/** The pods' readiness probe period (benchPod's default). */
const PROBE_PERIOD_MS = 10_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
  },
  nodes: string[],
  opts: ScaleOptions,
  log: (s: string) => void,
): Promise<SideRun> {
  const tSetup = Date.now();
  const agent = await side.start();
  const upSince = Date.now();
  try {
    if (!(await waitNodesReady(bc.driver, nodes, 120_000)))
      throw new Error(`${side.name}: not all ${nodes.length} nodes Ready after 120 s`);
    const nodesReadyMs = Date.now() - tSetup;
    log(
      `${side.name}: ${nodes.length} nodes Ready in ${duration(nodesReadyMs)} ` +
        `(process ready after ${duration(upSince - tSetup)}); warm-up round`,
    );
    const sampler = new ProcSampler(agent.pid, 1000).start();
    // The agent shares two cores with these: what it and its requests cost them sets the creates' pace.
    const pidOf = (name: string): number | undefined => bc.cp.processes().find((p) => p.name === name)?.pid;
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
    await scrape(agent, side.hasMetrics);
    const rssIdle = sampler.sample()?.rssMiB ?? Number.NaN;
    const snapBase = await side.snapshot?.(agent, 'nodes-only');
    let snapReady: string | undefined;
    let snapSettled: string | undefined;

    const plan = podPlan(nodes, opts.podsPerNode, 'pod');
    log(`${side.name}: creating ${plan.length} pods`);
    let atReady = NOT_SCRAPED;
    let rssAtReady = Number.NaN;
    let allocated: ProfileNode | undefined;
    let startEventsAt: number | undefined;
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
        log(`${side.name}: ${plan.length} pods Ready; deleting them`);
      },
    });
    sampler.stop();
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
  const row = (label: string, f: (r: SideRun) => number, fmt: (v: number) => string): void => {
    const vals = runs.map(f);
    rows.push([label, ...vals.map(fmt), ...(runs.length === 2 ? [times(ratio(vals[0]!, vals[1]!))] : [])]);
  };
  const ms = duration;
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
  ];
  for (const [label, f, fmt] of spec) row(label, f, fmt);
  return formatTable(['', ...cols, ...(runs.length === 2 ? ['ours/kwok'] : [])], rows);
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
  const bc = await startBenchCluster({
    apiserverArgs: opts.apiserverProfile ? [APISERVER_PROFILING_FLAG] : [],
    auth: opts.agentAuth ?? 'token',
    auditEvents: !!opts.auditEvents,
    ...(opts.kwok ? { kwokDir } : {}),
  });
  log(`control plane up in ${duration(bc.cp.startMs)} (${bc.dir}); agents authenticate with ${bc.auth}s`);
  const runs: SideRun[] = [];
  try {
    await warmVirtualNodeStorage(bc.driver);
    const ourNodes = nodeNames('vn', opts.nodes);
    const allocFile = opts.allocProfile
      ? path.join(opts.allocProfile, `create-${new Date().toISOString().replace(/[:.]/g, '-')}.heapprofile`)
      : undefined;
    const oursSide = (): Promise<SideRun> =>
      runSide(
        bc,
        {
          name: 'kubelet-operator',
          user: bc.operator.user,
          tag: 'ours',
          hasMetrics: true,
          start: async () => {
            const agent = await startOperatorProcess({
              kubeconfig: bc.operator.kubeconfig,
              selector: `kubelet-operator.dev/served-by=${SERVED_BY}`,
              logPath: path.join(bc.dir, 'operator.log'),
              nodeArgs: [
                ...(opts.nodeArgs ?? []),
                ...(opts.heapSnapshots ? heapSnapshotNodeArgs(opts.heapSnapshots) : []),
                ...(allocFile ? allocProfileNodeArgs(allocFile) : []),
              ],
            });
            await createSimVirtualNodes(bc.driver, ourNodes, opts.podsPerNode);
            return agent;
          },
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
    const kwokSide = (): Promise<SideRun> => {
      const kwokIdentity = bc.kwok;
      if (!kwokIdentity) throw new Error('the benchmark cluster was started without an identity for kwok');
      const kwokNodes = nodeNames('kwok', opts.nodes);
      return runSide(
        bc,
        {
          name: 'kwok',
          user: kwokIdentity.user,
          tag: 'kwok',
          hasMetrics: false,
          start: async () => {
            await createKwokNodes(bc.driver, kwokNodes, opts.podsPerNode);
            return startKwok({
              kwokDir,
              kubeconfig: kwokIdentity.kubeconfig,
              logPath: path.join(bc.dir, 'kwok.log'),
              configPath: path.join(bc.dir, 'kwok.yaml'),
            });
          },
        },
        kwokNodes,
        opts,
        log,
      );
    };
    // The table reads ours first and kwok second, whichever ran first.
    if (!opts.kwok) runs.push(await oursSide());
    else if (opts.kwokFirst) {
      const theirs = await kwokSide();
      runs.push(await oursSide(), theirs);
    } else runs.push(await oursSide(), await kwokSide());
    attachCounts(runs, await readAuditLog(bc.auditLog));
  } finally {
    await bc.stop();
  }
  meta.totalMs = Date.now() - t;
  const table = `${scaleTable(runs)}\n\n${targetsTable(runs[0]!, runs[1])}`;
  return { scenario: 'scale', ...meta, sides: runs, table };
}
