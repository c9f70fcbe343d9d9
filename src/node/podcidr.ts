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
 * A block of `podCIDRPrefixFor(pods)` inside `pool` that overlaps none of `taken` (CIDR strings; unparsable
 * ones are ignored). The search starts at a block chosen by the node name and walks the pool in order.
 * Throws InvalidArgument when every block is taken (the spec must then name a podCIDR).
 */
export function allocatePodCIDR(
  nodeName: string,
  pods: number,
  taken: Iterable<string>,
  pool: string = DEFAULT_POD_CIDR_POOL,
): string {
  const p = parseCIDR(pool);
  if (!p) throw new KindError('InvalidArgument', `pod CIDR pool ${JSON.stringify(pool)} is not an IPv4 CIDR`);
  const prefix = podCIDRPrefixFor(pods);
  const size = 2 ** (32 - prefix);
  const blocks = Math.floor((p.last - p.first + 1) / size);
  const used: Range[] = [];
  for (const t of taken) {
    const r = parseCIDR(t);
    if (r && r.last >= p.first && r.first <= p.last) used.push(r);
  }
  const start = blocks > 0 ? fnv1a(nodeName) % blocks : 0;
  for (let i = 0; i < blocks; i++) {
    const first = p.first + ((start + i) % blocks) * size;
    const last = first + size - 1;
    if (!used.some((u) => u.first <= last && first <= u.last)) return `${formatIPv4(first)}/${prefix}`;
  }
  throw new KindError(
    'InvalidArgument',
    `no free /${prefix} left in the pod CIDR pool ${pool} for node ${nodeName}; set spec.runtime.sim.podCIDR`,
  );
}
