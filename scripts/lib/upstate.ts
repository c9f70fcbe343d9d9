// What `npm run up` records of itself (.local/up.json) and how a run is stopped from that record: by
// `npm run down`, and by the next `npm run up` when the one before it was killed (its exit hook never ran).
// A PID is only signalled while its command line still shows it is ours.
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import {
  commandLineOf,
  pidAlive,
  REPO_ROOT,
  run,
  type ComponentProcess,
} from '../../test/support/controlplane.js';
import { SCRIPT as CONTAINERD_SCRIPT } from '../../test/support/containerd.js';
import { reapOrphanNetworks } from '../../test/support/podnetwork.js';
import { removeStateDir } from '../../test/support/statedir.js';

export const UP_KUBECONFIG = path.join(REPO_ROOT, '.local/kubeconfig');
export const UP_STATE_FILE = path.join(REPO_ROOT, '.local/up.json');
export const UP_OPERATOR_LOG = path.join(REPO_ROOT, '.local/operator.log');

export interface UpState {
  /** The `npm run up` node process. */
  upPid: number;
  /** The control plane's temp dir; every component's command line names it. */
  dir: string;
  server: string;
  kubeconfig: string;
  processes: ComponentProcess[];
  /** The private containerds' instance dirs, when the cri nodes run (their processes name the dirs). */
  containerdDirs?: string[];
  /** The pod network's bridge, when root made one. */
  bridge?: string;
  /** The operator's state dir (pod directories; tmpfs mounts of volumes live under it). */
  stateDir?: string;
  startedAt: string;
}

export async function readUpState(): Promise<UpState | undefined> {
  try {
    return JSON.parse(await readFile(UP_STATE_FILE, 'utf8')) as UpState;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitGone(pids: number[], timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let alive = pids.filter(pidAlive);
  while (alive.length > 0 && Date.now() < deadline) {
    await sleep(100);
    alive = alive.filter(pidAlive);
  }
  return alive;
}

/**
 * The components as the control plane itself records them (`<dir>/owner.json`), so that one started after
 * up.json was last written (metrics-server comes up while the nodes do) is not missed after a crash.
 */
async function recordedPids(dir: string): Promise<number[]> {
  try {
    const owner = JSON.parse(await readFile(path.join(dir, 'owner.json'), 'utf8')) as { pids?: number[] };
    return owner.pids ?? [];
  } catch {
    return [];
  }
}

/**
 * Stops the run `state` records and removes what it made: `up` itself (SIGTERM: it shuts down gracefully,
 * then SIGKILL), any component still alive, its containerds with their pods, shims and mounts, the nodes'
 * namespaces, its bridge (with the routes via it), its pod directories and its files. Throws when something
 * cannot be stopped.
 */
export async function stopUpRun(state: UpState, log: (line: string) => void = console.log): Promise<void> {
  const ours = (pid: number): boolean => pidAlive(pid) && commandLineOf(pid).includes(state.dir);

  if (pidAlive(state.upPid) && commandLineOf(state.upPid).includes('up.ts')) {
    log(`asking npm run up (pid ${state.upPid}) to stop...`);
    process.kill(state.upPid, 'SIGTERM');
    const left = await waitGone([state.upPid], 20_000);
    if (left.length > 0) {
      log('it did not stop in 20 s; killing it');
      process.kill(state.upPid, 'SIGKILL');
    }
  }

  const known = new Set(state.processes.map((p) => p.pid));
  const recorded = (await recordedPids(state.dir))
    .filter((pid) => !known.has(pid))
    .map((pid) => ({ name: 'component', pid }));
  const leftovers = [...state.processes, ...recorded].filter((p) => ours(p.pid));
  for (const p of leftovers) {
    log(`killing ${p.name} (pid ${p.pid})`);
    try {
      process.kill(-p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const stuck = await waitGone(
    leftovers.map((p) => p.pid),
    10_000,
  );
  if (stuck.length > 0) throw new Error(`processes still alive after SIGKILL: ${stuck.join(', ')}`);

  // `up` stops its containerds on a clean shutdown; after a crash their pods, shims and mounts remain.
  for (const dir of state.containerdDirs ?? []) {
    if (!existsSync(dir)) continue;
    log(`stopping containerd in ${dir} (its pods, shims and mounts)`);
    const r = await run('bash', [CONTAINERD_SCRIPT, 'stop', dir]);
    if (r.code !== 0) throw new Error(`stopping containerd in ${dir} failed: ${r.stderr.trim()}`);
  }

  // After a crash: the nodes' network namespaces, the run's bridge (with the routes via it) and its pod
  // directories (tmpfs volumes unmounted first).
  await reapOrphanNetworks();
  if (state.bridge) await run('ip', ['link', 'del', state.bridge]);
  if (state.stateDir && existsSync(state.stateDir)) await removeStateDir(state.stateDir);
  await rm(state.dir, { recursive: true, force: true });
  await rm(UP_STATE_FILE, { force: true });
  await rm(UP_KUBECONFIG, { force: true });
  log('control plane stopped.');
}
