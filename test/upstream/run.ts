// `npm run test:upstream -- [--preset quick|node|sim|resize|plugins] [--focus REGEX] [--skip REGEX] [--procs N] [--nodes N]`:
// the kubelet's own upstream e2e suite (Kubernetes' e2e.test, built from the Go module proxy by
// scripts/upstream-e2e.sh) against a cluster whose only node agent is kubelet-operator (test/upstream/cluster.ts).
//
// Presets:
//   quick  the specs in test/upstream/quick.txt: a fast, representative subset that must pass entirely (CI)
//   node   every NodeConformance spec of [sig-node], [sig-storage] and [sig-network], non-Slow and the like
//   sim    the specs in test/upstream/sim.txt against simulated VirtualNodes: what needs no real process
//   resize the in-place resize and pod generation specs of [sig-node] (test/upstream/resize.txt), on cri
//   plugins the [sig-node] [DRA] and [sig-storage] CSI Mock specs (test/upstream/plugins.txt), on cri, with the
//          sig-storage images (hostpathplugin's proxy mode and the CSI sidecars) imported too
//   conformance  every [Conformance] spec of the suite (the one that certifies a cluster): the parallel ones on
//          --procs processes, then the [Serial] and [Disruptive] ones in one process
// `--focus REGEX` runs the matching specs instead (with the suite's default skip of Slow/Serial/... specs);
// `--plugin-images` imports the plugins preset's sig-storage images for it too.
// Specs listed in test/upstream/excluded.yaml are not run; each is reported with the reason.
//
// Prints a table per spec (passed, or failed with the first lines of its failure), a table per area, and a
// closing `N passed, N failed, N skipped` line. Per-spec JSON and junit reports, the operator's log and the
// e2e output land in .local/upstream/<time>/ (ignored by git). Exit 0 only when nothing failed.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { REPO_ROOT } from '../support/controlplane.js';
import { startUpstreamCluster, type UpstreamCluster } from './cluster.js';
import {
  classify,
  conformance,
  exclusionsFor,
  exactRegex,
  focused,
  incompleteness,
  listed,
  nodeConformance,
  summaryLine,
  validateExclusions,
  type GinkgoSpecReport,
  type RuntimeKind,
  type Selection,
  type SpecResult,
} from './selection.js';

const SCRIPT = path.join(REPO_ROOT, 'scripts/upstream-e2e.sh');
const HERE = path.join(REPO_ROOT, 'test/upstream');

const PRESETS = ['quick', 'node', 'sim', 'resize', 'plugins', 'conformance'] as const;
/** The presets that are lists of specs, and their files in test/upstream/. */
const PRESET_FILES = {
  quick: 'quick.txt',
  sim: 'sim.txt',
  resize: 'resize.txt',
  plugins: 'plugins.txt',
} as const;

interface Args {
  preset?: (typeof PRESETS)[number];
  focus?: string;
  skip: string[];
  procs: number;
  nodes: number;
  runtime: RuntimeKind;
  timeout: string;
  keep: boolean;
  /** --focus without the suite's default skip ([Serial], [Slow], ...): the focus alone decides. */
  defaultSkip: boolean;
  /** Import the sig-storage images too (hostpathplugin, CSI sidecars): the plugins preset, or --plugin-images. */
  pluginImages: boolean;
}

function usage(msg?: string): never {
  if (msg) console.error(`test:upstream: ${msg}`);
  console.error(
    'usage: npm run test:upstream -- [--preset quick|node|sim|resize|plugins|conformance | --focus REGEX] [--skip REGEX]... [--procs N] [--nodes N] [--runtime cri|sim] [--timeout 2h] [--keep] [--plugin-images]',
  );
  process.exit(64);
}

export function parseArgs(argv: readonly string[]): Args {
  const a: Args = {
    skip: [],
    procs: 4,
    nodes: 2,
    runtime: 'cri',
    timeout: '3h',
    keep: false,
    defaultSkip: true,
    pluginImages: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) usage(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--preset': {
        const v = value();
        const preset = PRESETS.find((p) => p === v);
        if (!preset) usage(`unknown preset ${v}`);
        a.preset = preset;
        break;
      }
      case '--focus':
        a.focus = value();
        break;
      case '--skip':
        a.skip.push(value());
        break;
      case '--procs':
        a.procs = Number(value());
        break;
      case '--nodes':
        a.nodes = Number(value());
        break;
      case '--runtime': {
        const v = value();
        if (v !== 'cri' && v !== 'sim') usage(`unknown runtime ${v}`);
        a.runtime = v;
        break;
      }
      case '--timeout':
        a.timeout = value();
        break;
      case '--no-default-skip':
        a.defaultSkip = false;
        break;
      case '--keep':
        a.keep = true;
        break;
      case '--plugin-images':
        a.pluginImages = true;
        break;
      default:
        usage(`unknown argument ${flag}`);
    }
  }
  if (!a.preset && !a.focus) a.preset = 'quick';
  if (a.preset && a.focus) usage('--preset and --focus exclude each other');
  if (a.preset === 'sim') a.runtime = 'sim';
  if (a.preset === 'plugins') a.pluginImages = true;
  if (!Number.isInteger(a.procs) || a.procs < 1) usage('--procs must be a positive integer');
  if (!Number.isInteger(a.nodes) || a.nodes < 1 || a.nodes > 20) usage('--nodes must be 1-20');
  return a;
}

/** Spec names, one per line; blank lines and `#` comments ignored. */
async function readList(file: string): Promise<string[]> {
  const text = await readFile(path.join(HERE, file), 'utf8');
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

function runScript(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(out.trim())
        : reject(new Error(`bash scripts/upstream-e2e.sh ${args.join(' ')} exited ${code}`)),
    );
  });
}

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + ' '.repeat(n - s.length);
}

function printTables(results: readonly SpecResult[]): void {
  const mark = { passed: 'PASS', failed: 'FAIL', skipped: 'SKIP', excluded: 'EXCL' } as const;
  const order = { failed: 0, excluded: 1, skipped: 2, passed: 3 } as const;
  const sorted = [...results].sort(
    (x, y) => order[x.outcome] - order[y.outcome] || x.text.localeCompare(y.text),
  );
  console.log('\nresult  time    spec');
  for (const r of sorted) {
    console.log(`${mark[r.outcome]}    ${pad(`${r.seconds.toFixed(0)}s`, 7)} ${r.text}`);
    if (r.detail) console.log(`                ${r.detail}`);
  }
  const areas = new Map<string, Record<SpecResult['outcome'], number>>();
  for (const r of results) {
    const a = areas.get(r.area) ?? { passed: 0, failed: 0, skipped: 0, excluded: 0 };
    a[r.outcome]++;
    areas.set(r.area, a);
  }
  console.log('\npassed failed excluded skipped  area');
  for (const [area, c] of [...areas].sort(([a], [b]) => a.localeCompare(b))) {
    console.log(
      `${pad(String(c.passed), 7)}${pad(String(c.failed), 7)}${pad(String(c.excluded), 9)}${pad(String(c.skipped), 9)}${area}`,
    );
  }
}

/** What a run selects, as ginkgo runs: one phase, or the conformance preset's parallel then serial phase. */
interface Phase {
  selection: Selection;
  /** One ginkgo process, whatever --procs says. */
  serial?: boolean;
}

async function phasesFor(a: Args): Promise<Phase[]> {
  // A focus that names [Serial] specs runs them in one process.
  if (a.focus) return [{ selection: focused(a.focus, a.skip, a.defaultSkip), serial: !a.defaultSkip }];
  if (a.preset === 'node') return [{ selection: nodeConformance(a.skip) }];
  if (a.preset === 'conformance')
    return [
      { selection: conformance('parallel', a.skip) },
      { selection: conformance('serial', a.skip), serial: true },
    ];
  const file = PRESET_FILES[a.preset as keyof typeof PRESET_FILES];
  return [{ selection: listed(a.preset!, await readList(file), a.skip) }];
}

function kubectlOnPath(): Promise<string> {
  return new Promise((resolve) =>
    execFile('sh', ['-c', 'command -v kubectl'], (err, stdout) => resolve(err ? '' : stdout.trim())),
  );
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const say = (line: string): void =>
    console.log(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  const phases = await phasesFor(a);
  const name = phases.length > 1 ? (a.preset ?? 'selection') : phases[0]!.selection.name;
  const exclusions = exclusionsFor(
    validateExclusions(parseYaml(await readFile(path.join(HERE, 'excluded.yaml'), 'utf8')) ?? []),
    a.runtime,
  );

  say('building (or finding cached) e2e.test, ginkgo and agnhost: scripts/upstream-e2e.sh build');
  const binDir = (await runScript(['build'])).split('\n').pop()!;
  const kubectl =
    (await readFile(path.join(binDir, 'kubectl'))
      .then(() => path.join(binDir, 'kubectl'))
      .catch(() => '')) || (await kubectlOnPath());

  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outDir = path.join(REPO_ROOT, '.local', 'upstream', stamp);
  await mkdir(outDir, { recursive: true });

  let cluster: UpstreamCluster | undefined;
  const results: SpecResult[] = [];
  let failure: string | undefined;
  const stop = async (): Promise<void> => {
    if (cluster && !a.keep) await cluster.stop();
  };
  // The ginkgo of the phase under way: a signal ends it too (its workers would outlive us otherwise).
  let ginkgo: ChildProcess | undefined;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      ginkgo?.kill('SIGINT');
      void stop().finally(() => process.exit(130));
    });
  }
  try {
    cluster = await startUpstreamCluster({
      runtime: a.runtime,
      nodes: a.nodes,
      logDir: outDir,
      say,
      // The plugins preset's drivers need the sig-storage images as well (hostpathplugin, CSI sidecars).
      importImages: (sock) =>
        runScript(['import', sock, ...(a.pluginImages ? ['--csi'] : [])]).then(() => undefined),
      ...(kubectl ? { kubectl } : {}),
    });
    for (const [i, phase] of phases.entries()) {
      const tag = phases.length > 1 ? `-${i + 1}` : '';
      const procs = phase.serial ? 1 : a.procs;
      const { selection } = phase;
      const ginkgoArgs = [
        `--procs=${procs}`,
        `--timeout=${a.timeout}`,
        `--output-dir=${outDir}`,
        `--json-report=report${tag}.json`,
        `--junit-report=junit${tag}.xml`,
        '--no-color',
        '--silence-skips',
        ...(selection.labelFilter ? [`--label-filter=${selection.labelFilter}`] : []),
        ...selection.focus.map((f) => `--focus=${f}`),
        ...[...selection.skip, ...exclusions.map((e) => exactRegex(e.spec))].map((s) => `--skip=${s}`),
        path.join(binDir, 'e2e.test'),
        '--',
        `--kubeconfig=${cluster.kubeconfigPath}`,
        '--provider=skeleton',
        `--num-nodes=${cluster.nodeNames.length}`,
        '--minStartupPods=-1',
        '--allowed-not-ready-nodes=0',
        '--disable-log-dump',
        '--dump-logs-on-failure=false',
        ...(kubectl ? [`--kubectl-path=${kubectl}`] : []),
        `--report-dir=${outDir}`,
      ];
      const log = path.join(outDir, `e2e${tag}.log`);
      say(
        `running ${selection.name} with ginkgo on ${procs} process${procs > 1 ? 'es' : ''}; output in ${log}`,
      );
      const code = await new Promise<number>((resolve, reject) => {
        const child = spawn(
          'sh',
          ['-c', `exec "$0" "$@" >"${log}" 2>&1`, path.join(binDir, 'ginkgo'), ...ginkgoArgs],
          {
            stdio: 'ignore',
            env: { ...process.env, KUBECONFIG: cluster!.kubeconfigPath },
          },
        );
        ginkgo = child;
        child.on('error', reject);
        child.on('exit', (c) => resolve(c ?? 1));
      });
      ginkgo = undefined;
      say(`ginkgo exited ${code}`);
      let reports: GinkgoSpecReport[] = [];
      let phaseFailure: string | undefined;
      try {
        const suites = JSON.parse(await readFile(path.join(outDir, `report${tag}.json`), 'utf8')) as {
          SpecReports?: GinkgoSpecReport[] | null;
        }[];
        reports = suites.flatMap((s) => s.SpecReports ?? []);
      } catch (err) {
        phaseFailure = `no ginkgo report (${String(err)}); see ${log}`;
      }
      const phaseResults = classify(reports, selection, exclusions);
      if (!phaseFailure) phaseResults.push(...incompleteness(phaseResults, selection));
      if (!phaseFailure && code !== 0 && !phaseResults.some((r) => r.outcome === 'failed')) {
        phaseFailure = `ginkgo exited ${code} without a failed spec; see ${log}`;
      }
      results.push(...phaseResults);
      if (phaseFailure) failure = failure ? `${failure}; ${phaseFailure}` : phaseFailure;
    }
  } catch (err) {
    failure = err instanceof Error ? err.message : String(err);
  } finally {
    await stop().catch((err: unknown) => console.error(`stopping the cluster: ${String(err)}`));
  }
  if (failure)
    results.push({
      text: 'test:upstream run',
      area: 'suite',
      outcome: 'failed',
      detail: failure,
      seconds: 0,
    });
  printTables(results);
  await writeFile(path.join(outDir, 'results.json'), JSON.stringify(results, null, 2) + '\n');
  console.log(
    `\n${name} on ${a.runtime}: results in ${outDir} (${((Date.now() - started) / 60000).toFixed(1)} min)`,
  );
  if (a.keep && cluster) console.log(`cluster kept: KUBECONFIG=${cluster.kubeconfigPath}`);
  console.log(summaryLine(results));
  process.exitCode = results.some((r) => r.outcome === 'failed') ? 1 : 0;
  if (!a.keep) process.exit(process.exitCode);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`test:upstream failed: ${err instanceof Error ? err.stack : String(err)}`);
    console.log('0 passed, 1 failed, 0 skipped');
    process.exit(1);
  });
}
