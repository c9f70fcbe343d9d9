/**
 * The cluster the upstream e2e suite runs against: real etcd, kube-apiserver, kube-scheduler and
 * kube-controller-manager, and kubelet-operator (in this process) as the only node agent.
 *
 * - `cri` (default): `nodes` untainted cri VirtualNodes `cri-1..N`, each in a network namespace of its own on
 *   the run's bridge with its own containerd holding the e2e images under their upstream names
 *   (scripts/lib/nodenetwork.ts): its InternalIP is its namespace's address, where the API server dials its
 *   node API and its host-network pods listen, its pods get addresses from the /24 that node IPAM assigns it,
 *   and the nodes' pod ranges are routed to each other. kube-proxy (a DaemonSet) and CoreDNS (the kube-dns
 *   Service, the nodes' clusterDNS) run on them, so pods reach Services, the API server through the
 *   `kubernetes` Service, and each other by name, as on a kubeadm cluster.
 * - `sim`: `nodes` untainted sim VirtualNodes `sim-1..N` on the simulated runtime (no containerd, no root),
 *   for the specs that only need a kubelet's status handling.
 *
 * The node API serves on :10250 of every address with serving certificates requested by CSR and approved here
 * as a cluster admin would. The e2e suite refuses to start while any Node is not Ready or is tainted, so the
 * cluster holds nothing else.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { removeStateDir } from '../support/statedir.js';
import path from 'node:path';
import { KubeClient } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { Metrics } from '../../src/metrics.js';
import { serveNodeApi, type ServedNodeApi } from '../../src/server/nodeapi/serve.js';
import { RealClock } from '../../src/util/clock.js';
import { createLogger } from '../../src/util/logger.js';
import {
  applyCrd,
  approveServingCsrs,
  createVirtualNode,
  startOperator,
  waitNodeReady,
} from '../../scripts/lib/cluster.js';
import {
  CLUSTER_DOMAIN,
  DNS_SERVICE_IP,
  routeNodePodCIDRs,
  startClusterAddons,
  startNodeMachine,
  type NodeMachine,
} from '../../scripts/lib/nodenetwork.js';
import type { TestContainerd } from '../support/containerd.js';
import { REPO_ROOT, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { createPodNetwork, type PodNetwork } from '../support/podnetwork.js';

const SERVED_BY = 'upstream-e2e';
const NODE_API_PORT = 10250;

export interface UpstreamClusterOptions {
  runtime: 'cri' | 'sim';
  nodes: number;
  /** Where the operator's log and the components' logs go. */
  logDir: string;
  /** Imports the e2e images into the containerd at this socket (cri only). */
  importImages?: (socketPath: string) => Promise<void>;
  /** Progress lines. */
  say?: (line: string) => void;
  /** The kubectl that applies the add-ons (default: kubectl on PATH). */
  kubectl?: string;
  /** Labels every node carries (its VirtualNode's spec.labels), e.g. to place pods of a test's own there. */
  nodeLabels?: Record<string, string>;
}

export interface UpstreamCluster {
  cp: ControlPlane;
  kubeconfigPath: string;
  nodeNames: string[];
  /** Per node, its InternalIP. */
  nodeIPs: Record<string, string>;
  network?: PodNetwork;
  /** Per cri node, its containerd. */
  containerds: Record<string, TestContainerd>;
  operatorLog: string;
  stop(): Promise<void>;
}

export async function startUpstreamCluster(o: UpstreamClusterOptions): Promise<UpstreamCluster> {
  const say = o.say ?? (() => undefined);
  await mkdir(o.logDir, { recursive: true });
  const cleanups: (() => Promise<unknown>)[] = [];
  // One teardown, however often asked for: a second caller (a signal handler and the run's own end) waits
  // for the first instead of finding nothing left to do and exiting under it.
  let stopping: Promise<void> | undefined;
  const stopAll = (): Promise<void> =>
    (stopping ??= (async () => {
      for (const c of cleanups.splice(0).reverse())
        await c().catch((err: unknown) => say(`cleanup: ${String(err)}`));
    })());
  try {
    // The nodes' pod directories (volumes, /etc/hosts, termination messages), which containerd mounts from:
    // removed last, once containerd is gone.
    const stateDir = await mkdtemp(path.join(tmpdir(), 'ko-state-'));
    cleanups.push(() => removeStateDir(stateDir));
    let network: PodNetwork | undefined;
    if (o.runtime === 'cri') {
      network = await createPodNetwork();
      cleanups.push(() => network!.stop());
      say(
        `pod network ${network.cidr} on bridge ${network.bridge}, node pod ranges from ${network.clusterCIDR}`,
      );
    }
    const cp = await startControlPlane({
      scheduler: true,
      controllerManager: true,
      ...(network
        ? { podNetwork: { advertiseAddress: network.gateway, clusterCIDR: network.clusterCIDR } }
        : {}),
    });
    cleanups.push(() => cp.stop());
    say(`control plane ${cp.server} (logs ${path.join(cp.dir, 'logs')})`);

    const operatorLog = path.join(o.logDir, 'operator.log');
    const logger = createLogger('info', { component: 'kubelet-operator' }, operatorLog);
    const clock = new RealClock();
    const client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { clock });
    cleanups.push(async () => client.close());
    await applyCrd(cp);

    const registry = new NodeApiRegistry();
    // The nodes' series on /metrics, as the operator process serves them (suites scrape kubelet metrics).
    const metrics = new Metrics(false);
    const nodeApi: ServedNodeApi = await serveNodeApi({
      client,
      clock,
      logger,
      registry,
      metrics: metrics.registry,
      certificates: { mode: 'csr' },
      clientCA: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
      // cri nodes are served on listeners inside their namespaces (startNodeMachine); the host's own listener
      // is then only a formality, on a free port, so two such clusters can run side by side.
      ...(network ? { port: 0, address: '127.0.0.1' } : { port: NODE_API_PORT, address: '0.0.0.0' }),
    });
    cleanups.push(() => nodeApi.close());
    const approving = new AbortController();
    void approveServingCsrs(client, approving.signal);
    cleanups.push(async () => approving.abort());

    const nodeNames: string[] = [];
    const nodeIPs: Record<string, string> = {};
    const machines: Record<string, NodeMachine> = {};
    for (let i = 0; i < o.nodes; i++) {
      const name = `${o.runtime}-${i + 1}`;
      nodeNames.push(name);
      if (network) {
        // One at a time: each containerd imports the e2e images, which is disk- and CPU-bound.
        machines[name] = await startNodeMachine({
          network,
          index: i,
          nodeApi,
          logRoot: (c) => path.join(c.dir, 'pod-logs'),
          ...(o.importImages ? { importImages: o.importImages } : {}),
          cleanups,
        });
        nodeIPs[name] = machines[name].netns.ip;
        say(
          `node ${name}: namespace ${machines[name].netns.name}, containerd ${machines[name].containerd.endpoint}`,
        );
      } else {
        // sim nodes have no network of their own: a loopback address each is enough for what they serve.
        nodeIPs[name] = `127.0.0.${21 + i}`;
      }
    }

    const operator: Operator = await startOperator({
      client,
      clock,
      logger,
      servedBy: SERVED_BY,
      nodeApi: registry,
      metrics,
      stateDir,
      ...(network ? { clusterDNS: [DNS_SERVICE_IP] } : {}),
    });
    cleanups.push(() => operator.stop());
    for (const name of nodeNames) {
      await createVirtualNode(client, name, SERVED_BY, {
        internalIP: nodeIPs[name],
        runtime: machines[name]?.runtime ?? { type: 'sim' },
        ...(o.nodeLabels ? { labels: o.nodeLabels } : {}),
        ...(network ? { kubelet: { clusterDNS: [DNS_SERVICE_IP], clusterDomain: CLUSTER_DOMAIN } } : {}),
      });
    }
    if (network) {
      const ranges = await routeNodePodCIDRs(client, network, nodeIPs);
      say(`pod ranges routed: ${nodeNames.map((n) => `${n} ${ranges[n]}`).join(', ')}`);
    }
    await Promise.all(nodeNames.map((n) => waitNodeReady(client, n, 120_000)));
    say(`nodes Ready: ${nodeNames.map((n) => `${n} (${nodeIPs[n]})`).join(', ')}`);
    if (network) {
      await startClusterAddons({
        client,
        kubeconfig: cp.kubeconfigPath,
        apiServer: cp.podNetworkServer!,
        clusterCIDR: network.clusterCIDR,
        nodes: nodeNames,
        ...(o.kubectl ? { kubectl: o.kubectl } : {}),
      });
      say(`kube-proxy on every node, CoreDNS at ${DNS_SERVICE_IP}`);
    }

    return {
      cp,
      kubeconfigPath: cp.kubeconfigPath,
      nodeNames,
      nodeIPs,
      network,
      containerds: Object.fromEntries(Object.entries(machines).map(([n, m]) => [n, m.containerd])),
      operatorLog,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}

/**
 * The cri cluster of test:upstream with two nodes, e2e.test's images in their containerds and the e2e build's
 * kubectl (scripts/upstream-e2e.sh `build`, then `import` per node), for tests and benchmarks of their own.
 * Resolves with the cluster and the e2e binaries' directory (kubectl, agnhost, e2e.test).
 */
export async function startE2eCriCluster(o: {
  logPrefix: string;
  say?: (line: string) => void;
}): Promise<{ cluster: UpstreamCluster; binDir: string }> {
  const e2e = path.join(REPO_ROOT, 'scripts/upstream-e2e.sh');
  const binDir = execFileSync('bash', [e2e, 'build'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
    .trim()
    .split('\n')
    .pop()!;
  const cluster = await startUpstreamCluster({
    runtime: 'cri',
    nodes: 2,
    logDir: mkdtempSync(path.join(tmpdir(), o.logPrefix)),
    importImages: async (sock) => {
      execFileSync('bash', [e2e, 'import', sock], { stdio: 'ignore' });
    },
    kubectl: path.join(binDir, 'kubectl'),
    ...(o.say ? { say: o.say } : {}),
  });
  return { cluster, binDir };
}
