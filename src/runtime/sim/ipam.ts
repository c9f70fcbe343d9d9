/**
 * Pod IP allocation for the simulated runtime, in the manner of the CNI host-local plugin: addresses come
 * from one IPv4 CIDR, the network address, the gateway (first host) and the broadcast address are never
 * handed out, and released addresses are reused only after every fresh one has been used (oldest release
 * first), so a just-freed IP is not given straight to the next pod. An adopted sandbox reserves the address it
 * had. Allocate (amortized, past reserved addresses), reserve and release are O(1).
 */
import { KindError } from '../../util/errors.js';
import { formatIPv4, parseIPv4, parseSimPodCIDR } from '../../util/ipv4.js';

export class IPAllocator {
  readonly cidr: string;
  private readonly base: number;
  private readonly last: number;
  private nextFresh: number;
  private readonly released: number[] = [];
  private releasedHead = 0;
  private readonly used = new Set<number>();

  /** Throws InvalidArgument for anything but an IPv4 CIDR with room for at least one pod. */
  constructor(cidr: string) {
    const parsed = parseSimPodCIDR(cidr);
    if (!parsed) {
      throw new KindError(
        'InvalidArgument',
        `sim runtime: podCIDR ${JSON.stringify(cidr)} is not an IPv4 CIDR /8../30`,
        {
          field: 'podCIDR',
        },
      );
    }
    const { addr, prefix } = parsed;
    const size = 2 ** (32 - prefix);
    this.cidr = cidr;
    this.base = addr - (addr % size);
    this.last = this.base + size - 2; // broadcast excluded
    this.nextFresh = this.base + 2; // network and gateway excluded
  }

  /** Number of addresses currently allocated. */
  get allocated(): number {
    return this.used.size;
  }

  /** Throws Unknown (as a CNI ADD failure surfaces through containerd) when the range is exhausted. */
  allocate(sandboxId: string): string {
    return formatIPv4(this.allocateAddress(sandboxId));
  }

  /** As allocate, the address as its 32-bit number (what the sandbox records keep). */
  allocateAddress(sandboxId: string): number {
    let ip: number | undefined;
    // Reserved addresses (reserve) may lie ahead among the fresh ones.
    while (this.nextFresh <= this.last && this.used.has(this.nextFresh)) this.nextFresh++;
    if (this.nextFresh <= this.last) {
      ip = this.nextFresh++;
    } else {
      while (this.releasedHead < this.released.length) {
        const candidate = this.released[this.releasedHead++]!;
        if (!this.used.has(candidate)) {
          ip = candidate;
          break;
        }
      }
      if (this.releasedHead > 1024 && this.releasedHead * 2 > this.released.length) {
        this.released.splice(0, this.releasedHead);
        this.releasedHead = 0;
      }
    }
    if (ip === undefined) {
      throw new KindError(
        'Unknown',
        `failed to setup network for sandbox "${sandboxId}": no IP addresses available in range set ${this.cidr}`,
        { sandboxId, cidr: this.cidr },
      );
    }
    this.used.add(ip);
    return ip >>> 0; // an integer V8 keeps unboxed below 2^31, not a heap number
  }

  /**
   * Takes exactly `ip` for `sandboxId` (a sandbox adopted with the IP it had) and returns it as its number.
   * Throws InvalidArgument for an address that allocate would never hand out (outside the CIDR, or its
   * network, gateway or broadcast address) and AlreadyExists for one in use.
   */
  reserve(ip: string, sandboxId: string): number {
    const n = parseIPv4(ip);
    const context = { sandboxId, ip, cidr: this.cidr };
    if (n === undefined || n < this.base + 2 || n > this.last) {
      throw new KindError(
        'InvalidArgument',
        `failed to reserve IP ${JSON.stringify(ip)} for sandbox "${sandboxId}": not in the allocatable range of ${this.cidr}`,
        context,
      );
    }
    if (this.used.has(n)) {
      throw new KindError(
        'AlreadyExists',
        `failed to reserve IP ${ip} for sandbox "${sandboxId}": already allocated`,
        context,
      );
    }
    this.used.add(n);
    return n >>> 0;
  }

  /** Releasing an address that is not allocated (or not ours) is a no-op. */
  release(ip: string): void {
    const n = parseIPv4(ip);
    if (n !== undefined) this.releaseAddress(n);
  }

  releaseAddress(ip: number): void {
    if (this.used.delete(ip)) this.released.push(ip);
  }
}
