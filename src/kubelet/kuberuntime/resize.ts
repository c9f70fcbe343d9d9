/**
 * In-place resize in SyncPod (kubelet: kuberuntime_manager.go computePodResizeAction and doPodResizeAction).
 *
 * The pod a worker syncs carries its allocated resources. A running container, regular or init (sidecar or
 * not: InPlacePodVerticalScalingInitContainers, locked on in v1.37), whose applied resources (what the
 * runtime reports) differ from them is either updated in place (UpdateContainerResources) or, when its
 * resizePolicy says RestartContainer for a changed resource, killed and started again, which counts as a
 * restart (the API refuses to resize an init container that is not a sidecar under that policy). A container
 * the runtime reports no resources for is left alone: there is nothing to compare with. Memory requests are
 * not applied to cgroups, so they never need actuation.
 *
 * Pure: the decisions only; resizepod.ts acts on them.
 */
import type { Container, Pod } from '../../api/core.js';
import type { LinuxContainerResources } from '../../runtime/types.js';
import {
  findContainerStatusByName,
  type ContainerID,
  type ContainerResources,
  type KubeContainerStatus,
  type RuntimePodStatus,
} from '../container/types.js';
import type { NodeSettings } from './sandboxconfig.js';
import { MIN_MILLI_CPU_LIMIT, MIN_SHARES } from '../cm/cpu.js';
import { containerResources, toKubeContainerResources } from './containerconfig.js';
import type { PodActions } from './podactions.js';

/** One container to update in place. */
export interface ContainerToUpdate {
  id: ContainerID;
  name: string;
  /** The full Linux resources the container should have (as created from the allocated spec). */
  resources: LinuxContainerResources;
  /** The memory limit the runtime applies now (0 = none). */
  currentMemoryLimitBytes: number;
}

export interface PodResizeActions {
  /** The pod actions, with the containers a resize restarts added to the kills and starts. */
  actions: PodActions;
  toUpdate: ContainerToUpdate[];
}

type Resource = 'cpu' | 'memory';

function policyOf(c: Container, resource: Resource): 'NotRequired' | 'RestartContainer' {
  return c.resizePolicy?.find((p) => p.resourceName === resource)?.restartPolicy ?? 'NotRequired';
}

/** What the allocated spec asks the runtime for, in the terms the runtime reports back. */
function desiredOf(linux: LinuxContainerResources): Required<ContainerResources> {
  const r = toKubeContainerResources(linux);
  return {
    cpuRequestMilli: r.cpuRequestMilli ?? 0,
    cpuLimitMilli: r.cpuLimitMilli ?? 0,
    memoryLimitBytes: r.memoryLimitBytes ?? 0,
  };
}

/**
 * The resize decision for one container: 'none', 'update' in place, or 'restart'. Values at or below the
 * smallest the kernel can express (MinShares, MinMilliCPULimit) count as equal, as the kubelet counts them.
 */
export function containerResizeAction(
  container: Container,
  desired: Required<ContainerResources>,
  current: ContainerResources,
): 'none' | 'update' | 'restart' {
  const cur = {
    cpuRequestMilli: current.cpuRequestMilli ?? 0,
    cpuLimitMilli: current.cpuLimitMilli ?? 0,
    memoryLimitBytes: current.memoryLimitBytes ?? 0,
  };
  const want = { ...desired };
  if (want.cpuRequestMilli <= MIN_SHARES && cur.cpuRequestMilli <= MIN_SHARES)
    want.cpuRequestMilli = cur.cpuRequestMilli;
  if (want.cpuLimitMilli <= MIN_MILLI_CPU_LIMIT && cur.cpuLimitMilli <= MIN_MILLI_CPU_LIMIT)
    want.cpuLimitMilli = cur.cpuLimitMilli;
  const changed: Resource[] = [];
  if (want.memoryLimitBytes !== cur.memoryLimitBytes) changed.push('memory');
  if (want.cpuLimitMilli !== cur.cpuLimitMilli || want.cpuRequestMilli !== cur.cpuRequestMilli)
    changed.push('cpu');
  if (changed.length === 0) return 'none';
  return changed.some((r) => policyOf(container, r) === 'RestartContainer') ? 'restart' : 'update';
}

function runningRecord(status: RuntimePodStatus, name: string): KubeContainerStatus | undefined {
  const s = findContainerStatusByName(status, name);
  return s?.state === 'running' ? s : undefined;
}

/**
 * Adds the resize work to `actions` (kubelet: computePodResizeAction per running container). Nothing when the
 * pod is being killed, re-created or reset (restarting all its containers in place), and nothing for a
 * container already being killed or started.
 */
export function computePodResizeActions(
  pod: Pod,
  status: RuntimePodStatus,
  actions: PodActions,
  node?: Pick<NodeSettings, 'memoryCapacityBytes' | 'swapController' | 'cpuAffinity'>,
): PodResizeActions {
  const out: PodResizeActions = {
    actions: {
      ...actions,
      initContainersToStart: [...actions.initContainersToStart],
      containersToStart: [...actions.containersToStart],
      containersToKill: new Map(actions.containersToKill),
    },
    toUpdate: [],
  };
  if (
    actions.killPod ||
    actions.createSandbox ||
    actions.containersToReset.length > 0 ||
    pod.metadata.deletionTimestamp
  ) {
    return out;
  }
  const visit = (c: Container, idx: number, init: boolean): void => {
    const record = runningRecord(status, c.name);
    if (!record?.resources || out.actions.containersToKill.has(record.id)) return;
    const starts = init ? out.actions.initContainersToStart : out.actions.containersToStart;
    if (starts.includes(idx)) return;
    const linux = containerResources(pod, c, node);
    const decision = containerResizeAction(c, desiredOf(linux), record.resources);
    if (decision === 'none') return;
    if (decision === 'update') {
      out.toUpdate.push({
        id: record.id,
        name: c.name,
        resources: linux,
        currentMemoryLimitBytes: record.resources.memoryLimitBytes ?? 0,
      });
      return;
    }
    out.actions.containersToKill.set(record.id, {
      name: c.name,
      kind: init ? 'init' : 'regular',
      containerIndex: idx,
      message: `Container ${c.name} resize requires restart`,
      reason: '',
    });
    starts.push(idx);
    starts.sort((a, b) => a - b);
  };
  (pod.spec.initContainers ?? []).forEach((c, i) => visit(c, i, true));
  pod.spec.containers.forEach((c, i) => visit(c, i, false));
  return out;
}

/**
 * Whether a running container's applied resources still differ from its allocation (kubelet:
 * IsPodResizeInProgress): PodResizeInProgress stays until they agree.
 */
export function isPodResizeInProgress(
  pod: Pod,
  status: RuntimePodStatus,
  node?: Pick<NodeSettings, 'cpuAffinity'>,
): boolean {
  const check = (c: Container): boolean => {
    const record = runningRecord(status, c.name);
    if (!record?.resources) return false;
    try {
      return (
        containerResizeAction(c, desiredOf(containerResources(pod, c, node)), record.resources) !== 'none'
      );
    } catch {
      return false;
    }
  };
  return (pod.spec.initContainers ?? []).some(check) || pod.spec.containers.some(check);
}

/** The new memory limit of an update that lowers it (or sets one where there was none); undefined otherwise. */
export function decreasedMemoryLimit(u: ContainerToUpdate): number | undefined {
  const next = u.resources.memoryLimitInBytes ?? 0;
  if (next === 0) return undefined;
  return u.currentMemoryLimitBytes === 0 || next < u.currentMemoryLimitBytes ? next : undefined;
}

/**
 * The kubelet's refusal of memory limits that would not stay above what the containers use now (kubelet:
 * validateMemoryResizeAction): one message for every problem, or undefined when the update may go ahead.
 * `usageBytes` undefined: the runtime could not tell. `pod`: the pod cgroup's lowered limit and its usage.
 */
export function memoryDecreaseError(
  checks: readonly { name: string; limitBytes: number; usageBytes: number | undefined }[],
  pod?: { limitBytes: number; usageBytes: number | undefined },
): string | undefined {
  const errs: string[] = [];
  // A lowered pod cgroup limit (pod-level resources) first, as the kubelet checks it.
  if (pod && pod.usageBytes === undefined) errs.push('missing pod memory usage');
  else if (pod && pod.usageBytes! >= pod.limitBytes) {
    errs.push(
      `attempting to set pod memory limit (${pod.limitBytes}) below current usage (${pod.usageBytes})`,
    );
  }
  for (const c of checks) {
    if (c.usageBytes === undefined) errs.push(`missing container ${JSON.stringify(c.name)} memory usage`);
    else if (c.usageBytes >= c.limitBytes) {
      errs.push(
        `attempting to set container ${JSON.stringify(c.name)} memory limit (${c.limitBytes}) below current usage (${c.usageBytes})`,
      );
    }
  }
  if (errs.length === 0) return undefined;
  return `cannot decrease memory limits: ${errs.length === 1 ? errs[0] : `[${errs.join(', ')}]`}`;
}
