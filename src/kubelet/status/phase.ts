/**
 * Pod phase from container statuses (kubelet: kubelet_pods.go getPhase, v1.37 with ContainerRestartRules:
 * whether a stopped container counts as restarting is its own restart policy and rules, else the pod's; and
 * with RestartAllContainersOnContainerExits: a termination the kubelet reports as RestartingAllContainers, a
 * container removed to restart the whole pod in place, always counts as restarting).
 */
import {
  isRestartableInitContainer,
  type ContainerStatus,
  type PodPhase,
  type Container,
  type PodSpec,
} from '../../api/core.js';
import { containerShouldRestart } from '../../api/restartrules.js';
import { RestartingAllContainers } from './convert.js';
import { validatePodSpecForStatus } from './inputvalidation.js';

export interface GetPhaseOptions {
  /** Static pods never get a terminal phase from podIsTerminal (upstream TODO #116484). */
  staticPod?: boolean;
}

function findStatus(statuses: readonly ContainerStatus[], name: string): ContainerStatus | undefined {
  return statuses.find((s) => s.name === name);
}

interface Counts {
  pendingRegularInit: number;
  /** Failed regular init containers that will not be restarted. */
  failedInitNotRestartable: number;
  pendingRestartable: number;
  unknown: number;
  running: number;
  waiting: number;
  stopped: number;
  /** Stopped regular containers that will not be restarted. */
  stoppedNotRestartable: number;
  succeeded: number;
}

type Terminated = NonNullable<NonNullable<ContainerStatus['state']>['terminated']>;

function restartable(c: Container, spec: PodSpec, t: Terminated): boolean {
  return containerShouldRestart(c, spec, t.exitCode ?? 0) || t.reason === RestartingAllContainers;
}

/**
 * Counting pass. Switch order matters for malformed statuses with several states set: running wins, then
 * terminated, then waiting, as in the kubelet. "Last-terminated" means lastState.terminated is set.
 */
function count(spec: PodSpec, statuses: readonly ContainerStatus[]): Counts {
  const n: Counts = {
    pendingRegularInit: 0,
    failedInitNotRestartable: 0,
    pendingRestartable: 0,
    unknown: 0,
    running: 0,
    waiting: 0,
    stopped: 0,
    stoppedNotRestartable: 0,
    succeeded: 0,
  };
  const inits = spec.initContainers ?? [];

  for (const c of inits) {
    if (isRestartableInitContainer(c)) continue;
    const s = findStatus(statuses, c.name);
    if (!s || s.state?.running) {
      n.pendingRegularInit++;
    } else if (s.state?.terminated) {
      const code = s.state.terminated.exitCode ?? 0;
      if (code !== 0 && !restartable(c, spec, s.state.terminated)) n.failedInitNotRestartable++;
    } else if (s.state?.waiting) {
      const last = s.lastState?.terminated;
      if (!last) n.pendingRegularInit++;
      else if ((last.exitCode ?? 0) !== 0 && !restartable(c, spec, last)) {
        n.failedInitNotRestartable++;
      }
    } else {
      n.pendingRegularInit++;
    }
  }

  // Sidecars count towards running/unknown like regular containers, but a stopped sidecar never makes the
  // pod stopped: only regular containers decide completion.
  for (const c of inits) {
    if (!isRestartableInitContainer(c)) continue;
    const s = findStatus(statuses, c.name);
    if (!s) {
      n.unknown++;
    } else if (s.state?.running) {
      if (s.started !== true) n.pendingRestartable++;
      n.running++;
    } else if (s.state?.terminated) {
      // ignored
    } else if (s.state?.waiting) {
      if (!s.lastState?.terminated) {
        n.pendingRestartable++;
        n.waiting++;
      }
    } else {
      n.pendingRestartable++;
      n.unknown++;
    }
  }

  for (const c of spec.containers ?? []) {
    const s = findStatus(statuses, c.name);
    if (!s) {
      n.unknown++;
    } else if (s.state?.running) {
      n.running++;
    } else if (s.state?.terminated) {
      n.stopped++;
      if (!restartable(c, spec, s.state.terminated)) n.stoppedNotRestartable++;
      if ((s.state.terminated.exitCode ?? 0) === 0) n.succeeded++;
    } else if (s.state?.waiting) {
      // A container waiting to restart is "stopped" but never "succeeded", whatever its last exit code.
      const last = s.lastState?.terminated;
      if (last) {
        n.stopped++;
        if (!restartable(c, spec, last)) n.stoppedNotRestartable++;
      } else n.waiting++;
    } else {
      n.unknown++;
    }
  }
  return n;
}

/**
 * The phase of a pod given the API statuses of its init and regular containers (order irrelevant; the
 * first status with a container's name is used).
 *
 * - `podIsTerminal`: the pod worker has decided the pod will not run again, so an all-stopped pod becomes
 *   Succeeded/Failed regardless of the restart policy (except static pods).
 * - `podHasInitialized`: some regular container exists in the current sandbox (1.33); it keeps a pod whose
 *   sidecars restart from falling back to Pending.
 *
 * Total on well-formed specs (no containers → Pending). Throws KindError('InvalidArgument') for an
 * unknown restart policy or duplicate container names (see validatePodSpecForStatus).
 */
export function getPhase(
  spec: PodSpec,
  allContainerStatuses: readonly ContainerStatus[] | undefined | null,
  podIsTerminal: boolean,
  podHasInitialized: boolean,
  opts: GetPhaseOptions = {},
): PodPhase {
  validatePodSpecForStatus(spec);
  const statuses = Array.isArray(allContainerStatuses)
    ? allContainerStatuses.filter((s): s is ContainerStatus => typeof s === 'object' && s !== null)
    : [];
  const n = count(spec, statuses);

  if (n.failedInitNotRestartable > 0) return 'Failed';

  if (n.pendingRegularInit > 0 || (n.pendingRestartable > 0 && !podHasInitialized) || n.waiting > 0) {
    return 'Pending';
  }
  if (n.running > 0 && n.unknown === 0) return 'Running';
  if (n.running === 0 && n.stopped > 0 && n.unknown === 0) {
    if (podIsTerminal && opts.staticPod !== true) {
      return n.stopped === n.succeeded ? 'Succeeded' : 'Failed';
    }
    // Some container is on its way back: the pod runs on.
    if (n.stopped !== n.stoppedNotRestartable) return 'Running';
    return n.stopped === n.succeeded ? 'Succeeded' : 'Failed';
  }
  return 'Pending';
}
