/**
 * The status half of TerminatePod (kubelet: status_manager.go TerminatePod, hasPodInitialized,
 * initializedContainers). At the end of a pod's life the kubelet may no longer be able to see some of its
 * containers (garbage collected, runtime state lost), so any container it cannot prove terminated is
 * reported as failed with an unknown status: a pod must never look successful by omission.
 */
import {
  isRestartableInitContainer,
  type ContainerState,
  type ContainerStatus,
  type Pod,
  type PodStatus,
} from '../../api/core.js';
import { isStaticPod } from '../types/podupdate.js';
import { cloneData } from '../../util/clone.js';

/** Reason for a container whose fate the kubelet could not observe (kubecontainer). */
export const ContainerReasonStatusUnknown = 'ContainerStatusUnknown';
export const ContainerStatusUnknownMessage = 'The container could not be located when the pod was terminated';
/** Exit code reported for such containers: 128 + SIGKILL. */
export const ContainerStatusUnknownExitCode = 137;

function unknownTerminatedState(): ContainerState {
  return {
    terminated: {
      exitCode: ContainerStatusUnknownExitCode,
      reason: ContainerReasonStatusUnknown,
      message: ContainerStatusUnknownMessage,
    },
  };
}

/**
 * Whether the pod ever got past its init containers, judged from the API status carried by `pod` itself
 * (not the cached status): true with no init containers; when some regular container has a last
 * termination or is not waiting; when the last init container status (matched to the spec by index) is a
 * regular init container that exited 0 now or last time, or a sidecar that is running and started.
 */
export function hasPodInitialized(pod: Pod): boolean {
  const inits = pod.spec?.initContainers ?? [];
  if (inits.length === 0) return true;
  for (const s of pod.status?.containerStatuses ?? []) {
    if (s.lastState?.terminated || !s.state?.waiting) return true;
  }
  const statuses = pod.status?.initContainerStatuses ?? [];
  const last = statuses.length - 1;
  if (last < 0) return false;
  const container = inits[last];
  const status = statuses[last] as ContainerStatus;
  // The spec and status disagree (a programmer error upstream): no evidence of initialization.
  if (!container || container.name !== status.name) return false;
  if (isRestartableInitContainer(container)) {
    return !!status.state?.running && status.started === true;
  }
  return status.lastState?.terminated?.exitCode === 0 || status.state?.terminated?.exitCode === 0;
}

/**
 * How many init statuses, from the front, have attempted to start: everything up to and including the
 * last one that is not "waiting with no previous termination". When all are waiting, the first one still
 * counts (it is the one that was about to run). Zero only for an empty list.
 */
export function initializedContainerCount(statuses: readonly ContainerStatus[]): number {
  for (let i = statuses.length - 1; i >= 0; i--) {
    const s = statuses[i] as ContainerStatus;
    if (!s.state?.waiting || s.lastState?.terminated) return i + 1;
  }
  return statuses.length > 0 ? 1 : 0;
}

/**
 * The status TerminatePod stores, computed from `base` (the cached status, or the pod's own when none is
 * cached) and `pod` (whose API status is the initialization evidence). Returns a new object; `base` is not
 * modified. Non-static pods leave with a terminal phase: Succeeded and Failed are kept, anything else
 * (Pending, Running, Unknown, unset, unrecognised) becomes Failed. Static pods keep their phase (upstream
 * TODO #116484).
 */
export function terminatedPodStatus(pod: Pod, base: PodStatus): PodStatus {
  const status = cloneData(base);
  if (hasPodInitialized(pod)) {
    for (const s of status.containerStatuses ?? []) {
      if (!s.state?.terminated) s.state = unknownTerminatedState();
    }
  }
  const inits = status.initContainerStatuses ?? [];
  const attempted = initializedContainerCount(inits);
  for (const s of inits.slice(0, attempted)) {
    if (!s.state?.terminated) s.state = unknownTerminatedState();
  }
  if (!isStaticPod(pod) && status.phase !== 'Succeeded' && status.phase !== 'Failed') {
    status.phase = 'Failed';
  }
  return status;
}
