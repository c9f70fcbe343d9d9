/**
 * Pod phase from container statuses (kubelet: kubelet_pods.go getPhase, v1.33 semantics).
 */
import {
  isRestartableInitContainer,
  type ContainerStatus,
  type PodPhase,
  type PodSpec,
} from '../../api/core.js';
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
  failedInit: number;
  pendingRestartable: number;
  unknown: number;
  running: number;
  waiting: number;
  stopped: number;
  succeeded: number;
}

/**
 * Counting pass. Switch order matters for malformed statuses with several states set: running wins, then
 * terminated, then waiting, as in the kubelet. "Last-terminated" means lastState.terminated is set.
 */
function count(spec: PodSpec, statuses: readonly ContainerStatus[]): Counts {
  const n: Counts = {
    pendingRegularInit: 0,
    failedInit: 0,
    pendingRestartable: 0,
    unknown: 0,
    running: 0,
    waiting: 0,
    stopped: 0,
    succeeded: 0,
  };
  const inits = spec.initContainers ?? [];

  for (const c of inits) {
    if (isRestartableInitContainer(c)) continue;
    const s = findStatus(statuses, c.name);
    if (!s || s.state?.running) {
      n.pendingRegularInit++;
    } else if (s.state?.terminated) {
      if ((s.state.terminated.exitCode ?? 0) !== 0) n.failedInit++;
    } else if (s.state?.waiting) {
      const last = s.lastState?.terminated;
      if (!last) n.pendingRegularInit++;
      else if ((last.exitCode ?? 0) !== 0) n.failedInit++;
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
      if ((s.state.terminated.exitCode ?? 0) === 0) n.succeeded++;
    } else if (s.state?.waiting) {
      // A container waiting to restart is "stopped" but never "succeeded", whatever its last exit code.
      if (s.lastState?.terminated) n.stopped++;
      else n.waiting++;
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
  const policy = validatePodSpecForStatus(spec);
  const statuses = Array.isArray(allContainerStatuses)
    ? allContainerStatuses.filter((s): s is ContainerStatus => typeof s === 'object' && s !== null)
    : [];
  const n = count(spec, statuses);

  if (n.failedInit > 0 && policy === 'Never') return 'Failed';

  if (n.pendingRegularInit > 0 || (n.pendingRestartable > 0 && !podHasInitialized) || n.waiting > 0) {
    return 'Pending';
  }
  if (n.running > 0 && n.unknown === 0) return 'Running';
  if (n.running === 0 && n.stopped > 0 && n.unknown === 0) {
    if (podIsTerminal && opts.staticPod !== true) {
      return n.stopped === n.succeeded ? 'Succeeded' : 'Failed';
    }
    if (policy === 'Always') return 'Running';
    if (n.stopped === n.succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}
