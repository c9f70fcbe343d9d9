/**
 * The resources of container statuses (kubelet: convertToAPIContainerStatuses, convertContainerStatusResources,
 * v1.35+): every resizable container (regular and init, sidecar or not) reports `allocatedResources` (the
 * requests the node allocated) and `resources`: for a running container what the runtime has applied, cpu and
 * memory limits and the cpu request read back from it, the rest as allocated; for any other container the
 * allocation. A running container whose runtime reports nothing keeps what it reported before, or else shows
 * the allocation.
 *
 * Pure; mutates only the statuses it is given.
 */
import type { Container, ContainerStatus, ResourceRequirements } from '../../api/core.js';
import { formatBinaryQuantity, formatMilliQuantity, quantityMilliValue } from '../../util/quantity.js';
import { containerIDString, findContainerStatusByName, type RuntimePodStatus } from '../container/types.js';
import { MIN_MILLI_CPU_LIMIT, MIN_SHARES } from '../cm/cpu.js';

function copyList(
  l: Record<string, string | number> | undefined,
): Record<string, string | number> | undefined {
  return l ? { ...l } : undefined;
}

function milliOf(q: string | number | undefined): number {
  if (q === undefined) return 0;
  try {
    return quantityMilliValue(q);
  } catch {
    return 0;
  }
}

function resourcesOf(
  alloc: ResourceRequirements,
  status: ContainerStatus,
  runtime: Pick<RuntimePodStatus, 'containers'>,
  old: ContainerStatus | undefined,
): ResourceRequirements {
  // Everything starts as allocated: what a container that is not running reports, and every resource the
  // runtime does not read back.
  const out: ResourceRequirements = {};
  if (alloc.limits) out.limits = { ...alloc.limits };
  if (alloc.requests) out.requests = { ...alloc.requests };
  const record = findContainerStatusByName(runtime, status.name);
  if (!record || record.state !== 'running' || !status.state?.running) return out;
  const applied = record.resources;
  const sameInstance = !!old?.state?.running && old.containerID === containerIDString(record);
  // Nothing read back: what this running instance reported before, if anything.
  const keep = (list: Record<string, string | number>, from: 'limits' | 'requests', name: string): void => {
    const v = sameInstance ? old?.resources?.[from]?.[name] : undefined;
    if (v !== undefined) list[name] = v;
  };
  if (out.limits) {
    if (applied?.cpuLimitMilli !== undefined) {
      // Below what a CFS quota can express, both read as the allocation (kubelet: MinMilliCPULimit).
      if (applied.cpuLimitMilli > MIN_MILLI_CPU_LIMIT || milliOf(alloc.limits?.cpu) > MIN_MILLI_CPU_LIMIT)
        out.limits.cpu = formatMilliQuantity(applied.cpuLimitMilli);
    } else keep(out.limits, 'limits', 'cpu');
    if (applied?.memoryLimitBytes !== undefined)
      out.limits.memory = formatBinaryQuantity(applied.memoryLimitBytes);
    else keep(out.limits, 'limits', 'memory');
  }
  if (out.requests) {
    if (applied?.cpuRequestMilli !== undefined) {
      // Shares cannot express less than MinShares: both at or below it read as the allocation.
      if (applied.cpuRequestMilli > MIN_SHARES || milliOf(alloc.requests?.cpu) > MIN_SHARES)
        out.requests.cpu = formatMilliQuantity(applied.cpuRequestMilli);
    } else keep(out.requests, 'requests', 'cpu');
  }
  return out;
}

/**
 * Sets `resources` and `allocatedResources` on the statuses of `containers` (spec.containers or
 * spec.initContainers of the allocated pod: every one of them is resizable).
 */
export function applyContainerResources(
  containers: readonly Container[],
  statuses: readonly ContainerStatus[],
  runtime: Pick<RuntimePodStatus, 'containers'>,
  oldStatuses: readonly ContainerStatus[] | undefined,
): void {
  const spec = new Map(containers.map((c) => [c.name, c]));
  const old = new Map((oldStatuses ?? []).map((s) => [s.name, s]));
  for (const s of statuses) {
    const c = spec.get(s.name);
    if (!c) continue;
    const alloc: ResourceRequirements = {
      limits: copyList(c.resources?.limits),
      requests: copyList(c.resources?.requests),
    };
    if (!alloc.limits) delete alloc.limits;
    if (!alloc.requests) delete alloc.requests;
    s.resources = resourcesOf(alloc, s, runtime, old.get(s.name));
    if (alloc.requests && Object.keys(alloc.requests).length > 0)
      s.allocatedResources = { ...alloc.requests };
  }
}
