// Shared by `npm run up` and test/cluster: the CRD on a control plane, an in-process operator serving the
// VirtualNodes that carry one label value, and VirtualNodes created and awaited through the API only.
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { kubeletNodeFactory } from '../../src/app/kubeletnode.js';
import { restVolumeSources } from '../../src/kubelet/volume/sources.js';
import type { Metrics } from '../../src/metrics.js';
import { Operator } from '../../src/operator.js';
import type { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import type { Clock } from '../../src/util/clock.js';
import type { Logger } from '../../src/util/logger.js';
export { applyCrd } from '../../test/support/crd.js';

/** The label whose value says which in-process operator serves a VirtualNode. */
export const SERVED_BY_LABEL = 'kubelet-operator.dev/served-by';

export const VN_PATH = '/apis/kubelet-operator.dev/v1alpha1/virtualnodes';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An operator serving only the VirtualNodes labelled `SERVED_BY_LABEL=<servedBy>`; started. */
export async function startOperator(opts: {
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  servedBy: string;
  statusPeriodMs?: number;
  /** The node API routing table the started nodes register in (see serveNodeApi). */
  nodeApi?: NodeApiRegistry;
  /** Where cri nodes keep their pod directories (`<stateDir>/nodes/<node>/pods`). */
  stateDir?: string;
  /** Cluster DNS servers for pods with dnsPolicy ClusterFirst (none: they fall back to Default). */
  clusterDNS?: string[];
  /** The token manager's clock (tests: a faster one, to see token refreshes in seconds). */
  tokenClock?: Clock;
  /** The nodes' metrics (kubelet_* series), as the operator process keeps them; served on /metrics. */
  metrics?: Metrics;
}): Promise<Operator> {
  const operator = new Operator({
    client: opts.client,
    clock: opts.clock,
    logger: opts.logger,
    virtualNodeSelector: `${SERVED_BY_LABEL}=${opts.servedBy}`,
    statusPeriodMs: opts.statusPeriodMs,
    factory: kubeletNodeFactory({
      client: opts.client,
      clock: opts.clock,
      logger: opts.logger,
      defaultInternalIP: '127.0.0.1',
      nodeApiPort: 10250,
      nodeApi: opts.nodeApi,
      ...(opts.stateDir ? { stateDir: opts.stateDir } : {}),
      ...(opts.clusterDNS ? { clusterDNS: opts.clusterDNS } : {}),
      ...(opts.tokenClock ? { tokenClock: opts.tokenClock } : {}),
      ...(opts.metrics ? { metrics: opts.metrics } : {}),
      sources: restVolumeSources(opts.client, opts.clock),
    }),
  });
  await operator.start();
  return operator;
}

/** Creates a VirtualNode (an existing one is left as it is). `spec` is the VirtualNode spec. */
export async function createVirtualNode(
  client: KubeClient,
  name: string,
  servedBy: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await client
    .request({
      method: 'POST',
      path: VN_PATH,
      body: {
        apiVersion: 'kubelet-operator.dev/v1alpha1',
        kind: 'VirtualNode',
        metadata: { name, labels: { [SERVED_BY_LABEL]: servedBy } },
        spec,
      },
    })
    .catch((err: unknown) => {
      if (!(err instanceof Error && err.message.includes('AlreadyExists'))) throw err;
    });
}

export function nodeReady(node: Node | undefined): boolean {
  return node?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Waits until the Node is Ready; throws after `timeoutMs`. */
export async function waitNodeReady(client: KubeClient, name: string, timeoutMs = 60_000): Promise<Node> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const node = await client
      .request<Node>({ method: 'GET', path: `/api/v1/nodes/${name}` })
      .catch(() => undefined);
    if (node && nodeReady(node)) return node;
    if (Date.now() > deadline) throw new Error(`node ${name} not Ready after ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

interface Csr {
  metadata: { name: string };
  spec: { signerName: string; request: string };
  status?: { conditions?: { type: string }[] };
}

const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

/**
 * Approves, as the cluster admin would with `kubectl certificate approve`, every pending node serving
 * certificate request (signer kubernetes.io/kubelet-serving) until `signal` aborts. For the local cluster
 * only, where the operator is the only thing that asks for such certificates.
 */
export async function approveServingCsrs(
  client: KubeClient,
  signal: AbortSignal,
  onApproved?: (name: string) => void,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const list = await client.request<{ items: Csr[] }>({ method: 'GET', path: CSR_PATH });
      for (const csr of list.items) {
        if (csr.spec.signerName !== 'kubernetes.io/kubelet-serving') continue;
        if ((csr.status?.conditions ?? []).length > 0) continue;
        await client.request({
          method: 'PUT',
          path: `${CSR_PATH}/${csr.metadata.name}/approval`,
          body: {
            ...csr,
            status: {
              ...csr.status,
              conditions: [
                {
                  type: 'Approved',
                  status: 'True',
                  reason: 'LocalClusterApproval',
                  message: 'approved for the local cluster of kubelet-operator',
                },
              ],
            },
          },
        });
        onApproved?.(csr.metadata.name);
      }
    } catch {
      // A conflict or a restart of the API server: the next round sees the current state.
    }
    await sleep(300);
  }
}
