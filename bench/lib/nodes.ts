// Nodes for each side: VirtualNodes for our operator (it registers the Nodes), plain Node objects with kwok's
// annotation for kwok. Same count and the same pod capacity on both sides.
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { createVirtualNode, nodeReady, VN_PATH } from '../../scripts/lib/cluster.js';
import { KWOK_NODE_ANNOTATION } from './agents.js';
import { forEachConcurrently } from '../../src/util/pool.js';

/** The label value our benchmark operator selects (`kubelet-operator.dev/served-by=<this>`). */
export const SERVED_BY = 'bench';

/** The cluster DNS Service address the benchmark's VirtualNodes are given (kubeadm's default). */
export const BENCH_CLUSTER_DNS = '10.96.0.10';

/** The driver's concurrent node (or VirtualNode) creates, the same for both sides. */
export const NODE_CREATE_CONCURRENCY = 64;

export function nodeNames(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
}

/** Room for the benchmark's pods plus the warm-up pod. */
export function podCapacity(podsPerNode: number): number {
  return Math.max(110, podsPerNode + 10);
}

export async function createSimVirtualNodes(
  client: KubeClient,
  names: readonly string[],
  podsPerNode: number,
  concurrency = NODE_CREATE_CONCURRENCY,
  /** spec.internalIP per node (the node API routes by the address dialled); unset: the operator's default. */
  internalIPs?: ReadonlyMap<string, string>,
  /** Merged into the spec's `kubelet` and `capacity` (e.g. eviction settings, a memory capacity). */
  more: { kubelet?: Record<string, unknown>; capacity?: Record<string, unknown> } = {},
) {
  await forEachConcurrently(names, concurrency, (name) =>
    createVirtualNode(client, name, SERVED_BY, {
      ...(internalIPs?.has(name) ? { internalIP: internalIPs.get(name) } : {}),
      runtime: { type: 'sim' },
      // A cluster's kubelets know its DNS service (the pods' dnsPolicy is ClusterFirst); without it every
      // pod start also records the kubelet's MissingClusterDNS warning. The address is only written into
      // the simulated pods' resolv.conf.
      kubelet: { clusterDNS: [BENCH_CLUSTER_DNS], ...more.kubelet },
      capacity: { cpu: '64', memory: '256Gi', pods: podCapacity(podsPerNode), ...more.capacity },
    }),
  );
}

/**
 * The first VirtualNode write after the CRD is installed takes about 2 s on a fresh API server (its
 * storage comes up lazily), a cost kwok's built-in Nodes never pay: one throwaway VirtualNode, served by
 * nobody, is created and deleted before the clock starts.
 */
export async function warmVirtualNodeStorage(client: KubeClient): Promise<void> {
  const name = 'bench-warm-storage';
  await createVirtualNode(client, name, 'nobody', { runtime: { type: 'sim' } });
  await client.request({ method: 'DELETE', path: `${VN_PATH}/${name}` });
}

export async function createKwokNodes(
  client: KubeClient,
  names: readonly string[],
  podsPerNode: number,
  concurrency = NODE_CREATE_CONCURRENCY,
  /** The KWOK_NODE_ANNOTATION value, which the kwok side selects its Nodes by. */
  annotationValue = KWOK_NODE_ANNOTATION.value,
) {
  const resources = { cpu: '64', memory: '256Gi', pods: String(podCapacity(podsPerNode)) };
  await forEachConcurrently(names, concurrency, async (name) => {
    await client.request({
      method: 'POST',
      path: '/api/v1/nodes',
      body: {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          annotations: { [KWOK_NODE_ANNOTATION.key]: annotationValue },
          labels: { type: 'kwok', 'kubernetes.io/hostname': name },
        },
        status: { capacity: resources, allocatable: resources },
      },
    });
  });
}

/**
 * Resolves true once every named Node is Ready, false on timeout, from a watch, so the moment is exact (a 250 ms
 * poll put up to a quarter second on both sides' figure). A watch without a resourceVersion starts with an
 * ADDED event for every Node there is (as the Lease watcher relies on); one that ends early starts over.
 */
export async function waitNodesReady(client: KubeClient, names: readonly string[], timeoutMs: number) {
  const want = new Set(names);
  const deadline = Date.now() + timeoutMs;
  const ready = new Set<string>();
  while (Date.now() < deadline) {
    ready.clear();
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), Math.max(0, deadline - Date.now()));
    try {
      await client.watch(
        '/api/v1/nodes',
        { timeoutSeconds: Math.ceil(timeoutMs / 1000) },
        (e) => {
          const n = e.object as Node;
          const name = n.metadata?.name ?? '';
          if (!want.has(name)) return;
          if (e.type !== 'DELETED' && nodeReady(n)) ready.add(name);
          else ready.delete(name);
          if (ready.size === want.size) stop.abort();
        },
        stop.signal,
      );
    } catch {
      // A broken stream: watch again.
    } finally {
      clearTimeout(timer);
    }
    if (ready.size === want.size) return true;
  }
  return false;
}
