/**
 * Pod-CIDR defaulting for simulated VirtualNodes (the job kube-controller-manager's node IPAM does for real
 * nodes). A simulated node without spec podCIDR gets its own block, kept in status.podCIDR across restarts,
 * so two nodes never hand out the same pod IP. Blocks named by any other VirtualNode, in spec or status, or
 * reserved by this process are avoided.
 */
import type { VirtualNode, VirtualNodeSpec } from '../api/virtualnode.js';
import { allocatePodCIDR, cidrsOverlap } from '../node/podcidr.js';
import { isSimPodCIDR } from '../util/ipv4.js';
import { KindError } from '../util/errors.js';
import { claimedBefore } from './nodeclaims.js';

/** A VirtualNode's own spec podCIDR, raw (it may not parse), when it is one the simulated runtime can use. */
function specPodCIDR(vn: VirtualNode): string | undefined {
  const raw = (vn.spec as { runtime?: { sim?: { podCIDR?: unknown } } } | undefined)?.runtime?.sim?.podCIDR;
  return typeof raw === 'string' && isSimPodCIDR(raw) ? raw : undefined;
}

/**
 * The blocks `name` must not take: every other VirtualNode's spec (raw: it may not parse) and status
 * podCIDR, and what this process reserved for others but has not written to their status yet. A spec CIDR no
 * simulated node can use (0.0.0.0/0, IPv6) is no one's: it must not take every block from the others.
 */
export function takenPodCIDRs(
  name: string,
  all: readonly VirtualNode[],
  reserved: ReadonlyMap<string, string>,
): string[] {
  const taken: string[] = [];
  for (const other of all) {
    if (other.metadata.name === name) continue;
    const own = specPodCIDR(other);
    if (own) taken.push(own);
    if (other.status?.podCIDR && isSimPodCIDR(other.status.podCIDR)) taken.push(other.status.podCIDR);
  }
  for (const [other, cidr] of reserved) if (other !== name) taken.push(cidr);
  return taken;
}

/**
 * The VirtualNode whose pod CIDR a spec's own podCIDR overlaps, when there is one: an older VirtualNode naming
 * an overlapping block in its spec, or any other whose spec names none and whose status holds an overlapping
 * defaulted block (it had it first: defaulting avoids the blocks specs name), or a block this process reserved
 * for another. The first one wins; the later one reports the conflict.
 */
export function podCIDRConflict(
  vn: VirtualNode,
  cidr: string,
  all: readonly VirtualNode[],
  reserved: ReadonlyMap<string, string>,
): string | undefined {
  const name = vn.metadata.name ?? '';
  for (const other of all) {
    const otherName = other.metadata.name ?? '';
    if (otherName === name) continue;
    const own = specPodCIDR(other);
    if (own !== undefined) {
      if (claimedBefore(other, vn) && cidrsOverlap(own, cidr)) return otherName;
    } else if (other.status?.podCIDR && cidrsOverlap(other.status.podCIDR, cidr)) return otherName;
  }
  for (const [other, block] of reserved) if (other !== name && cidrsOverlap(block, cidr)) return other;
  return undefined;
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
   * error when no block is free, and InvalidArgument when the spec's own podCIDR overlaps another node's
   * (podCIDRConflict): two simulated nodes must never hand out one pod IP.
   */
  withPodCIDR(vn: VirtualNode, spec: VirtualNodeSpec, all: readonly VirtualNode[]): VirtualNodeSpec {
    const rt = spec.runtime;
    if (rt.type !== 'sim') return spec;
    const name = vn.metadata.name ?? '';
    if (rt.sim.podCIDR) {
      const other = podCIDRConflict(vn, rt.sim.podCIDR, all, this.reserved);
      if (other !== undefined) {
        throw new KindError(
          'InvalidArgument',
          `spec.runtime.sim.podCIDR ${rt.sim.podCIDR} overlaps the pod CIDR of VirtualNode ${other}`,
        );
      }
      return spec;
    }
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
