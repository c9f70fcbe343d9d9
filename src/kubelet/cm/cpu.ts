/**
 * The kubelet's CPU arithmetic for cgroups (pkg/kubelet/cm helper_linux): cpu shares from a request, a CFS
 * quota from a limit over the period, and back; the Linux resources a container or sandbox gets from them.
 * Used by the container and sandbox configs, the pod cgroup, resize and the status's applied resources.
 */
import type { LinuxContainerResources } from '../../runtime/types.js';

/** kubelet cm: MinShares, MaxShares, SharesPerCPU, QuotaPeriod, MinQuotaPeriod. */
export const MIN_SHARES = 2;
export const MAX_SHARES = 262_144;
export const SHARES_PER_CPU = 1024;
export const QUOTA_PERIOD_US = 100_000;
export const MIN_QUOTA_PERIOD_US = 1_000;
/** kubelet cm.MinMilliCPULimit: the smallest cpu limit a CFS quota expresses (MinQuotaPeriod per QuotaPeriod). */
export const MIN_MILLI_CPU_LIMIT = (MIN_QUOTA_PERIOD_US * 1000) / QUOTA_PERIOD_US;

/** kubelet MilliCPUToShares. */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU <= 0) return MIN_SHARES;
  const shares = Math.floor((milliCPU * SHARES_PER_CPU) / 1000);
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, shares));
}

/** kubelet milliCPUToQuota: 0 (no limit) for 0, else at least MIN_QUOTA_PERIOD_US. */
export function milliCPUToQuota(milliCPU: number, periodUs: number): number {
  if (milliCPU <= 0) return 0;
  return Math.max(MIN_QUOTA_PERIOD_US, Math.floor((milliCPU * periodUs) / 1000));
}

/** kubelet CpuSharesToCPUWeight: cgroup v1 shares [2, 262144] onto v2 weights [1, 10000]. */
export function cpuSharesToWeight(shares: number): number {
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

/** kubelet cpuWeightToCPUShares: cgroup v2 weights [1, 10000] back onto v1 shares [2, 262144]. */
export function cpuWeightToShares(weight: number): number {
  return Math.floor(((weight - 1) * 262142) / 9999) + 2;
}

/** kubelet sharesToMilliCPU: the cpu request a shares value stands for (rounded up; 0 below MinShares). */
export function sharesToMilliCPU(shares: number): number {
  if (shares < MIN_SHARES) return 0;
  return Math.ceil((shares * 1000) / SHARES_PER_CPU);
}

/** kubelet quotaToMilliCPU: the cpu limit a CFS quota stands for (0 = no limit). */
export function quotaToMilliCPU(quota: number, periodUs: number): number {
  if (quota <= 0 || periodUs <= 0) return 0;
  return Math.floor((quota * 1000) / periodUs);
}

/**
 * kubelet calculateLinuxResources (cgroup v1, CFS quota on): cpu shares from the request (the limit when
 * there is no request), a quota from the cpu limit (0 = none) over the CFS period (`cpuCFSQuotaPeriod`, 100 ms by default), the memory limit when
 * not zero. Quantities in millicores and bytes.
 */
export function linuxResources(
  cpuRequestMilli: number | undefined,
  cpuLimitMilli: number,
  memoryLimitBytes: number,
  periodUs: number = QUOTA_PERIOD_US,
): LinuxContainerResources {
  const r: LinuxContainerResources = {
    cpuShares: milliCPUToShares(cpuRequestMilli ?? cpuLimitMilli),
    cpuPeriod: periodUs,
    cpuQuota: milliCPUToQuota(cpuLimitMilli, periodUs),
  };
  if (memoryLimitBytes > 0) r.memoryLimitInBytes = memoryLimitBytes;
  return r;
}
