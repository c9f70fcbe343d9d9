/**
 * A real containerd for tests, driven through scripts/containerd.sh.
 *
 * `startContainerd()` installs the packages when missing, starts a private containerd (own config, root,
 * state and socket in a fresh temp directory) with the busybox and pause images imported into namespace
 * k8s.io, and resolves once the socket answers. `stop()` removes every pod and container, stops the
 * daemon and its shims, unmounts and removes the directory and this instance's pod cgroups.
 *
 * Pods must use a `cgroup_parent` under `cgroupParentPrefix` so that stop() can remove their cgroups.
 * If a test forgets stop(), a process 'exit' hook cleans up synchronously.
 *
 * A missing prerequisite (not Linux, not root, packages not installable) is an error with one clear
 * message, never a silent skip.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { podCgroupParent } from '../../src/kubelet/kuberuntime/sandboxconfig.js';
import { ManagedByLabel } from '../../src/runtime/labels.js';
import type { Runtime } from '../../src/runtime/types.js';
import { eventually } from './eventually.js';
import { canSignal } from './pid.js';

export interface CtrResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface TestContainerd {
  /** The instance directory (config, root, state, logs); removed by stop(). */
  dir: string;
  socketPath: string;
  /** CRI endpoint for gRPC clients, `unix:///...`. */
  endpoint: string;
  /** Image references already present in namespace k8s.io. */
  images: { busybox: string; pause: string };
  /** cgroupfs parent under which this instance's pods must live, e.g. `/kubelet-operator-test/<id>`. */
  cgroupParentPrefix: string;
  /** Runs `ctr --address <socket> --namespace k8s.io <args>`; never throws on a non-zero exit. */
  ctr(args: readonly string[]): Promise<CtrResult>;
  /**
   * Stops the containerd process only (SIGTERM, then SIGKILL after 15 s) and starts it again on the same
   * config, directories and socket; resolves once it answers. Pods and their shims keep running meanwhile,
   * and containerd reattaches to them. `whileDown` runs between the two, with the socket dead.
   */
  restartDaemon(whileDown?: () => Promise<void>): Promise<void>;
  /** Idempotent. */
  stop(): Promise<void>;
}

export const SCRIPT = fileURLToPath(new URL('../../scripts/containerd.sh', import.meta.url));

const IMAGES = {
  busybox: 'docker.io/library/busybox:latest',
  pause: 'registry.k8s.io/pause:3.10',
} as const;

const CGROUP_ROOT = '/kubelet-operator-test';
const INSTALL_TIMEOUT_MS = 15 * 60_000;
const START_TIMEOUT_MS = 5 * 60_000;
const STOP_TIMEOUT_MS = 2 * 60_000;

let installed: Promise<void> | undefined;

function run(
  cmd: string,
  args: readonly string[],
  timeoutMs: number,
  env?: NodeJS.ProcessEnv,
): Promise<CtrResult> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      [...args],
      { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, killSignal: 'SIGKILL', ...(env ? { env } : {}) },
      (err, stdout, stderr) => {
        let code = 0;
        if (err) {
          const c = (err as { code?: unknown }).code;
          code = typeof c === 'number' ? c : 1;
          if (err.killed) stderr += `\n${cmd} timed out after ${timeoutMs} ms`;
          else if (typeof c === 'string') stderr += `\n${cmd}: ${err.message}`;
        }
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

function checkPrerequisites(): void {
  if (process.platform !== 'linux') {
    throw new Error(`containerd tests need Linux (this is ${process.platform})`);
  }
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    throw new Error('containerd tests need root: run as root or with sudo');
  }
}

/** Installs containerd, runc and busybox-static once per process (a no-op when present). */
export function ensureContainerdInstalled(): Promise<void> {
  installed ??= (async () => {
    checkPrerequisites();
    const r = await run('bash', [SCRIPT, 'install'], INSTALL_TIMEOUT_MS);
    if (r.code !== 0) {
      installed = undefined;
      throw new Error(
        `containerd tests need the packages containerd, runc and busybox-static, and installing them failed ` +
          `(bash scripts/containerd.sh install, exit ${r.code}): ${lastLines(r.stderr || r.stdout, 15)}`,
      );
    }
  })();
  return installed;
}

function lastLines(text: string, n: number): string {
  return text.trim().split('\n').slice(-n).join('\n');
}

export interface ContainerdOptions {
  /**
   * Run the daemon in this network namespace (`/run/netns/<name>`), as on a node of its own: its host-network
   * pods get that namespace, and CNI works inside it. Streams (exec, attach, port-forward) then listen on
   * `streamAddress`, which must be reachable from this process (the node's address).
   */
  netns?: { path: string; streamAddress: string };
  /** A CNI config template (containerd's conf_template): the config is written once the pod CIDR comes. */
  cniConfTemplate?: string;
  /** Registries by `host[:port]`, with the CA that signed their serving certificate (certs.d hosts.toml). */
  registryCAs?: Record<string, string>;
}

/** Starts a private containerd; see the module comment. */
export async function startContainerd(opts: ContainerdOptions = {}): Promise<TestContainerd> {
  await ensureContainerdInstalled();
  // Short path: the socket path must fit in a unix socket address.
  const dir = await mkdtemp(join(tmpdir(), 'ko-ctrd-'));
  if (opts.cniConfTemplate !== undefined) {
    mkdirSync(join(dir, 'cni'), { recursive: true });
    writeFileSync(join(dir, 'cni', 'conf-template.json'), opts.cniConfTemplate);
  }
  for (const [host, caFile] of Object.entries(opts.registryCAs ?? {})) {
    mkdirSync(join(dir, 'certs.d', host), { recursive: true });
    writeFileSync(
      join(dir, 'certs.d', host, 'hosts.toml'),
      `server = "https://${host}"\n\n[host."https://${host}"]\n  capabilities = ["pull", "resolve"]\n  ca = ${JSON.stringify(caFile)}\n`,
    );
  }
  const env = {
    ...process.env,
    ...(opts.netns
      ? { CONTAINERD_NETNS: opts.netns.path, CONTAINERD_STREAM_ADDRESS: opts.netns.streamAddress }
      : {}),
  };
  const socketPath = join(dir, 'containerd.sock');

  // Synchronous, for process 'exit': the script's stop, or at least the daemon's process group.
  const stopSync = (): void => {
    const pid = readPidSync(dir);
    const r = spawnSync('bash', [SCRIPT, 'stop', dir], { stdio: 'ignore', timeout: STOP_TIMEOUT_MS });
    if (r.status !== 0 && pid !== undefined) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  const onExit = (): void => stopSync();
  // Registered before start: a start that dies half-way is cleaned up too.
  process.on('exit', onExit);

  const started = await run('bash', [SCRIPT, 'start', dir], START_TIMEOUT_MS, env);
  if (started.code !== 0) {
    await run('bash', [SCRIPT, 'stop', dir], STOP_TIMEOUT_MS);
    process.off('exit', onExit);
    throw new Error(
      `containerd did not start (bash scripts/containerd.sh start ${dir}, exit ${started.code}): ` +
        lastLines(started.stderr || started.stdout, 30),
    );
  }

  let stopping: Promise<void> | undefined;
  return {
    dir,
    socketPath,
    endpoint: `unix://${socketPath}`,
    images: { ...IMAGES },
    cgroupParentPrefix: `${CGROUP_ROOT}/${basename(dir)}`,
    ctr: (args) => run('ctr', ['--address', socketPath, '--namespace', 'k8s.io', ...args], 120_000),
    restartDaemon: async (whileDown) => {
      if (stopping) throw new Error(`containerd in ${dir} is stopped or stopping`);
      await stopDaemonOnly(dir);
      try {
        await whileDown?.();
      } finally {
        await startDaemonOnly(dir, socketPath);
      }
    },
    stop: () => {
      stopping ??= (async () => {
        const r = await run('bash', [SCRIPT, 'stop', dir], STOP_TIMEOUT_MS);
        if (r.code !== 0) {
          stopping = undefined; // the exit hook stays armed, and a later stop() may retry
          throw new Error(
            `stopping containerd in ${dir} failed (exit ${r.code}): ${lastLines(r.stderr, 15)}`,
          );
        }
        process.off('exit', onExit);
      })();
      return stopping;
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** SIGTERM to the daemon's own pid (not its group: shims must survive), SIGKILL after 15 s. */
async function stopDaemonOnly(dir: string): Promise<void> {
  const pid = readPidSync(dir);
  if (pid === undefined || !canSignal(pid)) throw new Error(`no containerd running for ${dir}`);
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 15_000;
  while (canSignal(pid) && Date.now() < deadline) await sleep(50);
  if (canSignal(pid)) {
    process.kill(pid, 'SIGKILL');
    while (canSignal(pid)) await sleep(20);
  }
}

/** Starts containerd on the instance's existing config, in its own session as the script does. */
async function startDaemonOnly(dir: string, socketPath: string): Promise<void> {
  const log = openSync(join(dir, 'containerd.log'), 'a');
  let pid: number | undefined;
  // In the network namespace it started in, when the script recorded one.
  const netns = existsSync(join(dir, 'netns')) ? readFileSync(join(dir, 'netns'), 'utf8').trim() : '';
  const argv = [
    ...(netns ? ['nsenter', `--net=${netns}`] : []),
    'containerd',
    '--config',
    join(dir, 'config.toml'),
  ];
  try {
    const child = spawn(argv[0]!, argv.slice(1), {
      detached: true,
      stdio: ['ignore', log, log],
    });
    child.unref();
    pid = child.pid;
  } finally {
    closeSync(log);
  }
  if (pid === undefined) throw new Error(`containerd did not start for ${dir}`);
  writeFileSync(join(dir, 'containerd.pid'), `${pid}\n`);
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const r = await run('ctr', ['--address', socketPath, 'version'], 10_000);
    if (r.code === 0) return;
    if (!canSignal(pid))
      throw new Error(`containerd exited during restart (log: ${join(dir, 'containerd.log')})`);
    if (Date.now() > deadline) throw new Error(`containerd did not answer on ${socketPath} after restart`);
    await sleep(50);
  }
}

function readPidSync(dir: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(join(dir, 'containerd.pid'), 'utf8').trim(), 10);
    return Number.isInteger(n) && n > 1 ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `runtime` of a cri VirtualNode on this containerd: its endpoint, pods under its cgroup parent, their
 * logs under `logRoot`, host network.
 */
export function criRuntimeSpec(ctd: TestContainerd, logRoot: string): Record<string, unknown> {
  return {
    type: 'cri',
    cri: { endpoint: ctd.endpoint, cgroupRoot: ctd.cgroupParentPrefix, logRoot, podNetwork: 'host' },
  };
}

/** The cgroup directories of a pod that exist right now, in every v1 controller and the unified tree. */
export function podCgroupDirs(cgroupRoot: string, uid: string): string[] {
  const rel = podCgroupParent(cgroupRoot, uid);
  const base = '/sys/fs/cgroup';
  return [base, ...readdirSync(base).map((d) => join(base, d))]
    .map((h) => join(h, rel))
    .filter((d) => existsSync(d));
}

/** Waits until the runtime holds no sandbox and no container labelled as `nodeName`'s. */
export async function waitNoObjectsOfNode(rt: Runtime, nodeName: string, timeoutMs = 60_000): Promise<void> {
  await eventually(
    async () => {
      const [sandboxes, containers] = await Promise.all([
        rt.listPodSandbox({ labelSelector: { [ManagedByLabel]: nodeName } }),
        rt.listContainers({ labelSelector: { [ManagedByLabel]: nodeName } }),
      ]);
      return sandboxes.length === 0 && containers.length === 0 ? true : undefined;
    },
    timeoutMs,
    'no sandboxes or containers of ours in containerd',
  );
}
