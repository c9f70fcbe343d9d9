// Node-pressure eviction at scale on the simulated runtime (issue #56): N sim VirtualNodes x M bare pods whose
// declared memory ramps in step across the fleet (bench/lib/evictionmodel.ts), each node with
// evictionHard memory.available=500Mi and a capacity that puts its first crossing about a minute into the ramp.
// The pods are bare: the bench control plane runs no controller-manager or scheduler, so a ReplicaSet's
// replacements would never be created or placed, and each eviction stays one terminal pod to time.
//
// Measured from the driver's watches: every pod Failed by an eviction (its reason, its DisruptionTarget), the
// time from the node's threshold crossing to that Failed, the crossing computed from the declared ramp and the
// operator's sampled resident memory per node (the Summary's `kubelet` container, src/kubelet/stats/shell/provider.ts);
// whether each evicted pod is the one the kubelet's memory ranking picks; the nodes under MemoryPressure over
// time (node watch); the operator's API writes in the window (audit log). kwok has no eviction manager.
import { countRequests, readAuditLog, type RequestCounts } from '../lib/audit.js';
import {
  expectedVictim,
  interpolate,
  peakRate,
  podMemoryExpr,
  pressureCounts,
  pressureStartMs,
  rampPlan,
  type NodePod,
  type RampPlan,
} from '../lib/evictionmodel.js';
import { createSimVirtualNodes, nodeNames, waitNodesReady } from '../lib/nodes.js';
import { withOperatorCluster } from '../lib/operatorcluster.js';
import { createPods, ensureNamespace, podPlan, PodWatch, BENCH_IMAGE, type PodLike } from '../lib/pods.js';
import { ProcSampler } from '../lib/procstat.js';
import { summarize } from '../lib/stats.js';
import { duration, formatTable, num } from '../lib/table.js';
import { keepWatching } from '../lib/watch.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Node } from '../../src/api/node.js';
import { SimBehaviourAnnotation } from '../../src/runtime/sim/profile.js';

export interface EvictionOptions {
  nodes: number;
  podsPerNode: number;
  concurrency: number;
  nodeArgs?: string[];
}

const MI = 2 ** 20;
/** Seconds from the ramp's start to a node's first crossing (at the estimated operator share). */
const LEAD_SECONDS = 60;
/** Seconds of ramp after the first crossings. */
const EVICTING_SECONDS = 120;
/** Seconds watched after the ramp ends (the last crossings' evictions). */
const TAIL_SECONDS = 40;
const PRESSURE_TRANSITION_PERIOD = '30s';

interface Failure {
  name: string;
  node: string;
  index: number;
  atMs: number;
  reason?: string;
  disruptionTarget: boolean;
}

export interface EvictionRun {
  pods: number;
  evictions: number;
  /** Pods Failed with another reason than Evicted, or without a DisruptionTarget condition. */
  otherFailures: number;
  evictionsPerSec: number;
  peakEvictionsPerSec: number;
  crossingToFailed: ReturnType<typeof summarize>;
  /** Evictions whose computed pressure had not ended since an earlier eviction of that node. */
  underEarlierPressure: number;
  /** Evictions without a crossing by the model (threshold not met just before, by the declared usage). */
  noCrossing: number;
  firstCrossingToCondition: ReturnType<typeof summarize>;
  rankedAsKubelet: number;
  pressureNodes: { atSec: number; nodes: number }[];
  writes: number;
  writesByKind: Record<string, number>;
  requests: RequestCounts;
  maxRssMiB: number;
}

function evictionPod(plan: RampPlan, index: number) {
  return (name: string, namespace: string, nodeName: string): object => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: { app: 'bench-eviction' },
      annotations: {
        [SimBehaviourAnnotation]: JSON.stringify({ usage: { memory: { expr: podMemoryExpr(plan, index) } } }),
      },
    },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'app',
          image: BENCH_IMAGE,
          args: ['pause'],
          resources: { requests: { cpu: '10m', memory: String(plan.requestBytes) } },
        },
      ],
    },
  });
}

/** Node -> MemoryPressure transitions seen, from one watch of all Nodes (restarted if it breaks). */
function watchPressure(client: KubeClient, names: ReadonlySet<string>) {
  const transitions = new Map<string, { atMs: number; pressure: boolean }[]>();
  // Restarted at once when it breaks (no pause), as this scenario always has.
  const watch = keepWatching(
    client,
    '/api/v1/nodes',
    (e) => {
      const n = e.object as Node;
      const name = n.metadata?.name ?? '';
      if (!names.has(name) || e.type === 'DELETED') return;
      const on =
        n.status?.conditions?.some((c) => c.type === 'MemoryPressure' && c.status === 'True') ?? false;
      const list = transitions.get(name) ?? [];
      if ((list[list.length - 1]?.pressure ?? false) !== on) list.push({ atMs: Date.now(), pressure: on });
      transitions.set(name, list);
    },
    0,
  );
  return { transitions, stop: () => watch.stop() };
}

export function evictionTable(r: EvictionRun, plan: RampPlan, nodes: number): string {
  const s = r.crossingToFailed;
  const timeline = r.pressureNodes.map((x) => `${x.atSec}s:${x.nodes}`).join(' ');
  const rows: string[][] = [
    ['pods evicted (of all)', `${num(r.evictions)} of ${num(r.pods)}`],
    ['  Failed otherwise, or without DisruptionTarget', num(r.otherFailures)],
    ['evictions per second, fleet (first to last)', num(r.evictionsPerSec, 2, '/s')],
    ['  peak over 10 s', num(r.peakEvictionsPerSec, 1, '/s')],
    [
      'threshold crossed -> pod Failed, p50 / p99 / max',
      `${duration(s.p50)} / ${duration(s.p99)} / ${duration(s.max)}`,
    ],
    ['  evictions under a pressure an earlier one did not end', num(r.underEarlierPressure)],
    ['  evictions with no crossing by the declared usage', num(r.noCrossing)],
    [
      "node's first crossing -> MemoryPressure seen, p50 / p99",
      `${duration(r.firstCrossingToCondition.p50)} / ${duration(r.firstCrossingToCondition.p99)}`,
    ],
    ["evicted pod = the kubelet ranking's pick", `${num(r.rankedAsKubelet)} of ${num(r.evictions)}`],
    ['operator API writes per eviction (no Leases)', num(r.writes / Math.max(1, r.evictions), 2)],
    ...Object.entries(r.writesByKind)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [`  ${k}`, num(v / Math.max(1, r.evictions), 2)]),
    ['operator RSS, max in the window', num(r.maxRssMiB, 0, 'MiB')],
    ['kwok', 'has no eviction manager (no MemoryPressure, no evictions): not compared'],
  ];
  const ramp =
    `ramp per node ${num((plan.podSlopeBytesPerSec * plan.podsPerNode) / MI, 1)} MiB/s for ${plan.rampSeconds} s, ` +
    `capacity ${num(plan.capacityBytes / MI)} MiB, evictionHard memory.available=${plan.thresholdBytes / MI}Mi, ` +
    `${nodes} nodes x ${plan.podsPerNode} bare pods`;
  return [
    formatTable(['kubelet-operator, node-pressure eviction', ''], rows),
    `nodes under MemoryPressure (s after the ramp's start: nodes): ${timeline}`,
    ramp,
  ].join('\n');
}

export async function runEviction(
  opts: EvictionOptions,
  log: (s: string) => void,
): Promise<Record<string, unknown>> {
  const t = Date.now();
  return withOperatorCluster(opts.nodeArgs, log, async ({ bc, agent, buildMs }) => {
    const nodes = nodeNames('vn', opts.nodes);
    const sampler = new ProcSampler(agent.pid, 500).start();
    const ns = 'eviction';
    const watch = new PodWatch(bc.driver, ns);
    const pressure = watchPressure(bc.driver, new Set(nodes));
    const failures = new Map<string, Failure>();
    const total = opts.nodes * opts.podsPerNode;
    // Pods are created from now on; the ramp starts once all of them can be Ready (scale: 271 pods/s).
    const t0Ms = Date.now() + 40_000 + total * 8;
    const plan = rampPlan({
      podsPerNode: opts.podsPerNode,
      t0Ms,
      leadSeconds: LEAD_SECONDS,
      rampSeconds: LEAD_SECONDS + EVICTING_SECONDS,
      // The operator's RSS at 10,000 pods is about 300 MiB (scale); at least 150.
      operatorShareBytes: (Math.max(150, total * 0.03) * MI) / opts.nodes,
    });
    try {
      await createSimVirtualNodes(bc.driver, nodes, opts.podsPerNode, undefined, undefined, {
        capacity: { memory: `${plan.capacityBytes / MI}Mi` },
        kubelet: {
          evictionHard: { 'memory.available': `${plan.thresholdBytes / MI}Mi` },
          evictionPressureTransitionPeriod: PRESSURE_TRANSITION_PERIOD,
        },
      });
      if (!(await waitNodesReady(bc.driver, nodes, 120_000))) throw new Error('nodes not Ready after 120 s');
      await ensureNamespace(bc.driver, ns);
      await watch.start();
      watch.onPod((name, pod: PodLike & { status?: { reason?: string }; spec?: { nodeName?: string } }) => {
        if (failures.has(name) || pod.status?.phase !== 'Failed') return;
        const [, node, index] = /^ev-(\d+)-(\d+)$/.exec(name) ?? [];
        failures.set(name, {
          name,
          node: `vn-${node}`,
          index: Number(index),
          atMs: Date.now(),
          reason: pod.status.reason,
          disruptionTarget: (pod.status.conditions ?? []).some(
            (c) => c.type === 'DisruptionTarget' && c.status === 'True',
          ),
        });
      });
      const pods = podPlan(nodes, opts.podsPerNode, 'ev');
      log(
        `creating ${pods.length} pods; the ramp starts at ${new Date(plan.t0Ms).toISOString().slice(11, 19)}`,
      );
      const madeBy = (name: string) => Number(/-(\d+)$/.exec(name)![1]);
      await createPods(bc.driver, watch, pods, opts.concurrency, (name, namespace, node) =>
        evictionPod(plan, madeBy(name))(name, namespace, node),
      );
      const readyBy = plan.t0Ms - 2000;
      if (
        !(await watch.waitFor((r) => r.readyAt !== undefined, pods.length, Math.max(0, readyBy - Date.now())))
      )
        throw new Error(
          `pods not all Ready 2 s before the ramp starts (${watch.count((r) => r.readyAt !== undefined)} of ${pods.length})`,
        );
      log(`${pods.length} pods Ready; waiting for the ramp (evictions from about ${LEAD_SECONDS} s into it)`);
      const end = plan.t0Ms + (plan.rampSeconds + TAIL_SECONDS) * 1000;
      while (Date.now() < end) {
        await new Promise((r) => setTimeout(r, Math.min(20_000, Math.max(0, end - Date.now()))));
        const on = [...pressure.transitions.values()].filter((l) => l[l.length - 1]?.pressure).length;
        log(
          `+${Math.round((Date.now() - plan.t0Ms) / 1000)} s: ${failures.size} evicted, ${on} nodes under MemoryPressure`,
        );
      }
      sampler.sample();
      const run = analyse(plan, opts, failures, pressure.transitions, sampler, nodes);
      const requests = countRequests(await readAuditLog(bc.auditLog), bc.operator.user, plan.t0Ms, end);
      const writesByKind: Record<string, number> = {};
      for (const [k, v] of Object.entries(requests.byKind))
        if (/^(create|update|patch|delete) /.test(k) && !/ leases$/.test(k)) writesByKind[k] = v;
      run.requests = requests;
      run.writesByKind = writesByKind;
      run.writes = Object.values(writesByKind).reduce((a, b) => a + b, 0);
      return {
        scenario: 'eviction',
        ...opts,
        plan,
        operatorBuildMs: buildMs,
        totalMs: Date.now() - t,
        run,
        table: evictionTable(run, plan, opts.nodes),
      };
    } finally {
      await watch.stop();
      await pressure.stop();
      sampler.stop();
    }
  });
}

function analyse(
  plan: RampPlan,
  opts: EvictionOptions,
  failures: ReadonlyMap<string, Failure>,
  transitions: ReadonlyMap<string, { atMs: number; pressure: boolean }[]>,
  sampler: ProcSampler,
  nodes: readonly string[],
): EvictionRun {
  const share = sampler.samples.map((s) => ({ t: s.t, v: (s.rssMiB * MI) / opts.nodes }));
  const shareAt = (ms: number): number => interpolate(share, ms);
  const evicted = [...failures.values()].filter((f) => f.reason === 'Evicted' && f.disruptionTarget);
  const latencies: number[] = [];
  const firstToCondition: number[] = [];
  let ranked = 0;
  let under = 0;
  let none = 0;
  for (const node of nodes) {
    const mine = evicted.filter((f) => f.node === node).sort((a, b) => a.atMs - b.atMs);
    const pods: NodePod[] = Array.from({ length: opts.podsPerNode }, (_, j) => ({ index: j }));
    for (const f of mine) pods[f.index]!.goneAtMs = f.atMs;
    let previous: number | undefined;
    let firstCrossing: number | undefined;
    for (const f of mine) {
      if (expectedVictim(pods, f.atMs) === f.index) ranked++;
      const start = pressureStartMs(plan, pods, f.atMs, shareAt, plan.t0Ms);
      if (start === undefined) {
        none++;
      } else {
        latencies.push(f.atMs - start);
        if (previous !== undefined && start < previous) under++;
        firstCrossing ??= start;
      }
      previous = f.atMs;
    }
    const seen = transitions.get(node)?.find((x) => x.pressure)?.atMs;
    if (firstCrossing !== undefined && seen !== undefined) firstToCondition.push(seen - firstCrossing);
  }
  const times = evicted.map((f) => f.atMs);
  const span = times.length > 1 ? (Math.max(...times) - Math.min(...times)) / 1000 : Number.NaN;
  const window = sampler.between(plan.t0Ms, plan.t0Ms + (plan.rampSeconds + TAIL_SECONDS) * 1000);
  return {
    pods: opts.nodes * opts.podsPerNode,
    evictions: evicted.length,
    otherFailures: failures.size - evicted.length,
    evictionsPerSec: evicted.length / span,
    peakEvictionsPerSec: peakRate(times, 10_000),
    crossingToFailed: summarize(latencies),
    underEarlierPressure: under,
    noCrossing: none,
    firstCrossingToCondition: summarize(firstToCondition),
    rankedAsKubelet: ranked,
    pressureNodes: pressureCounts(
      transitions,
      plan.t0Ms,
      plan.t0Ms + (plan.rampSeconds + TAIL_SECONDS) * 1000,
      20_000,
    ).map((x) => ({ atSec: Math.round((x.atMs - plan.t0Ms) / 1000), nodes: x.nodes })),
    writes: 0,
    writesByKind: {},
    requests: { total: 0, byKind: {} },
    maxRssMiB: Math.max(...window.map((s) => s.rssMiB)),
  };
}
