// `npm run up`: a local cluster in the foreground until Ctrl-C / SIGTERM / `npm run down`: etcd,
// kube-apiserver, kube-scheduler and kube-controller-manager, the VirtualNode CRD, and kubelet-operator
// (in this process) serving a simulated VirtualNode `sim-1` and, when containerd can run here (root on
// Linux), a containerd-backed VirtualNode `cri-1` on a private containerd. Then it applies the sample
// workload from examples/ and shows a live table of nodes and pods until all is Ready or Complete.
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { KubeClient } from '../src/kube/client.js';
import type { Operator } from '../src/operator.js';
import { RealClock } from '../src/util/clock.js';
import { createLogger } from '../src/util/logger.js';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  kubectl,
  pidAlive,
  REPO_ROOT,
  startControlPlane,
  type ComponentProcess,
  type ControlPlane,
} from '../test/support/controlplane.js';
import { startContainerd, type TestContainerd } from '../test/support/containerd.js';
import { applyCrd, createVirtualNode, startOperator, waitNodeReady } from './lib/cluster.js';
import { watchProgress } from './lib/progress.js';

// Where `npm run up` records what it started, so `npm run down` can stop it (also read by scripts/down.ts).
export const UP_KUBECONFIG = path.join(REPO_ROOT, '.local/kubeconfig');
export const UP_STATE_FILE = path.join(REPO_ROOT, '.local/up.json');
export const UP_OPERATOR_LOG = path.join(REPO_ROOT, '.local/operator.log');
const VIRTUAL_NODE = 'sim-1';
const CRI_NODE = 'cri-1';
const EXAMPLES = ['web.yaml', 'job.yaml', 'init-pod.yaml'];

export interface UpState {
  /** The `npm run up` node process. */
  upPid: number;
  /** The control plane's temp dir; every component's command line names it. */
  dir: string;
  server: string;
  kubeconfig: string;
  processes: ComponentProcess[];
  /** The private containerd's instance dir, when `cri-1` runs (its processes name the dir). */
  containerdDir?: string;
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

  // The operator runs in this process, logging JSON lines to a file so this terminal stays readable.
  await applyCrd(cp);
  const logger = createLogger('info', { component: 'kubelet-operator' }, UP_OPERATOR_LOG);
  const clock = new RealClock();
  const client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { clock });
  const operator: Operator = await startOperator({ client, clock, logger, servedBy: 'up' });
  await createVirtualNode(client, VIRTUAL_NODE, 'up', { runtime: { type: 'sim' } });
  await waitNodeReady(client, VIRTUAL_NODE).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)} (see ${UP_OPERATOR_LOG})`);
  });

  // A containerd-backed node where containerd can run: root on Linux (see TEST-ENVIRONMENT.md).
  let containerd: TestContainerd | undefined;
  let criSkipped = '';
  if (process.platform !== 'linux' || process.getuid?.() !== 0) {
    criSkipped = 'containerd needs root on Linux';
  } else {
    console.log('starting a private containerd for the cri VirtualNode...');
    try {
      containerd = await startContainerd();
      state.containerdDir = containerd.dir;
      await writeFile(UP_STATE_FILE, JSON.stringify(state, null, 2) + '\n');
      await createVirtualNode(client, CRI_NODE, 'up', {
        // Tainted: the sample workload stays on sim-1; examples/cri-pod.yaml tolerates it.
        taints: [{ key: 'kubelet-operator.dev/runtime', value: 'cri', effect: 'NoSchedule' }],
        runtime: {
          type: 'cri',
          cri: {
            endpoint: containerd.endpoint,
            podNetwork: 'host',
            cgroupRoot: containerd.cgroupParentPrefix,
          },
        },
      });
      await waitNodeReady(client, CRI_NODE);
    } catch (err) {
      criSkipped = `containerd did not come up: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  const examples = [...EXAMPLES, ...(containerd && !criSkipped ? ['cri-pod.yaml'] : [])];
  for (const file of examples) {
    const r = await kubectl(cp, ['apply', '-f', path.join(REPO_ROOT, 'examples', file)]);
    if (r.code !== 0) throw new Error(`kubectl apply -f examples/${file} failed: ${r.stderr}`);
  }

  let stopping = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${why}: stopping the operator and the control plane...`);
    clearInterval(watch);
    await operator.stop().catch(() => undefined);
    client.close();
    await containerd?.stop().catch((err: unknown) => console.error(String(err)));
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

  console.log(`sample workload applied (${examples.map((f) => `examples/${f}`).join(', ')}); progress:\n`);
  const settled = await watchProgress(client, 'default', { timeoutMs: 180_000 });
  if (stopping) return;

  const names = cp
    .processes()
    .map((p) => `${p.name} (pid ${p.pid})`)
    .join(', ');
  const cri =
    containerd && !criSkipped
      ? `and VirtualNode ${CRI_NODE} (containerd ${containerd.endpoint}, tainted kubelet-operator.dev/runtime=cri)`
      : `(no cri VirtualNode: ${criSkipped})`;
  console.log(`
${settled ? 'all nodes and pods are Ready, the Job Complete.' : 'not everything settled in 3 minutes; look with kubectl (below).'}

control plane up in ${(cp.startMs / 1000).toFixed(1)} s at ${cp.server}
  components: ${names}
  logs:       ${path.join(cp.dir, 'logs')}

kubelet-operator is serving VirtualNode ${VIRTUAL_NODE} (simulated runtime) ${cri}
  operator log: ${UP_OPERATOR_LOG}

Use it with kubectl:
  export KUBECONFIG=${UP_KUBECONFIG}
  kubectl get vn,nodes -o wide
  kubectl get pods -o wide
  kubectl describe pod with-init
  kubectl scale deployment/web --replicas=10

Stop with Ctrl-C here, or from another shell: npm run down
`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`npm run up failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
