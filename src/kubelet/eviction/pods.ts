/**
 * What the eviction manager reads of a pod: whether it may be evicted at all (critical pods never are),
 * its priority, its requests as eviction ranks them, and its disk usage as each filesystem layout counts
 * it (kubelet: kubelettypes.IsCriticalPod, GetResourceRequestQuantity, podDiskUsage).
 */
import type { Pod, Volume } from '../../api/core.js';
import {
  aggregateContainerRequests,
  isPodLevelRequestsSet,
  isPodLevelResourcesSet,
  isSupportedPodLevelResource,
} from '../../api/resources.js';
import type { FsStats, PodStats } from '../stats/types.js';
import { isMirrorPod, isStaticPod } from '../types/podupdate.js';
import { quantityValue } from '../../util/quantity.js';

/** scheduling.SystemCriticalPriority: system-cluster-critical and system-node-critical are at or above it. */
export const SystemCriticalPriority = 2_000_000_000;

/** Static pods, mirror pods and pods of system-critical priority are never evicted nor refused. */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  return pod.spec.priority !== undefined && pod.spec.priority >= SystemCriticalPriority;
}

/** A pod without a resolved priority ranks as priority 0. */
export function podPriority(pod: Pod): number {
  return pod.spec.priority ?? 0;
}

function units(q: string | number | undefined): number {
  if (q === undefined) return 0;
  try {
    return quantityValue(q);
  } catch {
    return 0;
  }
}

/**
 * The pod's request of a resource in whole units, as eviction ranks pods: with pod-level resources set,
 * only pod-level requests of supported resources count (so a pod-level pod requests no ephemeral storage
 * here); otherwise the containers' aggregate.
 */
export function podRequest(pod: Pod, resource: string): number {
  if (isPodLevelResourcesSet(pod.spec)) {
    if (!isPodLevelRequestsSet(pod.spec) || !isSupportedPodLevelResource(resource)) return 0;
    return units(pod.spec.resources?.requests?.[resource]);
  }
  try {
    return aggregateContainerRequests(pod.spec).get(resource) ?? 0;
  } catch {
    return 0;
  }
}

/** Which parts of a pod's disk use a filesystem holds (fsStatsType). */
export type FsStatsType = 'root' | 'logs' | 'localVolumeSource' | 'images';

/** Volumes on the node's disk whose usage is the pod's: hostPath, disk-backed emptyDir, configMap, gitRepo. */
export function localVolumeNames(pod: Pod): string[] {
  const local = (v: Volume): boolean =>
    v.hostPath !== undefined ||
    v.gitRepo !== undefined ||
    v.configMap !== undefined ||
    (v.emptyDir !== undefined && (v.emptyDir.medium ?? '') === '');
  return (pod.spec.volumes ?? []).filter(local).map((v) => v.name);
}

export interface DiskUsage {
  bytes: number;
  inodes: number;
}

const used = (fs: FsStats | undefined): DiskUsage => ({
  bytes: fs?.usedBytes ?? 0,
  inodes: fs?.inodesUsed ?? 0,
});

/** The pod's usage of a filesystem that holds `measure` (podDiskUsage). */
export function podDiskUsage(stats: PodStats, pod: Pod, measure: readonly FsStatsType[]): DiskUsage {
  const total = { bytes: 0, inodes: 0 };
  const add = (u: DiskUsage): void => {
    total.bytes += u.bytes;
    total.inodes += u.inodes;
  };
  for (const c of stats.containers) {
    if (measure.includes('root')) add(used(c.rootfs));
    if (measure.includes('logs')) add(used(c.logs));
  }
  if (measure.includes('localVolumeSource')) {
    for (const name of localVolumeNames(pod)) {
      const v = stats.volume?.find((s) => s.name === name);
      if (v) add(used(v));
    }
  }
  return total;
}
