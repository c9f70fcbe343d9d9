// `npm run down`: stops what `npm run up` started (from .local/up.json) and leaves no process behind.
// First asks `up` to stop (SIGTERM: it shuts the components down gracefully), then SIGKILLs any
// component group still alive and stops a containerd that `up` left behind. A PID is only signalled
// while its command line still shows it is ours.
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { commandLineOf, pidAlive, run } from '../test/support/controlplane.js';
import { SCRIPT as CONTAINERD_SCRIPT } from '../test/support/containerd.js';
import { removeStateDir } from '../test/support/statedir.js';
import { reapOrphanNetworks } from '../test/support/podnetwork.js';
import { readUpState, UP_KUBECONFIG, UP_STATE_FILE } from './up.js';

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

async function main(): Promise<void> {
  const state = await readUpState();
  if (!state) {
    console.log('nothing to stop: no .local/up.json (is `npm run up` running?)');
    return;
  }
  const ours = (pid: number): boolean => pidAlive(pid) && commandLineOf(pid).includes(state.dir);

  if (pidAlive(state.upPid) && commandLineOf(state.upPid).includes('up.ts')) {
    console.log(`asking npm run up (pid ${state.upPid}) to stop...`);
    process.kill(state.upPid, 'SIGTERM');
    const left = await waitGone([state.upPid], 20_000);
    if (left.length > 0) {
      console.log('it did not stop in 20 s; killing it');
      process.kill(state.upPid, 'SIGKILL');
    }
  }

  const known = new Set(state.processes.map((p) => p.pid));
  const recorded = (await recordedPids(state.dir))
    .filter((pid) => !known.has(pid))
    .map((pid) => ({ name: 'component', pid }));
  const leftovers = [...state.processes, ...recorded].filter((p) => ours(p.pid));
  for (const p of leftovers) {
    console.log(`killing ${p.name} (pid ${p.pid})`);
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
  if (stuck.length > 0) {
    console.error(`processes still alive after SIGKILL: ${stuck.join(', ')}`);
    process.exit(1);
  }

  // `up` stops its containerds on a clean shutdown; after a crash their pods, shims and mounts remain.
  for (const dir of state.containerdDirs ?? []) {
    if (!existsSync(dir)) continue;
    console.log(`stopping containerd in ${dir} (its pods, shims and mounts)`);
    const r = await run('bash', [CONTAINERD_SCRIPT, 'stop', dir]);
    if (r.code !== 0) {
      console.error(`stopping containerd failed: ${r.stderr.trim()}`);
      process.exit(1);
    }
  }

  // After a crash: the nodes' network namespaces, the run's bridge (with the routes via it) and its pod
  // directories (tmpfs volumes unmounted first).
  await reapOrphanNetworks();
  if (state.bridge) await run('ip', ['link', 'del', state.bridge]);
  if (state.stateDir && existsSync(state.stateDir)) await removeStateDir(state.stateDir);
  await rm(state.dir, { recursive: true, force: true });
  await rm(UP_STATE_FILE, { force: true });
  await rm(UP_KUBECONFIG, { force: true });
  console.log('control plane stopped.');
}

main().catch((err: unknown) => {
  console.error(`npm run down failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
