/**
 * The CSI plugin's host on one node (kubelet: the csi plugin's VolumeHost and its CSIDriver and
 * VolumeAttachment listers): the Node service of a driver the plugin manager registered, and the two API
 * objects a CSI volume's set-up reads, by GET at low priority (the kubelet keeps informers of them).
 */
import type { PersistentVolume } from '../../../api/volumes.js';
import { PatchTypes, type KubeClient } from '../../../kube/client.js';
import { isNotFound } from '../../../util/errors.js';
import { kubeletRootPaths } from '../../rootdir.js';
import type { CSIDriver, CSIHost, VolumeAttachment } from '../csi.js';
import type { ExpandableClaim } from '../csiexpand.js';
import { grpcCSINodeClient } from './csiclient.js';

async function getOrUndefined<T>(client: Pick<KubeClient, 'request'>, path: string): Promise<T | undefined> {
  try {
    return await client.request<T>({ method: 'GET', path, priority: 'low' });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function csiHostFor(o: {
  client: Pick<KubeClient, 'request'>;
  nodeName: string;
  /** The node's kubelet root directory. */
  rootDir: string;
  /** The socket (on this host) of a registered driver; undefined while it is not registered. */
  endpoint: (driver: string) => string | undefined;
  /** The CSI handler's refresh of a driver's allocatable count (MutableCSINodeAllocatableCount). */
  refreshAllocatable?: (driver: string) => Promise<boolean>;
}): CSIHost {
  const enc = encodeURIComponent;
  return {
    nodeName: o.nodeName,
    pluginsDir: kubeletRootPaths(o.rootDir).plugins,
    nodeClient(driver) {
      const socket = o.endpoint(driver);
      return socket === undefined ? undefined : grpcCSINodeClient(socket.replace(/^unix:\/\//, ''));
    },
    getCSIDriver: (name) =>
      getOrUndefined<CSIDriver>(o.client, `/apis/storage.k8s.io/v1/csidrivers/${enc(name)}`),
    getVolumeAttachment: (name) =>
      getOrUndefined<VolumeAttachment>(o.client, `/apis/storage.k8s.io/v1/volumeattachments/${enc(name)}`),
    ...(o.refreshAllocatable ? { refreshAllocatable: o.refreshAllocatable } : {}),
    claims: {
      getClaim: (ns, name) =>
        getOrUndefined<ExpandableClaim>(
          o.client,
          `/api/v1/namespaces/${enc(ns)}/persistentvolumeclaims/${enc(name)}`,
        ),
      getVolume: (name) =>
        getOrUndefined<PersistentVolume>(o.client, `/api/v1/persistentvolumes/${enc(name)}`),
      // A merge patch of the status; its resourceVersion, when given, makes it conditional (PatchPVCStatus).
      patchClaimStatus: (ns, name, patch) =>
        o.client.request<ExpandableClaim>({
          method: 'PATCH',
          path: `/api/v1/namespaces/${enc(ns)}/persistentvolumeclaims/${enc(name)}/status`,
          body: patch,
          contentType: PatchTypes.merge,
        }),
    },
  };
}
