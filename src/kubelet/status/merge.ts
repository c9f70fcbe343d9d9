/**
 * mergePodStatus (kubelet: status_manager.go): what the kubelet sends is its cached status combined with
 * the server's, so that conditions owned by others survive and a pod is never published as terminal while
 * its containers may still hold exclusive resources.
 */
import {
  DisruptionTarget,
  isTerminalPhase,
  PodReady,
  ContainersReady,
  type PodStatus,
} from '../../api/core.js';
import {
  generateContainersReadyConditionForTerminalPhase,
  generatePodReadyConditionForTerminalPhase,
  isKubeletOwnedCondition,
  isKubeletSharedCondition,
} from './generate.js';
import {
  getPodCondition,
  getPodConditionFromList,
  replaceOrAppendPodCondition,
  updateLastTransitionTime,
  updatePodCondition,
} from './conditions.js';
import { cloneData } from '../../util/clone.js';

/**
 * The status to send, from `oldStatus` (the API server's) and `newStatus` (the kubelet's cache). Neither
 * input is modified; the result shares everything below its top level, except its conditions array, with
 * `newStatus`, so it is as read-only as the cache. Rules:
 * - conditions: the server's conditions the kubelet does not own are kept; the kubelet-owned ones all come
 *   from `newStatus`. DisruptionTarget (shared) from `newStatus` replaces or joins the server's only when
 *   the pod is moving into a terminal phase and no container can still run; its lastTransitionTime is
 *   then re-stamped against the server's (the cached one is stale by the time it is sent).
 * - resourceClaimStatuses and extendedResourceClaimStatus always come from the server (written by others).
 * - moving non-terminal -> terminal while containers could still run: phase, reason and message stay the
 *   server's, so the terminal phase is published only once it is true.
 * - a terminal result never carries Ready or ContainersReady True: both are forced to False with reason
 *   PodFailed / PodCompleted (appended if missing).
 */
export function mergePodStatus(
  oldStatus: PodStatus,
  newStatus: PodStatus,
  couldHaveRunningContainers: boolean,
  now: number,
): PodStatus {
  // A shallow copy: below, only its own fields and its own conditions array are changed (updatePodCondition
  // and replaceOrAppendPodCondition put new condition objects into the array), so everything deeper is
  // shared with `newStatus` and must be treated as read-only by whoever gets the result. The whole status
  // was deep-copied here once per write, a fifth of the copying a pod's start cost.
  const merged: PodStatus = { ...newStatus };
  const conditions = (oldStatus.conditions ?? [])
    .filter((c) => !isKubeletOwnedCondition(c.type))
    .map((c) => ({ ...c }));
  const transitioningToTerminalPhase = !isTerminalPhase(oldStatus.phase) && isTerminalPhase(newStatus.phase);

  for (const c of newStatus.conditions ?? []) {
    if (isKubeletOwnedCondition(c.type)) {
      conditions.push(c);
    } else if (isKubeletSharedCondition(c.type) && c.type === DisruptionTarget) {
      if (transitioningToTerminalPhase && !couldHaveRunningContainers) {
        // The first condition of the type, re-stamped on a copy against the server's.
        const { condition } = getPodConditionFromList(newStatus.conditions, c.type);
        if (condition) {
          const stamped = { conditions: [{ ...condition }] };
          updateLastTransitionTime(stamped, oldStatus, c.type, now);
          replaceOrAppendPodCondition(conditions, stamped.conditions[0]!);
        }
      }
    }
  }
  merged.conditions = conditions;

  if (oldStatus.resourceClaimStatuses !== undefined) {
    merged.resourceClaimStatuses = cloneData(oldStatus.resourceClaimStatuses);
  } else {
    delete merged.resourceClaimStatuses;
  }
  // The scheduler's, never the kubelet's (status_manager: not owned and not modified by kubelet).
  if (oldStatus.extendedResourceClaimStatus !== undefined) {
    merged.extendedResourceClaimStatus = cloneData(oldStatus.extendedResourceClaimStatus);
  } else {
    delete merged.extendedResourceClaimStatus;
  }

  if (transitioningToTerminalPhase && couldHaveRunningContainers) {
    setOrDelete(merged, 'phase', oldStatus.phase);
    setOrDelete(merged, 'reason', oldStatus.reason);
    setOrDelete(merged, 'message', oldStatus.message);
  }

  if (isTerminalPhase(merged.phase)) {
    const ready = getPodCondition(merged, PodReady)?.status === 'True';
    const containersReady = getPodCondition(merged, ContainersReady)?.status === 'True';
    if (ready || containersReady) {
      const generation = merged.observedGeneration;
      updatePodCondition(
        merged,
        generateContainersReadyConditionForTerminalPhase(merged.phase, generation),
        now,
      );
      updatePodCondition(merged, generatePodReadyConditionForTerminalPhase(merged.phase, generation), now);
    }
  }
  return merged;
}

function setOrDelete<K extends 'phase' | 'reason' | 'message'>(
  s: PodStatus,
  key: K,
  value: PodStatus[K],
): void {
  if (value === undefined) delete s[key];
  else s[key] = value;
}
