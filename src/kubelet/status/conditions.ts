/**
 * Pod condition list helpers the status manager uses (kubelet: api/v1/pod GetPodCondition and
 * UpdatePodCondition, util/pod ReplaceOrAppendPodCondition, status_manager.go updateLastTransitionTime).
 *
 * These mutate the status they are given: the status manager only ever passes its own private copy.
 */
import type { PodCondition, PodStatus } from '../../api/core.js';
import { formatRFC3339 } from '../../util/rfc3339.js';

/** The first condition of `type` in the list, with its index (-1 and undefined when absent). */
export function getPodConditionFromList(
  conditions: readonly PodCondition[] | undefined,
  type: string,
): { index: number; condition: PodCondition | undefined } {
  const index = (conditions ?? []).findIndex((c) => c.type === type);
  return { index, condition: index >= 0 ? conditions?.[index] : undefined };
}

/** The first condition of `type` in the status, or undefined. */
export function getPodCondition(status: PodStatus | undefined, type: string): PodCondition | undefined {
  return getPodConditionFromList(status?.conditions, type).condition;
}

/**
 * Stamps the `type` condition of `status` (if it has one) with a lastTransitionTime: the old condition's
 * time when the old status has that condition with the same status value, otherwise `now`. A status
 * without the condition is left alone.
 */
export function updateLastTransitionTime(
  status: PodStatus,
  oldStatus: PodStatus | undefined,
  type: string,
  now: number,
): void {
  const condition = getPodCondition(status, type);
  if (!condition) return;
  const old = getPodCondition(oldStatus, type);
  if (old && old.status === condition.status) {
    if (old.lastTransitionTime) condition.lastTransitionTime = old.lastTransitionTime;
    else delete condition.lastTransitionTime;
  } else {
    condition.lastTransitionTime = formatRFC3339(now);
  }
}

/** Replaces the first condition of the same type, or appends a copy when there is none. */
export function replaceOrAppendPodCondition(
  conditions: PodCondition[],
  condition: PodCondition,
): PodCondition[] {
  const { index } = getPodConditionFromList(conditions, condition.type);
  if (index >= 0) conditions[index] = { ...condition };
  else conditions.push({ ...condition });
  return conditions;
}

/**
 * Sets `condition` on the status (appending it if missing), keeping the old lastTransitionTime when the
 * status value did not change and stamping `now` otherwise. Returns whether anything changed.
 */
export function updatePodCondition(status: PodStatus, condition: PodCondition, now: number): boolean {
  const next: PodCondition = { ...condition, lastTransitionTime: formatRFC3339(now) };
  const conditions = (status.conditions ??= []);
  const { index, condition: old } = getPodConditionFromList(conditions, condition.type);
  if (!old) {
    conditions.push(next);
    return true;
  }
  if (next.status === old.status) {
    if (old.lastTransitionTime) next.lastTransitionTime = old.lastTransitionTime;
    else delete next.lastTransitionTime;
  }
  const same =
    next.status === old.status &&
    (next.reason ?? '') === (old.reason ?? '') &&
    (next.message ?? '') === (old.message ?? '') &&
    (next.lastProbeTime ?? '') === (old.lastProbeTime ?? '') &&
    next.observedGeneration === old.observedGeneration &&
    (next.lastTransitionTime ?? '') === (old.lastTransitionTime ?? '');
  conditions[index] = next;
  return !same;
}
