/**
 * A set of CPU ids in the kernel's list format ("0-3,8,10-11"), immutable, as k8s.io/utils/cpuset: what
 * cgroups' cpuset.cpus, the CRI's cpuset_cpus and the CPU manager's checkpoint hold.
 */
export class CPUSet {
  /** Sorted, without duplicates. */
  private readonly ids: readonly number[];

  private constructor(sorted: readonly number[]) {
    this.ids = sorted;
  }

  static of(...cpus: number[]): CPUSet {
    return new CPUSet([...new Set(cpus)].sort((a, b) => a - b));
  }

  static empty(): CPUSet {
    return EMPTY;
  }

  /** Parses the list format; throws a clear error on anything else (the kubelet's cpuset.Parse). */
  static parse(s: string): CPUSet {
    const text = s.trim();
    if (text === '') return EMPTY;
    const out: number[] = [];
    for (const part of text.split(',')) {
      const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
      if (!m) throw new Error(`invalid cpuset ${JSON.stringify(s)}: bad element ${JSON.stringify(part)}`);
      const lo = Number(m[1]);
      const hi = m[2] === undefined ? lo : Number(m[2]);
      if (hi < lo) throw new Error(`invalid cpuset ${JSON.stringify(s)}: range ${part} is reversed`);
      // A guard against "0-4294967295" filling memory.
      if (hi - lo > 65_536)
        throw new Error(`invalid cpuset ${JSON.stringify(s)}: range ${part} is too large`);
      for (let c = lo; c <= hi; c++) out.push(c);
    }
    return CPUSet.of(...out);
  }

  get size(): number {
    return this.ids.length;
  }

  isEmpty(): boolean {
    return this.ids.length === 0;
  }

  has(cpu: number): boolean {
    return this.ids.includes(cpu);
  }

  /** The ids in ascending order. */
  list(): number[] {
    return [...this.ids];
  }

  union(...others: CPUSet[]): CPUSet {
    return CPUSet.of(...this.ids, ...others.flatMap((o) => o.ids));
  }

  intersection(other: CPUSet): CPUSet {
    return new CPUSet(this.ids.filter((c) => other.has(c)));
  }

  difference(other: CPUSet): CPUSet {
    return new CPUSet(this.ids.filter((c) => !other.has(c)));
  }

  isSubsetOf(other: CPUSet): boolean {
    return this.ids.every((c) => other.has(c));
  }

  equals(other: CPUSet): boolean {
    return this.ids.length === other.ids.length && this.ids.every((c, i) => other.ids[i] === c);
  }

  /** The kernel's list format: runs of adjacent ids as "a-b", as cpuset.String writes them. */
  toString(): string {
    const parts: string[] = [];
    let i = 0;
    while (i < this.ids.length) {
      let j = i;
      while (j + 1 < this.ids.length && this.ids[j + 1] === this.ids[j]! + 1) j++;
      parts.push(i === j ? String(this.ids[i]) : `${this.ids[i]}-${this.ids[j]}`);
      i = j + 1;
    }
    return parts.join(',');
  }
}

const EMPTY = CPUSet.of();
