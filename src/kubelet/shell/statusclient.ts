/**
 * The status manager's three API calls over the rate-limited KubeClient (kubelet: the clientset calls of
 * status_manager.go syncPod): GET the pod, PATCH `pods/<name>/status` with a strategic merge patch whose
 * body carries the UID precondition (answered with the pod's metadata only), and the final DELETE with grace
 * period 0 and a UID precondition, so a pod recreated under the same name is never patched or deleted by
 * mistake.
 */
import type { ObjectMeta, Pod } from '../../api/core.js';
import { PartialObjectMetadataJSON, PatchTypes, type KubeClient } from '../../kube/client.js';
import type { PodStatusClient } from '../status/interfaces.js';
import type { PodStatusPatch } from '../status/patch.js';

const enc = encodeURIComponent;

function podPath(namespace: string, name: string): string {
  return `/api/v1/namespaces/${enc(namespace)}/pods/${enc(name)}`;
}

/**
 * PodStatusClient over KubeClient. Failures are the client's KindErrors (`NotFound` for a missing pod,
 * `Conflict` when the UID precondition fails, `Unavailable` for transport trouble).
 */
export function restPodStatusClient(client: Pick<KubeClient, 'request'>): PodStatusClient {
  return {
    getPod: (namespace, name) => client.request<Pod>({ method: 'GET', path: podPath(namespace, name) }),
    patchPodStatus: (namespace, name, _uid: string, patch: PodStatusPatch) =>
      // The precondition travels in the body (`metadata.uid`), as the kubelet's PatchPodStatus sends it. The
      // status manager reads only the answer's metadata (UID, resourceVersion, deletionTimestamp), and
      // never its managedFields, most of what a metadata answer holds.
      client.request<{ metadata: ObjectMeta }>({
        method: 'PATCH',
        path: `${podPath(namespace, name)}/status`,
        body: patch,
        contentType: PatchTypes.strategic,
        accept: PartialObjectMetadataJSON,
        dropManagedFields: true,
      }),
    deletePod: async (namespace, name, uid, gracePeriodSeconds) => {
      await client.request({
        method: 'DELETE',
        path: podPath(namespace, name),
        body: {
          apiVersion: 'v1',
          kind: 'DeleteOptions',
          gracePeriodSeconds,
          preconditions: { uid },
        },
      });
    },
  };
}
