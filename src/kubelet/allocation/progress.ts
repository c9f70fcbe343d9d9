/**
 * The resize bookkeeping of the kubelet's SyncPod: PodResizeInProgress while what the runtime applied differs
 * from the allocation, cleared with a ResizeCompleted Event once they agree; the outcome of an in-place update
 * (reason Error and a ResizeError Event when the runtime refused it).
 *
 * Pure decisions over the conditions store; Events go through the recorder given.
 */
import type { Pod } from '../../api/core.js';
import type { RuntimePodStatus } from '../container/types.js';
import { isPodResizeInProgress } from '../kuberuntime/resize.js';
import type { NodeSettings } from '../kuberuntime/sandboxconfig.js';
import type { PodSyncResult } from '../kuberuntime/shell/syncresult.js';
import type { PodResizeConditions } from '../status/resizeconditions.js';
import { podGeneration } from './allocation.js';
import { podResizeCompletedMsg, podResizeErrorMsg, ResizeCompleted, ResizeError } from './messages.js';

export type ResizeEventRecorder = (
  pod: Pod,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
) => void;

/**
 * `pod` is the pod as allocated; `status` the runtime view the sync acts on; `podLevelInProgress` whether its
 * pod cgroup still differs from its allocated pod-level resources (kubelet: IsPodResizeInProgress asks both).
 */
export function resizeProgress(
  pod: Pod,
  status: RuntimePodStatus,
  conditions: PodResizeConditions,
  record: ResizeEventRecorder,
  podLevelInProgress = false,
  node?: Pick<NodeSettings, 'cpuAffinity'>,
): void {
  const uid = pod.metadata.uid ?? '';
  if (podLevelInProgress || isPodResizeInProgress(pod, status, node)) {
    // An error stays until the next attempt says otherwise (recordResizeResult).
    if (!conditions.inProgress(uid)) conditions.setInProgress(uid, '', '', podGeneration(pod));
    return;
  }
  const { cleared, generation } = conditions.clearInProgress(uid);
  if (cleared) record(pod, 'Normal', ResizeCompleted, podResizeCompletedMsg(pod, generation));
}

/** The outcome of SyncPod's in-place update (its ResizePodInPlace result), if it made one. */
export function recordResizeResult(
  pod: Pod,
  result: PodSyncResult,
  conditions: PodResizeConditions,
  record: ResizeEventRecorder,
): void {
  const r = result.results.find((x) => x.action === 'ResizePodInPlace');
  if (!r) return;
  const uid = pod.metadata.uid ?? '';
  const generation = podGeneration(pod);
  if (!r.error) {
    conditions.setInProgress(uid, '', '', generation);
    return;
  }
  const message = r.message ?? r.error;
  conditions.setInProgress(uid, 'Error', message, generation);
  record(pod, 'Warning', ResizeError, podResizeErrorMsg(pod, generation, message));
}
