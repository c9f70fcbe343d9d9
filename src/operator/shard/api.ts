/**
 * The shard Leases' I/O (coordination.k8s.io/v1 Leases in the operator's namespace, labelled
 * `kubelet-operator.dev/shard`): one watch of them all, and create / update (with the resourceVersion as a
 * precondition) / delete by name. `restShardLeaseAPI` builds it over the KubeClient; unit tests use fakes.
 */
import { createHash } from 'node:crypto';
import type { Lease } from '../../api/node.js';
import type { KubeClient } from '../../kube/client.js';
import { restListWatcher, type ListWatcher } from '../../kube/informer.js';
import { isNotFound } from '../../util/errors.js';

/** Label on every shard Lease: `replica` (membership) or `virtualnode` (who serves it). */
export const SHARD_LABEL = 'kubelet-operator.dev/shard';
/** Annotation naming the VirtualNode of a `virtualnode` Lease (its name may be shortened). */
export const VIRTUAL_NODE_ANNOTATION = 'kubelet-operator.dev/virtualnode';

export type ShardLeaseRole = 'replica' | 'virtualnode';

export interface ShardLeaseAPI {
  leases: ListWatcher<Lease>;
  /** Rejects KindError('AlreadyExists') when it exists. */
  create(lease: Lease): Promise<Lease>;
  /** A PUT; the resourceVersion in `lease` is a precondition (KindError 'Conflict'), NotFound rejects. */
  update(lease: Lease): Promise<Lease>;
  /** Resolves quietly when it is already gone. */
  delete(name: string): Promise<void>;
}

export function restShardLeaseAPI(client: KubeClient, namespace: string): ShardLeaseAPI {
  const base = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  return {
    leases: restListWatcher<Lease>(client, base, { labelSelector: SHARD_LABEL }),
    create: (lease) => client.request<Lease>({ method: 'POST', path: base, body: lease }),
    update: (lease) =>
      client.request<Lease>({
        method: 'PUT',
        path: `${base}/${encodeURIComponent(lease.metadata.name ?? '')}`,
        body: lease,
      }),
    delete: (name) =>
      client.request({ method: 'DELETE', path: `${base}/${encodeURIComponent(name)}` }).then(
        () => undefined,
        (err: unknown) => {
          if (!isNotFound(err)) throw err;
        },
      ),
  };
}

/** The Lease of replica `identity`. */
export function replicaLeaseName(identity: string): string {
  return `replica-${identity}`;
}

/** The Lease of VirtualNode `name`: `vn-<name>`, shortened with a digest when that is too long. */
export function virtualNodeLeaseName(name: string): string {
  const full = `vn-${name}`;
  if (full.length <= 253) return full;
  const digest = createHash('sha256').update(name).digest('hex').slice(0, 16);
  return `vn-${name.slice(0, 200).replace(/[.-]+$/, '')}-${digest}`;
}

/** Which role a shard Lease plays and, for a VirtualNode's, which one; undefined for anything else. */
export function leaseRole(
  lease: Lease,
): { role: 'replica'; identity: string } | { role: 'virtualnode'; node: string } | undefined {
  const role = lease.metadata.labels?.[SHARD_LABEL];
  const name = lease.metadata.name ?? '';
  if (role === 'replica' && name.startsWith('replica-'))
    return { role, identity: name.slice('replica-'.length) };
  if (role === 'virtualnode') {
    const node = lease.metadata.annotations?.[VIRTUAL_NODE_ANNOTATION];
    if (node) return { role, node };
  }
  return undefined;
}
