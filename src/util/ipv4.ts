/**
 * IPv4 addresses as numbers, and the pod CIDRs the simulated runtime's IPAM (src/runtime/sim/ipam.ts) can
 * serve, which VirtualNode validation (src/api/virtualnode.ts) and pod CIDR defaulting check too. Pure.
 */

export function parseIPv4(s: string): number | undefined {
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

export function formatIPv4(n: number): string {
  return `${Math.floor(n / 16777216) % 256}.${Math.floor(n / 65536) % 256}.${Math.floor(n / 256) % 256}.${n % 256}`;
}

/**
 * The network address and prefix of a pod CIDR the simulated runtime's IP allocator can serve (an IPv4 CIDR
 * /8 to /30: room for at least one pod beside the network, gateway and broadcast addresses), or undefined for
 * anything else.
 */
export function parseSimPodCIDR(cidr: string): { addr: number; prefix: number } | undefined {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(cidr);
  const prefix = m ? Number(m[2]) : NaN;
  const addr = m ? parseIPv4(m[1]!) : undefined;
  return addr !== undefined && prefix >= 8 && prefix <= 30 ? { addr, prefix } : undefined;
}

/** Whether the simulated runtime's IPAM can hand out addresses from `cidr` (an IPv4 CIDR /8 to /30). */
export function isSimPodCIDR(cidr: string): boolean {
  return parseSimPodCIDR(cidr) !== undefined;
}
