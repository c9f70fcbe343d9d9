/**
 * The eviction manager's admit handler (kubelet: managerImpl.Admit): with no pressure condition every pod
 * is admitted; critical pods always are; under memory pressure alone, pods that are not BestEffort are, and
 * BestEffort pods only when they tolerate the node.kubernetes.io/memory-pressure:NoSchedule taint; under
 * any other pressure nothing else is.
 */
import type { Pod, Toleration } from '../../api/core.js';
import { getPodQOS } from '../qos.js';
import { EvictedReason } from './message.js';
import { isCriticalPod } from './pods.js';
import type { PressureCondition } from './signals.js';

export const TaintNodeMemoryPressure = 'node.kubernetes.io/memory-pressure';

export type EvictionAdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/**
 * Toleration.ToleratesTaint for a taint without value. The Lt and Gt operators match nothing while
 * TaintTolerationComparisonOperators is off (alpha in 1.37).
 */
export function toleratesTaint(
  t: Toleration,
  taint: { key: string; value?: string; effect: string },
): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  const operator: string = t.operator ?? '';
  if (operator === '' || operator === 'Equal') return (t.value ?? '') === (taint.value ?? '');
  return operator === 'Exists';
}

/** The node's conditions as the kubelet prints a Go slice: "[MemoryPressure DiskPressure]". */
function goSlice(conditions: readonly string[]): string {
  return `[${conditions.join(' ')}]`;
}

export function admitUnderPressure(
  pod: Pod,
  nodeConditions: readonly PressureCondition[],
): EvictionAdmitResult {
  if (nodeConditions.length === 0 || isCriticalPod(pod)) return { admit: true };
  if (nodeConditions.length === 1 && nodeConditions[0] === 'MemoryPressure') {
    if (getPodQOS(pod) !== 'BestEffort') return { admit: true };
    const taint = { key: TaintNodeMemoryPressure, effect: 'NoSchedule' };
    if ((pod.spec.tolerations ?? []).some((t) => toleratesTaint(t, taint))) return { admit: true };
  }
  return {
    admit: false,
    reason: EvictedReason,
    message: `The node had condition: ${goSlice(nodeConditions)}. `,
  };
}
