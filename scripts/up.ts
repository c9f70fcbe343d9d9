// `npm run up`: a local cluster in the foreground until Ctrl-C / SIGTERM / `npm run down`: etcd,
// kube-apiserver, kube-scheduler and kube-controller-manager, the VirtualNode CRD, and kubelet-operator
// (in this process) serving one simulated VirtualNode, `sim-1`.
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { Node } from '../src/api/node.js';
import { KubeClient } from '../src/kube/client.js';
import { kubeletNodeFactory } from '../src/managednode.js';
import { Operator } from '../src/operator.js';
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

// Where `npm run up` records what it started, so `npm run down` can stop it (also read by scripts/down.ts).
export const UP_KUBECONFIG = path.join(REPO_ROOT, '.local/kubeconfig');
export const UP_STATE_FILE = path.join(REPO_ROOT, '.local/up.json');
export const UP_OPERATOR_LOG = path.join(REPO_ROOT, '.local/operator.log');
const VIRTUAL_NODE = 'sim-1';

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

  // The operator runs in this process, logging JSON lines to a file so this terminal stays readable.
  const crd = await kubectl(cp, ['apply', '-f', path.join(REPO_ROOT, 'crds/virtualnode.yaml')]);
  if (crd.code !== 0) throw new Error(`applying the CRD failed: ${crd.stderr}`);
  await kubectl(cp, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/virtualnodes.kubelet-operator.dev',
  ]);
  const logger = createLogger('info', { component: 'kubelet-operator' }, UP_OPERATOR_LOG);
  const clock = new RealClock();
  const client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { clock });
  const operator = new Operator({
    client,
    clock,
    logger,
    factory: kubeletNodeFactory({
      client,
      clock,
      logger,
      defaultInternalIP: '127.0.0.1',
      nodeApiPort: 10250,
    }),
  });
  await operator.start();
  await client
    .request({
      method: 'POST',
      path: '/apis/kubelet-operator.dev/v1alpha1/virtualnodes',
      body: {
        apiVersion: 'kubelet-operator.dev/v1alpha1',
        kind: 'VirtualNode',
        metadata: { name: VIRTUAL_NODE },
        spec: { runtime: { type: 'sim' } },
      },
    })
    .catch((err: unknown) => {
      if (!(err instanceof Error && err.message.includes('AlreadyExists'))) throw err;
    });
  const readyBy = Date.now() + 60_000;
  for (;;) {
    const node = await client
      .request<Node>({ method: 'GET', path: `/api/v1/nodes/${VIRTUAL_NODE}` })
      .catch(() => undefined);
    if (node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) break;
    if (Date.now() > readyBy)
      throw new Error(`node ${VIRTUAL_NODE} not Ready after 60 s (see ${UP_OPERATOR_LOG})`);
    await new Promise((r) => setTimeout(r, 250));
  }

  let stopping = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${why}: stopping the operator and the control plane...`);
    clearInterval(watch);
    await operator.stop().catch(() => undefined);
    client.close();
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

kubelet-operator is serving VirtualNode ${VIRTUAL_NODE} (simulated runtime); its log: ${UP_OPERATOR_LOG}

  export KUBECONFIG=${UP_KUBECONFIG}
  kubectl get vn,nodes
  kubectl run hello --image=busybox -- sleep 3600 && kubectl get pods -o wide -w

Stop with Ctrl-C here, or from another shell: npm run down
`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`npm run up failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
