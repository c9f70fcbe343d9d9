/**
 * The cluster side of the chaos scenarios: the pods they run (a busybox sleeper, an agnhost server with a TCP
 * readiness probe), who holds which VirtualNode by the shard Leases, the Node Leases' renew times, and the
 * pods/status writes of the API server's audit log.
 */
import { readFileSync } from 'node:fs';
import type { Pod } from '../../../src/api/core.js';
import type { Lease } from '../../../src/api/node.js';
import type { KubeClient } from '../../../src/kube/client.js';
import { leaseRole, SHARD_LABEL } from '../../../src/operator/shard/api.js';
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

/** VirtualNode -> holder, from the `virtualnode` shard Leases of `ns` (a Lease without a holder is left out). */
export async function shardHolders(client: KubeClient, ns: string): Promise<Map<string, string>> {
  const list = await client.request<{ items: Lease[] }>({
    method: 'GET',
    path: `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases`,
    query: { labelSelector: `${SHARD_LABEL}=virtualnode` },
  });
  const out = new Map<string, string>();
  for (const l of list.items) {
    const role = leaseRole(l);
    if (role?.role === 'virtualnode' && l.spec.holderIdentity) out.set(role.node, l.spec.holderIdentity);
  }
  return out;
}

/** How many VirtualNodes each holder has, largest first: `5/5`. */
export function splitOf(holders: Map<string, string>): string {
  const counts = new Map<string, number>();
  for (const h of holders.values()) counts.set(h, (counts.get(h) ?? 0) + 1);
  return [...counts.values()].sort((a, b) => b - a).join('/');
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

/** Audit policy: pods/status writes at Metadata level, nothing else. */
export const POD_STATUS_AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [patch, update]
    resources:
      - group: ''
        resources: [pods/status]
  - level: None
`;

export interface AuditEvent {
  verb: string;
  stage: string;
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  stageTimestamp: string;
  responseStatus?: { code?: number };
}

/** The pods/status writes of namespace `ns` that completed in [since, until), from the audit log. */
export function podStatusWrites(auditLog: string, ns: string, since: number, until = Infinity): AuditEvent[] {
  return readFileSync(auditLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) => {
      const at = Date.parse(e.stageTimestamp);
      return (
        e.stage === 'ResponseComplete' &&
        e.objectRef?.resource === 'pods' &&
        e.objectRef.subresource === 'status' &&
        e.objectRef.namespace === ns &&
        at >= since &&
        at < until
      );
    });
}
