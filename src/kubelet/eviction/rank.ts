/**
 * The order pods are evicted in under each signal (kubelet: rankMemoryPressure, rankDiskPressureFunc,
 * rankPIDPressure and buildSignalToRankFunc), first to evict first:
 *
 * - memory: pods whose working set exceeds their memory request, then lower priority, then the larger
 *   working set minus request;
 * - disk: the same with the pod's usage of the filesystem under pressure (which parts count depends on
 *   whether images and containers have filesystems of their own) against its ephemeral-storage request;
 *   for inodes the same order with inode counts (and, as in the kubelet, the ephemeral-storage request
 *   still subtracted in the last key);
 * - pids: lower priority, then more processes.
 *
 * A pod without stats ranks before those with. The kubelet's sort is not stable, so pods equal on every
 * key come in any order there; here they keep the order they were given in.
 */
import type { Pod } from '../../api/core.js';
import type { PodStats } from '../stats/types.js';
import type { PodStatsByUID } from './observations.js';
import { podDiskUsage, podPriority, podRequest, type FsStatsType } from './pods.js';
import type { Signal } from './signals.js';

type Cmp = (a: Pod, b: Pod) => number;
type StatsOf = (p: Pod) => PodStats | undefined;

/** true before false. */
function cmpBool(a: boolean, b: boolean): number {
  if (a === b) return 0;
  return b ? 1 : -1;
}

function withStats(stats: StatsOf, cmp: (a: PodStats, b: PodStats, pa: Pod, pb: Pod) => number): Cmp {
  return (pa, pb) => {
    const a = stats(pa);
    const b = stats(pb);
    if (!a || !b) return cmpBool(!a, !b);
    return cmp(a, b, pa, pb);
  };
}

const byPriority: Cmp = (a, b) => Math.sign(podPriority(a) - podPriority(b));

const workingSet = (s: PodStats): number => s.memory?.workingSetBytes ?? 0;

function exceedsMemoryRequests(stats: StatsOf): Cmp {
  return withStats(stats, (a, b, pa, pb) =>
    cmpBool(workingSet(a) > podRequest(pa, 'memory'), workingSet(b) > podRequest(pb, 'memory')),
  );
}

function memoryAboveRequests(stats: StatsOf): Cmp {
  return withStats(stats, (a, b, pa, pb) =>
    Math.sign(workingSet(b) - podRequest(pb, 'memory') - (workingSet(a) - podRequest(pa, 'memory'))),
  );
}

function processes(stats: StatsOf): Cmp {
  const count = (s: PodStats): number => s.process_stats?.process_count ?? 0;
  return withStats(stats, (a, b) => Math.sign(count(b) - count(a)));
}

type DiskResource = 'ephemeral-storage' | 'inodes';

function diskOf(s: PodStats, p: Pod, measure: readonly FsStatsType[], resource: DiskResource): number {
  const u = podDiskUsage(s, p, measure);
  return resource === 'inodes' ? u.inodes : u.bytes;
}

function exceedsDiskRequests(stats: StatsOf, measure: readonly FsStatsType[], resource: DiskResource): Cmp {
  return withStats(stats, (a, b, pa, pb) =>
    cmpBool(
      diskOf(a, pa, measure, resource) > podRequest(pa, resource),
      diskOf(b, pb, measure, resource) > podRequest(pb, resource),
    ),
  );
}

function diskAboveRequests(stats: StatsOf, measure: readonly FsStatsType[], resource: DiskResource): Cmp {
  return withStats(stats, (a, b, pa, pb) => {
    const da = diskOf(a, pa, measure, resource) - podRequest(pa, 'ephemeral-storage');
    const db = diskOf(b, pb, measure, resource) - podRequest(pb, 'ephemeral-storage');
    return Math.sign(db - da);
  });
}

function ordered(pods: readonly Pod[], cmps: readonly Cmp[]): Pod[] {
  return [...pods].sort((a, b) => {
    for (const cmp of cmps) {
      const r = cmp(a, b);
      if (r !== 0) return r;
    }
    return 0;
  });
}

export type RankFunc = (pods: readonly Pod[], stats: PodStatsByUID) => Pod[];

const statsOf =
  (stats: PodStatsByUID): StatsOf =>
  (p) =>
    stats.get(p.metadata.uid ?? '');

export const rankMemoryPressure: RankFunc = (pods, stats) =>
  ordered(pods, [exceedsMemoryRequests(statsOf(stats)), byPriority, memoryAboveRequests(statsOf(stats))]);

export const rankPIDPressure: RankFunc = (pods, stats) =>
  ordered(pods, [byPriority, processes(statsOf(stats))]);

export function rankDiskPressure(measure: readonly FsStatsType[], resource: DiskResource): RankFunc {
  return (pods, stats) =>
    ordered(pods, [
      exceedsDiskRequests(statsOf(stats), measure, resource),
      byPriority,
      diskAboveRequests(statsOf(stats), measure, resource),
    ]);
}

/** Where the node keeps images and containers' writable layers, as the runtime reports it. */
export interface FsLayout {
  /** Images live on a filesystem other than nodefs. */
  dedicatedImageFs: boolean;
  /** Containers' writable layers live on a filesystem other than the images' (KubeletSeparateDiskGC). */
  splitContainerImageFs: boolean;
}

/** Which parts of pods' disk use each disk signal's filesystem holds, per layout. */
export function fsStatsToMeasure(signal: Signal, layout: FsLayout): readonly FsStatsType[] {
  const all: FsStatsType[] = ['images', 'root', 'logs', 'localVolumeSource'];
  const onNodeFs = signal.startsWith('nodefs.');
  const onImageFs = signal.startsWith('imagefs.');
  if (layout.dedicatedImageFs && !layout.splitContainerImageFs) {
    // nodefs holds logs and volumes; images and writable layers share the image filesystem.
    return onNodeFs ? ['logs', 'localVolumeSource'] : ['root', 'images'];
  }
  if (layout.dedicatedImageFs && layout.splitContainerImageFs) {
    // Writable layers sit with logs and volumes; images alone on theirs.
    return onImageFs ? ['images'] : ['logs', 'localVolumeSource', 'root'];
  }
  return all;
}

/** The rank function of a signal for a filesystem layout (buildSignalToRankFunc). */
export function rankFuncFor(signal: Signal, layout: FsLayout): RankFunc {
  switch (signal) {
    case 'memory.available':
    case 'allocatableMemory.available':
      return rankMemoryPressure;
    case 'pid.available':
      return rankPIDPressure;
    case 'nodefs.available':
    case 'imagefs.available':
    case 'containerfs.available':
      return rankDiskPressure(fsStatsToMeasure(signal, layout), 'ephemeral-storage');
    case 'nodefs.inodesFree':
    case 'imagefs.inodesFree':
    case 'containerfs.inodesFree':
      return rankDiskPressure(fsStatsToMeasure(signal, layout), 'inodes');
    default: {
      const never: never = signal;
      throw new Error(`no rank function for signal ${String(never)}`);
    }
  }
}

/** What the node can free itself before evicting a pod. */
export type NodeReclaim = 'DeleteAllUnusedContainers' | 'DeleteUnusedImages';

/**
 * The node-level reclaim tried for a signal before evicting (buildSignalToNodeReclaimFuncs): none for
 * memory and pids; for disk, dead containers and unused images on the filesystem that holds them.
 */
export function nodeReclaimFor(signal: Signal, layout: FsLayout): NodeReclaim[] {
  if (!signal.includes('fs.')) return [];
  const onNodeFs = signal.startsWith('nodefs.');
  const onImageFs = signal.startsWith('imagefs.');
  if (layout.dedicatedImageFs && !layout.splitContainerImageFs) {
    return onNodeFs ? [] : ['DeleteAllUnusedContainers', 'DeleteUnusedImages'];
  }
  if (layout.dedicatedImageFs && layout.splitContainerImageFs) {
    return onImageFs ? ['DeleteUnusedImages'] : ['DeleteAllUnusedContainers'];
  }
  return ['DeleteAllUnusedContainers', 'DeleteUnusedImages'];
}
