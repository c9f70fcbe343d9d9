// In-place resize at scale on the simulated runtime: N x M Guaranteed pods Running and Ready, then every one is
// resized at once (PATCH pods/<name>/resize, cpu 100m -> 200m, bounded by the driver's concurrency). Measured
// from the watch: per pod, from its resize call to the first status whose container resources show the new cpu
// with no PodResizePending / PodResizeInProgress left; throughput over the whole batch, and the operator's API
// writes (audit log). kwok does not act on resizes (its stages never report container resources), so there is
// no kwok side to compare with; the report says so.
import { countOf, countRequests, readAuditLog, type RequestCounts } from '../lib/audit.js';
import { createSimVirtualNodes, nodeNames, waitNodesReady } from '../lib/nodes.js';
import { withOperatorCluster } from '../lib/operatorcluster.js';
import { forEachConcurrently } from '../../src/util/pool.js';
import { createPods, ensureNamespace, podPlan, PodWatch, type PodLike } from '../lib/pods.js';
import { ProcSampler, windowUsage } from '../lib/procstat.js';
import { summarize } from '../lib/stats.js';
import { duration, formatTable, num } from '../lib/table.js';

export interface ResizeOptions {
  nodes: number;
  podsPerNode: number;
  concurrency: number;
  nodeArgs?: string[];
}

export interface ResizeRun {
  pods: number;
  resized: number;
  allReadyMs: number;
  /** From the first resize call to the last pod resized. */
  allResizedMs: number;
  resizesPerSec: number;
  latency: ReturnType<typeof summarize>;
  cpuSec: number;
  statusWritesPerPod: number;
  requests: RequestCounts;
}

function resizePod(name: string, namespace: string, nodeName: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { app: 'bench-resize' } },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'app',
          image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
          args: ['pause'],
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } },
        },
      ],
    },
  };
}

/** The status shows the resized cpu on the container, and no resize condition is left. */
function isResized(p: PodLike & { status?: { containerStatuses?: unknown[] } }): boolean {
  const cs = (p.status?.containerStatuses?.[0] ?? {}) as { resources?: { limits?: { cpu?: string } } };
  const conditions = p.status?.conditions ?? [];
  return cs.resources?.limits?.cpu === '200m' && !conditions.some((c) => c.type?.startsWith('PodResize'));
}

export function resizeTable(r: ResizeRun): string {
  const rows: string[][] = [
    ['pods resized (of all)', `${num(r.resized)} of ${num(r.pods)}`],
    ['time until all Ready (before)', duration(r.allReadyMs)],
    ['time until all resized', duration(r.allResizedMs)],
    ['resizes per second', num(r.resizesPerSec, 1, '/s')],
    [
      'resize call -> resized, p50 / p99 / max',
      `${duration(r.latency.p50)} / ${duration(r.latency.p99)} / ${duration(r.latency.max)}`,
    ],
    ['operator CPU while resizing', num(r.cpuSec, 1, 's')],
    ['pod status writes per resized pod', num(r.statusWritesPerPod, 2)],
    ['Events written while resizing (all kinds)', num(countOf(r.requests, /^create events$/))],
    ['kwok', 'does not act on resizes (no container resources in its statuses): not compared'],
  ];
  return formatTable(['kubelet-operator, in-place resize', ''], rows);
}

export async function runResize(
  opts: ResizeOptions,
  log: (s: string) => void,
): Promise<Record<string, unknown>> {
  const t = Date.now();
  return withOperatorCluster(opts.nodeArgs, log, async ({ bc, agent, buildMs }) => {
    const nodes = nodeNames('vn', opts.nodes);
    const sampler = new ProcSampler(agent.pid, 1000).start();
    const ns = 'resize';
    const watch = new PodWatch(bc.driver, ns);
    const resizedAt = new Map<string, number>();
    const sentAt = new Map<string, number>();
    try {
      await createSimVirtualNodes(bc.driver, nodes, opts.podsPerNode);
      if (!(await waitNodesReady(bc.driver, nodes, 120_000))) throw new Error('nodes not Ready after 120 s');
      await ensureNamespace(bc.driver, ns);
      await watch.start();
      const plan = podPlan(nodes, opts.podsPerNode, 'rs');
      log(`creating ${plan.length} pods`);
      const t0 = Date.now();
      await createPods(bc.driver, watch, plan, opts.concurrency, resizePod);
      if (!(await watch.waitFor((r) => r.readyAt !== undefined, plan.length, 60_000 + plan.length * 60)))
        throw new Error('pods not Ready');
      const allReadyMs = Date.now() - t0;
      log(`${plan.length} pods Ready in ${duration(allReadyMs)}; resizing all of them`);
      // A second watch-side view: the first status that shows the resize done, per pod.
      const poll = watch.onPod((name, pod) => {
        if (sentAt.has(name) && !resizedAt.has(name) && isResized(pod)) resizedAt.set(name, Date.now());
      });
      const r0 = Date.now();
      await forEachConcurrently(plan, opts.concurrency, async ({ name }) => {
        sentAt.set(name, Date.now());
        await bc.driver.request({
          method: 'PATCH',
          path: `/api/v1/namespaces/${ns}/pods/${name}/resize`,
          contentType: 'application/strategic-merge-patch+json',
          body: {
            spec: {
              containers: [
                { name: 'app', resources: { requests: { cpu: '200m' }, limits: { cpu: '200m' } } },
              ],
            },
          },
        });
      });
      const deadline = Date.now() + 60_000 + plan.length * 60;
      while (resizedAt.size < plan.length && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      const r1 = Math.max(...resizedAt.values(), Date.now());
      poll();
      sampler.sample();
      const use = windowUsage(sampler.between(r0, r1));
      const latencies = [...resizedAt].map(([name, at]) => at - sentAt.get(name)!);
      const requests = countRequests(await readAuditLog(bc.auditLog), bc.operator.user, r0, r1);
      const run: ResizeRun = {
        pods: plan.length,
        resized: resizedAt.size,
        allReadyMs,
        allResizedMs: resizedAt.size === plan.length ? r1 - r0 : Number.NaN,
        resizesPerSec: resizedAt.size / ((r1 - r0) / 1000),
        latency: summarize(latencies),
        cpuSec: use.cpuSec,
        statusWritesPerPod: countOf(requests, /^(patch|update) pods\/status$/) / Math.max(1, resizedAt.size),
        requests,
      };
      return {
        scenario: 'resize',
        ...opts,
        operatorBuildMs: buildMs,
        totalMs: Date.now() - t,
        run,
        table: resizeTable(run),
      };
    } finally {
      await watch.stop();
      await agent.stop();
      sampler.stop();
    }
  });
}
