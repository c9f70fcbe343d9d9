/**
 * Init-container decisions (kubelet: kuberuntime_container.go `computeInitContainerActions`, the default
 * path used since sidecar containers went GA; the `LegacySidecarContainers` path is not reproduced).
 */
import { isRestartableInitContainer, type Pod } from '../../api/core.js';
import { mayRestartWithoutExitCode } from '../../api/restartrules.js';
import { containerChanged, isInitContainerFailed, shouldContainerBeRestarted } from '../container/helpers.js';
import { findContainerStatusByName, type RuntimePodStatus } from '../container/types.js';
import type { ProbeResultsReader } from '../prober/types.js';
import type { PodActions } from './podactions.js';

/** The probe caches computePodActions consults; readiness never causes a restart. */
export interface LivenessAndStartupResults {
  liveness: ProbeResultsReader;
  startup: ProbeResultsReader;
}

/**
 * True when some regular container's newest record is created or running. Exited does not count: after a
 * node reboot every container is exited, and the fresh sandbox must not be taken as initialized.
 */
function regularContainerCreatedOrRunning(pod: Pod, status: Pick<RuntimePodStatus, 'containers'>): boolean {
  return pod.spec.containers.some((c) => {
    const s = findContainerStatusByName(status, c.name);
    return s?.state === 'created' || s?.state === 'running';
  });
}

/**
 * Fills the init-container part of `changes` for a pod whose sandbox is kept: which init containers to
 * (re)start, which restartable init containers to kill first, and `killPod` when a regular init container
 * failed and may not restart (then `initContainersToStart` is cleared). Whether it may restart is its own
 * restart policy and rules, else the pod's (ContainerRestartRules); for a pod being deleted, never.
 *
 * Returns whether the pod is initialized, i.e. whether regular containers may be considered.
 * `changes.initContainersToStart` must be empty on entry; it is left in spec order.
 *
 * The walk goes from the last init container to the first, because completed init containers may have
 * been garbage-collected: the newest evidence of progress is the last init container with a record.
 */
export function computeInitContainerActions(
  pod: Pod,
  status: Pick<RuntimePodStatus, 'containers'>,
  probes: LivenessAndStartupResults,
  changes: PodActions,
): boolean {
  const inits = pod.spec.initContainers ?? [];
  if (inits.length === 0) return true;

  let podHasInitialized = regularContainerCreatedOrRunning(pod, status);
  // Whether the init containers before the current one (in the reverse walk: after it) made progress.
  let isPreviouslyInitialized = podHasInitialized;
  const toStart: number[] = [];
  const last = inits.length - 1;

  const killPod = (): boolean => {
    changes.killPod = true;
    changes.initContainersToStart = [];
    return false;
  };

  for (let i = last; i >= 0; i--) {
    const container = inits[i]!;
    const restartable = isRestartableInitContainer(container);
    const s = findContainerStatusByName(status, container.name);

    if (!s) {
      // A record removed after initialization: only sidecars have to be brought back.
      if (isPreviouslyInitialized && restartable) toStart.push(i);
      continue;
    }
    // After initialization only sidecars need to be kept running.
    if (isPreviouslyInitialized && !restartable) continue;

    switch (s.state) {
      case 'created':
        // Create and start happen in one step; a container left in created failed to start.
        toStart.push(i);
        break;

      case 'running': {
        if (!restartable) break; // a regular init container: wait for it to finish
        if (container.startupProbe) {
          const startup = probes.startup.get(s.id);
          if (startup === undefined) break; // not probed yet: wait
          if (startup !== 'success') {
            if (startup === 'failure') {
              changes.containersToKill.set(s.id, {
                name: container.name,
                kind: 'init',
                containerIndex: i,
                message: `Init container ${container.name} failed startup probe`,
                reason: 'StartupProbe',
              });
              toStart.push(i);
            }
            break;
          }
        }
        if (i === last) podHasInitialized = true;
        else if (!isPreviouslyInitialized) toStart.push(i + 1); // started for the first time: next one

        if (containerChanged(container, s)) {
          changes.containersToKill.set(s.id, {
            name: container.name,
            kind: 'init',
            containerIndex: i,
            message: `Init container ${container.name} definition changed`,
            reason: '',
          });
          toStart.push(i);
          break;
        }
        // A sidecar's liveness does not gate the next init container, only its own restart.
        if (container.livenessProbe) {
          const liveness = probes.liveness.get(s.id);
          if (liveness === undefined) break;
          if (liveness === 'failure') {
            changes.containersToKill.set(s.id, {
              name: container.name,
              kind: 'init',
              containerIndex: i,
              message: `Init container ${container.name} failed liveness probe`,
              reason: 'LivenessProbe',
            });
            toStart.push(i);
          }
        }
        break;
      }

      case 'exited':
        if (restartable) {
          // Sidecars restart whatever the pod's restart policy.
          toStart.push(i);
        } else if (isInitContainerFailed(s)) {
          if (!shouldContainerBeRestarted(container, pod, status)) return killPod();
          toStart.push(i);
        } else if (i === last) {
          podHasInitialized = true;
        } else {
          toStart.push(i + 1);
        }
        break;

      default: {
        // 'unknown' (and anything else the runtime could not name): it may still be running somewhere,
        // so it is killed before being started again.
        // No exit code to match rules against: only the container's policy, else the pod's, decides.
        if (!restartable && !mayRestartWithoutExitCode(container, pod.spec)) return killPod();
        changes.containersToKill.set(s.id, {
          name: container.name,
          kind: 'init',
          containerIndex: i,
          message: `Init container is in ${JSON.stringify(s.state)} state, try killing it before restart`,
          reason: 'Unknown',
        });
        toStart.push(i);
      }
    }
    isPreviouslyInitialized = true;
  }

  // No init container has a record at all: start from the first.
  if (!isPreviouslyInitialized) toStart.push(0);
  changes.initContainersToStart = toStart.reverse();
  return podHasInitialized;
}
