/**
 * checkContainerStateTransition (kubelet: status_manager.go): a container that terminated for good may not
 * be reported as alive again. Such an update means a stale or confused writer, so the status manager
 * drops the whole update rather than publish a resurrection.
 */
import {
  isRestartableInitContainer,
  podRestartPolicy,
  type Container,
  type ContainerStatus,
  type PodSpec,
  type PodStatus,
} from '../../api/core.js';
import { allContainersCouldRestart, containerShouldRestart } from '../../api/restartrules.js';

/**
 * The init container at `index` of the spec when the status at `index` names it (kubelet:
 * GetContainerByIndex); undefined when the lists do not line up.
 */
function initContainerByIndex(spec: PodSpec, statuses: readonly ContainerStatus[], index: number) {
  const c = spec.initContainers?.[index];
  const s = statuses[index];
  return c && s && c.name === s.name ? c : undefined;
}

/**
 * A terminated container that may come back: it failed under the pod's OnFailure, or its own restart
 * policy and rules (else the pod's) restart it (ContainerRestartRules). `specs` are the spec containers of
 * the same kind (regular or init) as `old`.
 */
function mayRestart(old: ContainerStatus, spec: PodSpec, specs: readonly Container[] | undefined): boolean {
  const code = old.state?.terminated?.exitCode ?? 0;
  if (code !== 0 && podRestartPolicy(spec) === 'OnFailure') return true;
  return (specs ?? []).some((c) => c.name === old.name && containerShouldRestart(c, spec, code));
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
 * kubelet always sees), and in a pod that may restart all its containers in place (a RestartAllContainers
 * rule anywhere: RestartAllContainersOnContainerExits). Otherwise a container whose
 * old state is terminated may not be non-terminated in the new status, unless it exited non-zero under
 * OnFailure or its own restart policy and rules restart it. Restartable init containers are exempt; init statuses that do not line up with the spec by
 * index are themselves a violation.
 */
export function checkContainerStateTransition(
  oldStatus: PodStatus,
  newStatus: PodStatus,
  spec: PodSpec,
): string | undefined {
  if (podRestartPolicy(spec) === 'Always' || allContainersCouldRestart(spec)) return undefined;
  for (const old of oldStatus.containerStatuses ?? []) {
    if (!old.state?.terminated || mayRestart(old, spec, spec.containers)) continue;
    const n = revived(old, newStatus.containerStatuses);
    if (n) return `terminated container ${n.name} attempted illegal transition to non-terminated state`;
  }
  const oldInit = oldStatus.initContainerStatuses ?? [];
  for (let i = 0; i < oldInit.length; i++) {
    const old = oldInit[i] as ContainerStatus;
    const c = initContainerByIndex(spec, oldInit, i);
    if (!c) return `found mismatch between pod spec and status, container: ${old.name}`;
    if (isRestartableInitContainer(c)) continue;
    if (!old.state?.terminated || mayRestart(old, spec, spec.initContainers)) continue;
    const n = revived(old, newStatus.initContainerStatuses);
    if (n) return `terminated init container ${n.name} attempted illegal transition to non-terminated state`;
  }
  return undefined;
}
