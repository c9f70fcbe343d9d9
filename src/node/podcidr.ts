/**
 * Pod CIDRs for simulated VirtualNodes that set none: each node gets its own block, the job kube-controller-
 * manager's node IPAM does for real nodes (--allocate-node-cidrs). Pure: the caller passes the ranges already
 * taken (other VirtualNodes' spec or status podCIDR) and records the result in the VirtualNode status, so a
 * restarted operator keeps handing out the same addresses.
 */
import { formatIPv4, parseIPv4 } from '../util/ipv4.js';
import { KindError } from '../util/errors.js';

/** Where default pod CIDRs come from: 10.128.0.0/9 (32768 /24 blocks), clear of the usual service ranges. */
export const DEFAULT_POD_CIDR_POOL = '10.128.0.0/9';

interface Range {
  first: number;
  last: number;
}

function parseCIDR(cidr: string): Range | undefined {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(cidr);
  if (!m) return undefined;
  const addr = parseIPv4(m[1]!);
  const prefix = Number(m[2]);
  if (addr === undefined || prefix > 32) return undefined;
  const size = 2 ** (32 - prefix);
  const first = addr - (addr % size);
  return { first, last: first + size - 1 };
}

/** Whether two IPv4 CIDRs share an address (false when either does not parse). */
export function cidrsOverlap(a: string, b: string): boolean {
  const x = parseCIDR(a);
  const y = parseCIDR(b);
  return x !== undefined && y !== undefined && x.first <= y.last && y.first <= x.last;
}

/**
 * The prefix length of a block that holds `pods` addresses next to the network, gateway and broadcast
 * addresses the simulated IPAM keeps out: /24 for the usual 110 pods, larger blocks for larger nodes.
 */
export function podCIDRPrefixFor(pods: number): number {
  let prefix = 24;
  while (prefix > 9 && 2 ** (32 - prefix) - 3 < pods) prefix--;
  return prefix;
}

/** FNV-1a, 32 bit: a stable starting block per node name, so allocations spread without coordination. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * CIDR blocks by their addresses, each with a value (who holds it), answering "which blocks share an address
 * with this one" without reading every block: two CIDR blocks overlap only when one holds the other, so the
 * blocks around a query are its at most 33 aligned ancestors (one map lookup each) and the blocks inside it,
 * a run of the list kept sorted by first address. Blocks that do not parse are not kept.
 *
 * Invariant: `sorted` holds every kept entry once, ordered by first address; `byBlock` the same entries by
 * block (first address and prefix).
 */
export class CIDRBlockIndex<V> {
  private readonly byBlock = new Map<number, { range: Range; prefix: number; values: V[] }>();
  private readonly sorted: { first: number; prefix: number; value: V }[] = [];

  get size(): number {
    return this.sorted.length;
  }

  /** Keeps `cidr` for `value`; false (nothing kept) when it does not parse. */
  add(cidr: string, value: V): boolean {
    const b = parseBlock(cidr);
    if (!b) return false;
    const key = blockKey(b.range.first, b.prefix);
    const at = this.byBlock.get(key);
    if (at) at.values.push(value);
    else this.byBlock.set(key, { range: b.range, prefix: b.prefix, values: [value] });
    this.sorted.splice(this.lowerBound(b.range.first), 0, { first: b.range.first, prefix: b.prefix, value });
    return true;
  }

  /** Forgets `cidr` for `value` (the same value `add` was given). */
  delete(cidr: string, value: V): void {
    const b = parseBlock(cidr);
    if (!b) return;
    const key = blockKey(b.range.first, b.prefix);
    const at = this.byBlock.get(key);
    const i = at ? at.values.indexOf(value) : -1;
    if (!at || i < 0) return;
    at.values.splice(i, 1);
    if (at.values.length === 0) this.byBlock.delete(key);
    for (let j = this.lowerBound(b.range.first); j < this.sorted.length; j++) {
      const e = this.sorted[j]!;
      if (e.first !== b.range.first) break;
      if (e.prefix === b.prefix && e.value === value) {
        this.sorted.splice(j, 1);
        return;
      }
    }
  }

  /** The values of every kept block sharing an address with the block of `prefix` at `first` (aligned). */
  overlapping(first: number, prefix: number): V[] {
    const out: V[] = [];
    // The blocks that hold it, itself included.
    for (let q = 0; q <= prefix; q++) {
      const size = 2 ** (32 - q);
      const at = this.byBlock.get(blockKey(first - (first % size), q));
      if (at) out.push(...at.values);
    }
    // The smaller blocks inside it.
    const last = first + 2 ** (32 - prefix) - 1;
    for (let j = this.lowerBound(first); j < this.sorted.length; j++) {
      const e = this.sorted[j]!;
      if (e.first > last) break;
      if (e.prefix > prefix) out.push(e.value);
    }
    return out;
  }

  /** The values of the blocks sharing an address with `cidr` (none when it does not parse). */
  overlappingCIDR(cidr: string): V[] {
    const b = parseBlock(cidr);
    return b ? this.overlapping(b.range.first, b.prefix) : [];
  }

  /** The first index whose block starts at or after `first`. */
  private lowerBound(first: number): number {
    let lo = 0;
    let hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sorted[mid]!.first < first) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** One number per block: its first address (below 2^32) and its prefix (below 64). */
function blockKey(first: number, prefix: number): number {
  return first * 64 + prefix;
}

function parseBlock(cidr: string): { range: Range; prefix: number } | undefined {
  const range = parseCIDR(cidr);
  return range ? { range, prefix: 32 - Math.log2(range.last - range.first + 1) } : undefined;
}

/**
 * A block of `podCIDRPrefixFor(pods)` inside `pool` that overlaps none of `taken`: CIDR strings (unparsable
 * ones are ignored), or a test of a block (its first and last address) against the blocks taken, for a caller
 * that keeps them in a CIDRBlockIndex. The search starts at a block chosen by the node name and walks the pool
 * in order. Throws InvalidArgument when every block is taken (the spec must then name a podCIDR).
 */
export function allocatePodCIDR(
  nodeName: string,
  pods: number,
  taken: Iterable<string> | ((first: number, prefix: number) => boolean),
  pool: string = DEFAULT_POD_CIDR_POOL,
): string {
  const p = parseCIDR(pool);
  if (!p) throw new KindError('InvalidArgument', `pod CIDR pool ${JSON.stringify(pool)} is not an IPv4 CIDR`);
  const prefix = podCIDRPrefixFor(pods);
  const size = 2 ** (32 - prefix);
  const blocks = Math.floor((p.last - p.first + 1) / size);
  let isTaken: (first: number, prefix: number) => boolean;
  if (typeof taken === 'function') isTaken = taken;
  else {
    const used: Range[] = [];
    for (const t of taken) {
      const r = parseCIDR(t);
      if (r && r.last >= p.first && r.first <= p.last) used.push(r);
    }
    isTaken = (first) => used.some((u) => u.first <= first + size - 1 && first <= u.last);
  }
  const start = blocks > 0 ? fnv1a(nodeName) % blocks : 0;
  for (let i = 0; i < blocks; i++) {
    const first = p.first + ((start + i) % blocks) * size;
    if (!isTaken(first, prefix)) return `${formatIPv4(first)}/${prefix}`;
  }
  throw new KindError(
    'InvalidArgument',
    `no free /${prefix} left in the pod CIDR pool ${pool} for node ${nodeName}; set spec.runtime.sim.podCIDR`,
  );
}
