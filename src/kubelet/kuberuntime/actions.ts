/**
 * computePodActions (kubelet: kuberuntime_manager.go): compares the pod spec with what the runtime reports
 * and returns what SyncPod must do. Pure: no runtime calls, no clock; the same inputs give the same record.
 */
import { podRestartPolicy, type Container, type Pod } from '../../api/core.js';
import { mayRestartWithoutExitCode, restartsAllContainers } from '../../api/restartrules.js';
import { containerChanged, shouldContainerBeRestarted } from '../container/helpers.js';
import { findContainerStatusByName, type RuntimePodStatus } from '../container/types.js';
import { KindError } from '../../util/errors.js';
import { computeInitContainerActions, type LivenessAndStartupResults } from './initcontainers.js';
import type { ContainerToRemoveInfo, PodActions } from './podactions.js';
import { podSandboxChanged } from './sandbox.js';
import { validatePodSpec, validateRuntimeStatus } from './validate.js';

export type {
  ContainerKillReason,
  ContainerToKillInfo,
  ContainerToRemoveInfo,
  PodActions,
} from './podactions.js';
export type { LivenessAndStartupResults } from './initcontainers.js';

/** Options of computePodActions. */
export interface ComputePodActionsOptions {
  /**
   * Feature gates as the kubelet would see them. Only the v1.37 defaults are reproduced: enabling a gate
   * that changes these decisions (`LegacySidecarContainers`, `InPlacePodVerticalScaling` restarts) or
   * disabling one that is on (`ContainerRestartRules`, `RestartAllContainersOnContainerExits`) is rejected
   * with InvalidArgument rather than silently ignored.
   */
  featureGates?: Readonly<Record<string, boolean>>;
  /**
   * The pod restarts all its containers in place: its generated status says AllContainersRestarting=True
   * (kubelet: SyncPod's restartAllContainers). The actions are then only `containersToReset`.
   */
  restartAllContainers?: boolean;
}

const unsupportedGates = ['LegacySidecarContainers', 'InPlacePodVerticalScaling'];
const alwaysOnGates = ['ContainerRestartRules', 'RestartAllContainersOnContainerExits'];

/**
 * Every runtime record of `containers` (all of them, not only the newest: the pod must be purged), split into
 * the exited ones whose exit code a RestartAllContainers rule matches first (sources) and the rest (targets;
 * those not exited are killed first). Kubelet: getContainersToReset.
 */
function containersToReset(
  containers: readonly Container[],
  kind: 'init' | 'regular',
  status: RuntimePodStatus,
): { sources: ContainerToRemoveInfo[]; targets: ContainerToRemoveInfo[] } {
  const sources: ContainerToRemoveInfo[] = [];
  const targets: ContainerToRemoveInfo[] = [];
  containers.forEach((c, containerIndex) => {
    for (const s of status.containers) {
      if (s.name !== c.name) continue;
      const info = { containerID: s.id, name: s.name, kind, containerIndex, kill: false };
      if (s.state !== 'exited') targets.push({ ...info, kill: true });
      else if (restartsAllContainers(c, s.exitCode ?? 0)) sources.push(info);
      else targets.push(info);
    }
  });
  return { sources, targets };
}

/**
 * The pod's newest record of `c` ended with exit code 0 (kubelet: `containerSucceeded`). Like the kubelet
 * this looks only at "not running, exit code 0", so a created-but-never-started record also counts.
 */
function containerSucceeded(
  c: Pick<Container, 'name'>,
  status: Pick<RuntimePodStatus, 'containers'>,
): boolean {
  const s = findContainerStatusByName(status, c.name);
  if (!s || s.state === 'running') return false;
  return (s.exitCode ?? 0) === 0;
}

/** Some regular container has a created, running or exited record: initialization happened before. */
function hasAnyRegularContainerCreated(pod: Pod, status: Pick<RuntimePodStatus, 'containers'>): boolean {
  return pod.spec.containers.some((c) => {
    const state = findContainerStatusByName(status, c.name)?.state;
    return state === 'created' || state === 'running' || state === 'exited';
  });
}

/**
 * Decides, for one pod, whether to kill it, whether to (re)create its sandbox, and which init, regular
 * and ephemeral containers to start or kill.
 *
 * Contract:
 * - `status` is the runtime view (records newest first); `probes` are the liveness and startup result
 *   caches keyed by runtime container ID (no entry = not probed yet).
 * - Throws `KindError('InvalidArgument')` for a pod or runtime view that cannot be interpreted (unknown
 *   restart policy, duplicate or missing container names, unknown record states, unsupported gates).
 *   It never throws for any other reason.
 * - The returned record is fresh; neither input is modified.
 */
export function computePodActions(
  pod: Pod,
  status: RuntimePodStatus,
  probes: LivenessAndStartupResults,
  opts: ComputePodActionsOptions = {},
): PodActions {
  validatePodSpec(pod);
  validateRuntimeStatus(pod, status);
  for (const gate of unsupportedGates) {
    if (opts.featureGates?.[gate]) {
      throw new KindError('InvalidArgument', `feature gate ${gate} is not supported by computePodActions`);
    }
  }
  for (const gate of alwaysOnGates) {
    if (opts.featureGates?.[gate] === false) {
      throw new KindError('InvalidArgument', `feature gate ${gate} cannot be disabled in computePodActions`);
    }
  }

  const sandbox = podSandboxChanged(pod, status);
  const changes: PodActions = {
    killPod: sandbox.changed,
    createSandbox: sandbox.changed,
    sandboxID: sandbox.sandboxID,
    attempt: sandbox.attempt,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: new Map(),
    containersToReset: [],
  };
  if (opts.restartAllContainers) {
    // Regular and init containers first, those that asked for the restart last.
    const inits = containersToReset(pod.spec.initContainers ?? [], 'init', status);
    const regular = containersToReset(pod.spec.containers, 'regular', status);
    changes.containersToReset = [...regular.targets, ...inits.targets, ...regular.sources, ...inits.sources];
    return changes;
  }
  const policy = podRestartPolicy(pod.spec);
  const restartOnFailure = policy !== 'Never';

  if (sandbox.changed) {
    // A pod that must not restart and has already run: only kill it. Attempt 0 with records means the
    // sandbox was never seen (e.g. records left by a previous kubelet), so one is created.
    if (!restartOnFailure && sandbox.attempt !== 0 && status.containers.length !== 0) {
      changes.createSandbox = false;
      return changes;
    }
    // Only an explicit OnFailure skips succeeded containers (unset behaves as Always); the container's
    // own restart policy, when set, replaces the pod's here.
    const candidates: number[] = [];
    pod.spec.containers.forEach((c, idx) => {
      const runOnce = (c.restartPolicy ?? pod.spec.restartPolicy) === 'OnFailure';
      if (runOnce && containerSucceeded(c, status)) return;
      candidates.push(idx);
    });
    // Nothing left to run and initialization already happened: no point in a new sandbox.
    if (candidates.length === 0 && hasAnyRegularContainerCreated(pod, status)) {
      changes.createSandbox = false;
      return changes;
    }
    // A new sandbox starts from the initial state: init containers first, from the first one.
    if ((pod.spec.initContainers ?? []).length !== 0) {
      changes.initContainersToStart = [0];
      return changes;
    }
    changes.containersToStart = candidates;
    return changes;
  }

  // Ephemeral containers may start before initialization completes; they are never restarted or killed.
  (pod.spec.ephemeralContainers ?? []).forEach((c, i) => {
    if (!findContainerStatusByName(status, c.name)) changes.ephemeralContainersToStart.push(i);
  });

  const initialized = computeInitContainerActions(pod, status, probes, changes);
  if (changes.killPod || !initialized) return changes;

  let keepCount = 0;
  pod.spec.containers.forEach((container, idx) => {
    const s = findContainerStatusByName(status, container.name);
    if (!s || s.state !== 'running') {
      if (shouldContainerBeRestarted(container, pod, status)) {
        changes.containersToStart.push(idx);
        // An unknown container may still be running: kill it first so two instances never coexist.
        if (s?.state === 'unknown') {
          changes.containersToKill.set(s.id, {
            name: s.name,
            kind: 'regular',
            containerIndex: idx,
            message: `Container is in ${JSON.stringify(s.state)} state, try killing it before restart`,
            reason: 'Unknown',
          });
        }
      }
      return;
    }

    let message: string;
    let reason: '' | 'LivenessProbe' | 'StartupProbe' = '';
    // A running container has no exit code: its own restart policy decides, rules are not read.
    let restart = mayRestartWithoutExitCode(container, pod.spec);
    if (containerChanged(container, s)) {
      message = `Container ${container.name} definition changed`;
      // A changed definition is a new container, whatever the restart policy.
      restart = true;
    } else if (probes.liveness.get(s.id) === 'failure') {
      message = `Container ${container.name} failed liveness probe`;
      reason = 'LivenessProbe';
    } else if (probes.startup.get(s.id) === 'failure') {
      message = `Container ${container.name} failed startup probe`;
      reason = 'StartupProbe';
    } else {
      keepCount++;
      return;
    }
    if (restart) {
      message = `${message}, will be restarted`;
      changes.containersToStart.push(idx);
    }
    changes.containersToKill.set(s.id, {
      name: s.name,
      kind: 'regular',
      containerIndex: idx,
      message,
      reason,
    });
  });

  if (keepCount === 0 && changes.containersToStart.length === 0) {
    changes.killPod = true;
    // Sidecars alone must not keep a finished pod alive.
    changes.initContainersToStart = [];
  }
  return changes;
}
