/**
 * Which containers a new pod status shows newly terminated, for kubelet_terminated_containers_total: the
 * status manager counts each container once, when a status it stores shows it terminated and the status
 * before did not (or did not have it), as the kubelet's updateStatusInternal does.
 *
 * Contract: pure; the old status is what the cache held, or, for a pod not cached yet, the API's status.
 */
import type { ContainerStatus, PodStatus } from '../../api/core.js';

/** The kubelet's metric label of each kind of container. */
export type ContainerMetricType = 'init_container' | 'container' | 'ephemeral_container';

export interface ContainerTermination {
  containerType: ContainerMetricType;
  exitCode: number;
  reason: string;
}

function newlyTerminatedOf(
  oldStatuses: readonly ContainerStatus[] | undefined,
  newStatuses: readonly ContainerStatus[] | undefined,
  containerType: ContainerMetricType,
  out: ContainerTermination[],
): void {
  for (const c of newStatuses ?? []) {
    const t = c.state?.terminated;
    if (!t) continue;
    const old = oldStatuses?.find((o) => o.name === c.name);
    if (old?.state?.terminated) continue;
    out.push({ containerType, exitCode: t.exitCode, reason: t.reason ?? '' });
  }
}

/** The terminations `next` shows that `prev` did not: init, regular, then ephemeral containers. */
export function newlyTerminatedContainers(prev: PodStatus, next: PodStatus): ContainerTermination[] {
  const out: ContainerTermination[] = [];
  newlyTerminatedOf(prev.initContainerStatuses, next.initContainerStatuses, 'init_container', out);
  newlyTerminatedOf(prev.containerStatuses, next.containerStatuses, 'container', out);
  newlyTerminatedOf(
    prev.ephemeralContainerStatuses,
    next.ephemeralContainerStatuses,
    'ephemeral_container',
    out,
  );
  return out;
}
