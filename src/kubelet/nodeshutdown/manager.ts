/**
 * The decisions of the kubelet's node shutdown manager (pkg/kubelet/nodeshutdown): which priority group each
 * active pod falls in, the grace period each pod gets, what a pod is told once terminated, what a pod
 * arriving meanwhile is told, what the node's Ready condition says, and, per group, whether to go on waiting.
 *
 * Pure: pods, the config and times (ms) in, data out. `shell/loop.ts` carries the decisions out on a node.
 */
import type { Pod } from '../../api/core.js';
import {
  DisruptionTarget,
  TerminationByKubelet,
  type DisruptionTargetCondition,
} from '../eviction/message.js';
import type { ShutdownGracePeriodByPodPriority } from '../../api/shutdownsettings.js';

/** kubelet NodeShutdownNotAdmittedReason and its message: a pod offered while the node shuts down. */
export const NodeShutdownNotAdmittedReason = 'NodeShutdown';
export const NodeShutdownNotAdmittedMessage = 'Pod was rejected as the node is shutting down.';
/** The status reason and message of a pod the shutdown terminated (kubelet nodeShutdownReason/Message). */
export const NodeShutdownReason = 'Terminated';
export const NodeShutdownMessage = 'Pod was terminated in response to imminent node shutdown.';
/** The error ShutdownStatus reports while shutting down: the Ready condition's message. */
export const NodeShuttingDownError = 'node is shutting down';
/** The reason of the node's Events (kubelet events.NodeShutdown) and their messages. */
export const NodeShutdownEventReason = 'Shutdown';
export const ShutdownDetectedMessage = 'Shutdown manager detected shutdown event';
export const ShutdownCancelledMessage = 'Shutdown manager detected shutdown cancellation';
/** killPodNow's Event when a pod is not stopped within its timeout (kubelet events.ExceededGracePeriod). */
export const ExceededGracePeriodReason = 'ExceededGracePeriod';
export const ExceededGracePeriodMessage =
  'Container runtime did not kill the pod within specified grace period.';

/** One pod of a group, with the grace period it is killed with. */
export interface PodShutdown {
  pod: Pod;
  gracePeriodSeconds: number;
}

/** A priority group: its lower bound, its grace period (also how long the manager waits for it), its pods. */
export interface PodShutdownGroup extends ShutdownGracePeriodByPodPriority {
  pods: PodShutdown[];
}

/**
 * kubelet groupByPriority: each pod goes to the group with the highest priority not above its own; pods
 * below the lowest group go to the lowest, pods above the highest to the highest. `groups` are sorted,
 * lowest priority first (shutdownConfigFrom). A pod without a priority has 0. Every group is returned,
 * empty ones too, in order; pods keep the order they were given in.
 */
export function groupByPriority(
  groups: readonly ShutdownGracePeriodByPodPriority[],
  pods: readonly Pod[],
): { group: ShutdownGracePeriodByPodPriority; pods: Pod[] }[] {
  const out = groups.map((group) => ({ group, pods: [] as Pod[] }));
  if (out.length === 0) return out;
  for (const pod of pods) {
    const priority = pod.spec.priority ?? 0;
    // The first group whose priority is at or above the pod's (sort.Search).
    let index = groups.findIndex((g) => g.priority >= priority);
    if (index === -1) index = groups.length - 1;
    else if (index > 0 && groups[index]!.priority > priority) index--;
    out[index]!.pods.push(pod);
  }
  return out;
}

/**
 * The grace period a pod is killed with (kubelet killPods): the group's, or the pod's own
 * terminationGracePeriodSeconds when that is set and not longer.
 */
export function podShutdownGracePeriod(pod: Pod, groupGracePeriodSeconds: number): number {
  const own = pod.spec.terminationGracePeriodSeconds;
  return typeof own === 'number' && own <= groupGracePeriodSeconds ? own : groupGracePeriodSeconds;
}

/** The groups to terminate, in order, each pod with its grace period (empty groups included). */
export function shutdownPlan(
  groups: readonly ShutdownGracePeriodByPodPriority[],
  activePods: readonly Pod[],
): PodShutdownGroup[] {
  return groupByPriority(groups, activePods).map(({ group, pods }) => ({
    priority: group.priority,
    shutdownGracePeriodSeconds: group.shutdownGracePeriodSeconds,
    pods: pods.map((pod) => ({
      pod,
      gracePeriodSeconds: podShutdownGracePeriod(pod, group.shutdownGracePeriodSeconds),
    })),
  }));
}

/** What a pod the shutdown terminated ends with (kubelet killPods' status function). */
export interface PodShutdownStatus {
  /** Failed, unless the pod had Succeeded already (then it keeps that phase). */
  phase: 'Failed';
  keepSucceeded: true;
  reason: typeof NodeShutdownReason;
  message: typeof NodeShutdownMessage;
  condition: DisruptionTargetCondition;
}

export function podShutdownStatus(pod: Pod): PodShutdownStatus {
  return {
    phase: 'Failed',
    keepSucceeded: true,
    reason: NodeShutdownReason,
    message: NodeShutdownMessage,
    condition: {
      type: DisruptionTarget,
      status: 'True',
      reason: TerminationByKubelet,
      message: NodeShutdownMessage,
      ...(pod.metadata.generation !== undefined ? { observedGeneration: pod.metadata.generation } : {}),
    },
  };
}

/**
 * How long killPodNow waits for a pod to be stopped before it records ExceededGracePeriod: one and a half
 * grace periods (whole seconds), at least 10 s.
 */
export function killTimeoutSeconds(gracePeriodSeconds: number): number {
  return Math.max(gracePeriodSeconds + Math.trunc(gracePeriodSeconds / 2), 10);
}

export type AdmitResult = { admit: true } | { admit: false; reason: string; message: string };

/** The shutdown manager's admit handler: nothing is admitted while the node shuts down. */
export function admitWhileShuttingDown(shuttingDown: boolean): AdmitResult {
  return shuttingDown
    ? { admit: false, reason: NodeShutdownNotAdmittedReason, message: NodeShutdownNotAdmittedMessage }
    : { admit: true };
}

/** The shutdown manager's part of the node's readiness errors (kubelet ShutdownStatus). */
export function shutdownStatusErrors(shuttingDown: boolean): readonly string[] {
  return shuttingDown ? [NodeShuttingDownError] : [];
}

/**
 * Whether the manager goes on to the next group (kubelet killPods' wait per group): once every pod of the
 * group is stopped with its volumes unmounted (`done`), or once the group's grace period has passed since
 * its kills were sent (`timedOut`); otherwise it waits, at most `pollMs`, before looking again.
 */
export function groupWait(
  startedAt: number,
  gracePeriodSeconds: number,
  now: number,
  allCleanedUp: boolean,
  pollMs: number,
): { next: 'done' } | { next: 'timedOut' } | { next: 'wait'; ms: number } {
  if (allCleanedUp) return { next: 'done' };
  const deadline = startedAt + gracePeriodSeconds * 1000;
  if (now >= deadline) return { next: 'timedOut' };
  return { next: 'wait', ms: Math.min(pollMs, deadline - now) };
}

/**
 * The pods of a group, killed at `killedAt`, whose containers are still not stopped after killTimeoutSeconds
 * of their grace period (killPodNow gives up on them with an Event); those in `reported` are left out.
 */
export function killsExceeded(
  pods: readonly PodShutdown[],
  killedAt: number,
  now: number,
  stopped: (pod: Pod) => boolean,
  reported: ReadonlySet<string>,
): PodShutdown[] {
  return pods.filter((p) => {
    const uid = p.pod.metadata.uid ?? '';
    return (
      !reported.has(uid) &&
      !stopped(p.pod) &&
      now >= killedAt + killTimeoutSeconds(p.gracePeriodSeconds) * 1000
    );
  });
}
