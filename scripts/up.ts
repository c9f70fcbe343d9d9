// `npm run up`: a local cluster in the foreground until Ctrl-C / SIGTERM / `npm run down`: etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager and metrics-server (`kubectl top`), the
// VirtualNode CRD, and kubelet-operator (in this process) serving a simulated VirtualNode `sim-1` and, when
// containerd can run here (root on Linux), two containerd-backed VirtualNodes `cri-1` and `cri-2`, each in a
// network namespace of its own with its own containerd and pod range (scripts/lib/nodenetwork.ts), with
// kube-proxy and CoreDNS running on them: pods reach Services, the API server through the `kubernetes`
// Service, and each other by name. Then it applies the sample workload from examples/ and shows a live table
// of nodes and pods until all is Ready or Complete.
//
// `npm run up -- --in-cluster`: `sim-1` is served instead by the operator as users run it, from its own image
// (npm run image) loaded into the cri nodes' containerds and installed with `kubectl apply -k
// manifests/overlays/local`: two replicas on cri-1 and cri-2 sharing the VirtualNodes of
// manifests/examples/ by Leases. This process then serves only the cri nodes, whose containerds are here.
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createPodNetwork, type PodNetwork } from '../test/support/podnetwork.js';
import { removeStateDir } from '../test/support/statedir.js';
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
  type ControlPlane,
} from '../test/support/controlplane.js';
import {
  CLUSTER_DOMAIN,
  DNS_SERVICE_IP,
  routeNodePodCIDRs,
  startClusterAddons,
  startNodeMachine,
  type NodeMachine,
} from './lib/nodenetwork.js';
import {
  ensureMetricsServer,
  startMetricsServer,
  type MetricsServer,
} from '../test/support/metricsserver.js';
import { Metrics } from '../src/metrics.js';
import { NodeApiRegistry } from '../src/server/nodeapi/registry.js';
import { serveNodeApi, type ServedNodeApi } from '../src/server/nodeapi/serve.js';
import {
  applyCrd,
  approveServingCsrs,
  createVirtualNode,
  startOperator,
  waitNodeReady,
} from './lib/cluster.js';
import { Phases } from './lib/phases.js';
import {
  readUpState,
  stopUpRun,
  UP_KUBECONFIG,
  UP_OPERATOR_LOG,
  UP_STATE_FILE,
  type UpState,
} from './lib/upstate.js';
import { watchProgress } from './lib/progress.js';
import {
  EXAMPLE_SIM_VIRTUAL_NODE,
  LOCAL_OVERLAY,
  OPERATOR_NAMESPACE,
  runImageScript,
} from './lib/incluster.js';

// Where `npm run up` records what it started, so `npm run down` can stop it (also read by scripts/down.ts).
const VIRTUAL_NODE = 'sim-1';
const CRI_NODE = 'cri-1';
/** The containerd-backed nodes, each a machine of its own (its namespace, containerd and pod range). */
const CRI_NODES = [CRI_NODE, 'cri-2'];
/** Nodes with real containers carry it: CoreDNS runs there, and the sample workload stays on sim-1. */
const CRI_TAINT = { key: 'kubelet-operator.dev/runtime', value: 'cri', effect: 'NoSchedule' };
/**
 * Each VirtualNode has an address of its own, where the API server dials its node API (logs, exec, proxy):
 * on the run's own bridge when root can make one (kube-apiserver refuses `nodes/<n>/proxy` to loopback
 * addresses), else on loopback.
 */
const LOOPBACK_NODE_IPS: Record<string, string> = { [VIRTUAL_NODE]: '127.0.0.11' };
const NODE_API_PORT = 10250;
/** The sample workload: objects whose pods controllers create, and bare pods (cri-pod.yaml with cri-1). */
const CONTROLLED_EXAMPLES = ['web.yaml', 'job.yaml'];
const POD_EXAMPLES = ['init-pod.yaml'];

/** Retries `fn` every 200 ms until it resolves; rethrows its last error after `timeoutMs`. */
async function waitFor(fn: () => Promise<unknown>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fn();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

const USAGE = 'usage: npm run up [-- --in-cluster]';

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => a !== '--in-cluster');
  if (unknown.length > 0) {
    console.error(`unknown argument ${unknown.join(' ')}; ${USAGE}`);
    process.exit(2);
  }
  const inCluster = args.includes('--in-cluster');
  const previous = await readUpState();
  if (previous && pidAlive(previous.upPid)) {
    console.error(`a control plane is already up (pid ${previous.upPid}); stop it with: npm run down`);
    process.exit(1);
  }
  if (previous) {
    // The run before this one was killed (its exit hook never ran): remove what it left, as npm run down would.
    console.log(`cleaning up after a run that did not stop (pid ${previous.upPid})...`);
    await stopUpRun(previous, (line) => console.log(`  ${line}`));
  }

  // Independent work overlaps: containerd starts while the control plane does, the sample workload is
  // applied while the nodes register, and every wait is on a condition, never a fixed sleep.
  const phases = new Phases(Date.now, Date.now() - process.uptime() * 1000);
  let criSkipped = '';
  const criPossible = process.platform === 'linux' && process.getuid?.() === 0;
  if (!criPossible) criSkipped = 'containerd needs root on Linux';
  if (inCluster && !criPossible) {
    console.error(
      '--in-cluster runs the operator on the cri VirtualNodes, whose containerd needs root on Linux',
    );
    process.exit(2);
  }
  // The operator's image builds while everything else starts (seconds when cached; about a minute cold).
  const imageBuilt = inCluster ? phases.time('operator image', () => runImageScript(['build'])) : undefined;
  imageBuilt?.catch(() => undefined);
  console.log(
    'starting the control plane and metrics-server (the first run builds their binaries; that takes a while)' +
      (criPossible ? ' and a private containerd for the cri VirtualNode...' : '...'),
  );
  // Checked (or built, the first time) while the control plane starts; startMetricsServer awaits the same.
  ensureMetricsServer().catch(() => undefined);
  // The pod network: a bridge of this run's own, pods in their own network namespaces through CNI.
  const networkStarting: Promise<PodNetwork | undefined> = criPossible
    ? createPodNetwork().catch((err: unknown) => {
        console.error(
          `no pod network (pods of ${CRI_NODE} use the host's): ${err instanceof Error ? err.message : String(err)}`,
        );
        return undefined;
      })
    : Promise.resolve(undefined);
  // The API server listens on the bridge too (pods reach it through the `kubernetes` Service), and node IPAM
  // hands each node a pod range: the network comes first (a few ip commands).
  const network = await networkStarting;
  if (criPossible && !network) criSkipped = 'no pod network';
  const cp: ControlPlane = await phases
    .time('control plane', () =>
      startControlPlane({
        scheduler: true,
        controllerManager: true,
        ...(network
          ? { podNetwork: { advertiseAddress: network.gateway, clusterCIDR: network.clusterCIDR } }
          : {}),
      }),
    )
    .catch(async (err: unknown) => {
      await network?.stop().catch(() => undefined);
      throw err;
    });
  // metrics-server needs only the control plane: it comes up while the operator and the nodes do. The
  // node API's serving certificates (kubelet-serving CSRs) and client CA are the cluster CA, its default.
  // Without it the cluster still works, minus `kubectl top`.
  let metricsSkipped = '';
  const metricsStarting: Promise<MetricsServer | undefined> = phases
    .time('metrics-server', () => startMetricsServer(cp))
    .catch((err: unknown) => {
      // The first line names what failed and the log; the log's tail is for a terminal, not the summary.
      console.error(`metrics-server did not come up: ${err instanceof Error ? err.message : String(err)}`);
      metricsSkipped = (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
      return undefined;
    });
  const nodeIPs = { ...LOOPBACK_NODE_IPS };
  // The cri nodes' namespaces take indexes 0 and 1; sim-1 has an address on the bridge itself.
  if (network) nodeIPs[VIRTUAL_NODE] = await network.nodeIP(CRI_NODES.length);
  const stateDir = await mkdtemp(path.join(tmpdir(), 'ko-up-state-'));

  await mkdir(path.dirname(UP_KUBECONFIG), { recursive: true });
  await copyFile(cp.kubeconfigPath, UP_KUBECONFIG);
  const state: UpState = {
    upPid: process.pid,
    dir: cp.dir,
    server: cp.server,
    kubeconfig: UP_KUBECONFIG,
    processes: cp.processes(),
    startedAt: new Date().toISOString(),
    stateDir,
    ...(network ? { bridge: network.bridge } : {}),
  };
  // One write at a time: the state grows from concurrent phases.
  let stateWrites = Promise.resolve();
  const saveState = (): Promise<void> =>
    (stateWrites = stateWrites.then(() => writeFile(UP_STATE_FILE, JSON.stringify(state, null, 2) + '\n')));
  await saveState();
  void metricsStarting.then(async (ms) => {
    if (!ms) return;
    state.processes = cp.processes();
    await saveState().catch(() => undefined);
  });

  // The operator runs in this process, logging JSON lines to a file so this terminal stays readable.
  const logger = createLogger('info', { component: 'kubelet-operator' }, UP_OPERATOR_LOG);
  const clock = new RealClock();
  const client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { clock });
  // Every pod needs its namespace's default ServiceAccount (admission refuses it otherwise). The
  // controller-manager creates it, seconds after it is healthy on a busy machine; creating the same object
  // here (the controller then finds it) lets the workload go in at once. Any error but AlreadyExists:
  // wait for the controller's instead.
  const saPath = '/api/v1/namespaces/default/serviceaccounts';
  const defaultSA = phases.time('default ServiceAccount', async () => {
    try {
      await client.request({ method: 'POST', path: saPath, body: { metadata: { name: 'default' } } });
    } catch {
      await waitFor(() => client.request({ method: 'GET', path: `${saPath}/default` }));
    }
  });
  await phases.time('CRD established', () => applyCrd(cp));
  // The node API (kubectl logs, exec, attach, port-forward) on every loopback address, with a serving
  // certificate per node requested by CSR; this script approves them as a cluster admin would.
  const registry = new NodeApiRegistry();
  // The nodes' kubelet_* series, served on each node's /metrics (kubectl get --raw .../proxy/metrics).
  const metrics = new Metrics(false);
  const nodeApi: ServedNodeApi = await serveNodeApi({
    client,
    clock,
    logger,
    registry,
    metrics: metrics.registry,
    certificates: { mode: 'csr' },
    clientCA: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
    port: NODE_API_PORT,
    address: '0.0.0.0',
  }).catch((err: unknown) => {
    throw new Error(
      `cannot serve the node API on port ${NODE_API_PORT} (is a kubelet running here?): ${err instanceof Error ? err.message : String(err)}`,
    );
  });
  const approving = new AbortController();
  void approveServingCsrs(client, approving.signal);
  // Each cri node: its namespace, its containerd (started inside it) and its node API listener.
  const cleanups: (() => Promise<unknown>)[] = [];
  const machinesStarting: Promise<NodeMachine[]> = network
    ? phases
        .time('containerd', async () => {
          const out: NodeMachine[] = [];
          for (const [i] of CRI_NODES.entries())
            out.push(
              await startNodeMachine({
                network,
                index: i,
                nodeApi,
                logRoot: (c) => path.join(c.dir, 'pod-logs'),
                cleanups,
              }),
            );
          state.containerdDirs = out.map((m) => m.containerd.dir);
          await saveState();
          return out;
        })
        .catch((err: unknown) => {
          criSkipped = `containerd did not come up: ${err instanceof Error ? err.message : String(err)}`;
          return [];
        })
    : Promise.resolve([]);
  const operator: Operator = await phases.time('operator ready', () =>
    startOperator({
      client,
      clock,
      logger,
      servedBy: 'up',
      nodeApi: registry,
      metrics,
      stateDir,
      ...(network ? { clusterDNS: [DNS_SERVICE_IP] } : {}),
    }),
  );

  const nodesReady = phases.time('nodes Ready', async () => {
    // With --in-cluster, sim-1 comes later, from manifests/examples/ and served by the operator's pods.
    if (!inCluster)
      await createVirtualNode(client, VIRTUAL_NODE, 'up', {
        internalIP: nodeIPs[VIRTUAL_NODE],
        runtime: { type: 'sim' },
      });
    const simReady = inCluster
      ? Promise.resolve()
      : waitNodeReady(client, VIRTUAL_NODE).then(() => undefined);
    // containerd-backed nodes where containerd can run: root on Linux (see TEST-ENVIRONMENT.md).
    const machines = await machinesStarting;
    if (network && machines.length === CRI_NODES.length) {
      const criIPs = Object.fromEntries(CRI_NODES.map((n, i) => [n, machines[i]!.netns.ip]));
      Object.assign(nodeIPs, criIPs);
      for (const [i, name] of CRI_NODES.entries()) {
        await createVirtualNode(client, name, 'up', {
          // Tainted: the sample workload stays on sim-1; examples/cri-pod.yaml tolerates it.
          taints: [CRI_TAINT],
          labels: { [CRI_TAINT.key]: CRI_TAINT.value },
          internalIP: criIPs[name],
          runtime: machines[i]!.runtime,
          kubelet: { clusterDNS: [DNS_SERVICE_IP], clusterDomain: CLUSTER_DOMAIN },
        });
      }
      try {
        await routeNodePodCIDRs(client, network, criIPs);
        await Promise.all(CRI_NODES.map((n) => waitNodeReady(client, n)));
      } catch (err) {
        criSkipped = `${err instanceof Error ? err.message : String(err)} (see ${UP_OPERATOR_LOG})`;
      }
    }
    await simReady.catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)} (see ${UP_OPERATOR_LOG})`);
    });
    return criSkipped ? undefined : machines[0]?.containerd;
  });
  // kube-proxy on every cri node and CoreDNS on them, once they are Ready.
  const addonsReady = phases.time('Services and DNS', async () => {
    if (!(await nodesReady) || !network) return;
    await startClusterAddons({
      client,
      kubeconfig: cp.kubeconfigPath,
      apiServer: cp.podNetworkServer!,
      clusterCIDR: network.clusterCIDR,
      nodes: CRI_NODES,
      placement: {
        nodeSelector: { [CRI_TAINT.key]: CRI_TAINT.value },
        tolerations: [{ ...CRI_TAINT, operator: 'Equal' }],
      },
    });
  });
  addonsReady.catch((err: unknown) => {
    criSkipped = `Services and DNS did not come up: ${err instanceof Error ? err.message : String(err)}`;
  });
  // --in-cluster: the image into each cri node's containerd, the operator installed as users do, and the
  // example VirtualNode sim-1 it serves. It reaches the API server through the `kubernetes` Service.
  const inClusterReady = inCluster
    ? phases.time('operator in cluster', async () => {
        await addonsReady;
        const machines = await machinesStarting;
        if (criSkipped || machines.length === 0)
          throw new Error(`no cri VirtualNode to run it on: ${criSkipped}`);
        await imageBuilt;
        for (const m of machines) await runImageScript(['import', m.containerd.socketPath]);
        for (const args of [
          ['apply', '-k', LOCAL_OVERLAY],
          ['apply', '-f', EXAMPLE_SIM_VIRTUAL_NODE],
        ]) {
          const r = await kubectl(cp, args);
          if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr.trim()}`);
        }
        await waitNodeReady(client, VIRTUAL_NODE, 180_000);
      })
    : undefined;
  inClusterReady?.catch((err: unknown) => {
    console.error(
      `the operator did not come up in the cluster: ${err instanceof Error ? err.message : String(err)} ` +
        `(kubectl -n ${OPERATOR_NAMESPACE} get pods; kubectl -n ${OPERATOR_NAMESPACE} logs deploy/kubelet-operator)`,
    );
  });

  // Awaited below; a rejection meanwhile is not unhandled.
  for (const p of [defaultSA, nodesReady]) p.catch(() => undefined);

  // Workloads whose pods a controller creates go in as soon as pods can be created (the controllers are
  // still starting); bare pods once the nodes are Ready, so that the scheduler binds them at once instead of
  // after an unschedulable back-off.
  const applyExamples = async (files: string[]): Promise<void> => {
    const r = await kubectl(cp, [
      'apply',
      ...files.flatMap((f) => ['-f', path.join(REPO_ROOT, 'examples', f)]),
    ]);
    if (r.code !== 0) throw new Error(`kubectl apply of examples ${files.join(', ')} failed: ${r.stderr}`);
  };
  await defaultSA;
  await applyExamples(CONTROLLED_EXAMPLES);
  const containerd = await nodesReady;
  const podExamples = [...POD_EXAMPLES, ...(containerd && !criSkipped ? ['cri-pod.yaml'] : [])];
  await applyExamples(podExamples);
  const examples = [...CONTROLLED_EXAMPLES, ...podExamples];

  let stopping = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${why}: stopping the operator and the control plane...`);
    clearInterval(watch);
    approving.abort();
    await operator.stop().catch(() => undefined);
    await nodeApi.close().catch(() => undefined);
    client.close();
    for (const c of cleanups.splice(0).reverse())
      await c().catch((err: unknown) => console.error(String(err)));
    await network?.stop().catch((err: unknown) => console.error(String(err)));
    await removeStateDir(stateDir).catch((err: unknown) => console.error(String(err)));
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
  const settled = await phases.time('workload Ready/Complete', () =>
    watchProgress(client, 'default', { timeoutMs: 180_000, periodMs: 500 }),
  );
  const metricsServer = await metricsStarting;
  await addonsReady.catch(() => undefined);
  const inClusterOk = await inClusterReady?.then(
    () => true,
    () => false,
  );
  if (stopping) return;

  const names = cp
    .processes()
    .map((p) => `${p.name} (pid ${p.pid})`)
    .join(', ');
  const cri =
    containerd && !criSkipped
      ? `and VirtualNodes ${CRI_NODES.join(' and ')} (a containerd each, in network namespaces of their own; tainted kubelet-operator.dev/runtime=cri), with kube-proxy and CoreDNS (kube-dns ${DNS_SERVICE_IP}) on them`
      : `(no cri VirtualNode: ${criSkipped})`;
  console.log(`
${settled ? 'all nodes and pods are Ready, the Job Complete.' : 'not everything settled in 3 minutes; look with kubectl (below).'}

startup phases (seconds after npm run up started this process; some overlap):
  ${phases.lines().join('\n  ')}

control plane up in ${(cp.startMs / 1000).toFixed(1)} s at ${cp.server}
  components: ${names}
  logs:       ${path.join(cp.dir, 'logs')}

${
  inCluster
    ? `kubelet-operator runs in the cluster from its own image (manifests/overlays/local; ${inClusterOk ? 'two replicas on the cri VirtualNodes' : 'NOT up, see above'}), serving VirtualNode ${VIRTUAL_NODE} (simulated runtime, manifests/examples/virtualnode-sim.yaml)
  its pods and logs: kubectl -n ${OPERATOR_NAMESPACE} get pods; kubectl -n ${OPERATOR_NAMESPACE} logs deploy/kubelet-operator
this process serves ${cri.replace(/^and /, '')}`
    : `kubelet-operator is serving VirtualNode ${VIRTUAL_NODE} (simulated runtime) ${cri}`
}
  operator log: ${UP_OPERATOR_LOG}
${
  metricsServer
    ? `metrics-server serves metrics.k8s.io (kubectl top) from ${metricsServer.url}; log: ${metricsServer.logPath}`
    : `no metrics-server (kubectl top will not work): ${metricsSkipped}`
}

Use it with kubectl:
  export KUBECONFIG=${UP_KUBECONFIG}
  kubectl get vn,nodes -o wide
  kubectl get pods -o wide
  kubectl describe pod with-init
  kubectl logs job/report${
    containerd && !criSkipped
      ? `
  kubectl exec real-httpd -- sh -c 'echo hello from containerd; uname -a'
  kubectl port-forward pod/real-httpd 8080:18080`
      : ''
  }
  kubectl scale deployment/web --replicas=10${
    metricsServer
      ? `
  kubectl top nodes
  kubectl top pods`
      : ''
  }

Stop with Ctrl-C here, or from another shell: npm run down
`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`npm run up failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
