// Pod start latency on a real containerd: a pod bound to the containerd VirtualNode until the watch sees it
// Running+Ready, for 1 pod at a time and 20 at once, next to the bare CRI RunPodSandbox + CreateContainer +
// StartContainer of the same image (raw grpc-js, bench/lib/cri-start.ts) on the same containerd. The
// difference is what the operator adds: watch delivery both ways, pod worker, image check, status, API writes.
// Needs root and containerd (scripts/containerd.sh installs it); without them it fails loudly.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createVirtualNode } from '../../scripts/lib/cluster.js';
import { startContainerd, type TestContainerd } from '../../test/support/containerd.js';
import { SERVED_BY, waitNodesReady } from '../lib/nodes.js';
import { withOperatorCluster } from '../lib/operatorcluster.js';
import { rawStarter, timed } from '../lib/cri-start.js';
import { createPods, deletePods, ensureNamespace, PodWatch } from '../lib/pods.js';
import { summarize, type Summary } from '../lib/stats.js';
import { duration, formatTable } from '../lib/table.js';

const NODE = 'cri-1';
const PAR = 20;

export interface CriLatencyRun {
  runtime: string;
  raw: { one: Summary; parallelPerPod: Summary; parallelTotal: Summary };
  operator: { one: Summary; parallelPerPod: Summary; parallelTotal: Summary };
}

function criPod(image: string) {
  return (name: string, namespace: string, nodeName: string): object => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'main',
          image,
          imagePullPolicy: 'IfNotPresent',
          // busybox sleep as PID 1 ignores SIGTERM; this shell exits on it, so deletes are quick.
          command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'],
        },
      ],
    },
  });
}

async function rawRounds(ctd: TestContainerd, seq: number, rounds: number) {
  const raw = rawStarter(ctd);
  try {
    for (let i = 0; i < 2; i++) await raw.cleanup((await timed(() => raw.start(`w${i}`)))[0]);
    const one: number[] = [];
    for (let i = 0; i < seq; i++) {
      const [id, ms] = await timed(() => raw.start(`s${i}`));
      one.push(ms);
      await raw.cleanup(id);
    }
    const perPod: number[] = [];
    const totals: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const [res, total] = await timed(() =>
        Promise.all(Array.from({ length: PAR }, (_, i) => timed(() => raw.start(`p${r}-${i}`)))),
      );
      totals.push(total);
      perPod.push(...res.map(([, ms]) => ms));
      await Promise.all(res.map(([id]) => raw.cleanup(id)));
    }
    return { one: summarize(one), parallelPerPod: summarize(perPod), parallelTotal: summarize(totals) };
  } finally {
    raw.close();
  }
}

export function criTable(r: CriLatencyRun): string {
  const rows: string[][] = [];
  const row = (label: string, raw: number, op: number): void => {
    rows.push([label, duration(raw), duration(op), duration(op - raw)]);
  };
  row(`1 pod at a time (n=${r.operator.one.n}): p50`, r.raw.one.p50, r.operator.one.p50);
  row('1 pod at a time: p99', r.raw.one.p99, r.operator.one.p99);
  row(`${PAR} at once: per pod p50`, r.raw.parallelPerPod.p50, r.operator.parallelPerPod.p50);
  row(`${PAR} at once: per pod p99`, r.raw.parallelPerPod.p99, r.operator.parallelPerPod.p99);
  row(`${PAR} at once: all started (median round)`, r.raw.parallelTotal.p50, r.operator.parallelTotal.p50);
  return formatTable(
    [r.runtime, 'raw CRI Run+Create+Start', 'operator bound -> Ready', 'operator overhead'],
    rows,
  );
}

export async function runCriLatency(opts: { quick: boolean }, log: (s: string) => void) {
  const seq = opts.quick ? 5 : 20;
  const rounds = opts.quick ? 1 : 3;
  let ctd: TestContainerd;
  try {
    ctd = await startContainerd();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new Error(
      `CRI-LATENCY CANNOT RUN HERE: it needs root on Linux and containerd (scripts/containerd.sh).\n${why}`,
    );
  }
  const logRoot = await mkdtemp(path.join(os.tmpdir(), 'ko-bench-cri-logs-'));
  try {
    log(`containerd up (${ctd.endpoint}); raw CRI: ${seq} sequential, ${rounds} x ${PAR} parallel`);
    const raw = await rawRounds(ctd, seq, rounds);
    return await withOperatorCluster(undefined, log, async ({ bc, buildMs }) => {
      await createVirtualNode(bc.driver, NODE, SERVED_BY, {
        runtime: {
          type: 'cri',
          cri: { endpoint: ctd.endpoint, cgroupRoot: ctd.cgroupParentPrefix, logRoot, podNetwork: 'host' },
        },
      });
      if (!(await waitNodesReady(bc.driver, [NODE], 120_000)))
        throw new Error(`${NODE} not Ready after 120 s`);
      const makePod = criPod(ctd.images.busybox);
      let ns = 0;
      /** Starts `n` pods at once; per-pod latencies and the time until all were Ready. */
      const round = async (n: number): Promise<{ perPod: number[]; total: number }> => {
        const name = `cri-${ns++}`;
        await ensureNamespace(bc.driver, name);
        const watch = new PodWatch(bc.driver, name);
        await watch.start();
        try {
          const pods = Array.from({ length: n }, (_, i) => ({ name: `p${i}`, node: NODE }));
          const t0 = Date.now();
          await createPods(bc.driver, watch, pods, n, makePod);
          if (!(await watch.waitFor((r) => r.readyAt !== undefined, n, 120_000)))
            throw new Error(`${name}: not all ${n} pods Ready after 120 s`);
          const perPod = [...watch.pods.values()].map((r) => r.readyAt! - r.createdAt!);
          const total = Math.max(...[...watch.pods.values()].map((r) => r.readyAt!)) - t0;
          await deletePods(
            bc.driver,
            name,
            pods.map((p) => p.name),
            n,
          );
          if (!(await watch.waitFor((r) => r.goneAt !== undefined, n, 120_000)))
            throw new Error(`${name}: pods not gone after 120 s`);
          return { perPod, total };
        } finally {
          await watch.stop();
        }
      };
      log('operator: warm-up');
      for (let i = 0; i < 2; i++) await round(1);
      log(`operator: ${seq} pods one at a time`);
      const one: number[] = [];
      for (let i = 0; i < seq; i++) one.push(...(await round(1)).perPod);
      log(`operator: ${rounds} x ${PAR} pods at once`);
      const perPod: number[] = [];
      const totals: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const res = await round(PAR);
        perPod.push(...res.perPod);
        totals.push(res.total);
      }
      const run: CriLatencyRun = {
        runtime: 'containerd, busybox, host network',
        raw,
        operator: {
          one: summarize(one),
          parallelPerPod: summarize(perPod),
          parallelTotal: summarize(totals),
        },
      };
      return {
        scenario: 'cri-latency',
        quick: opts.quick,
        operatorBuildMs: buildMs,
        run,
        table: criTable(run),
      };
    });
  } finally {
    await ctd.stop();
    await rm(logRoot, { recursive: true, force: true });
  }
}
