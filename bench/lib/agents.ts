// The agents under test, each as its own child process so that its CPU and memory are its own: our operator
// compiled by tsc (`dist/main.js`, run by plain node as the container image runs it) and kwok, a Go binary
// built once from the Go module proxy by scripts/kwok-binary.sh.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { REPO_ROOT, run } from '../../test/support/controlplane.js';
import { POD_START_EVENTS } from './pods.js';

export interface AgentProcess {
  name: string;
  pid: number;
  logPath: string;
  /** http://127.0.0.1:<port> of its health/metrics server. */
  httpBase: string;
  /** SIGTERM, then SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<void>;
  /** Operator replicas sharing the nodes (bench/lib/replicas.ts): the group's processes; unset for one. */
  members?: AgentProcess[];
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen({ host: '127.0.0.1', port: 0 }, () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export function httpGet(url: string, timeoutMs = 5000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: timeoutMs, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function launch(
  name: string,
  cmd: string,
  args: string[],
  logPath: string,
  httpBase: string,
  readyPath: string,
  timeoutMs = 60_000,
): Promise<AgentProcess> {
  const fd = openSync(logPath, 'a');
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, { cwd: REPO_ROOT, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  // Never outlive the benchmark.
  const onExit = (): void => void child.kill('SIGKILL');
  process.once('exit', onExit);
  const stop = async (graceMs = 20_000): Promise<void> => {
    process.removeListener('exit', onExit);
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exit;
    clearTimeout(timer);
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) throw new Error(`${name} exited at start; log ${logPath}:\n${tail(logPath)}`);
    const res = await httpGet(`${httpBase}${readyPath}`, 2000).catch(() => undefined);
    if (res?.status === 200) break;
    if (Date.now() > deadline) {
      await stop(1000);
      throw new Error(`${name} not ready after ${timeoutMs / 1000} s; log ${logPath}:\n${tail(logPath)}`);
    }
    await sleep(200);
  }
  return { name, pid: child.pid!, logPath, httpBase, stop };
}

/**
 * Compiles the operator with `tsc -p tsconfig.build.json` into dist/ (what `npm run build` does) and puts the
 * CRI proto beside the compiled client, as the Dockerfile does. tsc emits even when it reports type errors
 * (another change in progress); those are printed and the emitted code is used. With NODE_COMPILE_CACHE set
 * (bench/run.ts does, when the image starts from a compile cache), fills that cache afresh as the image's
 * build does: one `--help` start with the operator's node flags (Node keys the cache by them). Returns the
 * build time.
 */
export async function buildOperator(nodeArgs: readonly string[] = []): Promise<number> {
  const t0 = Date.now();
  const tsc = path.join(REPO_ROOT, 'node_modules/.bin/tsc');
  const r = await run(tsc, ['-p', path.join(REPO_ROOT, 'tsconfig.build.json')], { cwd: REPO_ROOT });
  const main = path.join(REPO_ROOT, 'dist/main.js');
  if (r.code !== 0) {
    if (!existsSync(main)) throw new Error(`tsc failed (${r.code}):\n${r.stdout}${r.stderr}`);
    console.warn(`warning: tsc reported errors; running the code it emitted anyway:\n${r.stdout.trim()}`);
  }
  copyRuntimeAssets();
  const cache = process.env.NODE_COMPILE_CACHE;
  if (cache) {
    rmSync(cache, { recursive: true, force: true });
    const fill = await run(operatorNode(), [...nodeArgs, main, '--help'], { cwd: REPO_ROOT });
    if (fill.code !== 0)
      throw new Error(`filling the compile cache: --help exited ${fill.code}\n${fill.stderr}`);
  }
  return Date.now() - t0;
}

/**
 * Every .proto under src/ and the pods API's pod.json, beside their compiled modules (a superset of what the
 * Dockerfile copies): without them each node logs that it cannot serve its device plugin, pod-resources and pods
 * sockets, and runs without the gRPC servers a deployed node keeps.
 */
function copyRuntimeAssets(): void {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
    );
  const src = path.join(REPO_ROOT, 'src');
  for (const file of walk(src)) {
    const rel = path.relative(src, file);
    if (!rel.endsWith('.proto') && rel !== path.join('kubelet/apis/pods/k8s/pod.json')) continue;
    mkdirSync(path.join(REPO_ROOT, 'dist', path.dirname(rel)), { recursive: true });
    copyFileSync(file, path.join(REPO_ROOT, 'dist', rel));
  }
}

/** The node that runs the operator: BENCH_OPERATOR_NODE (see ensureImageNode), else this process's. */
export function operatorNode(): string {
  return process.env.BENCH_OPERATOR_NODE || process.execPath;
}

/** Fetches (once, cached) the image's Node release by scripts/image-node.sh; returns its binary. */
export async function ensureImageNode(): Promise<string> {
  const r = await run('bash', [path.join(REPO_ROOT, 'scripts/image-node.sh')]);
  if (r.stderr.trim()) process.stderr.write(r.stderr);
  const bin = r.stdout.trim().split('\n').pop() ?? '';
  if (r.code !== 0 || !bin) throw new Error(`scripts/image-node.sh exited ${r.code}:\n${r.stderr.trim()}`);
  return bin;
}

/** Runs `node dist/main.js` (see buildOperator) with the client rate limit lifted; ready when /readyz is. */
export async function startOperatorProcess(opts: {
  kubeconfig: string;
  selector: string;
  logPath: string;
  extraArgs?: string[];
  /** Flags for node itself (e.g. --cpu-prof when profiling); none in the benchmarks. */
  nodeArgs?: string[];
}): Promise<AgentProcess> {
  const port = await freePort();
  const httpBase = `http://127.0.0.1:${port}`;
  return launch(
    'kubelet-operator',
    operatorNode(),
    [
      ...(opts.nodeArgs ?? []),
      path.join(REPO_ROOT, 'dist/main.js'),
      `--kubeconfig=${opts.kubeconfig}`,
      '--unlimited-qps',
      `--virtual-node-selector=${opts.selector}`,
      '--http-address=127.0.0.1',
      `--http-port=${port}`,
      `--log-level=${process.env.BENCH_OPERATOR_LOG_LEVEL ?? 'warn'}`,
      ...(opts.extraArgs ?? []),
    ],
    opts.logPath,
    httpBase,
    '/readyz',
  );
}

/** node flags that make the operator write a V8 heap snapshot into dir on SIGUSR2 (see heapSnapshot). */
export function heapSnapshotNodeArgs(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${path.resolve(dir)}`];
}

/**
 * Makes an operator started with heapSnapshotNodeArgs(dir) write a heap snapshot (V8 collects garbage
 * first, so the snapshot holds live objects only) and waits until it is written: node writes it on the
 * main thread, so the snapshot is complete once the agent answers HTTP again. Renamed to <label>.heapsnapshot.
 */
export async function heapSnapshot(agent: AgentProcess, dir: string, label: string): Promise<string> {
  const isSnap = (f: string): boolean => f.startsWith('Heap.') && f.endsWith('.heapsnapshot');
  const before = new Set((await readdir(dir)).filter(isSnap));
  process.kill(agent.pid, 'SIGUSR2');
  const deadline = Date.now() + 300_000;
  for (;;) {
    await sleep(500);
    const fresh = (await readdir(dir)).filter((f) => isSnap(f) && !before.has(f));
    if (fresh.length && (await httpGet(`${agent.httpBase}/healthz`, 60_000).catch(() => undefined))) {
      const target = path.join(dir, `${label}.heapsnapshot`);
      await rename(path.join(dir, fresh[0]!), target);
      return target;
    }
    if (Date.now() > deadline) throw new Error(`no heap snapshot from ${agent.name} after 300 s`);
  }
}

/** The kwok release pinned in scripts/kwok-binary.sh (or KWOK_VERSION). */
export function pinnedKwokVersion(): string {
  if (process.env.KWOK_VERSION) return process.env.KWOK_VERSION;
  const script = readFileSync(path.join(REPO_ROOT, 'scripts/kwok-binary.sh'), 'utf8');
  const m = /KWOK_VERSION="\$\{KWOK_VERSION:-(v[^}]+)\}"/.exec(script);
  if (!m) throw new Error('no KWOK_VERSION pin in scripts/kwok-binary.sh');
  return m[1]!;
}

/** Builds (once, cached) or finds kwok; returns its dir (bin/kwok, stages/) and how long that took. */
export async function ensureKwok(): Promise<{ dir: string; ms: number }> {
  const t0 = Date.now();
  const r = await run('bash', [path.join(REPO_ROOT, 'scripts/kwok-binary.sh')]);
  if (r.stderr.trim()) process.stderr.write(r.stderr);
  const dir = r.stdout.trim().split('\n').pop() ?? '';
  if (r.code !== 0 || !dir) throw new Error(`scripts/kwok-binary.sh exited ${r.code}:\n${r.stderr.trim()}`);
  return { dir, ms: Date.now() - t0 };
}

/**
 * kwok's pod-ready Stage made to send the Events a kubelet sends for the benchmark pod's start (Pulled,
 * Created, Started), then patch the status as before: its deprecated `next` becomes `steps` (kwok v0.8.0's
 * StageStep: an event, then the status patch kwok itself converts `next.statusTemplate` into). What kwok's
 * Events still lack against the kubelet's: kwok sends the same three per pod whatever its containers (a
 * Stage's event is fixed text, not a template, so no container name or image in it), with no
 * involvedObject.fieldPath (`spec.containers{app}`) and with source kwok_controller and no host.
 */
export function kwokEventsStage(podReadyYaml: string): string {
  const stage = parseYaml(podReadyYaml) as {
    spec: { next?: { statusTemplate?: string }; steps?: unknown[] };
  };
  const template = stage.spec.next?.statusTemplate;
  if (!template || stage.spec.steps)
    throw new Error("kwok's pod-ready stage has no next.statusTemplate to turn into steps");
  delete stage.spec.next;
  stage.spec.steps = [
    ...POD_START_EVENTS.map(([reason, message]) => ({ event: { type: 'Normal', reason, message } })),
    { patch: { subresource: 'status', root: 'status', template } },
  ];
  return toYaml(stage);
}

/** kwokctl's Node Lease for the kwok controller it runs (its nodeLeaseDurationSeconds default, 40). */
export const KWOK_NODE_LEASE_FLAG = '--node-lease-duration-seconds=40';

/** The node annotation our kwok instance manages. */
export const KWOK_NODE_ANNOTATION = { key: 'kwok.x-k8s.io/node', value: 'fake' };

/**
 * Starts kwok against the cluster with kwokctl's default stages (node-initialize, node heartbeat with lease,
 * pod-ready/complete/delete: the "fast" pod stages) and kwok's default parallelism. kwok's client has no rate
 * limit of its own. Its Node Leases are on as kwokctl turns them on (a 40 s Lease, `KWOK_NODE_LEASE_FLAG`):
 * the kwok binary started alone renews none, and its heartbeat stage then leaves the Nodes' liveness to
 * nothing (until 2026-12-07 the benchmark's kwok sides ran so, with no Lease writes to pay for).
 */
export async function startKwok(opts: {
  kwokDir: string;
  kubeconfig: string;
  logPath: string;
  configPath: string;
  /** Its pod-ready stage also sends the kubelet's three start Events (kwokEventsStage). */
  events?: boolean;
  /** The KWOK_NODE_ANNOTATION value of the Nodes it manages (default `fake`): two kwok sides, two sets. */
  nodeAnnotationValue?: string;
}): Promise<AgentProcess> {
  const stages = ['node-initialize', 'node-heartbeat-with-lease', 'pod-ready', 'pod-complete', 'pod-delete'];
  const docs = await Promise.all(
    stages.map(async (s) => {
      const text = await readFile(path.join(opts.kwokDir, 'stages', `${s}.yaml`), 'utf8');
      return s === 'pod-ready' && opts.events ? kwokEventsStage(text) : text;
    }),
  );
  await writeFile(opts.configPath, docs.map((d) => d.trim()).join('\n---\n') + '\n');
  const port = await freePort();
  const httpBase = `http://127.0.0.1:${port}`;
  return launch(
    'kwok',
    path.join(opts.kwokDir, 'bin/kwok'),
    [
      `--kubeconfig=${opts.kubeconfig}`,
      `--config=${opts.configPath}`,
      '--manage-all-nodes=false',
      `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION.key}=${opts.nodeAnnotationValue ?? KWOK_NODE_ANNOTATION.value}`,
      KWOK_NODE_LEASE_FLAG,
      '--node-ip=127.0.0.1',
      '--cidr=10.200.0.1/16',
      `--server-address=127.0.0.1:${port}`,
    ],
    opts.logPath,
    httpBase,
    '/healthz',
  );
}
