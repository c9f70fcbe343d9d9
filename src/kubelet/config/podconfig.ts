/**
 * The kubelet's pod source (kubelet: pkg/kubelet/config, PodConfig and its ADD / UPDATE / DELETE / RECONCILE
 * operations): what a change of a pod in the API means to this node. Pure: it classifies, the sync loop acts.
 *
 * - A pod is this node's when it is bound here (`spec.nodeName`) and has a UID.
 * - UPDATE is a change the kubelet acts on (spec, labels, annotations, the deletion fields); RECONCILE is a
 *   status-only change (our own status writes coming back, another writer's conditions), which refreshes the
 *   pod manager and syncs only when a readiness gate no longer agrees with Ready (NeedToReconcilePodReadiness).
 * - A pod that leaves this node (rebound, or its nodeName cleared) is a DELETE of the old object.
 */
import type { Pod } from '../../api/core.js';

export type PodOp = 'ADD' | 'UPDATE' | 'DELETE' | 'RECONCILE';

export interface PodChange {
  op: PodOp;
  pod: Pod;
}

/** Whether an update changes what the kubelet acts on: spec, labels, annotations or the deletion fields. */
export function meaningfulChange(old: Pod, pod: Pod): boolean {
  const a = old.metadata ?? {};
  const b = pod.metadata ?? {};
  if (a.uid !== b.uid || a.deletionTimestamp !== b.deletionTimestamp) return true;
  if (a.deletionGracePeriodSeconds !== b.deletionGracePeriodSeconds) return true;
  // The informer hands out a new version with the unchanged parts of the last one (structshare.ts): after a
  // status write the spec, labels and annotations are the very same objects, and no text is written.
  const same = (x: unknown, y: unknown): boolean =>
    x === y || JSON.stringify(x ?? {}) === JSON.stringify(y ?? {});
  return !same(a.labels, b.labels) || !same(a.annotations, b.annotations) || !same(old.spec, pod.spec);
}

export class PodConfig {
  constructor(readonly nodeName: string) {}

  /** Bound to this node, with a UID. */
  isMine(pod: Pod | undefined): pod is Pod {
    return pod?.spec?.nodeName === this.nodeName && !!pod.metadata?.uid;
  }

  added(pod: Pod): PodChange[] {
    return this.isMine(pod) ? [{ op: 'ADD', pod }] : [];
  }

  /** `old` is the previous object when the informer knows it. */
  updated(pod: Pod, old?: Pod): PodChange[] {
    if (!this.isMine(pod)) return old && this.isMine(old) ? [{ op: 'DELETE', pod: old }] : [];
    if (!old || meaningfulChange(old, pod)) return [{ op: 'UPDATE', pod }];
    return [{ op: 'RECONCILE', pod }];
  }

  deleted(pod: Pod): PodChange[] {
    return pod?.metadata?.uid ? [{ op: 'DELETE', pod }] : [];
  }
}
