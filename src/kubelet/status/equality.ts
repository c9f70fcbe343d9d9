/**
 * isPodStatusByKubeletEqual (kubelet: status_manager.go): "would the kubelet write anything different?"
 * Conditions that others own are not the kubelet's business and never make two statuses differ; the ones
 * the kubelet owns or shares must agree in status, reason and message (not in times).
 */
import type { PodStatus } from '../../api/core.js';
import { isKubeletOwnedCondition, isKubeletSharedCondition } from './generate.js';
import { getPodCondition } from './conditions.js';
import { semanticEqual } from './semantic.js';

/**
 * True when `status` (the newer one) says nothing the kubelet would change in `oldStatus`: every
 * kubelet-owned or shared condition of `status` exists in `oldStatus` with the same status, reason and
 * message, and all other fields are semantically equal (zero values equal absence; times as instants).
 * Condition order and the old status's other conditions are ignored. Both should be normalized first
 * (normalizeStatus), as the kubelet does. Pure.
 */
export function isPodStatusByKubeletEqual(oldStatus: PodStatus, status: PodStatus): boolean {
  for (const c of status.conditions ?? []) {
    if (!isKubeletOwnedCondition(c.type) && !isKubeletSharedCondition(c.type)) continue;
    const oc = getPodCondition(oldStatus, c.type);
    if (
      !oc ||
      oc.status !== c.status ||
      (oc.message ?? '') !== (c.message ?? '') ||
      (oc.reason ?? '') !== (c.reason ?? '')
    ) {
      return false;
    }
  }
  return semanticEqual({ ...oldStatus, conditions: status.conditions }, status);
}
