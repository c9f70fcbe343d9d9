/**
 * The VirtualNode controller's I/O: what it watches (VirtualNodes, Services, the Nodes of VirtualNodes, each
 * served node's pods and its PodCertificateRequests) and the two writes it makes to a VirtualNode (its
 * finalizers, its status subresource). `restOperatorAPI` builds them over the KubeClient; unit tests pass
 * in-memory fakes.
 */
import type { Pod } from '../api/core.js';
import type { Node } from '../api/node.js';
import { ALL_PODCERTIFICATEREQUESTS_PATH, type PodCertificateRequest } from '../api/podcertificaterequest.js';
import type { Service } from '../api/service.js';
import { GROUP, PLURAL, VERSION, type VirtualNode, type VirtualNodeStatus } from '../api/virtualnode.js';
import { PatchTypes, type KubeClient } from '../kube/client.js';
import { restListWatcher, type ListWatcher } from '../kube/informer.js';
import { VIRTUAL_NODE_LABEL } from '../node/registration.js';
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
  /**
   * The pods bound to one node (field selector spec.nodeName=`nodeName`), as each kubelet watches its own:
   * the API server sends a process only the pods of the nodes it serves.
   */
  podsOfNode(nodeName: string): ListWatcher<Pod>;
  /**
   * The Nodes VirtualNodes registered (label selector VIRTUAL_NODE_LABEL), one watch for the process: each
   * served node reads its own by name, as a kubelet reads its node informer (field selector metadata.name),
   * so admission sees its labels, taints and allocatable as they are now. One watch, not one per node: at
   * 1,000 nodes their lists and watches were a third of the API server's requests while the nodes started.
   */
  virtualNodeNodes: ListWatcher<Node>;
  /**
   * The PodCertificateRequests of one node (field selector spec.nodeName=`nodeName`), as each kubelet watches
   * its own: the podCertificate sources of its pods' projected volumes read their signers' answers there.
   * Listed and watched from the node's first pod with such a source (the only reader).
   */
  podCertificateRequestsOfNode(nodeName: string): ListWatcher<PodCertificateRequest>;
  /** Every Service: pods' service link variables. */
  services: ListWatcher<Service>;
  writer: VirtualNodeWriter;
}

export function restOperatorAPI(client: KubeClient, virtualNodeSelector?: string): OperatorAPI {
  const swallowNotFound = (err: unknown): void => {
    if (!isNotFound(err)) throw err;
  };
  // One watch per served node: over HTTP/2 they share a connection (h2watches.ts); should the server refuse
  // HTTP/2, each holds a connection of its own, from a pool without a bound so that they never take the
  // connections the writes queue for. Their lists are short requests, on the main pool.
  const watchClient = client.withPool(Infinity);
  return {
    virtualNodes: restListWatcher(
      client,
      VIRTUAL_NODES_PATH,
      virtualNodeSelector ? { labelSelector: virtualNodeSelector } : {},
    ),
    // One watch per node, not one for every bound pod: a cluster's other pods (on real kubelets, or on
    // another replica's nodes) are neither sent nor parsed nor cached here, and the API server's watch cache
    // hands each pod event only to the watch of its node. A pod has no user-keyed map of arrays, so its
    // managedFields can be cut before parsing (managedfields.ts).
    podsOfNode: (nodeName) =>
      restListWatcher(
        client,
        '/api/v1/pods',
        { fieldSelector: `spec.nodeName=${nodeName}` },
        Math.random,
        { dropManagedFields: true },
        watchClient,
      ),
    virtualNodeNodes: restListWatcher(
      client,
      '/api/v1/nodes',
      { labelSelector: VIRTUAL_NODE_LABEL },
      Math.random,
      {},
      watchClient,
    ),
    podCertificateRequestsOfNode: (nodeName) =>
      restListWatcher(
        client,
        ALL_PODCERTIFICATEREQUESTS_PATH,
        { fieldSelector: `spec.nodeName=${nodeName}` },
        Math.random,
        {},
        watchClient,
      ),
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
