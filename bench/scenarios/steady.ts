// Steady state on the simulated runtime: N x M pods with a 10 s TCP readiness probe, all Ready, then held for
// H minutes. Over the hold: the operator's CPU and RSS (sampled every 5 s; RSS should not grow), every
// node's Lease renewed on time (from a watch), and the API writes it made (audit log): an unchanged pod
// must cost no status write at all. With --metrics-server (issue #18) the operator also serves its node
// API, each node at a loopback address of its own, and metrics-server scrapes every node every 15 s
// (bench/lib/metrics.ts).
import { countOf, countRequests, readAuditLog, type RequestCounts } from '../lib/audit.js';
import { httpGet } from '../lib/agents.js';
import type { BenchCluster } from '../lib/cluster.js';
import { leaseCadence, LeaseWatch, type LeaseCadence } from '../lib/leases.js';
import {
  metricsServerRows,
  metricsServerRun,
  prepareNodeApi,
  type BenchNodeApi,
  type MetricsServerRun,
} from '../lib/metrics.js';
import { createSimVirtualNodes, nodeNames, waitNodesReady } from '../lib/nodes.js';
import { withOperatorCluster, type OperatorCluster } from '../lib/operatorcluster.js';
import { benchPod, createPods, ensureNamespace, podPlan, PodWatch } from '../lib/pods.js';
import { ProcSampler, rssTimeline, windowUsage } from '../lib/procstat.js';
import { promValue } from '../lib/prom.js';
import { waitEventsSettled } from '../lib/scaleround.js';
import { slope } from '../lib/stats.js';
import { duration, formatTable, num } from '../lib/table.js';
import { startMetricsServer, type MetricsServer } from '../../test/support/metricsserver.js';

export interface SteadyOptions {
  nodes: number;
  podsPerNode: number;
  holdMinutes: number;
  concurrency: number;
  /** Flags for the operator's node process. */
  nodeArgs?: string[];
  /** Serve the node API (a loopback InternalIP per node) and run metrics-server against it. */
  metricsServer?: boolean;
}

const PROBE_PERIOD_MS = 10_000;
/** metrics-server's --metric-resolution with --metrics-server (its default, as in most clusters). */
const METRIC_RESOLUTION_S = 15;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface SteadyRun {
  pods: number;
  ready: number;
  allReadyMs: number;
  holdMs: number;
  cpuSec: number;
  cpuCores: number;
  rssStartMiB: number;
  rssEndMiB: number;
  rssMaxMiB: number;
  rssSlopeMiBPerMin: number;
  rssTimeline: { minute: number; rssMiB: number }[];
  /** V8 heap used (operator's nodejs_heap_size_used_bytes) at each whole minute of the hold, from minute 0. */
  heapUsedMiB: number[];
  /**
   * V8's young generation as committed (nodejs_heap_space_size_total_bytes of space new) at the same minutes:
   * V8 gives it back while the process allocates little (absent in older results).
   */
  youngCommittedMiB?: number[];
  eventLoopP99Ms: number;
  probesPerSec: number;
  podStatusUpdatesSeen: number;
  leases: LeaseCadence;
  requests: RequestCounts;
  /** Set with --metrics-server. */
  metricsServer?: MetricsServerRun;
}

async function scrape(base: string): Promise<string> {
  const res = await httpGet(`${base}/metrics`, 30_000).catch(() => undefined);
  return res?.body ?? '';
}

const heapUsedMiB = (metrics: string): number => promValue(metrics, 'nodejs_heap_size_used_bytes') / 2 ** 20;
const youngMiB = (metrics: string): number =>
  promValue(metrics, 'nodejs_heap_space_size_total_bytes', { space: 'new' }) / 2 ** 20;

export function steadyTable(r: SteadyRun): string {
  const perMin = (n: number): string => num(n / (r.holdMs / 60_000), 1, '/min');
  const writes = (re: RegExp): number => countOf(r.requests, re);
  const rows: string[][] = [
    ['pods Running+Ready', `${num(r.ready)} of ${num(r.pods)}`],
    ['time until all Ready', duration(r.allReadyMs)],
    ['hold', duration(r.holdMs)],
    ['CPU during hold', `${num(r.cpuSec, 1, 's')} (${num(r.cpuCores * 100, 1, '% of a core')})`],
    ['RSS at start / end of hold', `${num(r.rssStartMiB, 0)} / ${num(r.rssEndMiB, 0, 'MiB')}`],
    ['RSS max during hold', num(r.rssMaxMiB, 0, 'MiB')],
    ['RSS trend (least squares)', num(r.rssSlopeMiBPerMin, 2, 'MiB/min')],
    ['event-loop lag p99 (hold)', num(r.eventLoopP99Ms, 1, 'ms')],
    ['readiness probes run', num(r.probesPerSec, 0, '/s')],
    [
      'Lease renewals (seen / expected)',
      `${num(r.leases.renewals)} / ${num(r.leases.expected)} over ${num(r.leases.nodes)} nodes`,
    ],
    ['Lease max gap between renewals', duration(r.leases.maxGapMs)],
    ['Lease gaps > 12 s / > 40 s (expired)', `${num(r.leases.late)} / ${num(r.leases.expired)}`],
    ['pod status writes (patch pods/status)', num(writes(/^(patch|update) pods\/status$/))],
    ['pod status changes seen by a watch', num(r.podStatusUpdatesSeen)],
    ['node status writes', `${num(writes(/^(patch|update) nodes\/status$/))}`],
    ['Lease writes', `${num(writes(/^(update|patch) leases$/))}`],
    ['all API requests', `${num(r.requests.total)} (${perMin(r.requests.total)})`],
    ...metricsServerRows(r.metricsServer, r.holdMs),
  ];
  const rss = formatTable(
    ['minute of hold', 'RSS', 'V8 heap used', 'young generation'],
    r.rssTimeline.map((p) => [
      num(p.minute, Number.isInteger(p.minute) ? 0 : 2),
      num(p.rssMiB, 0, 'MiB'),
      Number.isInteger(p.minute) ? num(r.heapUsedMiB[p.minute], 0, 'MiB') : '',
      Number.isInteger(p.minute) ? num(r.youngCommittedMiB?.[p.minute] ?? Number.NaN, 0, 'MiB') : '',
    ]),
  );
  const kinds = formatTable(
    ['API requests during hold, by kind', 'count'],
    Object.entries(r.requests.byKind)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [k, num(v)]),
  );
  return `${formatTable(['kubelet-operator, steady state', ''], rows)}\n\n${rss}\n\n${kinds}`;
}

export async function runSteady(
  opts: SteadyOptions,
  log: (s: string) => void,
): Promise<Record<string, unknown>> {
  const t = Date.now();
  const nodes = nodeNames('vn', opts.nodes);
  let nodeApi: BenchNodeApi | undefined;
  const operatorArgs = async (bc: BenchCluster): Promise<string[]> => {
    nodeApi = await prepareNodeApi(bc, nodes);
    return nodeApi.operatorArgs;
  };
  const run = async ({ bc, agent, buildMs }: OperatorCluster): Promise<Record<string, unknown>> => {
    const upSince = Date.now();
    const sampler = new ProcSampler(agent.pid, 5000).start();
    let ms: MetricsServer | undefined;
    let msSampler: ProcSampler | undefined;
    const leases = new LeaseWatch(bc.driver, new Set(nodes));
    const ns = 'steady';
    const watch = new PodWatch(bc.driver, ns);
    try {
      await createSimVirtualNodes(bc.driver, nodes, opts.podsPerNode, undefined, nodeApi?.ips);
      if (!(await waitNodesReady(bc.driver, nodes, 120_000))) throw new Error('nodes not Ready after 120 s');
      leases.start();
      // metrics-server starts while we wait past the kubelet's start-up probe jitter (see scale.ts).
      [ms] = await Promise.all([
        nodeApi && startMetricsServer(bc.cp, { metricResolutionSeconds: METRIC_RESOLUTION_S }),
        sleep(Math.max(0, PROBE_PERIOD_MS + 1000 - (Date.now() - upSince))),
      ]);
      if (ms) {
        log(`metrics-server Available after ${duration(ms.startMs)} (${ms.logPath})`);
        msSampler = new ProcSampler(ms.pid, 5000).start();
      }
      await ensureNamespace(bc.driver, ns);
      await watch.start();
      const plan = podPlan(nodes, opts.podsPerNode, 'pod');
      log(`creating ${plan.length} pods`);
      const t0 = Date.now();
      await createPods(bc.driver, watch, plan, opts.concurrency, (n, ns, node) =>
        benchPod(n, ns, node, PROBE_PERIOD_MS / 1000),
      );
      const allReady = await watch.waitFor(
        (r) => r.readyAt !== undefined,
        plan.length,
        60_000 + plan.length * 60,
      );
      const allReadyMs = allReady ? Date.now() - t0 : Number.NaN;
      // The start's Events (three a pod, written a node's queue at a time) drain for a minute or more after
      // the last Ready: the hold begins once they have, so that it measures a settled node, not that tail.
      const events = await waitEventsSettled(bc, ns, 300_000);
      log(
        `${watch.count((r) => r.readyAt !== undefined)} pods Ready; the start's Events written ` +
          `${duration(events.ms)} later; settling 20 s, then holding ${opts.holdMinutes} min`,
      );
      await sleep(20_000);
      const m0 = await scrape(agent.httpBase);
      let seen0 = 0;
      for (const p of watch.pods.values()) seen0 += p.statusUpdates;
      const h0 = Date.now();
      sampler.sample();
      msSampler?.sample();
      const holdMs = opts.holdMinutes * 60_000;
      const heap = [heapUsedMiB(m0)];
      const young = [youngMiB(m0)];
      for (let left = holdMs; left > 0; left -= 60_000) {
        await sleep(Math.min(60_000, left));
        const s = sampler.samples[sampler.samples.length - 1];
        // The last minute's heap comes from the scrape after the hold.
        if (left > 60_000) {
          const m = await scrape(agent.httpBase);
          heap.push(heapUsedMiB(m));
          young.push(youngMiB(m));
        }
        const h = left > 60_000 ? `, V8 heap used ${num(heap[heap.length - 1], 0, 'MiB')}` : '';
        log(`hold: ${Math.round((Date.now() - h0) / 60_000)} min, RSS ${num(s?.rssMiB, 0, 'MiB')}${h}`);
      }
      const h1 = Date.now();
      sampler.sample();
      msSampler?.sample();
      const m1 = await scrape(agent.httpBase);
      heap.push(heapUsedMiB(m1));
      young.push(youngMiB(m1));
      let seen1 = 0;
      for (const p of watch.pods.values()) seen1 += p.statusUpdates;
      const hold = sampler.between(h0, h1);
      const use = windowUsage(hold);
      const probes =
        promValue(m1, 'prober_probe_total', { probe_type: 'readiness' }) -
        promValue(m0, 'prober_probe_total', { probe_type: 'readiness' });
      const msHold = msSampler?.between(h0, h1) ?? [];
      const msRun =
        ms && nodeApi
          ? await metricsServerRun({
              driver: bc.driver,
              api: nodeApi,
              namespace: ns,
              nodes,
              pods: plan.length,
              resolutionSeconds: METRIC_RESOLUTION_S,
              startMs: ms.startMs,
              usage: {
                cpuSec: windowUsage(msHold).cpuSec,
                rssEndMiB: msHold[msHold.length - 1]?.rssMiB ?? Number.NaN,
              },
            })
          : undefined;
      if (msRun) {
        const s = msRun.scrape;
        log(`scrape of ${s.node}: p50 ${duration(s.p50Ms)}, p99 ${duration(s.p99Ms)}, ${s.bodyBytes} bytes`);
      }
      await ms?.stop();
      await leases.stop();
      await watch.stop();
      await agent.stop();
      sampler.stop();
      const run: SteadyRun = {
        pods: plan.length,
        ready: watch.count((r) => r.readyAt !== undefined),
        allReadyMs,
        holdMs: h1 - h0,
        cpuSec: use.cpuSec,
        cpuCores: use.cpuSec / ((h1 - h0) / 1000),
        rssStartMiB: hold[0]?.rssMiB ?? Number.NaN,
        rssEndMiB: hold[hold.length - 1]?.rssMiB ?? Number.NaN,
        rssMaxMiB: use.maxRssMiB,
        rssSlopeMiBPerMin: slope(hold.map((s) => [(s.t - h0) / 60_000, s.rssMiB] as const)),
        rssTimeline: rssTimeline(hold, h0, h1),
        heapUsedMiB: heap,
        youngCommittedMiB: young,
        eventLoopP99Ms: promValue(m1, 'nodejs_eventloop_lag_p99_seconds') * 1000,
        probesPerSec: probes / ((h1 - h0) / 1000),
        podStatusUpdatesSeen: seen1 - seen0,
        leases: leaseCadence(leases.renewals, h0, h1, {
          intervalMs: 10_000,
          lateMs: 12_000,
          durationMs: 40_000,
        }),
        requests: countRequests(await readAuditLog(bc.auditLog), bc.operator.user, h0, h1),
        ...(msRun ? { metricsServer: msRun } : {}),
      };
      return {
        scenario: 'steady',
        ...opts,
        operatorBuildMs: buildMs,
        totalMs: Date.now() - t,
        run,
        table: steadyTable(run),
      };
    } finally {
      msSampler?.stop();
      await ms?.stop();
      await leases.stop();
      await watch.stop();
      await agent.stop();
      sampler.stop();
    }
  };
  return withOperatorCluster(opts.nodeArgs, log, run, opts.metricsServer ? { operatorArgs } : {});
}
