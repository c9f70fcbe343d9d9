/**
 * Active deadlines (kubelet: pkg/kubelet/active_deadline.go). A pod with `spec.activeDeadlineSeconds` may be
 * active on the node that long after its `status.startTime`; then it is failed with reason DeadlineExceeded
 * and its containers are stopped.
 *
 * The kubelet registers one handler twice: as a PodSyncLoopHandler (ShouldSync: sync the pod now) and as a
 * PodSyncHandler (ShouldEvict: generateAPIPodStatus turns the pod Failed, SyncPod then reports it terminal and
 * the pod worker terminates it). We do the same: `shouldEvict` is a status generator eviction handler, and
 * `timeUntilSync` tells the pod workers when the next sync is due, so the deadline fires at the deadline and
 * not at the next periodic resync (the kubelet polls its handlers every second; a timer at the deadline is
 * the same answer without the polling).
 *
 * The decision is pure (`pastActiveDeadline`, `msUntilActiveDeadline`); the handler only adds the clock, the
 * status manager's start time and the event.
 */
import type { Pod } from '../api/core.js';
import type { Clock } from '../util/clock.js';
import { parseRFC3339 } from '../util/rfc3339.js';
import { asPodUID, type PodUID } from './container/types.js';
import type { PodEvictionHandler } from './status/apistatus.js';

export const DeadlineExceededReason = 'DeadlineExceeded';
export const DeadlineExceededMessage = 'Pod was active on the node longer than the specified deadline';

/**
 * Milliseconds left before the pod's active deadline (zero or less: past it), or undefined when there is no
 * deadline or the pod has not started (no start time). `startTime` is the status manager's, else the API's,
 * as the kubelet prefers its own cached status.
 */
export function msUntilActiveDeadline(
  pod: Pod,
  startTime: string | undefined,
  now: number,
): number | undefined {
  const seconds = pod.spec?.activeDeadlineSeconds;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return undefined;
  const start = parseRFC3339(startTime ?? pod.status?.startTime);
  if (start === undefined) return undefined;
  return start + seconds * 1000 - now;
}

/** Whether the pod has been active at least `activeDeadlineSeconds` (kubelet: pastActiveDeadline). */
export function pastActiveDeadline(pod: Pod, startTime: string | undefined, now: number): boolean {
  const left = msUntilActiveDeadline(pod, startTime, now);
  return left !== undefined && left <= 0;
}

/** How long the kubelet's sync loop waits before it looks at its handlers again. */
export const SyncLoopTickMs = 1_000;

export interface ActiveDeadlineHandlerDeps {
  clock: Pick<Clock, 'now'>;
  /** The status manager's cached startTime of a pod, if it has a status (kubelet: PodStatusProvider). */
  startTime: (uid: PodUID) => string | undefined;
  /** Records an Event about the pod. */
  record: (pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string) => void;
}

/**
 * The kubelet's activeDeadlineHandler. `shouldEvict` records a Normal DeadlineExceeded event each time it
 * evicts, as the kubelet does (the event recorder aggregates the repeats).
 */
export class ActiveDeadlineHandler implements PodEvictionHandler {
  constructor(private readonly d: ActiveDeadlineHandlerDeps) {}

  /** PodSyncLoopHandler.ShouldSync: the pod is past its deadline and must be synced now. */
  shouldSync(pod: Pod): boolean {
    return pastActiveDeadline(pod, this.startTimeOf(pod), this.d.clock.now());
  }

  /** PodSyncHandler.ShouldEvict: past the deadline, with the kubelet's reason and message. */
  shouldEvict(pod: Pod): { evict: boolean; reason?: string; message?: string } {
    if (!this.shouldSync(pod)) return { evict: false };
    this.d.record(pod, 'Normal', DeadlineExceededReason, DeadlineExceededMessage);
    return { evict: true, reason: DeadlineExceededReason, message: DeadlineExceededMessage };
  }

  /**
   * When the pod must be synced next for its deadline: the time left, or one sync-loop tick when it is
   * already past (the sync that fails it may not have happened yet); undefined without a deadline or a start.
   */
  timeUntilSync(pod: Pod): number | undefined {
    const left = msUntilActiveDeadline(pod, this.startTimeOf(pod), this.d.clock.now());
    if (left === undefined) return undefined;
    return left > 0 ? left : SyncLoopTickMs;
  }

  private startTimeOf(pod: Pod): string | undefined {
    const uid = pod.metadata?.uid;
    return uid ? this.d.startTime(asPodUID(uid)) : undefined;
  }
}
