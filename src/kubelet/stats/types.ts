/**
 * The kubelet's Summary API (`/stats/summary`, stats/v1alpha1) as JSON: what dashboards, metrics-server's
 * older releases and `kubectl describe node`-style tools read. Field names and nesting are the wire format;
 * a figure the node cannot measure is left out, never reported as zero.
 *
 * In memory every `time` and `startTime` is milliseconds since the epoch (full precision: the resource
 * metrics take their sample timestamps from them); summaryJSON() writes them as RFC 3339, as the kubelet
 * serialises its times.
 */

export interface CPUStats {
  time: number;
  /** Average over the last sampling window, in billionths of a core. */
  usageNanoCores?: number;
  /** Cumulative CPU time since the container or pod started, in core-nanoseconds. */
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: number;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface FsStats {
  time: number;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** The default interface's counters inline, the others in `interfaces`. */
export interface NetworkStats extends InterfaceStats {
  time: number;
  interfaces?: InterfaceStats[];
}

export interface ContainerStats {
  name: string;
  startTime: number;
  cpu?: CPUStats;
  memory?: MemoryStats;
  /** The container's writable layer, on the runtime's container filesystem. */
  rootfs?: FsStats;
  /** The container's log files. */
  logs?: FsStats;
}

export interface VolumeStats extends FsStats {
  name: string;
  pvcRef?: { name: string; namespace: string };
}

export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

export interface PodStats {
  podRef: PodReference;
  startTime: number;
  containers: ContainerStats[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count?: number };
}

export interface RuntimeStats {
  imageFs?: FsStats;
  containerFs?: FsStats;
}

export interface NodeStats {
  nodeName: string;
  /** `kubelet` (here: this node's share of the operator process), `runtime`, `pods`. */
  systemContainers?: ContainerStats[];
  startTime: number;
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  fs?: FsStats;
  runtime?: RuntimeStats;
  rlimit?: { time: number; maxpid?: number; curproc?: number };
}

export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

/** The names of the kubelet's system containers in NodeStats.systemContainers. */
export const SystemContainerKubelet = 'kubelet';
export const SystemContainerRuntime = 'runtime';
export const SystemContainerPods = 'pods';
