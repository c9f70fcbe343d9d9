/** The status manager's cache entry (kubelet: versionedPodStatus). */
import type { PodStatus } from '../../api/core.js';

/**
 * A cached status. Invariants: `version` grows by one with every stored change of the pod's status and
 * never goes back; `status` is normalized (normalize.ts); `podIsFinished`, once true for a non-static pod,
 * stays true for as long as the entry lives. Entries are replaced whole, never mutated.
 */
export interface VersionedPodStatus {
  readonly version: number;
  readonly podName: string;
  readonly podNamespace: string;
  /** When the oldest change not yet retired to the API was detected (epoch ms), for sync latency. */
  readonly at: number;
  /** Set by terminatePod: the pod is done and may be deleted once the server agrees it is terminal. */
  readonly podIsFinished: boolean;
  readonly status: PodStatus;
}
