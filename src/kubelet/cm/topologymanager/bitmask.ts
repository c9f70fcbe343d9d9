/**
 * A set of NUMA nodes as the topology manager compares them (pkg/kubelet/cm/topologymanager/bitmask): by
 * count, then by value ("narrower" = fewer nodes, or as many with lower ids).
 */
export class NUMAMask {
  private constructor(readonly value: bigint) {}

  static of(...nodes: number[]): NUMAMask {
    let v = 0n;
    for (const n of nodes) {
      if (!Number.isInteger(n) || n < 0 || n > 63)
        throw new Error(`bit number must be in range 0-63, got ${n}`);
      v |= 1n << BigInt(n);
    }
    return new NUMAMask(v);
  }

  bits(): number[] {
    const out: number[] = [];
    for (let i = 0; i < 64; i++) if ((this.value >> BigInt(i)) & 1n) out.push(i);
    return out;
  }

  count(): number {
    return this.bits().length;
  }

  isSet(n: number): boolean {
    return ((this.value >> BigInt(n)) & 1n) === 1n;
  }

  isEqual(o: NUMAMask): boolean {
    return this.value === o.value;
  }

  isLessThan(o: NUMAMask): boolean {
    return this.value < o.value;
  }

  isNarrowerThan(o: NUMAMask): boolean {
    const a = this.count();
    const b = o.count();
    return a === b ? this.isLessThan(o) : a < b;
  }

  and(...others: NUMAMask[]): NUMAMask {
    return new NUMAMask(others.reduce((v, o) => v & o.value, this.value));
  }

  /** The kubelet's String(): binary digits, at least two. */
  toString(): string {
    const s = this.value.toString(2);
    return s.length < 2 ? s.padStart(2, '0') : s;
  }
}

/** Every non-empty subset of `bits`, smallest first, each size in lexicographic order (IterateBitMasks). */
export function iterateMasks(bits: readonly number[], f: (m: NUMAMask) => void): void {
  const walk = (from: number, accum: number[], size: number): void => {
    if (accum.length === size) {
      f(NUMAMask.of(...accum));
      return;
    }
    for (let i = from; i < bits.length; i++) walk(i + 1, [...accum, bits[i]!], size);
  };
  for (let size = 1; size <= bits.length; size++) walk(0, [], size);
}
