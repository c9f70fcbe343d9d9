/**
 * The cluster the upstream e2e suite runs against: real etcd, kube-apiserver, kube-scheduler and
 * kube-controller-manager, and kubelet-operator (in this process) as the only node agent.
 *
 * - `cri` (default): a private containerd holding the e2e images under their upstream names, on a pod network
 *   private to the run (test/support/podnetwork.ts), and `nodes` untainted cri VirtualNodes `cri-1..N`. Each
 *   node's InternalIP is an address of its own on the run's bridge, so the API server dials its node API
 *   there, `nodes/<name>/proxy` works (loopback addresses are refused for it), and two pods may use the same
 *   port on two nodes.
 * - `sim`: `nodes` untainted sim VirtualNodes `sim-1..N` on the simulated runtime (no containerd, no root),
 *   for the specs that only need a kubelet's status handling.
 *
 * The node API serves on :10250 of every address with serving certificates requested by CSR and approved here
 * as a cluster admin would. The e2e suite refuses to start while any Node is not Ready or is tainted, so the
 * cluster holds nothing else.
 */
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { removeStateDir } from '../support/statedir.js';
import path from 'node:path';
import { KubeClient } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
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
import { startContainerd, type TestContainerd } from '../support/containerd.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
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
}

export interface UpstreamCluster {
  cp: ControlPlane;
  kubeconfigPath: string;
  nodeNames: string[];
  /** Per node, its InternalIP. */
  nodeIPs: Record<string, string>;
  network?: PodNetwork;
  containerd?: TestContainerd;
  operatorLog: string;
  stop(): Promise<void>;
}

export async function startUpstreamCluster(o: UpstreamClusterOptions): Promise<UpstreamCluster> {
  const say = o.say ?? (() => undefined);
  await mkdir(o.logDir, { recursive: true });
  const cleanups: (() => Promise<unknown>)[] = [];
  const stopAll = async (): Promise<void> => {
    for (const c of cleanups.splice(0).reverse())
      await c().catch((err: unknown) => say(`cleanup: ${String(err)}`));
  };
  try {
    // The nodes' pod directories (volumes, /etc/hosts, termination messages), which containerd mounts from:
    // removed last, once containerd is gone.
    const stateDir = await mkdtemp(path.join(tmpdir(), 'ko-state-'));
    cleanups.push(() => removeStateDir(stateDir));
    let network: PodNetwork | undefined;
    let containerd: TestContainerd | undefined;
    const criReady =
      o.runtime === 'cri'
        ? (async () => {
            network = await createPodNetwork();
            cleanups.push(() => network!.stop());
            say(`pod network ${network.cidr} on bridge ${network.bridge}`);
            containerd = await startContainerd();
            cleanups.push(() => containerd!.stop());
            await network.attachContainerd(containerd.dir);
            if (o.importImages) await o.importImages(containerd.socketPath);
            say(`containerd ${containerd.endpoint} with the e2e images`);
          })()
        : Promise.resolve();
    criReady.catch(() => undefined);
    const cp = await startControlPlane({ scheduler: true, controllerManager: true });
    cleanups.push(() => cp.stop());
    say(`control plane ${cp.server} (logs ${path.join(cp.dir, 'logs')})`);
    await criReady;

    const operatorLog = path.join(o.logDir, 'operator.log');
    const logger = createLogger('info', { component: 'kubelet-operator' }, operatorLog);
    const clock = new RealClock();
    const client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { clock });
    cleanups.push(async () => client.close());
    await applyCrd(cp);

    const registry = new NodeApiRegistry();
    const nodeApi: ServedNodeApi = await serveNodeApi({
      client,
      clock,
      logger,
      registry,
      certificates: { mode: 'csr' },
      clientCA: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
      port: NODE_API_PORT,
      address: '0.0.0.0',
    });
    cleanups.push(() => nodeApi.close());
    const approving = new AbortController();
    void approveServingCsrs(client, approving.signal);
    cleanups.push(async () => approving.abort());
    const operator: Operator = await startOperator({
      client,
      clock,
      logger,
      servedBy: SERVED_BY,
      nodeApi: registry,
      stateDir,
    });
    cleanups.push(() => operator.stop());

    const nodeNames: string[] = [];
    const nodeIPs: Record<string, string> = {};
    for (let i = 0; i < o.nodes; i++) {
      const name = `${o.runtime}-${i + 1}`;
      nodeNames.push(name);
      // sim nodes have no bridge: a loopback address each is enough for what they serve.
      const ip = network ? await network.nodeIP(i) : `127.0.0.${21 + i}`;
      nodeIPs[name] = ip;
      const runtime =
        o.runtime === 'cri'
          ? {
              type: 'cri',
              cri: {
                endpoint: containerd!.endpoint,
                cgroupRoot: containerd!.cgroupParentPrefix,
                logRoot: path.join(containerd!.dir, 'pod-logs'),
                podNetwork: 'cni',
              },
            }
          : { type: 'sim' };
      await createVirtualNode(client, name, SERVED_BY, { internalIP: ip, runtime });
    }
    await Promise.all(nodeNames.map((n) => waitNodeReady(client, n, 120_000)));
    say(`nodes Ready: ${nodeNames.map((n) => `${n} (${nodeIPs[n]})`).join(', ')}`);

    return {
      cp,
      kubeconfigPath: cp.kubeconfigPath,
      nodeNames,
      nodeIPs,
      network,
      containerd,
      operatorLog,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
