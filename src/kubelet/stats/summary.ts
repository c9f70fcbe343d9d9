/**
 * Builds the Summary (types.ts) from what the runtime reports, as the kubelet's CRI stats provider does:
 *
 * - a pod is one ready sandbox (the newest, when a pod has several); its containers are the running ones, the
 *   newest per name; container start time is the container's creation time, pod start time the sandbox's;
 * - a pod's cpu and memory are its sandbox's when the runtime measures the sandbox as a whole, else the sums
 *   of its containers (cpu as a counter that survives container restarts, cpu.ts);
 * - usageNanoCores, when the runtime leaves it out, is the rate since the previous build;
 * - the node is what a virtual node runs: the sum of its pods plus its share of the operator process (the
 *   `kubelet` system container); `pods` is the pods' sum alone. Memory available is the node's memory
 *   capacity minus that working set, less the node's huge pages (HugepageAwareEviction, beta and on in
 *   v1.37: the working set never counts huge pages, which regular memory cannot use).
 *
 * Pure apart from its own counters: the caller hands in every reading, with their times.
 */
import type {
  Container,
  ContainerStats as RuntimeContainerStats,
  CpuUsage,
  MemoryUsage,
  PodSandbox,
  PodSandboxStats,
} from '../../runtime/types.js';
import { quantityValue } from '../../util/quantity.js';
import { CpuRates, MonotonicSum, type CpuSample } from './cpu.js';
import {
  SystemContainerKubelet,
  SystemContainerPods,
  type ContainerStats,
  type CPUStats,
  type FsStats,
  type MemoryStats,
  type PodStats,
  type Summary,
  type VolumeStats,
} from './types.js';

export interface SummaryInput {
  nodeName: string;
  nodeStartTimeMs: number;
  nowMs: number;
  memoryCapacityBytes: number;
  /** The Node's huge page capacity in bytes (hugePageCapacityBytes of its status capacity); absent: none. */
  hugePageCapacityBytes?: number;
  /** Ready sandboxes (their creation times). */
  sandboxes: readonly PodSandbox[];
  /** Running containers (their creation times). */
  containers: readonly Container[];
  sandboxStats: readonly PodSandboxStats[];
  /**
   * False: the node's figures alone (memory, filesystems), no pod's stats and no CPU at all, the CPU state
   * (rates, sums) left as it was. What the eviction manager's round reads when no pod's stats can matter to
   * it. Default true.
   */
  withPods?: boolean;
  /** This node's share of the operator process: cumulative CPU and resident memory. */
  kubelet?: { cpu: CpuSample; memoryBytes: number };
  /** Filesystem figures; absent in a build for the resource metrics, which need none. */
  fs?: {
    node?: FsStats;
    imageFs?: FsStats;
    /** Capacity and availability of the filesystem holding writable layers (rootfs of each container). */
    containerFs?: FsStats;
    volumes(podUID: string): VolumeStats[] | undefined;
    /** Volumes that are not the pod's ephemeral storage (CSI, with their claim): listed, never summed. */
    persistentVolumes?(podUID: string): VolumeStats[] | undefined;
    logs(pod: { namespace: string; name: string; uid: string }, container: string): FsStats | undefined;
  };
}

const nsToMs = (ns: bigint, fallbackMs: number): number => (ns > 0n ? Number(ns) / 1e6 : fallbackMs);

/**
 * The huge pages of a Node's capacity in bytes: the sum of its `hugepages-<size>` quantities (the kubelet's
 * summary provider reads them from its Node with v1helper.IsHugePageResourceName). A quantity that does not
 * parse counts as none.
 */
export function hugePageCapacityBytes(
  capacity: Readonly<Record<string, string | number>> | undefined,
): number {
  let total = 0;
  for (const [name, q] of Object.entries(capacity ?? {})) {
    if (!name.startsWith('hugepages-')) continue;
    try {
      total += quantityValue(q);
    } catch {
      // Not a quantity: the API server would not have taken it; nothing to subtract.
    }
  }
  return total;
}

/**
 * kubelet adjustForHugePages (HugepageAwareEviction): the node's available memory less its huge pages, never
 * below 0. The working set stays as measured, so the eviction manager's memory capacity (available plus
 * working set) shrinks by the same amount. No huge pages, or no available figure: unchanged.
 */
export function adjustForHugePages(memory: MemoryStats, hugePageBytes: number): MemoryStats {
  if (memory.availableBytes === undefined || !(hugePageBytes > 0)) return memory;
  return { ...memory, availableBytes: Math.max(0, memory.availableBytes - hugePageBytes) };
}

function memoryStats(m: MemoryUsage | undefined, nowMs: number): MemoryStats | undefined {
  if (!m) return undefined;
  const out: MemoryStats = { time: nsToMs(m.timestamp, nowMs) };
  if (m.availableBytes !== undefined) out.availableBytes = m.availableBytes;
  if (m.usageBytes !== undefined) out.usageBytes = m.usageBytes;
  if (m.workingSetBytes !== undefined) out.workingSetBytes = m.workingSetBytes;
  if (m.rssBytes !== undefined) out.rssBytes = m.rssBytes;
  if (m.pageFaults !== undefined) out.pageFaults = m.pageFaults;
  if (m.majorPageFaults !== undefined) out.majorPageFaults = m.majorPageFaults;
  return out;
}

const memoryFigures = ['usageBytes', 'workingSetBytes', 'rssBytes', 'pageFaults', 'majorPageFaults'] as const;

/** Adds `b`'s byte figures into `a` (a figure only one side reports counts as that side's); never `available`. */
function addMemory(
  a: MemoryStats | undefined,
  b: MemoryStats | undefined,
  time: number,
): MemoryStats | undefined {
  if (!b) return a;
  // A new object with the figures in one order (no spread of `a` and no delete: one shape for every sum).
  const out: MemoryStats = { time: Math.max(a?.time ?? 0, b.time, 0) || time };
  for (const k of memoryFigures) {
    const x = a?.[k];
    const y = b[k];
    if (x !== undefined || y !== undefined) out[k] = (x ?? 0) + (y ?? 0);
  }
  return out;
}

/** A sandbox's running containers: the newest of each name, with when it was created. */
type RunningContainers = ReadonlyMap<string, { stats: RuntimeContainerStats; created: number }>;

function newestRunning(s: PodSandboxStats, containerCreated: ReadonlyMap<string, number>): RunningContainers {
  const newest = new Map<string, { stats: RuntimeContainerStats; created: number }>();
  for (const c of s.containers) {
    const id = c.attributes?.id;
    const created = id === undefined ? undefined : containerCreated.get(id);
    if (!c.attributes || created === undefined) continue; // not running
    const other = newest.get(c.attributes.metadata.name);
    if (!other || other.created < created) newest.set(c.attributes.metadata.name, { stats: c, created });
  }
  return newest;
}

/**
 * The memory of a sandbox's running containers, worked out only as it is read (podMemory reads it only for a
 * sandbox without figures of its own).
 */
function* runningMemories(
  s: PodSandboxStats,
  containerCreated: ReadonlyMap<string, number>,
  nowMs: number,
): Generator<MemoryStats | undefined> {
  for (const { stats } of newestRunning(s, containerCreated).values()) yield memoryStats(stats.memory, nowMs);
}

/** A pod's memory: its sandbox's own figures, or else the sum of its running containers' (`containers`). */
function podMemory(
  s: PodSandboxStats,
  containers: Iterable<MemoryStats | undefined>,
  nowMs: number,
): MemoryStats | undefined {
  if (s.memory) return memoryStats(s.memory, nowMs);
  let summed: MemoryStats | undefined;
  for (const m of containers) summed = addMemory(summed, m, nowMs);
  return summed;
}

function addFs(into: FsStats, f: FsStats | undefined): void {
  if (!f) return;
  if (f.usedBytes !== undefined) into.usedBytes = (into.usedBytes ?? 0) + f.usedBytes;
  if (f.inodesUsed !== undefined) into.inodesUsed = (into.inodesUsed ?? 0) + f.inodesUsed;
}

export class SummaryBuilder {
  /** Rates of the node's own figures ('pods', 'kubelet', 'node'). */
  private readonly rates = new CpuRates();
  /** Containers' rates by container ID, pods' by pod UID: keyed by the runtime's own strings, none made per scrape. */
  private readonly containerRates = new CpuRates();
  private readonly podRates = new CpuRates();
  /** Per pod whose sandbox is not measured: its containers' cpu as one counter. */
  private podSums = new Map<string, MonotonicSum>();
  private readonly nodeSum = new MonotonicSum();

  build(input: SummaryInput): Summary {
    const { nowMs } = input;
    const sandboxCreated = new Map<string, number>();
    for (const s of input.sandboxes) sandboxCreated.set(s.id, nsToMs(s.createdAt, nowMs));
    const containerCreated = new Map<string, number>();
    for (const c of input.containers) containerCreated.set(c.id, nsToMs(c.createdAt, nowMs));

    // The newest ready sandbox per pod UID.
    const byPod = new Map<string, PodSandboxStats>();
    for (const s of input.sandboxStats) {
      const created = sandboxCreated.get(s.attributes.id);
      if (created === undefined) continue; // not ready (any more)
      const uid = s.attributes.metadata.uid;
      const other = byPod.get(uid);
      if (!other || (sandboxCreated.get(other.attributes.id) ?? 0) < created) byPod.set(uid, s);
    }

    if (input.withPods === false) {
      let podsMemory: MemoryStats | undefined;
      for (const sb of byPod.values())
        podsMemory = addMemory(
          podsMemory,
          podMemory(sb, runningMemories(sb, containerCreated, nowMs), nowMs),
          nowMs,
        );
      return this.summaryOf(input, podsMemory, [], undefined);
    }

    const pods: PodStats[] = [];
    const podSums = new Map<string, MonotonicSum>();
    const podCpu: [string, number][] = [];
    let podsMemory: MemoryStats | undefined;
    for (const [uid, sb] of byPod) {
      const pod = this.podStats(input, sb, sandboxCreated, containerCreated, podSums);
      pods.push(pod);
      if (pod.cpu?.usageCoreNanoSeconds !== undefined) podCpu.push([uid, pod.cpu.usageCoreNanoSeconds]);
      podsMemory = addMemory(podsMemory, pod.memory, nowMs);
    }
    this.podSums = podSums;

    const podsCum = this.nodeSum.round(podCpu);
    const podsCpu: CPUStats = { time: nowMs, usageCoreNanoSeconds: podsCum };
    const podsRate = this.rates.rate('pods', { timeMs: nowMs, coreNanoSeconds: podsCum });
    if (podsRate !== undefined) podsCpu.usageNanoCores = podsRate;
    let nodeCpu = podsCpu;
    let kubeletCpu: CPUStats | undefined;
    const kubelet = input.kubelet;
    if (kubelet) {
      kubeletCpu = { time: kubelet.cpu.timeMs, usageCoreNanoSeconds: kubelet.cpu.coreNanoSeconds };
      const kRate = this.rates.rate('kubelet', kubelet.cpu);
      if (kRate !== undefined) kubeletCpu.usageNanoCores = kRate;
      const cum = podsCum + kubelet.cpu.coreNanoSeconds;
      nodeCpu = { time: nowMs, usageCoreNanoSeconds: cum };
      const rate = this.rates.rate('node', { timeMs: nowMs, coreNanoSeconds: cum });
      if (rate !== undefined) nodeCpu.usageNanoCores = rate;
    }
    this.rates.endRound();
    this.containerRates.endRound();
    this.podRates.endRound();
    return this.summaryOf(input, podsMemory, pods, { node: nodeCpu, pods: podsCpu, kubelet: kubeletCpu });
  }

  /** The Summary around the pods' figures: the node's memory and system containers, its filesystems. */
  private summaryOf(
    input: SummaryInput,
    podsMemory: MemoryStats | undefined,
    pods: PodStats[],
    cpu: { node: CPUStats; pods: CPUStats; kubelet: CPUStats | undefined } | undefined,
  ): Summary {
    const { nowMs } = input;
    const systemContainers: ContainerStats[] = [];
    const kubelet = input.kubelet;
    let nodeMemory: MemoryStats = { ...(podsMemory ?? { workingSetBytes: 0, usageBytes: 0 }), time: nowMs };
    if (kubelet) {
      const kMem: MemoryStats = {
        time: nowMs,
        usageBytes: kubelet.memoryBytes,
        workingSetBytes: kubelet.memoryBytes,
        rssBytes: kubelet.memoryBytes,
      };
      systemContainers.push({
        name: SystemContainerKubelet,
        startTime: input.nodeStartTimeMs,
        ...(cpu?.kubelet ? { cpu: cpu.kubelet } : {}),
        memory: kMem,
      });
      nodeMemory = addMemory(nodeMemory, kMem, nowMs)!;
    }
    systemContainers.push({
      name: SystemContainerPods,
      startTime: input.nodeStartTimeMs,
      ...(cpu ? { cpu: cpu.pods } : {}),
      memory: { ...(podsMemory ?? { workingSetBytes: 0 }), time: nowMs },
    });

    nodeMemory.availableBytes = Math.max(0, input.memoryCapacityBytes - (nodeMemory.workingSetBytes ?? 0));
    nodeMemory = adjustForHugePages(nodeMemory, input.hugePageCapacityBytes ?? 0);
    const summary: Summary = {
      node: {
        nodeName: input.nodeName,
        systemContainers,
        startTime: input.nodeStartTimeMs,
        ...(cpu ? { cpu: cpu.node } : {}),
        memory: nodeMemory,
      },
      pods,
    };
    if (input.fs) {
      if (input.fs.node) summary.node.fs = input.fs.node;
      const runtime: NonNullable<Summary['node']['runtime']> = {};
      if (input.fs.imageFs) runtime.imageFs = input.fs.imageFs;
      if (input.fs.containerFs) runtime.containerFs = input.fs.containerFs;
      if (runtime.imageFs || runtime.containerFs) summary.node.runtime = runtime;
    }
    return summary;
  }

  private podStats(
    input: SummaryInput,
    s: PodSandboxStats,
    sandboxCreated: ReadonlyMap<string, number>,
    containerCreated: ReadonlyMap<string, number>,
    podSums: Map<string, MonotonicSum>,
  ): PodStats {
    const { nowMs } = input;
    const meta = s.attributes.metadata;
    const ref = { name: meta.name, namespace: meta.namespace, uid: meta.uid };
    const newest = newestRunning(s, containerCreated);
    const containers: ContainerStats[] = [];
    const memories: (MemoryStats | undefined)[] = [];
    const cpuMembers: [string, number][] = [];
    let cpuTime = 0;
    const ephemeral: FsStats = { time: nowMs };
    for (const [name, { stats, created }] of newest) {
      const id = stats.attributes!.id;
      const c: ContainerStats = { name, startTime: created };
      const cpu = this.cpuStats(this.containerRates, id, stats.cpu, nowMs);
      if (cpu) {
        c.cpu = cpu;
        if (cpu.usageCoreNanoSeconds !== undefined) cpuMembers.push([id, cpu.usageCoreNanoSeconds]);
        cpuTime = Math.max(cpuTime, cpu.time);
      }
      const mem = memoryStats(stats.memory, nowMs);
      if (mem) c.memory = mem;
      memories.push(mem);
      if (input.fs) {
        const w = stats.writableLayer;
        const cfs = input.fs.containerFs;
        if (w || cfs) {
          const rootfs: FsStats = { ...(cfs ?? {}), time: w ? nsToMs(w.timestamp, nowMs) : nowMs };
          delete rootfs.usedBytes;
          delete rootfs.inodesUsed;
          if (w?.usedBytes !== undefined) rootfs.usedBytes = w.usedBytes;
          if (w?.inodesUsed !== undefined) rootfs.inodesUsed = w.inodesUsed;
          c.rootfs = rootfs;
          addFs(ephemeral, rootfs);
        }
        const logs = input.fs.logs(ref, name);
        if (logs) {
          c.logs = logs;
          addFs(ephemeral, logs);
        }
      }
      containers.push(c);
    }

    const pod: PodStats = {
      podRef: ref,
      startTime: sandboxCreated.get(s.attributes.id) ?? nowMs,
      containers,
    };

    const whole = this.cpuStats(this.podRates, meta.uid, s.cpu, nowMs);
    if (whole?.usageCoreNanoSeconds !== undefined) pod.cpu = whole;
    else if (cpuMembers.length > 0) {
      const sum = this.podSums.get(meta.uid) ?? new MonotonicSum();
      podSums.set(meta.uid, sum);
      const cum = sum.round(cpuMembers);
      const time = cpuTime || nowMs;
      pod.cpu = { time, usageCoreNanoSeconds: cum };
      const rate = this.podRates.rate(meta.uid, { timeMs: time, coreNanoSeconds: cum });
      if (rate !== undefined) pod.cpu.usageNanoCores = rate;
    }
    const mem = podMemory(s, memories, nowMs);
    if (mem) pod.memory = mem;

    if (s.network) {
      const d = s.network.defaultInterface;
      pod.network = { time: nsToMs(s.network.timestamp, nowMs), name: d?.name ?? '', ...d };
      if (s.network.interfaces.length > 0)
        pod.network.interfaces = s.network.interfaces.map((i) => ({ ...i }));
    }
    if (s.process) pod.process_stats = { process_count: s.process.processCount };
    if (input.fs) {
      const volumes = input.fs.volumes(meta.uid);
      if (volumes) {
        pod.volume = volumes;
        for (const v of volumes) addFs(ephemeral, v);
      }
      const persistent = input.fs.persistentVolumes?.(meta.uid);
      if (persistent?.length) pod.volume = [...(pod.volume ?? []), ...persistent];
      pod['ephemeral-storage'] = ephemeral;
    }
    return pod;
  }

  /** A container's or pod's cpu as the Summary reports it, the rate filled in when the runtime gave none. */
  private cpuStats(
    rates: CpuRates,
    key: string,
    cpu: CpuUsage | undefined,
    nowMs: number,
  ): CPUStats | undefined {
    if (!cpu) return undefined;
    const out: CPUStats = { time: nsToMs(cpu.timestamp, nowMs) };
    if (cpu.usageCoreNanoSeconds !== undefined) out.usageCoreNanoSeconds = cpu.usageCoreNanoSeconds;
    const rate =
      cpu.usageCoreNanoSeconds === undefined
        ? undefined
        : rates.rate(key, { timeMs: out.time, coreNanoSeconds: cpu.usageCoreNanoSeconds });
    const nano = cpu.usageNanoCores ?? rate;
    if (nano !== undefined) out.usageNanoCores = nano;
    return out;
  }
}
