/**
 * The per-pod dead-container deletor (kubelet: pod_container_deletor.go). When PLEG reports ContainerDied,
 * the kubelet removes the older exited instances of that container right away instead of waiting for the
 * periodic container GC: it keeps the newest `containersToKeep` exited instances of the same name (at least
 * one, which restart counts, `lastState` and `kubectl logs --previous` rely on), or none of any name when the
 * pod's content may be removed. Containers that are created or running are never candidates.
 *
 * Pure: the caller supplies the pod's cached runtime status and removes what is returned.
 */
import type { KubeContainerStatus, RuntimePodStatus } from './container/types.js';

/** The kubelet keeps at least one dead instance per container, whatever MaxPerPodContainer says. */
export const MIN_DEAD_CONTAINERS_IN_POD = 1;

const newestFirst = (a: KubeContainerStatus, b: KubeContainerStatus): number =>
  (b.createdAt ?? 0) - (a.createdAt ?? 0);

/**
 * kubelet getContainersToDeleteInPod: the exited containers beyond the newest `containersToKeep`, among those
 * named like the container `filterContainerId` (every exited container when the filter is empty). A filter
 * that names no container of the pod selects nothing.
 */
export function containersToDeleteInPod(
  filterContainerId: string,
  status: Pick<RuntimePodStatus, 'containers'>,
  containersToKeep: number,
): KubeContainerStatus[] {
  const matched = filterContainerId ? status.containers.find((c) => c.id === filterContainerId) : undefined;
  if (filterContainerId && !matched) return [];
  const candidates = status.containers.filter(
    (c) => c.state === 'exited' && (!matched || c.name === matched.name),
  );
  if (candidates.length <= containersToKeep) return [];
  return [...candidates].sort(newestFirst).slice(Math.max(0, containersToKeep));
}

/**
 * kubelet deleteContainersInPod: what to remove after `exitedContainerId` died. `removeAll` (the pod's content
 * may go: deleted or evicted and done) drops the filter and keeps nothing.
 */
export function deadContainersToRemove(
  exitedContainerId: string,
  status: Pick<RuntimePodStatus, 'containers'>,
  removeAll: boolean,
  maxPerPodContainer = MIN_DEAD_CONTAINERS_IN_POD,
): KubeContainerStatus[] {
  if (removeAll) return containersToDeleteInPod('', status, 0);
  return containersToDeleteInPod(
    exitedContainerId,
    status,
    Math.max(maxPerPodContainer, MIN_DEAD_CONTAINERS_IN_POD),
  );
}
