/**
 * "Has the pod been initialized?" evidence, in its two kubelet forms (pkg/kubelet/container/helpers.go):
 * from API statuses (HasAnyRegularContainerStarted, used by the Initialized condition) and from the
 * runtime's current sandbox (HasAnyActiveRegularContainerStarted, getPhase's input since 1.33).
 */
import type { ContainerStatus as APIContainerStatus, PodSpec } from '../../api/core.js';
import type { KubeContainerStatus, RuntimePodStatus } from './types.js';

function regularNames(spec: Pick<PodSpec, 'containers'>): Set<string> {
  return new Set((spec.containers ?? []).map((c) => c.name));
}

/**
 * True when some regular container's API status is running or terminated. It cannot tell a container of
 * an earlier sandbox from one of the current sandbox, which is why getPhase no longer uses it.
 */
export function hasAnyRegularContainerStarted(
  spec: Pick<PodSpec, 'containers'>,
  statuses: readonly APIContainerStatus[] | undefined | null,
): boolean {
  if (!statuses || statuses.length === 0) return false;
  const names = regularNames(spec);
  return statuses.some((s) => names.has(s.name) && (s.state?.running != null || s.state?.terminated != null));
}

/**
 * The container records of the pod's current sandbox (kubelet: PodStatus.ActiveContainerStatuses): the
 * newest sandbox counts only while it is ready. A record that does not say which sandbox it belongs to is
 * taken to belong to the current one, because without the link nothing better can be known.
 */
export function activeContainerStatuses(
  status: Pick<RuntimePodStatus, 'sandboxes' | 'containers'>,
): KubeContainerStatus[] {
  const sandboxes = Array.isArray(status.sandboxes) ? status.sandboxes : [];
  const containers = Array.isArray(status.containers) ? status.containers : [];
  const newest = sandboxes[0];
  if (!newest || newest.state !== 'ready') return [];
  return containers.filter((c) => c.sandboxID === undefined || c.sandboxID === newest.id);
}

/**
 * True when any regular container has a record in the current sandbox, whatever its state: the init
 * containers of this sandbox must then have completed. After a sandbox is recreated, old records do not
 * count, so the pod goes back through initialization.
 */
export function hasAnyActiveRegularContainerStarted(
  spec: Pick<PodSpec, 'containers'>,
  status: Pick<RuntimePodStatus, 'sandboxes' | 'containers'> | undefined | null,
): boolean {
  if (!status) return false;
  const names = regularNames(spec);
  return activeContainerStatuses(status).some((c) => names.has(c.name));
}
