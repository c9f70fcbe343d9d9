/**
 * Whether a resize fits the node (kubelet: allocation manager canResizePod, then the admit handlers with the
 * resize operation). Infeasible: the pod alone would not fit the node's allocatable, so it never will; Deferred:
 * it fits the node but not next to the other pods' allocations now, so it waits for room.
 *
 * Pure: the desired pod, the other active pods as allocated, and the node view.
 */
import type { Pod } from '../../api/core.js';
import { podRequests } from '../../api/resources.js';
import { admitPod, type AdmissionNode } from '../lifecycle/admission.js';
import { errorMessage } from '../../util/errors.js';

/** PodResizePending reasons (v1.PodReasonDeferred / PodReasonInfeasible). */
export const Deferred = 'Deferred';
export const Infeasible = 'Infeasible';

export type ResizeVerdict =
  { fit: true } | { fit: false; reason: typeof Deferred | typeof Infeasible; message: string };

export function admitResize(
  desired: Pod,
  othersAllocated: readonly Pod[],
  node: AdmissionNode,
): ResizeVerdict {
  let cpu: number;
  let memory: number;
  try {
    const requests = podRequests(desired.spec);
    cpu = requests.get('cpu') ?? 0;
    memory = requests.get('memory') ?? 0;
  } catch (err) {
    return { fit: false, reason: Infeasible, message: `Invalid resource request: ${errorMessage(err)}` };
  }
  const cpuCapacity = node.allocatable.get('cpu') ?? 0;
  const memoryCapacity = node.allocatable.get('memory') ?? 0;
  if (memory > memoryCapacity) {
    return {
      fit: false,
      reason: Infeasible,
      message: `Node didn't have enough capacity: memory, requested: ${memory}, capacity: ${memoryCapacity}`,
    };
  }
  if (cpu > cpuCapacity) {
    return {
      fit: false,
      reason: Infeasible,
      message: `Node didn't have enough capacity: cpu, requested: ${cpu}, capacity: ${cpuCapacity}`,
    };
  }
  const others = othersAllocated.filter((p) => p.metadata.uid !== desired.metadata.uid);
  const verdict = admitPod(desired, node, others);
  if (!verdict.admit) return { fit: false, reason: Deferred, message: verdict.message };
  return { fit: true };
}
