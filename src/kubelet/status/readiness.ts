/**
 * Readiness gates written by others (kubelet: status_manager.go NeedToReconcilePodReadiness, and the
 * HandlePodReconcile branch that uses it). A readiness gate's condition is owned by whoever writes it
 * (`kubectl patch --subresource=status`, a load balancer controller); the kubelet only reads it to compute
 * Ready. A status-only pod update is otherwise not worth a sync, so this decides when one is.
 *
 * Pure: the pod in, a verdict or a condition list out.
 */
import { PodReady, type Pod, type PodCondition } from '../../api/core.js';
import { getPodCondition } from './conditions.js';
import { generatePodReadyCondition, isKubeletOwnedCondition } from './generate.js';

/**
 * Whether the API's Ready condition disagrees with what the pod's own status implies (its readiness gates'
 * conditions, its regular containers' readiness, its phase): only for pods with readiness gates, and only once
 * the kubelet has written a Ready condition. A mismatch in status or message means a gate changed under us.
 * Like the kubelet, only `containerStatuses` are consulted (a pod with sidecars may ask for one sync too
 * many, which changes nothing).
 */
export function needToReconcilePodReadiness(pod: Pod): boolean {
  if ((pod.spec?.readinessGates ?? []).length === 0) return false;
  const status = pod.status ?? {};
  const current = getPodCondition(status, PodReady);
  if (!current) return false;
  const expected = generatePodReadyCondition(pod, status.conditions, status.containerStatuses, status.phase);
  return current.status !== expected.status || (current.message ?? '') !== (expected.message ?? '');
}

/**
 * The conditions a readiness gate is looked up in: `cached` (the status manager's copy, generated at the last
 * sync) with every condition the kubelet does not own taken from `api` (the pod manager's newest pod) instead,
 * so a gate flipped since the last sync is seen at once. Neither input is modified.
 */
export function readinessGateConditions(
  cached: readonly PodCondition[] | undefined,
  api: readonly PodCondition[] | undefined,
): PodCondition[] {
  const out = [...(cached ?? [])];
  for (const c of api ?? []) {
    if (typeof c !== 'object' || c === null || isKubeletOwnedCondition(c.type)) continue;
    const i = out.findIndex((x) => x.type === c.type);
    if (i >= 0) out[i] = c;
    else out.push(c);
  }
  return out;
}
