/**
 * Operator replicas that share VirtualNodes by shard Leases: one replica process with the test settings
 * (15 s Leases renewed every 5 s), who holds which VirtualNode, and the split of the nodes between replicas.
 */
import path from 'node:path';
import type { Lease } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { leaseRole, SHARD_LABEL } from '../../src/operator/shard/api.js';
import { eventually } from './eventually.js';
import { OperatorProcess } from './operatorprocess.js';

/** The namespace of the replicas' shard Leases. */
export const SHARD_NS = 'kubelet-operator-system';

/** The flags that make a process replica `id`, sharing VirtualNodes by Leases in SHARD_NS. */
export function shardFlags(id: string): string[] {
  return ['--shard-leases', `--shard-identity=${id}`, `--shard-namespace=${SHARD_NS}`];
}

/** A replica `id` logging into `dir/<id>.log`, its state in `dir/<id>`; `extraArgs` go after the shard flags. */
export function shardReplica(
  dir: string,
  kubeconfig: string,
  id: string,
  extraArgs: readonly string[] = ['--log-level=info'],
): OperatorProcess {
  return new OperatorProcess(path.join(dir, `${id}.log`), kubeconfig, [
    ...extraArgs,
    ...shardFlags(id),
    '--shard-lease-duration-seconds=15',
    '--shard-renew-interval-seconds=5',
    `--state-dir=${path.join(dir, id)}`,
  ]);
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

/** Waits until the replicas hold the VirtualNodes as `want` (e.g. '5/5', '4/3/3'). */
export async function waitSplit(client: KubeClient, want: string, timeoutMs = 60_000): Promise<void> {
  await eventually(
    async () => (splitOf(await shardHolders(client, SHARD_NS)) === want ? true : undefined),
    timeoutMs,
    `a ${want} split`,
  );
}
