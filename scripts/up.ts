// `npm run up`: a local cluster in the foreground until Ctrl-C / SIGTERM / `npm run down`.
// For now it is the control plane alone (etcd, kube-apiserver, kube-scheduler, kube-controller-manager);
// the kubelet-operator is not wired in yet.
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  pidAlive,
  REPO_ROOT,
  startControlPlane,
  type ComponentProcess,
  type ControlPlane,
} from '../test/support/controlplane.js';

// Where `npm run up` records what it started, so `npm run down` can stop it (also read by scripts/down.ts).
export const UP_KUBECONFIG = path.join(REPO_ROOT, '.local/kubeconfig');
export const UP_STATE_FILE = path.join(REPO_ROOT, '.local/up.json');

export interface UpState {
  /** The `npm run up` node process. */
  upPid: number;
  /** The control plane's temp dir; every component's command line names it. */
  dir: string;
  server: string;
  kubeconfig: string;
  processes: ComponentProcess[];
  startedAt: string;
}

export async function readUpState(): Promise<UpState | undefined> {
  try {
    return JSON.parse(await readFile(UP_STATE_FILE, 'utf8')) as UpState;
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const previous = await readUpState();
  if (previous && pidAlive(previous.upPid)) {
    console.error(`a control plane is already up (pid ${previous.upPid}); stop it with: npm run down`);
    process.exit(1);
  }

  console.log(
    'starting the control plane (the first run builds the Kubernetes binaries; that takes a while)...',
  );
  const cp: ControlPlane = await startControlPlane({ scheduler: true, controllerManager: true });

  await mkdir(path.dirname(UP_KUBECONFIG), { recursive: true });
  await copyFile(cp.kubeconfigPath, UP_KUBECONFIG);
  const state: UpState = {
    upPid: process.pid,
    dir: cp.dir,
    server: cp.server,
    kubeconfig: UP_KUBECONFIG,
    processes: cp.processes(),
    startedAt: new Date().toISOString(),
  };
  await writeFile(UP_STATE_FILE, JSON.stringify(state, null, 2) + '\n');

  let stopping = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${why}: stopping the control plane...`);
    clearInterval(watch);
    await cp.stop({ keepDir: code !== 0 });
    await rm(UP_STATE_FILE, { force: true });
    await rm(UP_KUBECONFIG, { force: true });
    console.log('stopped.');
    process.exit(code);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => void shutdown(sig, 0));
  }
  // A component that dies takes the whole thing down, loudly, keeping the logs.
  const watch = setInterval(() => {
    const dead = cp.processes().find((p) => !pidAlive(p.pid));
    if (dead) void shutdown(`${dead.name} exited unexpectedly (log: ${dead.logPath})`, 1);
  }, 2000);

  const names = cp
    .processes()
    .map((p) => `${p.name} (pid ${p.pid})`)
    .join(', ');
  console.log(`
control plane up in ${(cp.startMs / 1000).toFixed(1)} s at ${cp.server}
  components: ${names}
  logs:       ${path.join(cp.dir, 'logs')}

NOTE: this is the control plane only: the kubelet-operator itself is not wired in yet,
so no node will register and pods stay Pending.

  export KUBECONFIG=${UP_KUBECONFIG}
  kubectl get --raw /version

Stop with Ctrl-C here, or from another shell: npm run down
`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`npm run up failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
