/**
 * checkContainerStateTransition (kubelet: status_manager.go): a container that terminated for good may not
 * be reported as alive again. Such an update means a stale or confused writer, so the status manager
 * drops the whole update rather than publish a resurrection.
 */
import {
  isRestartableInitContainer,
  podRestartPolicy,
  type ContainerStatus,
  type PodSpec,
  type PodStatus,
} from '../../api/core.js';

/**
 * The init container at `index` of the spec when the status at `index` names it (kubelet:
 * GetContainerByIndex); undefined when the lists do not line up.
 */
function initContainerByIndex(spec: PodSpec, statuses: readonly ContainerStatus[], index: number) {
  const c = spec.initContainers?.[index];
  const s = statuses[index];
  return c && s && c.name === s.name ? c : undefined;
}

function mayRestart(old: ContainerStatus, spec: PodSpec): boolean {
  return (old.state?.terminated?.exitCode ?? 0) !== 0 && podRestartPolicy(spec) === 'OnFailure';
}

function revived(
  old: ContainerStatus,
  next: readonly ContainerStatus[] | undefined,
): ContainerStatus | undefined {
  return (next ?? []).find((n) => n.name === old.name && !n.state?.terminated);
}

/**
 * Undefined when `newStatus` is a legal successor of `oldStatus`; otherwise a message naming the
 * violation. Rules: anything goes under restartPolicy Always (unset counts as Always, the API default the
 * kubelet always sees). Otherwise a container whose
 * old state is terminated may not be non-terminated in the new status, unless it exited non-zero under
 * OnFailure. Restartable init containers are exempt; init statuses that do not line up with the spec by
 * index are themselves a violation.
 */
export function checkContainerStateTransition(
  oldStatus: PodStatus,
  newStatus: PodStatus,
  spec: PodSpec,
): string | undefined {
  if (podRestartPolicy(spec) === 'Always') return undefined;
  for (const old of oldStatus.containerStatuses ?? []) {
    if (!old.state?.terminated || mayRestart(old, spec)) continue;
    const n = revived(old, newStatus.containerStatuses);
    if (n) return `terminated container ${n.name} attempted illegal transition to non-terminated state`;
  }
  const oldInit = oldStatus.initContainerStatuses ?? [];
  for (let i = 0; i < oldInit.length; i++) {
    const old = oldInit[i] as ContainerStatus;
    const c = initContainerByIndex(spec, oldInit, i);
    if (!c) return `found mismatch between pod spec and status, container: ${old.name}`;
    if (isRestartableInitContainer(c)) continue;
    if (!old.state?.terminated || mayRestart(old, spec)) continue;
    const n = revived(old, newStatus.initContainerStatuses);
    if (n) return `terminated init container ${n.name} attempted illegal transition to non-terminated state`;
  }
  return undefined;
}
