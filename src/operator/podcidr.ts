/**
 * Pod-CIDR defaulting for simulated VirtualNodes (the job kube-controller-manager's node IPAM does for real
 * nodes). A simulated node without spec podCIDR gets its own block, kept in status.podCIDR across restarts,
 * so two nodes never hand out the same pod IP. Blocks named by any other VirtualNode, in spec or status, or
 * reserved by this process are avoided; an index of the blocks by address finds them (CIDRBlockIndex).
 */
import type { VirtualNode, VirtualNodeSpec } from '../api/virtualnode.js';
import { allocatePodCIDR, cidrsOverlap, CIDRBlockIndex } from '../node/podcidr.js';
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

/** Who holds a block in the index: a VirtualNode's spec or status podCIDR, or this process's reservation. */
interface Holder {
  name: string;
  kind: 'spec' | 'status' | 'reserved';
  /** Whether the simulated runtime can serve the block (a status block counts as taken only then). */
  sim: boolean;
}

/**
 * Invariant: a VirtualNode keeps the block it was given (reserved here, then read back from its status)
 * until `release`; two VirtualNodes served by this process never hold the same block. `blocks` holds the
 * spec and status podCIDRs of every VirtualNode `track`ed and not `untrack`ed since, and every reservation,
 * so a defaulting reads the few blocks near its own, not every other node's (a start of 1,000 nodes read
 * each node's blocks 1,000 times).
 */
export class PodCIDRDefaulter {
  /** VirtualNode name -> the block this process defaulted for it. */
  private readonly reserved = new Map<string, string>();
  /** Every VirtualNode tracked, by name, in the informer's order: the exact rules when blocks do overlap. */
  private readonly known = new Map<string, VirtualNode>();
  /** What each name has in `blocks`, to take it out again. */
  private readonly held = new Map<string, { cidr: string; holder: Holder }[]>();
  private readonly blocks = new CIDRBlockIndex<Holder>();

  /** A VirtualNode added or changed in the cache (the informer's handlers call this, in the cache's order). */
  track(vn: VirtualNode): void {
    const name = vn.metadata.name ?? '';
    this.untrackBlocks(name, (h) => h.kind !== 'reserved');
    this.known.set(name, vn);
    const own = specPodCIDR(vn);
    if (own) this.hold(name, own, { name, kind: 'spec', sim: true });
    const status = vn.status?.podCIDR;
    if (status) this.hold(name, status, { name, kind: 'status', sim: isSimPodCIDR(status) });
  }

  /** A VirtualNode gone from the cache. Its reservation stays until `release`. */
  untrack(name: string): void {
    this.untrackBlocks(name, (h) => h.kind !== 'reserved');
    this.known.delete(name);
  }

  /**
   * `spec` with runtime.sim.podCIDR filled in when the runtime is simulated and names none; any other
   * spec unchanged. The other VirtualNodes are those tracked. Throws allocatePodCIDR's error when no block
   * is free, and InvalidArgument when the spec's own podCIDR overlaps another node's (podCIDRConflict): two
   * simulated nodes must never hand out one pod IP.
   */
  withPodCIDR(vn: VirtualNode, spec: VirtualNodeSpec): VirtualNodeSpec {
    const rt = spec.runtime;
    if (rt.type !== 'sim') return spec;
    const name = vn.metadata.name ?? '';
    if (rt.sim.podCIDR) {
      // Only a block that shares an address with another's can conflict; then the rules decide whom it
      // conflicts with, reading every VirtualNode (rare: a conflict is an error the spec must fix).
      const near = this.blocks.overlappingCIDR(rt.sim.podCIDR).some((h) => h.name !== name);
      const other = near
        ? podCIDRConflict(vn, rt.sim.podCIDR, [...this.known.values()], this.reserved)
        : undefined;
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
      // Taken as takenPodCIDRs says: another's spec block, its status block the runtime can serve, or a
      // block reserved here for another.
      allocatePodCIDR(name, spec.capacity.pods, (first, prefix) =>
        this.blocks.overlapping(first, prefix).some((h) => h.name !== name && (h.kind !== 'status' || h.sim)),
      );
    if (this.reserved.get(name) !== cidr) {
      this.untrackBlocks(name, (h) => h.kind === 'reserved');
      this.reserved.set(name, cidr);
      this.hold(name, cidr, { name, kind: 'reserved', sim: true });
    }
    return { ...spec, runtime: { ...rt, sim: { ...rt.sim, podCIDR: cidr } } };
  }

  /** Forgets the block of a VirtualNode that is gone for good. */
  release(name: string): void {
    this.reserved.delete(name);
    this.untrackBlocks(name, (h) => h.kind === 'reserved');
  }

  private hold(name: string, cidr: string, holder: Holder): void {
    if (!this.blocks.add(cidr, holder)) return;
    const list = this.held.get(name);
    if (list) list.push({ cidr, holder });
    else this.held.set(name, [{ cidr, holder }]);
  }

  private untrackBlocks(name: string, which: (h: Holder) => boolean): void {
    const list = this.held.get(name);
    if (!list) return;
    const kept = list.filter((e) => {
      if (!which(e.holder)) return true;
      this.blocks.delete(e.cidr, e.holder);
      return false;
    });
    if (kept.length > 0) this.held.set(name, kept);
    else this.held.delete(name);
  }
}
