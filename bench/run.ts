// `npm run bench -- <scale|steady|cri-latency|resize|eviction|all> [--quick] [--nodes N] [--pods M] [--json PATH] ...`
// Runs the scenario, prints its table and writes everything it measured as JSON (bench/README.md).
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT, run } from '../test/support/controlplane.js';
import { defaultJsonPath, kwokFirstInRun, parseBenchArgs, USAGE, type BenchArgs } from './lib/args.js';
import { ensureImageNode, operatorNode } from './lib/agents.js';
import { imageCompileCache, imageNodeFlags } from './lib/imageflags.js';
import { targetsSummaryTable } from './lib/scaletargets.js';
import type { SideRun } from './scenarios/scale.js';
import { duration } from './lib/table.js';

const log = (s: string): void => {
  console.error(`[${new Date().toISOString().slice(11, 19)}] ${s}`);
};

function environment(): Record<string, unknown> {
  return {
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memGiB: Math.round(os.totalmem() / 2 ** 30),
    loadavgAtStart: os.loadavg(),
    kernel: os.release(),
  };
}

async function nodeVersion(bin: string): Promise<string> {
  const r = await run(bin, ['--version']);
  return r.code === 0 ? r.stdout.trim() : `unknown (${bin} --version exited ${r.code})`;
}

async function scenario(
  name: Exclude<BenchArgs['scenario'], 'all'>,
  given: BenchArgs,
): Promise<Record<string, unknown>> {
  // The operator runs as the image runs it: its ENTRYPOINT's node flags first, then --node-arg's.
  const a = { ...given, nodeArgs: [...(given.imageNodeFlags ? imageNodeFlags() : []), ...given.nodeArgs] };
  if (name !== 'cri-latency') log(`${name}: operator's node flags: ${a.nodeArgs.join(' ') || '(none)'}`);
  switch (name) {
    case 'scale': {
      const { runScale } = await import('./scenarios/scale.js');
      const opts = {
        nodes: a.nodes ?? (a.quick ? 10 : 100),
        podsPerNode: a.pods ?? 100,
        concurrency: a.concurrency,
        kwok: a.kwok,
        ...(a.ours ? {} : { ours: false }),
        ...(a.planePerSide ? { planePerSide: true } : {}),
        nodeArgs: a.nodeArgs,
        heapSnapshots: a.heapSnapshots,
        allocProfile: a.allocProfile,
        apiserverProfile: a.apiserverProfile,
        agentAuth: a.agentAuth,
        kwokFirst: a.kwokFirst,
        auditEvents: a.auditEvents,
        kwokEvents: a.kwokEvents,
        replicas: a.replicas,
        ...(a.holdMinutes ? { holdMinutes: a.holdMinutes } : {}),
        ...(a.rate ? { ratePerSec: a.rate } : {}),
      };
      if (a.runs === 1) return runScale(opts, log);
      const each: Record<string, unknown>[] = [];
      for (let i = 1; i <= a.runs; i++) {
        const kwokFirst = kwokFirstInRun(a, i);
        log(`scale: run ${i} of ${a.runs}${a.kwok ? (kwokFirst ? ', kwok first' : ', ours first') : ''}`);
        const r = await runScale({ ...opts, kwokFirst }, log);
        console.log(`\nscale, run ${i} of ${a.runs}:\n${String(r.table)}\n`);
        each.push(r);
      }
      const sides = each.map((r) => r.sides as SideRun[]);
      const summary = targetsSummaryTable(sides.map(([ours, kwok]) => ({ ours: ours!, kwok })));
      return {
        scenario: 'scale',
        runs: each,
        table: `${a.runs} runs, one after the other${a.kwok ? ', alternating which side goes first' : ''}\n\n${summary}`,
      };
    }
    case 'steady': {
      const { runSteady } = await import('./scenarios/steady.js');
      return runSteady(
        {
          nodes: a.nodes ?? (a.quick ? 10 : 100),
          podsPerNode: a.pods ?? 100,
          holdMinutes: a.holdMinutes ?? (a.quick ? 1 : 10),
          concurrency: a.concurrency,
          nodeArgs: a.nodeArgs,
          metricsServer: a.metricsServer ?? false,
        },
        log,
      );
    }
    case 'cri-latency': {
      const { runCriLatency } = await import('./scenarios/cri-latency.js');
      return runCriLatency({ quick: a.quick }, log);
    }
    case 'resize': {
      const { runResize } = await import('./scenarios/resize.js');
      return runResize(
        {
          nodes: a.nodes ?? (a.quick ? 2 : 10),
          podsPerNode: a.pods ?? 100,
          concurrency: a.concurrency,
          nodeArgs: a.nodeArgs,
        },
        log,
      );
    }
    case 'eviction': {
      const { runEviction } = await import('./scenarios/eviction.js');
      return runEviction(
        {
          nodes: a.nodes ?? (a.quick ? 10 : 100),
          podsPerNode: a.pods ?? (a.quick ? 20 : 100),
          concurrency: a.concurrency,
          nodeArgs: a.nodeArgs,
        },
        log,
      );
    }
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  const parsed = parseBenchArgs(argv);
  if (!parsed.ok) {
    console.error(`bench: ${parsed.message}\n${USAGE}`);
    return 2;
  }
  const a = parsed.args;
  if (a.imageNode) process.env.BENCH_OPERATOR_NODE = await ensureImageNode();
  // The image starts from the compile cache its build filled; the operator here starts from one that each
  // scenario's build fills (buildOperator). Node 20 has no compile cache and ignores it.
  const compileCache =
    a.imageNodeFlags && imageCompileCache()
      ? path.join(os.tmpdir(), `kubelet-operator-bench-compile-cache-${process.pid}`)
      : undefined;
  if (compileCache) process.env.NODE_COMPILE_CACHE = compileCache;
  const names =
    a.scenario === 'all' ? (['scale', 'steady', 'cri-latency', 'resize', 'eviction'] as const) : [a.scenario];
  const results: Record<string, unknown>[] = [];
  let failed = false;
  const t0 = Date.now();
  // Taken now: the load average at the start is the machine's load before this run, not the run's own.
  const env = {
    ...environment(),
    operatorNode: await nodeVersion(operatorNode()),
    operatorCompileCache: compileCache !== undefined,
  };
  log(`operator on node ${env.operatorNode} (${operatorNode()})`);
  for (const name of names) {
    log(`scenario ${name}${a.quick ? ' (quick)' : ''}`);
    const ts = Date.now();
    try {
      const r = await scenario(name, a);
      results.push({ ...r, wallMs: Date.now() - ts });
      console.log(
        `\n${name}${a.quick ? ' --quick' : ''}: ${duration(Date.now() - ts)} wall\n${String(r.table)}\n`,
      );
    } catch (err) {
      failed = true;
      const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
      results.push({ scenario: name, error: message });
      console.error(`\n*** ${name} FAILED: ${message}\n`);
    }
  }
  const file = path.resolve(
    REPO_ROOT,
    a.json ??
      defaultJsonPath(
        a.scenario + (a.quick ? '-quick' : '') + (a.metricsServer ? '-metrics-server' : ''),
        new Date(),
      ),
  );
  await mkdir(path.dirname(file), { recursive: true });
  const out = {
    args: a,
    startedAt: new Date(t0).toISOString(),
    wallMs: Date.now() - t0,
    environment: { ...env, loadavgAtEnd: os.loadavg() },
    results,
  };
  await writeFile(file, JSON.stringify(out, null, 2) + '\n');
  if (compileCache) await rm(compileCache, { recursive: true, force: true });
  log(`results written to ${path.relative(REPO_ROOT, file)} (${duration(Date.now() - t0)} in all)`);
  return failed ? 1 : 0;
}

// Exit explicitly: a benchmark that failed half-way may leave a watch or a socket open.
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
