/**
 * In-place resize of pod-level resources (InPlacePodLevelResourcesVerticalScaling, Beta and on in v1.37;
 * kubelet: kuberuntime_manager.go computePodLevelResourcesResizeAction, doPodResizeAction's pod cgroup steps,
 * isPodLevelResourcesResizeInProgress).
 *
 * The pod cgroup of a pod with pod-level resources is given the limits of cm/resourceconfig.ts when its sandbox
 * is made; the node records what it wrote (the kubelet's actuated state). When the allocated pod asks for other
 * limits, the cgroup follows: what grows is written before the containers are updated, what shrinks after
 * them, so the pod cgroup never holds less than its containers at any step (memory first, then cpu: the
 * limit before the shares when growing, the shares before the limit when shrinking). A limit the allocated pod
 * no longer sets is left as it is, as the kubelet leaves it. Containers without limits of their own follow the
 * pod-level limits through the container resize (resize.ts), since their resources come from them.
 *
 * Pods without pod-level resources keep a pod cgroup without limits of its own here (sandboxes.ts), so there is
 * nothing to resize for them at the pod level.
 *
 * Pure: the decisions only; resizepod.ts acts on them.
 */
import type { Pod } from '../../api/core.js';
import { isPodLevelResourcesSet } from '../../api/resources.js';
import { resourceConfigForPod, type PodResourceConfig } from '../cm/resourceconfig.js';

/** A pod cgroup resize: the config asked for, what the cgroup holds now, and the writes in order. */
export interface PodLevelResize {
  desired: PodResourceConfig;
  current: Partial<PodResourceConfig>;
  /** Written before the containers are updated (what grows). */
  before: Partial<PodResourceConfig>[];
  /** Written after the containers are updated (what shrinks). */
  after: Partial<PodResourceConfig>[];
}

/** A limit in comparable form: 0 (none) is more than any limit. */
function asLimit(v: number | undefined): number {
  return v === undefined || v <= 0 ? Number.POSITIVE_INFINITY : v;
}

/**
 * The writes that take the pod cgroup from `current` to `desired`, split around the container updates. A field
 * `desired` leaves out (no limit asked for) is not written; a field `current` does not know counts as
 * different.
 */
export function podCgroupResizeSteps(
  current: Partial<PodResourceConfig>,
  desired: PodResourceConfig,
): { before: Partial<PodResourceConfig>[]; after: Partial<PodResourceConfig>[] } {
  const before: Partial<PodResourceConfig>[] = [];
  const after: Partial<PodResourceConfig>[] = [];
  // Memory: only its limit is written (memory requests are not cgroup values).
  if (desired.memoryLimitBytes !== undefined && desired.memoryLimitBytes !== current.memoryLimitBytes) {
    const step = { memoryLimitBytes: desired.memoryLimitBytes };
    if (
      current.memoryLimitBytes !== undefined &&
      asLimit(desired.memoryLimitBytes) < asLimit(current.memoryLimitBytes)
    )
      after.push(step);
    else before.push(step);
  }
  // Cpu: the limit (quota over its period), then the shares (the request).
  const afterCpu: Partial<PodResourceConfig>[] = [];
  if (
    desired.cpuQuota !== undefined &&
    desired.cpuPeriod !== undefined &&
    (desired.cpuQuota !== current.cpuQuota || desired.cpuPeriod !== current.cpuPeriod)
  ) {
    const step = { cpuQuota: desired.cpuQuota, cpuPeriod: desired.cpuPeriod };
    const shrinks =
      current.cpuQuota !== undefined &&
      current.cpuPeriod !== undefined &&
      asLimit(desired.cpuQuota) / desired.cpuPeriod < asLimit(current.cpuQuota) / current.cpuPeriod;
    if (shrinks) afterCpu.push(step);
    else before.push(step);
  }
  if (desired.cpuShares !== current.cpuShares) {
    const step = { cpuShares: desired.cpuShares };
    if (current.cpuShares !== undefined && desired.cpuShares < current.cpuShares) afterCpu.unshift(step);
    else before.push(step);
  }
  after.push(...afterCpu);
  return { before, after };
}

/**
 * kubelet computePodLevelResourcesResizeAction: the resize of the pod cgroup of a pod with pod-level
 * resources whose allocation asks for other limits than `actuated` records; undefined when there is nothing to
 * write. `actuated` undefined (nothing recorded, nothing read back): every field is written, as the kubelet
 * proceeds from a missing record. Throws KindError('InvalidArgument') on a malformed quantity.
 */
export function computePodLevelResourcesResizeAction(
  pod: Pick<Pod, 'spec' | 'status'>,
  actuated: Partial<PodResourceConfig> | undefined,
  periodUs?: number,
): PodLevelResize | undefined {
  if (!isPodLevelResourcesSet(pod.spec)) return undefined;
  const desired = resourceConfigForPod(pod, periodUs);
  const current = actuated ?? {};
  const { before, after } = podCgroupResizeSteps(current, desired);
  if (before.length === 0 && after.length === 0) return undefined;
  return { desired, current, before, after };
}

/**
 * kubelet isPodLevelResourcesResizeInProgress: the pod cgroup of a pod with pod-level resources does not yet
 * hold what its allocation asks for. False when nothing is recorded for it (nothing to compare with).
 */
export function isPodLevelResourcesResizeInProgress(
  pod: Pick<Pod, 'spec' | 'status'>,
  actuated: Partial<PodResourceConfig> | undefined,
  periodUs?: number,
): boolean {
  if (!actuated) return false;
  try {
    return computePodLevelResourcesResizeAction(pod, actuated, periodUs) !== undefined;
  } catch {
    return false;
  }
}

/** The record after `step` was written (kubelet: updateActuatedPodLevelResources). */
export function withPodCgroupStep(
  actuated: Partial<PodResourceConfig> | undefined,
  step: Partial<PodResourceConfig>,
): Partial<PodResourceConfig> {
  return { ...(actuated ?? {}), ...step };
}
