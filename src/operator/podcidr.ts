/**
 * Pod-CIDR defaulting for simulated VirtualNodes (the job kube-controller-manager's node IPAM does for real
 * nodes). A simulated node without spec podCIDR gets its own block, kept in status.podCIDR across restarts,
 * so two nodes never hand out the same pod IP. Blocks named by any other VirtualNode, in spec or status, or
 * reserved by this process are avoided.
 */
import type { VirtualNode, VirtualNodeSpec } from '../api/virtualnode.js';
import { allocatePodCIDR } from '../node/podcidr.js';

/**
 * The blocks `name` must not take: every other VirtualNode's spec (raw: it may not parse) and status
 * podCIDR, and what this process reserved for others but has not written to their status yet.
 */
export function takenPodCIDRs(
  name: string,
  all: readonly VirtualNode[],
  reserved: ReadonlyMap<string, string>,
): string[] {
  const taken: string[] = [];
  for (const other of all) {
    if (other.metadata.name === name) continue;
    const raw = (other.spec as { runtime?: { sim?: { podCIDR?: unknown } } } | undefined)?.runtime?.sim
      ?.podCIDR;
    if (typeof raw === 'string') taken.push(raw);
    if (other.status?.podCIDR) taken.push(other.status.podCIDR);
  }
  for (const [other, cidr] of reserved) if (other !== name) taken.push(cidr);
  return taken;
}

/**
 * Invariant: a VirtualNode keeps the block it was given (reserved here, then read back from its status)
 * until `release`; two VirtualNodes served by this process never hold the same block.
 */
export class PodCIDRDefaulter {
  /** VirtualNode name -> the block this process defaulted for it. */
  private readonly reserved = new Map<string, string>();

  /**
   * `spec` with runtime.sim.podCIDR filled in when the runtime is simulated and names none; any other
   * spec unchanged. `all` is every VirtualNode known (the informer's cache). Throws allocatePodCIDR's
   * error when no block is free.
   */
  withPodCIDR(vn: VirtualNode, spec: VirtualNodeSpec, all: readonly VirtualNode[]): VirtualNodeSpec {
    const rt = spec.runtime;
    if (rt.type !== 'sim' || rt.sim.podCIDR) return spec;
    const name = vn.metadata.name ?? '';
    const cidr =
      this.reserved.get(name) ??
      vn.status?.podCIDR ??
      allocatePodCIDR(name, spec.capacity.pods, takenPodCIDRs(name, all, this.reserved));
    this.reserved.set(name, cidr);
    return { ...spec, runtime: { ...rt, sim: { ...rt.sim, podCIDR: cidr } } };
  }

  /** Forgets the block of a VirtualNode that is gone for good. */
  release(name: string): void {
    this.reserved.delete(name);
  }
}
