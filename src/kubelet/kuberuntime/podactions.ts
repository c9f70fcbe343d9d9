/**
 * The plain record computePodActions produces and SyncPod executes (kubelet: kuberuntime_manager.go
 * `podActions`). Data only: deciding and acting stay separate so the decision is testable without a runtime.
 */
import type { ContainerID, SandboxID } from '../container/types.js';

/**
 * Why a container is being killed (kubelet: `containerKillReason`). The kubelet uses it for metrics and
 * events; '' means "no specific reason" (for example a definition change).
 */
export type ContainerKillReason =
  '' | 'StartupProbe' | 'LivenessProbe' | 'FailedPostStartHook' | 'RestartAllContainers' | 'Unknown';

/** One entry of `containersToKill` (kubelet: `containerToKillInfo`). */
export interface ContainerToKillInfo {
  /** The container name, as recorded by the runtime. */
  name: string;
  /** Which spec list `containerIndex` points into. Ephemeral containers are never killed individually. */
  kind: 'init' | 'regular';
  /** Position in `spec.initContainers` or `spec.containers`. */
  containerIndex: number;
  /** The message the kubelet logs and puts on the Killing event, worded as the kubelet words it. */
  message: string;
  reason: ContainerKillReason;
}

/** One entry of `containersToReset` (kubelet: `containerToRemoveInfo`): a runtime record to remove. */
export interface ContainerToRemoveInfo {
  containerID: ContainerID;
  /** The container name, as recorded by the runtime. */
  name: string;
  /** Which spec list `containerIndex` points into. */
  kind: 'init' | 'regular';
  containerIndex: number;
  /** Kill it first (it is not exited), without a grace period. */
  kill: boolean;
}

/**
 * What SyncPod must do for one pod.
 *
 * Invariants kept by computePodActions:
 * - `createSandbox` implies `killPod` (a new sandbox replaces everything in the old one).
 * - When `createSandbox` is true, `containersToKill` and `ephemeralContainersToStart` are empty and at most
 *   one of `initContainersToStart` (then exactly `[0]`) and `containersToStart` is non-empty.
 * - Index lists are positions in the corresponding spec list, in spec order, without duplicates.
 * - A non-empty `containersToReset` (restarting all containers in place) comes alone: nothing is created,
 *   started or killed otherwise in that sync.
 */
export interface PodActions {
  /** Stop every container and sandbox of the pod before anything else. */
  killPod: boolean;
  /** Create a new sandbox (after killing the pod). */
  createSandbox: boolean;
  /** The sandbox to keep using, or the one being replaced; "" when there is none. */
  sandboxID: SandboxID | '';
  /** Attempt number for the sandbox to create, or the current sandbox's when none is created. */
  attempt: number;
  initContainersToStart: number[];
  containersToStart: number[];
  ephemeralContainersToStart: number[];
  /** Runtime container ID -> why it is killed. Applied only when `killPod` is false. */
  containersToKill: Map<ContainerID, ContainerToKillInfo>;
  /**
   * Every record of every init and regular container, to kill (when not exited) and remove so that the pod
   * starts again from its first init container (RestartAllContainersOnContainerExits), in the order of
   * removal: regular containers, init containers, then the containers whose exit asked for it (regular,
   * then init). Applied only when `killPod` is false.
   */
  containersToReset: ContainerToRemoveInfo[];
}
