/**
 * The cluster the test/cluster suites run against, started once: real etcd, kube-apiserver, kube-scheduler and
 * kube-controller-manager, a private containerd, and in-process operators serving the VirtualNodes.
 *
 * Nodes:
 * - `sim-1`, `sim-2` (pool `main`) are served by the main operator on the simulated runtime;
 * - `sim-3` (pool `spare`) by a second operator that the node-failure scenario stops and restarts;
 * - `cri-1`, `cri-2` (pool `cri`) by the main operator on the real containerd, pods in their own network
 *   namespaces on the run's bridge (CNI), each node with its own InternalIP on that bridge so that two
 *   host-network pods can serve the same port, one per node, as on two machines. They carry the taint `kubelet-operator.dev/runtime=cri:NoSchedule`, so only pods
 *   that tolerate it land there.
 *
 * The node lifecycle controller runs with a 15 s grace period (default 50 s) and a 1 s monitor period: still
 * comfortably above the nodes' Lease (renewed every 2 s, 10 s duration), and a dead agent shows in ~15-20 s.
 *
 * Every node serves the node API on :10250 of its InternalIP (sim nodes 127.0.0.4-6) with a serving certificate
 * requested by CSR and approved here as an admin would, so `kubectl logs/exec` take the API server's real path.
 *
 * metrics-server (test/support/metricsserver.ts) serves `metrics.k8s.io` through the aggregation layer,
 * scraping every node's node API each METRIC_RESOLUTION_S, so `kubectl top` works; the controller-manager's
 * HorizontalPodAutoscaler runs on short periods (HPA_CONTROLLER_ARGS) so that scaling shows in seconds.
 *
 * A component that cannot start (control plane, containerd: root on Linux is required) fails `before` loudly.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import { KubeClient } from '../../src/kube/client.js';
import type { CoreEvent } from '../../src/kube/events.js';
import type { Operator } from '../../src/operator.js';
import { CriRuntime } from '../../src/runtime/cri/client.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { Metrics } from '../../src/metrics.js';
import { testLogger } from '../support/operator.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { serveNodeApi } from '../../src/server/nodeapi/serve.js';
import {
  applyCrd,
  approveServingCsrs,
  createVirtualNode,
  startOperator,
  waitNodeReady,
} from '../../scripts/lib/cluster.js';
import { startContainerd, type TestContainerd } from '../support/containerd.js';
import { createPodNetwork } from '../support/podnetwork.js';
import { ScaledClock } from '../support/scaledclock.js';
import { removeStateDir } from '../support/statedir.js';
import { selfSignedCert } from '../support/nodeapi.js';
import { startTcpProxy } from '../support/tcpproxy.js';
import { kubectl, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { eventsWithReasons } from '../support/events.js';
import { startMetricsServer, type MetricsServer } from '../support/metricsserver.js';

export const NS = 'cluster-test';
export const SIM_NODES = ['sim-1', 'sim-2', 'sim-3'];
/** The simulated nodes' InternalIPs, where their node API answers. */
export const SIM_NODE_IPS: Record<string, string> = {
  'sim-1': '127.0.0.4',
  'sim-2': '127.0.0.5',
  'sim-3': '127.0.0.6',
};
/**
 * The containerd-backed nodes and their InternalIPs (= the pod IP of their host-network pods): addresses on
 * the run's own bridge, filled in when the cluster starts.
 */
export const CRI_NODES: Record<string, string> = { 'cri-1': '', 'cri-2': '' };
export const CRI_TAINT = { key: 'kubelet-operator.dev/runtime', value: 'cri', effect: 'NoSchedule' };
/** The node lifecycle controller's grace period for a silent node (`--node-monitor-grace-period`). */
export const NODE_MONITOR_GRACE_S = 15;
/** metrics-server's scrape period (`--metric-resolution`; it refuses less than 10 s). */
export const METRIC_RESOLUTION_S = 10;
/**
 * The HorizontalPodAutoscaler controller on test timings: a sync every 5 s (default 15 s), scale-down after
 * 20 s of lower recommendations (default 5 min), and a new pod's CPU counted 10 s after its start (default
 * 5 min) once it has been Ready for 5 s (default 30 s).
 */
export const HPA_CONTROLLER_ARGS = [
  '--horizontal-pod-autoscaler-sync-period=5s',
  '--horizontal-pod-autoscaler-downscale-stabilization=20s',
  '--horizontal-pod-autoscaler-initial-readiness-delay=5s',
  '--horizontal-pod-autoscaler-cpu-initialization-period=10s',
];

export const HEARTBEAT = {
  renewIntervalSeconds: 2,
  leaseDurationSeconds: 10,
  statusUpdateFrequencySeconds: 2,
};

export interface List<T> {
  items: T[];
}

export interface ClusterEnv {
  cp: ControlPlane;
  /** The API server as pods on the cri nodes reach it: https://<bridge address>:<port> (a forwarder). */
  apiserverForPods: string;
  client: KubeClient;
  containerd: TestContainerd;
  /** A CRI client of the test's own, to look into containerd (never to act on pods). */
  cri: CriRuntime;
  main: Operator;
  /** metrics-server, its APIService `v1beta1.metrics.k8s.io` Available. */
  metricsServer: MetricsServer;
  /** The operators' state directory: each node's kubelet root is `nodeRootDir(stateDir, node)`. */
  stateDir: string;
  /** The operator serving `sim-3`; undefined while the node-failure scenario has it stopped. */
  spare: Operator | undefined;
  startSpare(): Promise<Operator>;
  /** `kubectl -n NS <args>`; throws on a non-zero exit. */
  k(args: string[], input?: string): Promise<string>;
  apply(obj: unknown): Promise<string>;
  get<T>(apiPath: string): Promise<T>;
  pods(selector: string): Promise<Pod[]>;
  pod(name: string): Promise<Pod>;
  node(name: string): Promise<Node>;
  /**
   * The Events whose involvedObject is the named object of NS; with `reasons`, once every one of them is
   * among those Events (a node writes Events one at a time, behind the pod's status), waiting up to 10 s.
   */
  events(name: string, reasons?: readonly string[]): Promise<CoreEvent[]>;
  stop(): Promise<void>;
}

export const podReady = (p: Pod): boolean =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export async function startClusterEnv(): Promise<ClusterEnv> {
  const [cpStart, containerdStart] = await Promise.allSettled([
    startControlPlane({
      scheduler: true,
      controllerManager: true,
      // v1.37's PodResizeValidator refuses a resize beyond node allocatable before the node sees it. Without it
      // (as with API servers before v1.37) the node decides, and its Infeasible verdict is what resize-scenarios
      // checks; e2e/resize-cri.test.ts checks the refusal with the default plugins.
      apiserverArgs: ['--disable-admission-plugins=PodResizeValidator'],
      controllerManagerArgs: [
        `--node-monitor-grace-period=${NODE_MONITOR_GRACE_S}s`,
        '--node-monitor-period=1s',
        ...HPA_CONTROLLER_ARGS,
      ],
    }),
    (async () => {
      const network = await createPodNetwork();
      try {
        const ctd = await startContainerd();
        await network.attachContainerd(ctd.dir);
        return { network, ctd };
      } catch (err) {
        await network.stop();
        throw err;
      }
    })(),
  ]);
  if (cpStart.status === 'rejected' || containerdStart.status === 'rejected') {
    if (cpStart.status === 'fulfilled') await cpStart.value.stop();
    if (containerdStart.status === 'fulfilled') {
      await containerdStart.value.ctd.stop();
      await containerdStart.value.network.stop();
    }
    throw cpStart.status === 'rejected' ? cpStart.reason : (containerdStart as PromiseRejectedResult).reason;
  }
  const cp = cpStart.value;
  const { ctd: containerd, network } = containerdStart.value;
  // It needs only the control plane: it starts while the operators and nodes do, and is awaited last. The
  // node API's serving certificates and client CA are the cluster CA, metrics-server's default.
  const metricsStarting = startMetricsServer(cp, { metricResolutionSeconds: METRIC_RESOLUTION_S });
  metricsStarting.catch(() => undefined); // awaited in the try below; cp.stop() ends it in any case
  let metricsServer: MetricsServer | undefined;
  for (const [i, name] of Object.keys(CRI_NODES).entries()) CRI_NODES[name] = await network.nodeIP(i);
  const logRoot = await mkdtemp(path.join(tmpdir(), 'ko-cluster-logs-'));
  const stateDir = await mkdtemp(path.join(tmpdir(), 'ko-cluster-state-'));
  const cri = new CriRuntime({ endpoint: containerd.endpoint });
  const client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { qps: 200, burst: 400 });
  const clock = new RealClock();
  const registry = new NodeApiRegistry();
  // Tokens age 20 times faster for the token manager: a 10-minute token (the API server's shortest) is
  // refreshed after 24 s instead of 8 minutes, so the token scenario sees a rotation.
  const tokenClock = new ScaledClock(20);
  // The nodes' kubelet_* series on /metrics, as the operator process serves them.
  const metrics = new Metrics(false);
  const startServing = (servedBy: string): Promise<Operator> =>
    startOperator({
      client,
      clock,
      logger: testLogger(),
      servedBy,
      statusPeriodMs: 2000,
      nodeApi: registry,
      metrics,
      stateDir,
      tokenClock,
    });
  const apiPort = Number(new URL(cp.server).port);
  const proxyDir = await mkdtemp(path.join(tmpdir(), 'ko-cluster-proxy-'));
  await selfSignedCert({
    keyOut: path.join(proxyDir, 'key.pem'),
    certOut: path.join(proxyDir, 'cert.pem'),
    subject: '/CN=kube-apiserver-for-pods',
    days: 1,
    ext: [`subjectAltName=IP:${network.gateway}`],
  });
  const proxy = await startTcpProxy(
    network.gateway,
    { host: '127.0.0.1', port: apiPort },
    {
      tls: {
        cert: await readFile(path.join(proxyDir, 'cert.pem')),
        key: await readFile(path.join(proxyDir, 'key.pem')),
        ca: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
      },
    },
  );
  await rm(proxyDir, { recursive: true, force: true });
  const operators: Operator[] = [];
  const approving = new AbortController();
  let nodeApi: Awaited<ReturnType<typeof serveNodeApi>> | undefined;
  const stopAll = async (): Promise<void> => {
    approving.abort();
    await metricsServer?.stop().catch(() => undefined);
    await Promise.allSettled(operators.map((o) => o.stop()));
    await nodeApi?.close().catch(() => undefined);
    await cri.close().catch(() => undefined);
    await proxy.close().catch(() => undefined);
    client.close();
    await Promise.allSettled([cp.stop(), containerd.stop()]);
    await network.stop().catch(() => undefined);
    await removeStateDir(stateDir).catch(() => undefined);
    await rm(logRoot, { recursive: true, force: true });
  };
  try {
    await applyCrd(cp);
    nodeApi = await serveNodeApi({
      client,
      clock,
      logger: silentLogger,
      registry,
      certificates: { mode: 'csr' },
      clientCA: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
      metrics: metrics.registry,
      port: 10250,
      address: '0.0.0.0',
    });
    void approveServingCsrs(client, approving.signal);
    operators.push(...(await Promise.all([startServing('main'), startServing('spare')])));
    await createNodes(client, containerd, logRoot);
    await kubectl(cp, ['create', 'namespace', NS]);
    // Pods need the namespace's default ServiceAccount, which the controller-manager creates.
    await eventually(
      () => client.request({ method: 'GET', path: `/api/v1/namespaces/${NS}/serviceaccounts/default` }),
      30_000,
      'default SA',
    );
    metricsServer = await metricsStarting;
  } catch (err) {
    await stopAll();
    throw err;
  }
  const [main, spare] = operators as [Operator, Operator];

  const get = <T>(apiPath: string): Promise<T> => client.request<T>({ method: 'GET', path: apiPath });
  const k = async (args: string[], input?: string): Promise<string> => {
    const r = await kubectl(cp, ['-n', NS, ...args], input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  };
  let stopped: Promise<void> | undefined;
  const env: ClusterEnv = {
    cp,
    apiserverForPods: `https://${network.gateway}:${proxy.port}`,
    client,
    containerd,
    cri,
    main,
    metricsServer,
    stateDir,
    spare,
    startSpare: () => startServing('spare'),
    k,
    apply: (obj) => k(['apply', '-f', '-'], JSON.stringify(obj)),
    get,
    pods: async (selector) =>
      (await get<List<Pod>>(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(selector)}`))
        .items,
    pod: (name) => get<Pod>(`/api/v1/namespaces/${NS}/pods/${name}`),
    node: (name) => get<Node>(`/api/v1/nodes/${name}`),
    events: async (name, reasons = []) => {
      const read = async (): Promise<CoreEvent[]> =>
        (
          await get<List<CoreEvent>>(
            `/api/v1/namespaces/${NS}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${name}`)}`,
          )
        ).items;
      return reasons.length === 0 ? read() : eventsWithReasons(read, reasons, name);
    },
    stop: () =>
      (stopped ??= (async () => {
        // The spare operator may have been replaced by the node-failure scenario.
        operators.splice(1, 1, ...(env.spare ? [env.spare] : []));
        await stopAll();
      })()),
  };
  return env;
}

/** The VirtualNodes of the module comment, created and awaited Ready. */
async function createNodes(client: KubeClient, containerd: TestContainerd, logRoot: string): Promise<void> {
  await Promise.all([
    ...SIM_NODES.map((name, i) =>
      createVirtualNode(client, name, name === 'sim-3' ? 'spare' : 'main', {
        // Each node its own pod range, as a cluster's node IPAM would hand out: pod IPs are cluster-wide.
        runtime: { type: 'sim', sim: { podCIDR: `10.88.${i + 1}.0/24` } },
        internalIP: SIM_NODE_IPS[name],
        labels: { 'cluster-test/pool': name === 'sim-3' ? 'spare' : 'main' },
        heartbeat: HEARTBEAT,
      }),
    ),
    ...Object.entries(CRI_NODES).map(([name, ip]) =>
      createVirtualNode(client, name, 'main', {
        internalIP: ip,
        labels: { 'cluster-test/pool': 'cri' },
        taints: [CRI_TAINT],
        runtime: {
          type: 'cri',
          cri: {
            endpoint: containerd.endpoint,
            cgroupRoot: containerd.cgroupParentPrefix,
            logRoot,
            podNetwork: 'cni',
          },
        },
        // Volumes measured every 10 s instead of the kubelet's minute: the emptyDir sizeLimit eviction
        // scenario sees a filled volume within a round or two whatever the first walk found.
        kubelet: { volumeStatsAggPeriod: '10s' },
        heartbeat: HEARTBEAT,
      }),
    ),
  ]);
  await Promise.all([...SIM_NODES, ...Object.keys(CRI_NODES)].map((n) => waitNodeReady(client, n)));
}
