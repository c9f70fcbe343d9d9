/**
 * The static policy's choice of CPUs (the kubelet's cpu_assignment.go): take whole NUMA nodes or sockets
 * first, then (with prefer-align-cpus-by-uncorecache) whole and partial uncore caches, then whole cores, then
 * single CPUs, always from the fullest-used places first so free ones stay whole; or, with
 * distribute-cpus-across-numa, spread a request evenly over the fewest NUMA nodes that leave the machine most
 * balanced. Pure.
 */
import { CPUSet } from './cpuset.js';
import type { CPUDetails, CPUTopology } from './topology.js';

export type CPUSortingStrategy = 'packed' | 'spread';

/** Ids sorted by how many available CPUs they hold (fewest first), then by id, as the kubelet sorts them. */
function sortByAvailable(ids: number[], cpusOf: (id: number) => CPUSet): number[] {
  return ids.sort((a, b) => cpusOf(a).size - cpusOf(b).size || a - b);
}

class CPUAccumulator {
  details: CPUDetails;
  result = CPUSet.empty();
  /** NUMA nodes first when sockets hold NUMA nodes (or equal them); sockets first when NUMA nodes hold sockets. */
  private readonly numaFirst: boolean;

  constructor(
    readonly topo: CPUTopology,
    available: CPUSet,
    public needed: number,
    private readonly strategy: CPUSortingStrategy,
  ) {
    this.details = topo.details.keepOnly(available);
    this.numaFirst = topo.numSockets >= topo.numNUMANodes;
  }

  private sorted(ids: CPUSet, cpusOf: (...ids: number[]) => CPUSet): number[] {
    return sortByAvailable(ids.list(), (id) => cpusOf.call(this.details, id));
  }

  sortAvailableNUMANodes(): number[] {
    if (this.numaFirst) return this.sorted(this.details.numaNodes(), this.details.cpusInNUMANodes);
    return this.sortAvailableSockets().flatMap((s) =>
      this.sorted(this.details.numaNodesInSockets(s), this.details.cpusInNUMANodes),
    );
  }

  sortAvailableSockets(): number[] {
    if (!this.numaFirst) return this.sorted(this.details.sockets(), this.details.cpusInSockets);
    return this.sortAvailableNUMANodes().flatMap((n) =>
      this.sorted(this.details.socketsInNUMANodes(n), this.details.cpusInSockets),
    );
  }

  sortAvailableCores(): number[] {
    if (this.numaFirst) {
      return this.sortAvailableSockets().flatMap((s) =>
        this.sorted(this.details.coresInSockets(s), this.details.cpusInCores),
      );
    }
    return this.sortAvailableNUMANodes().flatMap((n) =>
      this.sorted(this.details.coresInNUMANodes(n), this.details.cpusInCores),
    );
  }

  sortAvailableUncoreCaches(): number[] {
    return this.sortAvailableNUMANodes().flatMap((n) =>
      this.sorted(this.details.uncoreInNUMANodes(n), this.details.cpusInUncoreCaches),
    );
  }

  /** packed: CPUs core by core; spread: socket by socket in id order. */
  sortAvailableCPUs(): number[] {
    if (this.strategy === 'packed') {
      return this.sortAvailableCores().flatMap((c) => this.details.cpusInCores(c).list());
    }
    return this.sortAvailableSockets().flatMap((s) => this.details.cpusInSockets(s).list());
  }

  take(cpus: CPUSet): void {
    this.result = this.result.union(cpus);
    this.details = this.details.keepOnly(this.details.cpus().difference(this.result));
    this.needed -= cpus.size;
  }

  needsAtLeast(n: number): boolean {
    return this.needed >= n;
  }
  isSatisfied(): boolean {
    return this.needed < 1;
  }
  isFailed(): boolean {
    return this.needed > this.details.cpus().size;
  }

  private takeWhole(ids: number[], whole: (id: number) => boolean, all: (id: number) => CPUSet): void {
    for (const id of ids) {
      if (!whole(id)) continue;
      const cpus = all(id);
      if (!this.needsAtLeast(cpus.size)) continue;
      this.take(cpus);
    }
  }

  takeFullNUMANodes(): void {
    const all = (n: number): CPUSet => this.topo.details.cpusInNUMANodes(n);
    this.takeWhole(
      this.sortAvailableNUMANodes(),
      (n) => this.details.cpusInNUMANodes(n).size === all(n).size,
      all,
    );
  }

  takeFullSockets(): void {
    const all = (s: number): CPUSet => this.topo.details.cpusInSockets(s);
    this.takeWhole(
      this.sortAvailableSockets(),
      (s) => this.details.cpusInSockets(s).size === this.topo.cpusPerSocket(),
      all,
    );
  }

  takeFullFirstLevel(): void {
    if (this.numaFirst) this.takeFullNUMANodes();
    else this.takeFullSockets();
  }

  takeFullSecondLevel(): void {
    if (this.numaFirst) this.takeFullSockets();
    else this.takeFullNUMANodes();
  }

  takeFullUncore(): void {
    const all = (u: number): CPUSet => this.topo.details.cpusInUncoreCaches(u);
    this.takeWhole(
      this.sortAvailableUncoreCaches(),
      (u) => this.details.cpusInUncoreCaches(u).size === all(u).size,
      all,
    );
  }

  /** All that is still needed from one uncore cache's free cores, or nothing. */
  takePartialUncore(uncore: number): void {
    const perCore = this.topo.cpusPerCore();
    const coresNeeded = Math.floor((this.needed + perCore - 1) / perCore);
    const freeCores = this.details.coresNeededInUncoreCache(coresNeeded, uncore);
    let free = this.details.cpusInCores(...freeCores.list());
    // An odd request on SMT: one thread of the last core is left.
    if (this.needed % 2 !== 0 && perCore > 1) {
      const list = free.list();
      if (list.length > this.needed) free = CPUSet.of(...list.slice(0, free.size - 1));
    }
    if (this.needed !== free.size) return;
    this.take(free);
  }

  takeUncoreCache(): void {
    const perUncore = this.topo.cpusPerUncore();
    for (const uncore of this.sortAvailableUncoreCaches()) {
      if (this.needsAtLeast(perUncore)) this.takeFullUncore();
      if (this.isSatisfied()) return;
      this.takePartialUncore(uncore);
      if (this.isSatisfied()) return;
    }
  }

  takeFullCores(): void {
    const all = (c: number): CPUSet => this.topo.details.cpusInCores(c);
    this.takeWhole(
      this.sortAvailableCores(),
      (c) => this.details.cpusInCores(c).size === this.topo.cpusPerCore(),
      all,
    );
  }

  takeRemainingCPUs(): void {
    for (const cpu of this.sortAvailableCPUs()) {
      this.take(CPUSet.of(cpu));
      if (this.isSatisfied()) return;
    }
  }

  /** The fewest and most NUMA nodes a request of `groupSize` groups can spread over. */
  rangeNUMANodesNeededToSatisfy(groupSize: number): [number, number] {
    const numNUMANodes = this.topo.details.numaNodes().size;
    const available = this.details.numaNodes().size;
    const numCPUs = this.topo.details.cpus().size;
    const groups = Math.floor((numCPUs - 1) / groupSize) + 1;
    const groupsPerNUMA = Math.floor((groups - 1) / numNUMANodes) + 1;
    const groupsNeeded = Math.floor((this.needed - 1) / groupSize) + 1;
    return [Math.floor((groupsNeeded - 1) / groupsPerNUMA) + 1, Math.min(groupsNeeded, available)];
  }
}

/** Calls `f` on each k-combination of `n` in lexicographic order until it returns true (break). */
function iterateCombinations(n: readonly number[], k: number, f: (combo: number[]) => boolean): void {
  if (k < 1) return;
  const helper = (start: number, left: number, accum: number[]): boolean => {
    if (left === 0) return f(accum);
    for (let i = start; i <= n.length - left; i++) {
      if (helper(i + 1, left - 1, [...accum, n[i]!])) return true;
    }
    return false;
  };
  helper(0, k, []);
}

/** Rounded to three decimals as the kubelet rounds its balance figures. */
function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function standardDeviation(xs: readonly number[]): number {
  const m = round3(xs.reduce((a, b) => a + b, 0) / xs.length);
  const s = Math.sqrt(xs.reduce((a, x) => a + (x - m) * (x - m), 0) / xs.length);
  return round3(s);
}

export class NotEnoughCPUsError extends Error {}

/** takeByTopologyNUMAPacked. */
export function takeByTopologyNUMAPacked(
  topo: CPUTopology,
  available: CPUSet,
  numCPUs: number,
  strategy: CPUSortingStrategy,
  preferAlignByUncoreCache: boolean,
): CPUSet {
  const acc = new CPUAccumulator(topo, available, numCPUs, strategy);
  if (acc.isSatisfied()) return acc.result;
  if (acc.isFailed()) {
    throw new NotEnoughCPUsError(
      `not enough cpus available to satisfy request: requested=${numCPUs}, available=${available.size}`,
    );
  }
  acc.takeFullFirstLevel();
  if (acc.isSatisfied()) return acc.result;
  acc.takeFullSecondLevel();
  if (acc.isSatisfied()) return acc.result;
  if (preferAlignByUncoreCache) {
    acc.takeUncoreCache();
    if (acc.isSatisfied()) return acc.result;
  }
  if (strategy !== 'spread') {
    acc.takeFullCores();
    if (acc.isSatisfied()) return acc.result;
  }
  acc.takeRemainingCPUs();
  if (acc.isSatisfied()) return acc.result;
  throw new Error('failed to allocate cpus');
}

/** takeByTopologyNUMADistributed: `groupSize` CPUs are never split across NUMA nodes. */
export function takeByTopologyNUMADistributed(
  topo: CPUTopology,
  available: CPUSet,
  numCPUs: number,
  groupSize: number,
  strategy: CPUSortingStrategy,
  alignBySocket: boolean,
): CPUSet {
  if (numCPUs % groupSize !== 0) return takeByTopologyNUMAPacked(topo, available, numCPUs, strategy, false);
  const acc = new CPUAccumulator(topo, available, numCPUs, strategy);
  if (acc.isSatisfied()) return acc.result;
  if (acc.isFailed()) {
    throw new NotEnoughCPUsError(
      `not enough cpus available to satisfy request: requested=${numCPUs}, available=${available.size}`,
    );
  }
  const numas = acc.sortAvailableNUMANodes();
  const [minNUMAs, maxNUMAs] = acc.rangeNUMANodesNeededToSatisfy(groupSize);
  const inNUMA = (n: number): number => acc.details.cpusInNUMANodes(n).size;
  for (let k = minNUMAs; k <= maxNUMAs; k++) {
    let bestBalance = Number.MAX_VALUE;
    let bestRemainder: number[] | undefined;
    let bestCombo: number[] | undefined;
    let bestInOneSocket = false;
    iterateCombinations(numas, k, (combo) => {
      if (bestBalance === 0 && (!alignBySocket || bestInOneSocket)) return true;
      if (acc.details.cpusInNUMANodes(...combo).size < numCPUs) return false;
      const groups = combo.reduce((a, n) => a + Math.floor(inNUMA(n) / groupSize), 0);
      if (groups * groupSize < numCPUs) return false;
      let distribution = Math.floor(numCPUs / combo.length / groupSize) * groupSize;
      if (alignBySocket) {
        for (const n of combo)
          distribution = Math.min(distribution, Math.floor(inNUMA(n) / groupSize) * groupSize);
      }
      if (combo.some((n) => inNUMA(n) < distribution)) return false;
      const after = new Map(numas.map((n) => [n, inNUMA(n)]));
      for (const n of combo) after.set(n, after.get(n)! - distribution);
      const remainder = numCPUs - distribution * combo.length;
      const remainderCombo = combo.filter((n) => after.get(n)! >= groupSize);
      let bestLocalBalance = Number.MAX_VALUE;
      let bestLocalRemainder: number[] | undefined;
      if (remainder === 0) bestLocalBalance = standardDeviation([...after.values()]);
      for (let j = remainderCombo.length; remainder > 0 && j >= 1; j--) {
        iterateCombinations(remainderCombo, j, (subset) => {
          let left = remainder;
          const a = new Map(after);
          if (subset.reduce((s, n) => s + a.get(n)!, 0) < left) return false;
          while (left > 0) {
            for (const n of subset) {
              if (left === 0) break;
              if (a.get(n)! < groupSize) continue;
              a.set(n, a.get(n)! - groupSize);
              left -= groupSize;
            }
          }
          const balance = standardDeviation([...a.values()]);
          if (balance < bestLocalBalance) {
            bestLocalBalance = balance;
            bestLocalRemainder = subset;
          }
          return false;
        });
      }
      const inSameSocket = alignBySocket && topo.details.areNUMANodesInSameSocket(combo);
      let isBetter = bestLocalBalance < bestBalance;
      if (alignBySocket && inSameSocket !== bestInOneSocket) isBetter = inSameSocket;
      if (isBetter) {
        bestBalance = bestLocalBalance;
        bestRemainder = bestLocalRemainder;
        bestCombo = combo;
        if (alignBySocket) bestInOneSocket = inSameSocket;
      }
      return false;
    });
    if (!bestCombo) continue;
    let distribution = Math.floor(numCPUs / bestCombo.length / groupSize) * groupSize;
    for (const n of bestCombo)
      distribution = Math.min(distribution, Math.floor(inNUMA(n) / groupSize) * groupSize);
    for (const n of bestCombo) {
      acc.take(takeByTopologyNUMAPacked(topo, acc.details.cpusInNUMANodes(n), distribution, strategy, false));
    }
    let remainder = numCPUs - distribution * bestCombo.length;
    while (remainder > 0) {
      for (const n of bestRemainder ?? []) {
        if (remainder === 0) break;
        if (inNUMA(n) < groupSize) continue;
        acc.take(takeByTopologyNUMAPacked(topo, acc.details.cpusInNUMANodes(n), groupSize, strategy, false));
        remainder -= groupSize;
      }
      // A remainder without a subset to take it from cannot shrink (the kubelet would spin): report it.
      if (!bestRemainder || bestRemainder.length === 0) break;
    }
    if (acc.needed !== 0) {
      throw new Error(
        `accounting error, ${acc.needed > 0 ? 'not enough' : 'too many'} CPUs allocated, remaining: ${acc.needed}`,
      );
    }
    return acc.result;
  }
  return takeByTopologyNUMAPacked(topo, available, numCPUs, strategy, false);
}
