/**
 * Swap on the node's host, as the kubelet learns it (NodeSwap, GA):
 *
 * - the swap capacity is cadvisor's MachineInfo.SwapCapacity, `SwapTotal` of /proc/meminfo in bytes, read
 *   once (the kubelet caches its machine info at start); the node status reports it as
 *   `nodeInfo.swap.capacity` when it is not zero;
 * - the swap controller is what the kubelet's checkSwapControllerAvailability finds: on cgroup v1 the
 *   memory hierarchy's `memory.memsw.limit_in_bytes`, on cgroup v2 `memory.swap.max` in the process's own
 *   cgroup (the root has none). With one, a NoSwap container (the default `memorySwap.swapBehavior`) gets
 *   its swap limit set (containerconfig.ts `configureNoSwap`); without one, nothing is set.
 *
 * The decisions are pure; the host readers at the bottom read once per process. Only cri nodes have a host:
 * a sim node's swap is what its VirtualNode declares, and it has no swap controller.
 */
import { existsSync, readFileSync } from 'node:fs';

/** The cgroup hierarchy whose swap controller the host has (the kubelet writes v1 and v2 limits apart). */
export type SwapController = 'cgroupv1' | 'cgroupv2';

/** `SwapTotal` of a /proc/meminfo text in bytes (the kernel prints kB); undefined when the line is missing. */
export function parseSwapTotal(meminfo: string): number | undefined {
  const m = /^SwapTotal:\s*(\d+) kB$/m.exec(meminfo);
  return m ? Number(m[1]) * 1024 : undefined;
}

/**
 * The cgroup v2 path of the process, from /proc/self/cgroup: the `0::<path>` line (the unified hierarchy
 * has no controller names); undefined when there is none.
 */
export function unifiedCgroupPath(procSelfCgroup: string): string | undefined {
  for (const line of procSelfCgroup.split('\n')) {
    if (line.startsWith('0::')) return line.slice(3) || '/';
  }
  return undefined;
}

export interface SwapControllerProbe {
  /** Whether /sys/fs/cgroup is the unified (v2) hierarchy. */
  cgroup2: boolean;
  /** /proc/self/cgroup as read; undefined when unreadable. */
  procSelfCgroup: string | undefined;
  exists(path: string): boolean;
}

/** Which swap controller the host has, if any (kubelet checkSwapControllerAvailability). */
export function swapControllerOf(p: SwapControllerProbe): SwapController | undefined {
  if (!p.cgroup2) {
    return p.exists('/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes') ? 'cgroupv1' : undefined;
  }
  const self = p.procSelfCgroup === undefined ? undefined : unifiedCgroupPath(p.procSelfCgroup);
  if (self === undefined) return undefined;
  const dir = self === '/' ? '/sys/fs/cgroup' : `/sys/fs/cgroup${self}`;
  return p.exists(`${dir}/memory.swap.max`) ? 'cgroupv2' : undefined;
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

let cachedCapacity: number | undefined;
let cachedController: { value: SwapController | undefined } | undefined;

/** This host's swap capacity in bytes, read once per process; 0 when /proc/meminfo says nothing of it. */
export function hostSwapCapacityBytes(): number {
  return (cachedCapacity ??= parseSwapTotal(readOrUndefined('/proc/meminfo') ?? '') ?? 0);
}

/** This host's swap controller, found once per process (the kubelet's sync.OnceValue). */
export function hostSwapController(): SwapController | undefined {
  cachedController ??= {
    value: swapControllerOf({
      cgroup2: existsSync('/sys/fs/cgroup/cgroup.controllers'),
      procSelfCgroup: readOrUndefined('/proc/self/cgroup'),
      exists: existsSync,
    }),
  };
  return cachedController.value;
}
