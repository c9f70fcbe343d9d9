/**
 * Pod condition generators (kubelet: pkg/kubelet/status/generate.go). Pure: each takes the pod and the
 * API container statuses (init + regular, as the kubelet passes them) and returns one condition without
 * times; the status manager stamps lastTransitionTime.
 *
 * All generators are total: a missing list or a malformed entry yields a defined condition, so the status
 * manager can call them on whatever it holds.
 */
import {
  AllContainersRestarting,
  ContainersReady,
  DisruptionTarget,
  isRestartableInitContainer,
  PodInitialized,
  PodReady,
  PodReadyToStartContainers,
  PodScheduled,
  type Container,
  type ContainerStatus,
  type Pod,
  type PodCondition,
  type PodPhase,
  type PodStatus,
} from '../../api/core.js';
import { allContainersRestartCleanedUp, shouldAllContainersRestart } from '../container/helpers.js';
import type { RuntimePodStatus } from '../container/types.js';
import { hasAnyRegularContainerStarted } from '../container/started.js';
import { podSandboxChanged } from '../kuberuntime/sandbox.js';

/** Condition reasons the kubelet writes. */
export const UnknownContainerStatuses = 'UnknownContainerStatuses';
export const PodCompleted = 'PodCompleted';
export const PodFailed = 'PodFailed';
export const ContainersNotReady = 'ContainersNotReady';
export const ContainersNotInitialized = 'ContainersNotInitialized';
export const ReadinessGatesNotReady = 'ReadinessGatesNotReady';
/** AllContainersRestarting=True: a container exited by a RestartAllContainers rule. */
export const RestartAllContainersStarted = 'RestartAllContainersStarted';

/** In-place resize conditions, kubelet-owned since 1.33 (we never generate them, but must not carry them). */
export const PodResizePending = 'PodResizePending';
export const PodResizeInProgress = 'PodResizeInProgress';

/**
 * Condition types the kubelet owns (pkg/kubelet/types PodConditionsByKubelet, with the
 * PodReadyToStartContainers and RestartAllContainersOnContainerExits gates on): generateAPIPodStatus regenerates them and drops API copies.
 */
export const kubeletOwnedConditionTypes: readonly string[] = [
  PodScheduled,
  PodReady,
  PodInitialized,
  ContainersReady,
  PodResizeInProgress,
  PodResizePending,
  PodReadyToStartContainers,
  AllContainersRestarting,
];

/** Whether the kubelet owns this condition type (it writes it and overwrites others' values). */
export function isKubeletOwnedCondition(type: string): boolean {
  return kubeletOwnedConditionTypes.includes(type);
}

/** Whether the condition is shared: set by the kubelet and by others (eviction, preemption). */
export function isKubeletSharedCondition(type: string): boolean {
  return type === DisruptionTarget;
}

type Statuses = readonly ContainerStatus[] | undefined | null;

function lookup(statuses: readonly ContainerStatus[], name: string): ContainerStatus | undefined {
  return statuses.find((s) => typeof s === 'object' && s !== null && s.name === name);
}

/** Go's %s of a []string: `[a b]`. */
function nameList(names: readonly string[]): string {
  return `[${names.join(' ')}]`;
}

function condition(
  type: string,
  status: PodCondition['status'],
  reason?: string,
  message?: string,
): PodCondition {
  const c: PodCondition = { type, status };
  if (reason) c.reason = reason;
  if (message) c.message = message;
  return c;
}

/**
 * Stamps a condition the kubelet writes with the pod generation the writing sync saw (kubelet:
 * CalculatePodConditionObservedGeneration; PodObservedGenerationTracking is GA). A pod without a generation
 * (not from an API server) gets none.
 */
export function withObservedGeneration(c: PodCondition, generation: number | undefined): PodCondition {
  if (typeof generation === 'number' && Number.isInteger(generation)) c.observedGeneration = generation;
  return c;
}

function generationOf(pod: Pod): number | undefined {
  return pod.metadata?.generation;
}

function initContainers(pod: Pod): Container[] {
  return Array.isArray(pod.spec?.initContainers) ? pod.spec.initContainers : [];
}
function regularContainers(pod: Pod): Container[] {
  return Array.isArray(pod.spec?.containers) ? pod.spec.containers : [];
}

/** ContainersReady=False with the terminal-phase reason; the status manager forces it on terminal pods. */
export function generateContainersReadyConditionForTerminalPhase(
  phase: PodPhase | undefined,
  generation?: number,
): PodCondition {
  return withObservedGeneration(condition(ContainersReady, 'False', terminalReason(phase)), generation);
}

/** Ready=False with the terminal-phase reason; the status manager forces it on terminal pods. */
export function generatePodReadyConditionForTerminalPhase(
  phase: PodPhase | undefined,
  generation?: number,
): PodCondition {
  return withObservedGeneration(condition(PodReady, 'False', terminalReason(phase)), generation);
}

function terminalReason(phase: PodPhase | undefined): string | undefined {
  if (phase === 'Failed') return PodFailed;
  if (phase === 'Succeeded') return PodCompleted;
  return undefined;
}

/**
 * ContainersReady: True when every sidecar and every regular container has a status with ready=true.
 * Regular init containers do not count. A nil list is "unknown"; Succeeded (with every status known) and
 * Failed (always) give False with PodCompleted / PodFailed, since terminal pods serve nothing.
 */
function containersReadyCondition(
  pod: Pod,
  containerStatuses: Statuses,
  phase: PodPhase | undefined,
): PodCondition {
  if (containerStatuses === null || containerStatuses === undefined || !Array.isArray(containerStatuses)) {
    return condition(ContainersReady, 'False', UnknownContainerStatuses);
  }
  const unknown: string[] = [];
  const unready: string[] = [];
  const check = (c: Container) => {
    const s = lookup(containerStatuses, c.name);
    if (!s) unknown.push(c.name);
    else if (s.ready !== true) unready.push(c.name);
  };
  initContainers(pod).filter(isRestartableInitContainer).forEach(check);
  regularContainers(pod).forEach(check);

  if (phase === 'Succeeded' && unknown.length === 0)
    return generateContainersReadyConditionForTerminalPhase(phase);
  if (phase === 'Failed') return generateContainersReadyConditionForTerminalPhase(phase);

  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${nameList(unknown)}`);
  if (unready.length > 0) messages.push(`containers with unready status: ${nameList(unready)}`);
  if (messages.length > 0)
    return condition(ContainersReady, 'False', ContainersNotReady, messages.join(', '));
  return condition(ContainersReady, 'True');
}

/**
 * Ready: ContainersReady's verdict when that is not True; otherwise True only if every readiness gate's
 * condition exists in `conditions` with status True (the messages name each failing gate, in spec order).
 */
function podReadyCondition(
  pod: Pod,
  conditions: PodCondition[] | undefined,
  containerStatuses: Statuses,
  phase: PodPhase | undefined,
): PodCondition {
  const containersReady = generateContainersReadyCondition(pod, containerStatuses, phase);
  if (containersReady.status !== 'True') {
    return condition(PodReady, containersReady.status, containersReady.reason, containersReady.message);
  }
  const existing = Array.isArray(conditions) ? conditions : [];
  const gates = Array.isArray(pod.spec?.readinessGates) ? pod.spec.readinessGates : [];
  const messages: string[] = [];
  for (const gate of gates) {
    const type = gate?.conditionType ?? '';
    const c = existing.find((x) => typeof x === 'object' && x !== null && x.type === type);
    if (!c) {
      messages.push(`corresponding condition of pod readiness gate ${JSON.stringify(type)} does not exist.`);
    } else if (c.status !== 'True') {
      messages.push(
        `the status of pod readiness gate ${JSON.stringify(type)} is not "True", but ${String(c.status)}`,
      );
    }
  }
  if (messages.length > 0) return condition(PodReady, 'False', ReadinessGatesNotReady, messages.join(', '));
  return condition(PodReady, 'True');
}

/** A regular init container is done once ready (terminated 0); a sidecar once started. */
function isInitContainerInitialized(c: Container, s: ContainerStatus): boolean {
  return isRestartableInitContainer(c) ? s.started === true : s.ready === true;
}

/**
 * Initialized: True when every init container is done. It also stays True once any regular container has
 * run (a restarting sidecar must not un-initialize the pod), and once `old` (the status the kubelet last
 * generated) says True (RestartAllContainersOnContainerExits: a pod restarting in place has its init
 * containers waiting again, yet it was initialized); it is True/PodCompleted for a Succeeded pod whose init
 * statuses are all known. A nil list with init containers is "unknown".
 */
function podInitializedCondition(
  pod: Pod,
  containerStatuses: Statuses,
  phase: PodPhase | undefined,
  old: PodStatus | undefined,
): PodCondition {
  const inits = initContainers(pod);
  const statuses = Array.isArray(containerStatuses) ? containerStatuses : null;
  if (statuses === null && inits.length > 0)
    return condition(PodInitialized, 'False', UnknownContainerStatuses);

  const unknown: string[] = [];
  const incomplete: string[] = [];
  for (const c of inits) {
    const s = statuses ? lookup(statuses, c.name) : undefined;
    if (!s) unknown.push(c.name);
    else if (!isInitContainerInitialized(c, s)) incomplete.push(c.name);
  }

  if (phase === 'Succeeded' && unknown.length === 0) return condition(PodInitialized, 'True', PodCompleted);
  if (hasAnyRegularContainerStarted({ containers: regularContainers(pod) }, statuses)) {
    return condition(PodInitialized, 'True');
  }

  const messages: string[] = [];
  if (unknown.length > 0) messages.push(`containers with unknown status: ${nameList(unknown)}`);
  if (incomplete.length > 0) messages.push(`containers with incomplete status: ${nameList(incomplete)}`);
  if (messages.length > 0) {
    const wasInitialized = (old?.conditions ?? []).some(
      (c) => typeof c === 'object' && c !== null && c.type === PodInitialized && c.status === 'True',
    );
    if (wasInitialized) return condition(PodInitialized, 'True');
    return condition(PodInitialized, 'False', ContainersNotInitialized, messages.join(', '));
  }
  return condition(PodInitialized, 'True');
}

/**
 * PodReadyToStartContainers: True exactly when the pod's sandbox (with networking) exists and would be
 * kept, i.e. podSandboxChanged says no new sandbox is needed.
 */
function podReadyToStartContainersCondition(
  pod: Pod,
  runtime: Pick<RuntimePodStatus, 'sandboxes'>,
): PodCondition {
  const sandboxes = Array.isArray(runtime?.sandboxes) ? runtime.sandboxes : [];
  const { changed } = podSandboxChanged(pod, { sandboxes });
  return condition(PodReadyToStartContainers, changed ? 'False' : 'True');
}

/** ContainersReady of `pod`, stamped with its generation (see containersReadyCondition). */
export function generateContainersReadyCondition(
  pod: Pod,
  containerStatuses: Statuses,
  phase: PodPhase | undefined,
): PodCondition {
  return withObservedGeneration(containersReadyCondition(pod, containerStatuses, phase), generationOf(pod));
}

/** Ready of `pod`, stamped with its generation (see podReadyCondition). */
export function generatePodReadyCondition(
  pod: Pod,
  conditions: PodCondition[] | undefined,
  containerStatuses: Statuses,
  phase: PodPhase | undefined,
): PodCondition {
  return withObservedGeneration(
    podReadyCondition(pod, conditions, containerStatuses, phase),
    generationOf(pod),
  );
}

/** Initialized of `pod`, stamped with its generation (see podInitializedCondition). */
export function generatePodInitializedCondition(
  pod: Pod,
  containerStatuses: Statuses,
  phase: PodPhase | undefined,
  old?: PodStatus,
): PodCondition {
  return withObservedGeneration(
    podInitializedCondition(pod, containerStatuses, phase, old),
    generationOf(pod),
  );
}

/**
 * AllContainersRestarting of a pod that may restart all its containers in place (kubelet:
 * GenerateAllContainersRestartingCondition; generated only when allContainersCouldRestart): False with the
 * terminal reason in a terminal phase; True with RestartAllContainersStarted from the moment a container
 * exits by a RestartAllContainers rule (or `old` says True) until no init or regular container is left on
 * the runtime, then False. No observedGeneration, as the kubelet sets none.
 */
export function generateAllContainersRestartingCondition(
  pod: Pod,
  runtime: Pick<RuntimePodStatus, 'containers'>,
  old: PodStatus | undefined,
  phase: PodPhase | undefined,
): PodCondition {
  if (phase === 'Succeeded') return condition(AllContainersRestarting, 'False', PodCompleted);
  if (phase === 'Failed') return condition(AllContainersRestarting, 'False', PodFailed);
  if (!shouldAllContainersRestart(pod, runtime, old) || allContainersRestartCleanedUp(pod, runtime)) {
    return condition(AllContainersRestarting, 'False');
  }
  return condition(
    AllContainersRestarting,
    'True',
    RestartAllContainersStarted,
    'container exited with restart policy rule',
  );
}

/** PodReadyToStartContainers of `pod`, stamped with its generation. */
export function generatePodReadyToStartContainersCondition(
  pod: Pod,
  runtime: Pick<RuntimePodStatus, 'sandboxes'>,
): PodCondition {
  return withObservedGeneration(podReadyToStartContainersCondition(pod, runtime), generationOf(pod));
}
