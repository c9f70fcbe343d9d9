/**
 * The cluster side of the chaos scenarios: the pods they run (a busybox sleeper, an agnhost server with a TCP
 * readiness probe), the Node Leases' renew times, and the pods/status writes of the API server's audit log.
 */
import type { Pod } from '../../../src/api/core.js';
import type { Lease } from '../../../src/api/node.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { SimBehaviourAnnotation } from '../../../src/runtime/sim/profile.js';

/** `sleep 3600` in busybox: running as soon as it starts, ready without a probe. */
export function sleeperPod(name: string, node: string, image = 'busybox'): Pod {
  return {
    metadata: { name, labels: { chaos: 'sleeper' } },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
    },
  };
}

/** An agnhost netexec server on 8080, ready once its TCP readiness probe passes (the sim answers on 8080). */
export function probedPod(name: string, node: string, periodSeconds = 5): Pod {
  return {
    metadata: {
      name,
      labels: { chaos: 'probed' },
      annotations: { [SimBehaviourAnnotation]: '{"ports":{"8080":{}}}' },
    },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'app',
          image: 'registry.k8s.io/e2e-test-images/agnhost:2.53',
          args: ['netexec', '--http-port=8080'],
          ports: [{ containerPort: 8080 }],
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds },
        },
      ],
    },
  };
}

export async function createPod(client: KubeClient, ns: string, pod: Pod): Promise<Pod> {
  return client.request<Pod>({ method: 'POST', path: `/api/v1/namespaces/${ns}/pods`, body: pod });
}

export async function deletePod(client: KubeClient, ns: string, name: string): Promise<void> {
  await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${ns}/pods/${name}` });
}

export async function listPods(client: KubeClient, ns: string): Promise<Pod[]> {
  return (await client.request<{ items: Pod[] }>({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods` }))
    .items;
}

/** Node name -> the renewTime (epoch ms) of its Lease in kube-node-lease. */
export async function nodeLeaseRenewals(
  client: KubeClient,
  nodes: readonly string[],
): Promise<Map<string, number>> {
  const list = await client.request<{ items: Lease[] }>({
    method: 'GET',
    path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases',
  });
  const out = new Map<string, number>();
  for (const l of list.items) {
    const name = l.metadata.name ?? '';
    if (nodes.includes(name) && l.spec.renewTime) out.set(name, Date.parse(l.spec.renewTime));
  }
  return out;
}
