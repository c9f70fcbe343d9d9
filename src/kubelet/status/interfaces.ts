/**
 * What the status manager needs from the rest of the kubelet and from the API server, as small injected
 * interfaces (kubelet: status_manager.go PodManager, PodDeletionSafetyProvider, and the clientset calls of
 * syncPod). Implementations live in the shell; tests pass fakes.
 */
import type { ObjectMeta, Pod } from '../../api/core.js';
import type { PodUID } from '../container/types.js';
import type { PodStatusPatch } from './patch.js';

/**
 * The kubelet's view of its pods (kubelet: pkg/kubelet/pod Manager, the subset the status manager reads).
 * Static pods are known by their own UID; their mirror pods (API objects) by another one. Methods must not
 * block and must not mutate what they return afterwards; the status manager never mutates it either.
 */
export interface StatusPodManager {
  /** The non-mirror pod with this UID (mirror pods are not returned by UID). */
  getPodByUID(uid: PodUID): Pod | undefined;
  /** The mirror pod of a static pod, if one is known. */
  getMirrorPodByPod(pod: Pod): Pod | undefined;
  /** A mirror pod UID -> its static pod's UID; any other UID is returned unchanged. */
  translatePodUID(uid: string): PodUID;
  /**
   * Both directions of the static/mirror mapping. Every static pod appears in `podToMirror`, with the
   * empty string when it has no mirror pod yet; `mirrorToPod` holds only mirrors whose static pod is known.
   */
  getUIDTranslations(): {
    podToMirror: ReadonlyMap<string, string>;
    mirrorToPod: ReadonlyMap<string, string>;
  };
}

/** Whether a pod's containers may still be running (kubelet: PodDeletionSafetyProvider). */
export interface PodDeletionSafetyProvider {
  podCouldHaveRunningContainers(pod: Pod): boolean;
}

/**
 * The three API calls of a status sync. Each may reject; the status manager never lets a rejection
 * escape a sync (it logs and retries on a later one). Errors should be KindErrors: `NotFound` from
 * getPod means the pod is gone and is not worth a log line at error level.
 */
export interface PodStatusClient {
  /** GET the pod. Rejects with KindError('NotFound') when it does not exist. */
  getPod(namespace: string, name: string): Promise<Pod>;
  /**
   * PATCH the `status` subresource with a strategic merge patch (content type
   * application/strategic-merge-patch+json). `uid` is the precondition also carried in the body. Resolves
   * to the metadata of the pod as the server stored it (its status is the merged one the patch was made for).
   */
  patchPodStatus(
    namespace: string,
    name: string,
    uid: string,
    patch: PodStatusPatch,
  ): Promise<{ metadata: ObjectMeta }>;
  /** DELETE the pod with this grace period and a UID precondition (never another pod of the same name). */
  deletePod(namespace: string, name: string, uid: string, gracePeriodSeconds: 0): Promise<void>;
}

/** Structured log sink; the default discards. Fields carry pod, UID and error so a line explains itself. */
export interface StatusManagerLogger {
  info(message: string, fields?: Record<string, unknown>): void;
}
