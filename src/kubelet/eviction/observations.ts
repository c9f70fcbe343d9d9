/**
 * What the eviction manager observes in a stats Summary (kubelet: makeSignalObservations): per signal, how
 * much is available out of what capacity and when it was measured, plus the pods' stats by UID. A signal
 * whose figures the Summary lacks has no observation, and thresholds on it are never met.
 */
import type { PodStats, Summary } from '../stats/types.js';
import { SystemContainerPods } from '../stats/types.js';
import { newQuantity, type Quantity } from './quantity.js';
import type { Signal } from './signals.js';

export interface SignalObservation {
  readonly available: Quantity;
  /** Whole units (bytes, inodes, pids). */
  readonly capacity: number;
  /** Milliseconds since the epoch; 0 when the Summary gives none. */
  readonly time: number;
}

export type Observations = ReadonlyMap<Signal, SignalObservation>;

/** The pods' stats by UID (cachedStatsFunc). */
export type PodStatsByUID = ReadonlyMap<string, PodStats>;

export function makeSignalObservations(summary: Summary): {
  observations: Observations;
  podStats: PodStatsByUID;
} {
  const out = new Map<Signal, SignalObservation>();
  const bytes = (available: number, capacity: number, time: number): SignalObservation => ({
    available: newQuantity(available, 'BinarySI'),
    capacity,
    time,
  });
  const count = (available: number, capacity: number, time: number): SignalObservation => ({
    available: newQuantity(available, 'DecimalSI'),
    capacity,
    time,
  });

  // Memory capacity is what is available plus the working set, as the kubelet computes it on Linux.
  const memory = summary.node.memory;
  if (memory?.availableBytes !== undefined && memory.workingSetBytes !== undefined) {
    out.set(
      'memory.available',
      bytes(memory.availableBytes, memory.availableBytes + memory.workingSetBytes, memory.time),
    );
  }
  const pods = summary.node.systemContainers?.find((c) => c.name === SystemContainerPods)?.memory;
  if (pods?.availableBytes !== undefined && pods.workingSetBytes !== undefined) {
    out.set(
      'allocatableMemory.available',
      bytes(pods.availableBytes, pods.availableBytes + pods.workingSetBytes, pods.time),
    );
  }
  const filesystems = [
    ['nodefs', summary.node.fs],
    ['imagefs', summary.node.runtime?.imageFs],
    ['containerfs', summary.node.runtime?.containerFs],
  ] as const;
  for (const [name, fs] of filesystems) {
    if (!fs) continue;
    if (fs.availableBytes !== undefined && fs.capacityBytes !== undefined) {
      out.set(`${name}.available`, bytes(fs.availableBytes, fs.capacityBytes, fs.time));
    }
    if (fs.inodesFree !== undefined && fs.inodes !== undefined) {
      out.set(`${name}.inodesFree`, count(fs.inodesFree, fs.inodes, fs.time));
    }
  }
  const rlimit = summary.node.rlimit;
  if (rlimit?.maxpid !== undefined && rlimit.curproc !== undefined) {
    out.set('pid.available', count(rlimit.maxpid - rlimit.curproc, rlimit.maxpid, rlimit.time));
  }

  const podStats = new Map<string, PodStats>();
  for (const p of summary.pods) podStats.set(p.podRef.uid, p);
  return { observations: out, podStats };
}
