/**
 * ContainerStats and PodSandboxStats of the simulated runtime, from the usage bookkeeping (usage.ts), shaped
 * as containerd reports them:
 * - a running container: cpu rate and cumulative time, memory working set (usage and rss the same, available
 *   = limit - working set under a limit, no page faults), its writable layer;
 * - a created or exited container: no cpu or memory in use, the cumulative cpu time it ran up, its writable
 *   layer as it was left (ContainerStats only: ListContainerStats reports running containers, as containerd);
 * - a sandbox (the pod cgroup): sums over its running containers, cpu time also over its exited and removed
 *   ones (the pod cgroup kept counting while they ran, so its total never goes back), one process per running
 *   container, an `eth0` with no traffic.
 * Pending resizes that are due are applied first, so limits are those in effect at the time asked about.
 */
import type { ContainerStats, NetworkInterfaceUsage, PodSandboxStats } from '../types.js';
import { containerAttributes, sandboxAttributes } from './convert.js';
import { settleResize } from './resize.js';
import type { ContainerRecord, SandboxRecord } from './records.js';
import {
  cpuRate,
  cpuSeconds,
  diskBytes,
  memoryBytes,
  memoryLimit,
  runSeconds,
  tracksUsage,
} from './usage.js';

/** The cpu time of each sandbox's removed containers, in core-nanoseconds (only sandboxes that had some). */
const removedCoreNs = new WeakMap<SandboxRecord, number>();

const nanoseconds = (ms: number): bigint => BigInt(Math.floor(ms)) * 1_000_000n;

/** What ContainerStats(id) reports at clock time `nowMs`. */
export function containerStatsOf(c: ContainerRecord, nowMs: number): ContainerStats {
  settleResize(c, nowMs);
  const timestamp = nanoseconds(nowMs);
  const started = c.startedMs > 0 && (c.state === 'running' || c.state === 'exited');
  const running = c.state === 'running';
  const t = started ? runSeconds(c, nowMs) : 0;
  const ws = running ? memoryBytes(c, t) : 0;
  const limit = memoryLimit(c.resources);
  return {
    cpu: {
      timestamp,
      usageCoreNanoSeconds: started ? Math.round(cpuSeconds(c, t) * 1e9) : 0,
      usageNanoCores: running ? Math.round(cpuRate(c, t) * 1e9) : 0,
    },
    memory: {
      timestamp,
      workingSetBytes: ws,
      ...(limit !== Infinity && { availableBytes: Math.max(0, limit - ws) }),
      usageBytes: ws,
      rssBytes: ws,
      pageFaults: 0,
      majorPageFaults: 0,
    },
    writableLayer: { timestamp, usedBytes: started ? diskBytes(c, t) : 0, inodesUsed: 0 },
  };
}

/** The cumulative cpu time of a container, in core-nanoseconds. */
function cpuCoreNs(c: ContainerRecord, nowMs: number): number {
  settleResize(c, nowMs);
  return Math.round(cpuSeconds(c, runSeconds(c, nowMs)) * 1e9);
}

/** Keeps a container's cpu time in its sandbox's total as the container is removed. */
export function containerRemoved(c: ContainerRecord, s: SandboxRecord | undefined, nowMs: number): void {
  if (!s || (c.behaviour.usage?.cpu && !tracksUsage(c)) || c.startedMs <= 0) return;
  removedCoreNs.set(s, (removedCoreNs.get(s) ?? 0) + cpuCoreNs(c, nowMs));
}

/** ListContainerStats' entry for a container: its stats with attributes. */
export function listedContainerStats(c: ContainerRecord, nowMs: number): ContainerStats {
  return { attributes: containerAttributes(c), ...containerStatsOf(c, nowMs) };
}

/** ListPodSandboxStats' entry for a sandbox, given its containers. */
export function sandboxStatsOf(
  s: SandboxRecord,
  containers: Iterable<ContainerRecord>,
  nowMs: number,
): PodSandboxStats {
  const timestamp = nanoseconds(nowMs);
  const listed: ContainerStats[] = [];
  let nanoCores = 0;
  let coreNs = removedCoreNs.get(s) ?? 0;
  let ws = 0;
  for (const c of containers) {
    const stats = c.state === 'running' ? listedContainerStats(c, nowMs) : undefined;
    if (stats) {
      listed.push(stats);
      nanoCores += stats.cpu?.usageNanoCores ?? 0;
      ws += stats.memory?.workingSetBytes ?? 0;
    }
    if (stats) coreNs += stats.cpu?.usageCoreNanoSeconds ?? 0;
    else if (c.behaviour.usage?.cpu) coreNs += cpuCoreNs(c, nowMs);
  }
  const eth0: NetworkInterfaceUsage = { name: 'eth0', rxBytes: 0, rxErrors: 0, txBytes: 0, txErrors: 0 };
  return {
    attributes: sandboxAttributes(s),
    cpu: { timestamp, usageCoreNanoSeconds: coreNs, usageNanoCores: nanoCores },
    memory: {
      timestamp,
      workingSetBytes: ws,
      usageBytes: ws,
      rssBytes: ws,
      pageFaults: 0,
      majorPageFaults: 0,
    },
    network: { timestamp, defaultInterface: eth0, interfaces: [{ ...eth0 }] },
    process: { timestamp, processCount: listed.length },
    containers: listed,
  };
}
