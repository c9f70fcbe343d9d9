// Shared by `npm run up` and test:upstream: cri VirtualNodes that each live in a network namespace of their
// own, as on machines of their own, and the cluster around them that gives pods Services and DNS.
//
// Per node: a namespace on the run's bridge (test/support/podnetwork.ts addNode), a containerd inside it
// whose CNI config is written from a template once the kubelet hands it the Node's pod CIDR (assigned by
// kube-controller-manager's node IPAM), and the node API's listener on the node's address, opened inside the
// namespace and served by the operator. Then the routes between the nodes' pod ranges (what a cloud's route
// controller does), and the add-ons: kube-proxy as a DaemonSet (its pod on each node programs that node's
// namespace) and CoreDNS behind the kube-dns Service at DNS_SERVICE_IP.
import path from 'node:path';
import type { Node } from '../../src/api/node.js';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { ServedNodeApi } from '../../src/server/nodeapi/serve.js';
import { startContainerd, type TestContainerd } from '../../test/support/containerd.js';
import { REPO_ROOT } from '../../test/support/controlplane.js';
import type { NodeNetns, PodNetwork } from '../../test/support/podnetwork.js';
import { applyAddons, type AddonOptions } from './addons.js';
import { spawn } from 'node:child_process';

/** The kube-dns Service's ClusterIP: the nodes' clusterDNS. In the control plane's 10.0.0.0/24. */
export const DNS_SERVICE_IP = '10.0.0.10';
export const CLUSTER_DOMAIN = 'cluster.local';
const ADDONS_SCRIPT = path.join(REPO_ROOT, 'scripts/cluster-addons.sh');
const NODE_API_PORT = 10250;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface NodeMachine {
  netns: NodeNetns;
  containerd: TestContainerd;
  /** The VirtualNode's spec.runtime for this node. */
  runtime: Record<string, unknown>;
}

function runScript(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [ADDONS_SCRIPT, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve()
        : reject(
            new Error(`bash scripts/cluster-addons.sh ${args.join(' ')} exited ${code}: ${stderr.trim()}`),
          ),
    );
  });
}

/**
 * The `i`-th node's namespace, its containerd (with the add-ons' images and whatever `importImages` adds), and
 * its node API listener handed to `nodeApi`. `cleanups` receives what undoes each step, in order.
 */
export async function startNodeMachine(o: {
  network: PodNetwork;
  index: number;
  nodeApi: ServedNodeApi;
  /** cgroups, logs: as for any cri VirtualNode. */
  logRoot: (containerd: TestContainerd) => string;
  importImages?: (socketPath: string) => Promise<void>;
  cleanups: (() => Promise<unknown>)[];
}): Promise<NodeMachine> {
  const netns = await o.network.addNode(o.index);
  const containerd = await startContainerd({
    netns: { path: netns.path, streamAddress: netns.ip },
    cniConfTemplate: netns.cniConfTemplate,
  });
  o.cleanups.push(() => containerd.stop());
  await netns.attachContainerd(containerd.dir);
  await Promise.all([runScript(['import', containerd.socketPath]), o.importImages?.(containerd.socketPath)]);
  const listener = await netns.listen(NODE_API_PORT);
  o.nodeApi.adopt(listener);
  return {
    netns,
    containerd,
    runtime: {
      type: 'cri',
      cri: {
        endpoint: containerd.endpoint,
        cgroupRoot: containerd.cgroupParentPrefix,
        logRoot: o.logRoot(containerd),
        podNetwork: 'cni',
      },
    },
  };
}

/**
 * Routes each Node's pod CIDR via its address, once kube-controller-manager assigned it (the nodes turn Ready
 * with it; their pods need the routes to reach each other's).
 */
export async function routeNodePodCIDRs(
  client: KubeClient,
  network: PodNetwork,
  nodeIPs: Record<string, string>,
  timeoutMs = 120_000,
): Promise<Record<string, string>> {
  const deadline = Date.now() + timeoutMs;
  const routed: Record<string, string> = {};
  for (const [name, ip] of Object.entries(nodeIPs)) {
    for (;;) {
      const node = await client
        .request<Node>({ method: 'GET', path: `/api/v1/nodes/${name}` })
        .catch(() => undefined);
      const cidr = node?.spec?.podCIDR;
      if (cidr) {
        await network.routePodCIDR(ip, cidr);
        routed[name] = cidr;
        break;
      }
      if (Date.now() > deadline)
        throw new Error(
          `node ${name} has no pod CIDR after ${timeoutMs / 1000} s (kube-controller-manager's node IPAM)`,
        );
      await sleep(250);
    }
  }
  return routed;
}

function podReady(p: Pod): boolean {
  return p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/**
 * Applies kube-proxy and CoreDNS and waits until a kube-proxy pod is Ready on every one of `nodes` and every
 * CoreDNS pod is Ready.
 */
export async function startClusterAddons(o: {
  client: KubeClient;
  kubeconfig: string;
  /** The API server as pods reach it (ControlPlane.podNetworkServer). */
  apiServer: string;
  clusterCIDR: string;
  nodes: readonly string[];
  kubectl?: string;
  timeoutMs?: number;
  /** Where kube-proxy and CoreDNS may run (see AddonOptions.placement). */
  placement?: AddonOptions['placement'];
}): Promise<void> {
  await applyAddons({
    kubeconfig: o.kubeconfig,
    apiServer: o.apiServer,
    clusterCIDR: o.clusterCIDR,
    dnsServiceIP: DNS_SERVICE_IP,
    clusterDomain: CLUSTER_DOMAIN,
    ...(o.kubectl ? { kubectl: o.kubectl } : {}),
    ...(o.placement ? { placement: o.placement } : {}),
  });
  const timeoutMs = o.timeoutMs ?? 180_000;
  const deadline = Date.now() + timeoutMs;
  let missing = '';
  for (;;) {
    const pods = await o.client
      .request<{ items: Pod[] }>({ method: 'GET', path: '/api/v1/namespaces/kube-system/pods' })
      .then((l) => l.items)
      .catch(() => [] as Pod[]);
    const ready = pods.filter(podReady);
    const proxied = new Set(
      ready.filter((p) => p.metadata.labels?.['k8s-app'] === 'kube-proxy').map((p) => p.spec?.nodeName),
    );
    const dns = pods.filter((p) => p.metadata.labels?.['k8s-app'] === 'kube-dns');
    const waiting = [
      ...o.nodes.filter((n) => !proxied.has(n)).map((n) => `kube-proxy on ${n}`),
      ...(dns.length === 0 ? ['coredns pods'] : dns.filter((p) => !podReady(p)).map((p) => p.metadata.name)),
    ];
    if (waiting.length === 0) return;
    missing = waiting.join(', ');
    if (Date.now() > deadline)
      throw new Error(`cluster add-ons not Ready after ${timeoutMs / 1000} s: waiting for ${missing}`);
    await sleep(500);
  }
}
