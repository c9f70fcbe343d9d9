/**
 * The limits of a pod's own cgroup (kubelet cm: ResourceConfigForPod, cgroup v1 terms, CFS quota on, no
 * MemoryQoS). Pure.
 *
 * From the pod's requests and limits with pod-level resources (PodRequests, PodLimits): cpu shares from the
 * cpu request, a CFS quota over the 100 ms period from the cpu limit, the memory limit in bytes. By QoS class:
 * Guaranteed gets all of them; Burstable the shares, the quota only when every container (init included)
 * limits cpu or the pod does, and the memory limit only when every container limits memory or the pod does;
 * BestEffort the minimum shares alone.
 */
import type { Pod } from '../../api/core.js';
import { isPodLevelResourcesSet, podLimits, podRequests } from '../../api/resources.js';
import { quantityMilliValue, quantityValue } from '../../util/quantity.js';
import { MIN_SHARES, milliCPUToQuota, milliCPUToShares, QUOTA_PERIOD_US } from './cpu.js';
import { getPodQOS } from '../qos.js';

/** What a pod cgroup is given; an absent field is left as the kernel has it (no limit). */
export interface PodResourceConfig {
  cpuShares: number;
  /** Microseconds per period; 0 = no quota (written as -1 on cgroup v1, `max` on v2). */
  cpuQuota?: number;
  cpuPeriod?: number;
  /** Bytes; 0 = no limit. */
  memoryLimitBytes?: number;
}

function isZero(list: Record<string, string | number> | undefined, name: 'cpu' | 'memory'): boolean {
  const q = list?.[name];
  if (q === undefined) return true;
  return (name === 'cpu' ? quantityMilliValue(q) : quantityValue(q)) === 0;
}

/** ResourceConfigForPod for the pod as allocated. Throws KindError('InvalidArgument') on a malformed quantity. */
export function resourceConfigForPod(
  pod: Pick<Pod, 'spec' | 'status'>,
  periodUs: number = QUOTA_PERIOD_US,
): PodResourceConfig {
  const requests = podRequests(pod.spec);
  const limits = podLimits(pod.spec);
  const containers = [...(pod.spec.initContainers ?? []), ...pod.spec.containers];
  let cpuLimitsDeclared = containers.every((c) => !isZero(c.resources?.limits, 'cpu'));
  let memoryLimitsDeclared = containers.every((c) => !isZero(c.resources?.limits, 'memory'));
  if (isPodLevelResourcesSet(pod.spec)) {
    if (!isZero(pod.spec.resources?.limits, 'cpu')) cpuLimitsDeclared = true;
    if (!isZero(pod.spec.resources?.limits, 'memory')) memoryLimitsDeclared = true;
  }
  const cpuShares = milliCPUToShares(requests.get('cpu') ?? 0);
  const cpuQuota = milliCPUToQuota(limits.get('cpu') ?? 0, periodUs);
  const memoryLimitBytes = limits.get('memory') ?? 0;
  switch (getPodQOS(pod)) {
    case 'Guaranteed':
      return { cpuShares, cpuQuota, cpuPeriod: periodUs, memoryLimitBytes };
    case 'Burstable':
      return {
        cpuShares,
        ...(cpuLimitsDeclared ? { cpuQuota, cpuPeriod: periodUs } : {}),
        ...(memoryLimitsDeclared ? { memoryLimitBytes } : {}),
      };
    case 'BestEffort':
      return { cpuShares: MIN_SHARES };
  }
}
