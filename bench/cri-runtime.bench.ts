// Latency of RunPodSandbox + CreateContainer + StartContainer on a real containerd (scripts/containerd.sh),
// through CriRuntime and as bare grpc-js calls from the same proto, side by side: the difference is our
// client layer (conversion, error mapping, bookkeeping). Run with `npm run bench:cri` (root, Linux).
//
// Env: BENCH_SEQ (default 20) sequential pods per client, BENCH_PAR (default 20) pods per parallel round,
// BENCH_ROUNDS (default 3) parallel rounds per client. Clients alternate so drift hits both alike.
import { CriRuntime } from '../src/runtime/cri/client.js';
import { startContainerd } from '../test/support/containerd.js';
import { criStarter, rawStarter, timed, type Starter } from './lib/cri-start.js';
import { summarize } from './lib/stats.js';

const SEQ = Number(process.env.BENCH_SEQ ?? 20);
const PAR = Number(process.env.BENCH_PAR ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = 2;

// ------------------------------------------------------------------------------------ measuring

/** The summary this report prints: median (p50), p99 and min. */
function summary(samples: number[]): { median: number; p99: number; min: number; n: number } {
  const s = summarize(samples);
  return { median: s.p50, p99: s.p99, min: s.min, n: s.n };
}

async function sequential(starter: Starter, tag: string, into: number[]): Promise<void> {
  const [id, ms] = await timed(() => starter.start(tag));
  into.push(ms);
  await starter.cleanup(id);
}

async function parallel(starter: Starter, round: number): Promise<{ total: number; perPod: number[] }> {
  const t0 = process.hrtime.bigint();
  const results = await Promise.all(
    Array.from({ length: PAR }, (_, i) => timed(() => starter.start(`p${round}-${i}`))),
  );
  const total = Number(process.hrtime.bigint() - t0) / 1e6;
  await Promise.all(results.map(([id]) => starter.cleanup(id)));
  return { total, perPod: results.map(([, ms]) => ms) };
}

const fmt = (ms: number): string => `${ms.toFixed(1).padStart(8)} ms`;

async function main(): Promise<void> {
  console.log('starting containerd (scripts/containerd.sh)...');
  const ctd = await startContainerd();
  const rt = new CriRuntime({ endpoint: ctd.endpoint });
  const raw = rawStarter(ctd);
  const starters = [criStarter(ctd, rt), raw];
  try {
    const v = await rt.version();
    console.log(
      `${v.runtimeName} ${v.runtimeVersion} (CRI ${v.runtimeApiVersion}), host-network pods, busybox sleep`,
    );

    for (const s of starters)
      for (let i = 0; i < WARMUP; i++) await sequential(s, `${s.name === 'CriRuntime' ? 'c' : 'r'}w${i}`, []);

    const seq = new Map<string, number[]>(starters.map((s) => [s.name, []]));
    for (let i = 0; i < SEQ; i++) {
      // Alternate which client goes first, so slow drift of the daemon affects both equally.
      const order = i % 2 === 0 ? starters : [...starters].reverse();
      for (const s of order)
        await sequential(s, `${s.name === 'CriRuntime' ? 'c' : 'r'}${i}`, seq.get(s.name)!);
    }

    const par = new Map<string, { totals: number[]; perPod: number[] }>(
      starters.map((s) => [s.name, { totals: [], perPod: [] }]),
    );
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? starters : [...starters].reverse();
      for (const s of order) {
        const res = await parallel(s, r * 2 + (s.name === 'CriRuntime' ? 0 : 1));
        par.get(s.name)!.totals.push(res.total);
        par.get(s.name)!.perPod.push(...res.perPod);
      }
    }

    const names = starters.map((s) => s.name);
    const col = (t: string): string => t.padStart(16);
    console.log('');
    console.log(`Run+Create+Start of one pod${' '.repeat(22)}${names.map(col).join('')}`);
    const row = (label: string, values: number[]): void =>
      console.log(`  ${label.padEnd(47)}${values.map((v) => col(fmt(v))).join('')}`);
    const seqS = names.map((n) => summary(seq.get(n)!));
    row(
      `sequential, n=${SEQ}: median`,
      seqS.map((s) => s.median),
    );
    row(
      'sequential: p99',
      seqS.map((s) => s.p99),
    );
    row(
      'sequential: min',
      seqS.map((s) => s.min),
    );
    const parT = names.map((n) => summary(par.get(n)!.totals));
    const parP = names.map((n) => summary(par.get(n)!.perPod));
    row(
      `${PAR} in parallel, ${ROUNDS} rounds: total (median)`,
      parT.map((s) => s.median),
    );
    row(
      `${PAR} in parallel: total (worst round)`,
      parT.map((s) => s.p99),
    );
    row(
      `${PAR} in parallel: per pod median`,
      parP.map((s) => s.median),
    );
    row(
      `${PAR} in parallel: per pod p99`,
      parP.map((s) => s.p99),
    );
    const [cri, bare] = seqS;
    if (cri && bare) {
      console.log('');
      console.log(`client overhead, sequential median: ${(cri.median - bare.median).toFixed(1)} ms`);
    }
  } finally {
    // Anything a failed measurement left behind, then the daemon (which also removes the pod cgroups).
    for (const sb of await rt.listPodSandbox({ labelSelector: { bench: 'cri' } }).catch(() => [])) {
      await rt.stopPodSandbox(sb.id).catch(() => undefined);
      await rt.removePodSandbox(sb.id).catch(() => undefined);
    }
    await rt.close();
    raw.close();
    await ctd.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
