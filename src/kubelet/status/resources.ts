/**
 * The resources of container statuses (kubelet: convertToAPIContainerStatuses, convertContainerStatusResources,
 * v1.35+): every resizable container (regular and init, sidecar or not) reports `allocatedResources` (the
 * requests the node allocated) and `resources`: for a running container what the runtime has applied, cpu and
 * memory limits and the cpu request read back from it, the rest as allocated; for any other container the
 * allocation. A running container whose runtime reports nothing keeps what it reported before, or else shows
 * the allocation.
 *
 * The pod's own `resources` and `allocatedResources` (InPlacePodLevelResourcesVerticalScaling, kubelet:
 * convertToAPIPodLevelResourcesStatus): see podLevelResourcesStatus.
 *
 * Pure; mutates only the statuses it is given.
 */
import {
  isRestartableInitContainer,
  type Container,
  type ContainerStatus,
  type Pod,
  type PodStatus,
  type ResourceRequirements,
} from '../../api/core.js';
import {
  isPodLevelRequestsSet,
  isPodLevelResourcesSet,
  isSupportedPodLevelResource,
} from '../../api/resources.js';
import {
  formatBinaryQuantity,
  formatMilliQuantity,
  parseQuantityNano,
  quantityMilliValue,
} from '../../util/quantity.js';
import { containerIDString, findContainerStatusByName, type RuntimePodStatus } from '../container/types.js';
import {
  cpuSharesToWeight,
  cpuWeightToShares,
  MIN_MILLI_CPU_LIMIT,
  MIN_SHARES,
  milliCPUToShares,
  quotaToMilliCPU,
  sharesToMilliCPU,
} from '../cm/cpu.js';
import type { PodResourceConfig } from '../cm/resourceconfig.js';

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

type ContainersAndPod = Pick<Pod['spec'], 'containers' | 'initContainers' | 'resources'>;
type ExactAmounts = Map<string, bigint>;

function exactOf(list: Record<string, string | number> | undefined): ExactAmounts {
  const out: ExactAmounts = new Map();
  for (const [name, q] of Object.entries(list ?? {})) out.set(name, parseQuantityNano(q));
  return out;
}

function addExact(into: ExactAmounts, from: ExactAmounts): void {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0n) + v);
}

function maxExact(into: ExactAmounts, from: ExactAmounts): void {
  for (const [k, v] of from) {
    const had = into.get(k);
    if (had === undefined || v > had) into.set(k, v);
  }
}

/**
 * The pod's requests or limits as exact quantities (kubelet: resourcehelper PodRequests / PodLimits, which add
 * Quantities without rounding): the same aggregate as api/resources.ts podRequests and podLimits (containers
 * summed, sidecars added, the init floor, supported pod-level values in place), in nano units, so that a
 * request of `10m` bytes is reported as such and not as the byte it rounds up to.
 */
function exactPodResources(spec: ContainersAndPod, which: 'requests' | 'limits'): ExactAmounts {
  const of = (c: Container): ExactAmounts =>
    exactOf(
      which === 'requests'
        ? { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) }
        : c.resources?.limits,
    );
  const sum: ExactAmounts = new Map();
  for (const c of spec.containers ?? []) addExact(sum, of(c));
  const sidecars: ExactAmounts = new Map();
  const floor: ExactAmounts = new Map();
  for (const c of spec.initContainers ?? []) {
    if (isRestartableInitContainer(c)) {
      addExact(sidecars, of(c));
      maxExact(floor, sidecars);
    } else {
      const withSidecars = new Map(sidecars);
      addExact(withSidecars, of(c));
      maxExact(floor, withSidecars);
    }
  }
  addExact(sum, sidecars);
  maxExact(sum, floor);
  const podLevel = which === 'requests' ? isPodLevelRequestsSet(spec) : isPodLevelResourcesSet(spec);
  if (podLevel) {
    for (const [name, q] of Object.entries(spec.resources?.[which] ?? {}))
      if (isSupportedPodLevelResource(name)) sum.set(name, parseQuantityNano(q));
  }
  return sum;
}

const NANO = 1_000_000_000n;

/** A nano amount in the API's quantity form: whole cores or bytes (binary suffixes), else m, u or n. */
function formatNano(name: string, n: bigint): string {
  if (n % NANO === 0n) {
    const whole = Number(n / NANO);
    return name === 'cpu' ? formatMilliQuantity(whole * 1000) : formatBinaryQuantity(whole);
  }
  if (n % 1_000_000n === 0n) return `${n / 1_000_000n}m`;
  if (n % 1000n === 0n) return `${n / 1000n}u`;
  return `${n}n`;
}

function listOf(amounts: ExactAmounts): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of amounts) out[k] = formatNano(k, v);
  return out;
}

/**
 * The pod's `resources` and `allocatedResources` (kubelet: generateAPIPodStatus with
 * InPlacePodLevelResourcesVerticalScaling, Beta and on in v1.37), for every pod, pod-level resources or not.
 * `pod` is the pod as allocated with its API status; `applied` what its pod cgroup holds (see below).
 *
 * - `allocatedResources`: the pod's requests (pod-level over the containers' sum).
 * - `resources` of a pod whose API phase is not Running: its requests and limits as allocated (pod-level
 *   resources over the containers' sums, kubelet getEffectiveAllocatedResources).
 * - of a Running pod: its pod-level resources as allocated, with the cpu request read back from the cgroup's
 *   shares, the cpu limit from its quota and the memory limit from its memory limit (values at or below what
 *   the kernel can express read as allocated); the memory request, when the pod-level spec has none, is the
 *   containers' sum. A value the cgroup does not give keeps what the last status of the running pod said.
 *
 * `applied`: what the pod cgroup holds (kubelet: GetPodCgroupConfig); undefined when that is not known, which
 * reads as a cgroup that gives nothing.
 */
export function podLevelResourcesStatus(
  pod: Pick<Pod, 'spec' | 'status'>,
  applied: Partial<PodResourceConfig> | undefined,
  old: Pick<PodStatus, 'phase' | 'resources'> | undefined,
): { resources: ResourceRequirements; allocatedResources: Record<string, string> } {
  const requests = exactPodResources(pod.spec, 'requests');
  const allocatedResources = listOf(requests);
  if (pod.status?.phase !== 'Running') {
    const resources: ResourceRequirements = { ...(pod.spec.resources ?? {}) };
    const limits = listOf(exactPodResources(pod.spec, 'limits'));
    delete resources.requests;
    delete resources.limits;
    if (Object.keys(limits).length > 0) resources.limits = limits;
    if (Object.keys(allocatedResources).length > 0) resources.requests = { ...allocatedResources };
    return { resources, allocatedResources };
  }
  const config = applied;
  const out: { requests: Record<string, string | number>; limits: Record<string, string | number> } = {
    requests: { ...(pod.spec.resources?.requests ?? {}) },
    limits: { ...(pod.spec.resources?.limits ?? {}) },
  };
  const preserve = (from: 'requests' | 'limits', name: string): void => {
    if (old?.phase !== 'Running' || !old.resources) return;
    const v = old.resources[from]?.[name];
    if (v !== undefined) out[from][name] = v;
  };
  const milli = (q: string | number | undefined): number => {
    if (q === undefined) return 0;
    try {
      return quantityMilliValue(q);
    } catch {
      return 0;
    }
  };
  const cpuRequest = config?.cpuShares !== undefined ? sharesToMilliCPU(config.cpuShares) : 0;
  if (cpuRequest > 0) {
    const allocatedMilli = milli(out.requests.cpu);
    if (cpuRequest > MIN_SHARES || allocatedMilli > MIN_SHARES) {
      // cgroup v2 weights are coarse: a read-back that is the allocation's shares after the weight round trip
      // is the allocation.
      const allocatedShares = milliCPUToShares(allocatedMilli);
      const roundTrip = cpuWeightToShares(cpuSharesToWeight(allocatedShares));
      if (config!.cpuShares !== roundTrip) out.requests.cpu = formatMilliQuantity(cpuRequest);
    }
  } else preserve('requests', 'cpu');
  if (out.requests.memory === undefined) {
    const memory = requests.get('memory');
    if (memory !== undefined) out.requests.memory = formatNano('memory', memory);
  }
  const cpuLimit =
    config?.cpuQuota !== undefined && config.cpuPeriod !== undefined && config.cpuPeriod > 0
      ? quotaToMilliCPU(config.cpuQuota, config.cpuPeriod)
      : 0;
  if (cpuLimit > 0) {
    if (cpuLimit > MIN_MILLI_CPU_LIMIT || milli(out.limits.cpu) > MIN_MILLI_CPU_LIMIT)
      out.limits.cpu = formatMilliQuantity(cpuLimit);
  } else preserve('limits', 'cpu');
  if (config?.memoryLimitBytes !== undefined && config.memoryLimitBytes > 0)
    out.limits.memory = formatBinaryQuantity(config.memoryLimitBytes);
  else preserve('limits', 'memory');
  const resources: ResourceRequirements = { ...(pod.spec.resources ?? {}) };
  delete resources.requests;
  delete resources.limits;
  if (Object.keys(out.limits).length > 0) resources.limits = out.limits;
  if (Object.keys(out.requests).length > 0) resources.requests = out.requests;
  return { resources, allocatedResources };
}
