/**
 * The VirtualNode controller's I/O: the three collections it watches (VirtualNodes, bound pods, Services)
 * and the two writes it makes to a VirtualNode (its finalizers, its status subresource). `restOperatorAPI`
 * builds them over the KubeClient; unit tests pass in-memory fakes.
 */
import type { Pod } from '../api/core.js';
import type { Service } from '../api/service.js';
import { GROUP, PLURAL, VERSION, type VirtualNode, type VirtualNodeStatus } from '../api/virtualnode.js';
import { PatchTypes, type KubeClient } from '../kube/client.js';
import { restListWatcher, type ListWatcher } from '../kube/informer.js';
import { isNotFound } from '../util/errors.js';

export const VIRTUAL_NODES_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;

/** The writes the controller makes. Both resolve quietly when the VirtualNode is gone. */
export interface VirtualNodeWriter {
  /**
   * Sets metadata.finalizers. `resourceVersion` is a precondition: a stale one rejects with
   * KindError('Conflict'), so a finalizer list read from an old cache never overwrites a newer one.
   * Resolves false when the VirtualNode is gone.
   */
  patchFinalizers(name: string, resourceVersion: string | undefined, finalizers: string[]): Promise<boolean>;
  /** Merge-patches the status subresource with `status`. */
  patchStatus(name: string, status: VirtualNodeStatus): Promise<void>;
}

export interface OperatorAPI {
  /** VirtualNodes this process serves (the label selector already applied). */
  virtualNodes: ListWatcher<VirtualNode>;
  /** Every pod bound to a node (spec.nodeName set); routed to nodes by the controller. */
  pods: ListWatcher<Pod>;
  /** Every Service: pods' service link variables. */
  services: ListWatcher<Service>;
  writer: VirtualNodeWriter;
}

export function restOperatorAPI(client: KubeClient, virtualNodeSelector?: string): OperatorAPI {
  const swallowNotFound = (err: unknown): void => {
    if (!isNotFound(err)) throw err;
  };
  return {
    virtualNodes: restListWatcher(
      client,
      VIRTUAL_NODES_PATH,
      virtualNodeSelector ? { labelSelector: virtualNodeSelector } : {},
    ),
    // One watch for every bound pod, rather than one per node: the API server filters on the field. A pod
    // has no user-keyed map of arrays, so its managedFields can be cut before parsing (managedfields.ts).
    pods: restListWatcher(client, '/api/v1/pods', { fieldSelector: 'spec.nodeName!=' }, Math.random, {
      dropManagedFields: true,
    }),
    services: restListWatcher(client, '/api/v1/services', {}),
    writer: {
      patchFinalizers: (name, resourceVersion, finalizers) =>
        client
          .request({
            method: 'PATCH',
            path: `${VIRTUAL_NODES_PATH}/${name}`,
            contentType: PatchTypes.merge,
            body: { metadata: { finalizers, resourceVersion } },
          })
          .then(
            () => true,
            (err: unknown) => {
              swallowNotFound(err);
              return false;
            },
          ),
      patchStatus: (name, status) =>
        client
          .request({
            method: 'PATCH',
            path: `${VIRTUAL_NODES_PATH}/${name}/status`,
            contentType: PatchTypes.merge,
            body: { status },
          })
          .then(() => undefined, swallowNotFound),
    },
  };
}
