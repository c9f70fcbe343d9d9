/**
 * The topology manager's policies (pkg/kubelet/cm/topologymanager): the hints of every provider (CPU manager,
 * device manager, ...) merged into the best NUMA affinity, and whether the pod may be admitted with it.
 * none admits everything; best-effort admits and aligns where it can; restricted refuses a non-preferred
 * result; single-numa-node keeps only single-node hints and refuses otherwise. Pure.
 */
import { NUMAMask } from './bitmask.js';

/** A provider's possible placement: `affinity` undefined = any (no preference). */
export interface TopologyHint {
  affinity: NUMAMask | undefined;
  preferred: boolean;
}

/** One provider's hints by resource name; undefined (or {}) = no preference for any resource. */
export type ProviderHints = Record<string, TopologyHint[] | undefined> | undefined;

export type TopologyPolicyName = 'none' | 'best-effort' | 'restricted' | 'single-numa-node';
export const TOPOLOGY_POLICIES: readonly TopologyPolicyName[] = [
  'none',
  'best-effort',
  'restricted',
  'single-numa-node',
];
export type TopologyScopeName = 'container' | 'pod';

export const PREFER_CLOSEST_NUMA_NODES = 'prefer-closest-numa-nodes';
export const MAX_ALLOWABLE_NUMA_NODES = 'max-allowable-numa-nodes';
export const DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8;

export interface TopologyPolicyOptions {
  preferClosestNUMA: boolean;
  maxAllowableNUMANodes: number;
}

/** Go's strconv.ParseBool. */
export function parseGoBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/**
 * NewPolicyOptions: both options are GA (TopologyManagerPolicyOptions, locked on), so no gate refuses them;
 * unknown names and bad values are refused with the kubelet's messages.
 */
export function topologyPolicyOptions(raw: Readonly<Record<string, string>>): TopologyPolicyOptions {
  const opts: TopologyPolicyOptions = {
    preferClosestNUMA: false,
    maxAllowableNUMANodes: DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
  };
  for (const [name, value] of Object.entries(raw)) {
    if (name === PREFER_CLOSEST_NUMA_NODES) {
      const b = parseGoBool(value);
      if (b === undefined)
        throw new Error(
          `bad value for option "${name}": strconv.ParseBool: parsing "${value}": invalid syntax`,
        );
      opts.preferClosestNUMA = b;
    } else if (name === MAX_ALLOWABLE_NUMA_NODES) {
      if (!/^[+-]?\d+$/.test(value))
        throw new Error(
          `unable to convert policy option to integer "${name}": strconv.Atoi: parsing "${value}": invalid syntax`,
        );
      const n = Number(value);
      if (n < DEFAULT_MAX_ALLOWABLE_NUMA_NODES)
        throw new Error(
          `the minimum value of "${name}" should not be less than ${DEFAULT_MAX_ALLOWABLE_NUMA_NODES}`,
        );
      opts.maxAllowableNUMANodes = n;
    } else {
      throw new Error(`unknown Topology Manager Policy option: "${name}"`);
    }
  }
  return opts;
}

/** The machine's NUMA nodes and their distances (NUMAInfo). */
export class NUMAInfo {
  constructor(
    readonly nodes: readonly number[],
    readonly distances: ReadonlyMap<number, readonly number[]>,
  ) {}

  defaultAffinityMask(): NUMAMask {
    return NUMAMask.of(...this.nodes);
  }

  narrowest(a: NUMAMask, b: NUMAMask): NUMAMask {
    return a.isNarrowerThan(b) ? a : b;
  }

  /** As many nodes: the lower average distance between them, then the lower mask. */
  closest(a: NUMAMask, b: NUMAMask): NUMAMask {
    if (a.count() !== b.count()) return this.narrowest(a, b);
    const da = this.averageDistance(a);
    const db = this.averageDistance(b);
    if (da === db) return a.isLessThan(b) ? a : b;
    return da < db ? a : b;
  }

  averageDistance(m: NUMAMask): number {
    const bits = m.bits();
    if (bits.length === 0) return 0;
    let sum = 0;
    for (const x of bits) for (const y of bits) sum += this.distances.get(x)?.[y] ?? 0;
    return sum / (bits.length * bits.length);
  }
}

/** filterProvidersHints: one list per resource; no preference becomes [{any, preferred}], none possible [{any, not}]. */
export function filterProvidersHints(providers: readonly ProviderHints[]): TopologyHint[][] {
  const all: TopologyHint[][] = [];
  for (const hints of providers) {
    if (!hints || Object.keys(hints).length === 0) {
      all.push([{ affinity: undefined, preferred: true }]);
      continue;
    }
    for (const resource of Object.keys(hints)) {
      const list = hints[resource];
      if (list === undefined) all.push([{ affinity: undefined, preferred: true }]);
      else if (list.length === 0) all.push([{ affinity: undefined, preferred: false }]);
      else all.push(list);
    }
  }
  return all;
}

function mergePermutation(defaultAffinity: NUMAMask, permutation: readonly TopologyHint[]): TopologyHint {
  let preferred = true;
  const affinities: NUMAMask[] = [];
  for (const h of permutation) {
    if (h.affinity) {
      affinities.push(h.affinity);
      if (!h.affinity.isEqual(affinities[0]!)) preferred = false;
    }
    if (!h.preferred) preferred = false;
  }
  return { affinity: defaultAffinity.and(...affinities), preferred };
}

function narrowestHint(hints: readonly TopologyHint[]): TopologyHint | undefined {
  let best: TopologyHint | undefined;
  for (const h of hints) {
    if (!h.affinity) continue;
    if (!best || h.affinity.isNarrowerThan(best.affinity!)) best = h;
  }
  return best;
}

function maxOfMinAffinityCounts(filtered: readonly TopologyHint[][]): number {
  let max = 0;
  for (const hints of filtered) {
    const n = narrowestHint(hints);
    if (n && n.affinity!.count() > max) max = n.affinity!.count();
  }
  return max;
}

/** The HintMerger: every permutation of one hint per resource, the best merged one kept. */
export function mergeHints(
  numa: NUMAInfo,
  hints: readonly TopologyHint[][],
  policy: TopologyPolicyName,
  opts: TopologyPolicyOptions,
): TopologyHint {
  const bestNonPreferredCount = maxOfMinAffinityCounts(hints);
  const compareMasks = (current: TopologyHint, candidate: TopologyHint): TopologyHint => {
    if (candidate.affinity!.isEqual(current.affinity!)) return current;
    const best =
      policy !== 'single-numa-node' && opts.preferClosestNUMA
        ? numa.closest(current.affinity!, candidate.affinity!)
        : numa.narrowest(current.affinity!, candidate.affinity!);
    return best.isEqual(current.affinity!) ? current : candidate;
  };
  const compare = (current: TopologyHint | undefined, candidate: TopologyHint): TopologyHint | undefined => {
    const cc = candidate.affinity!.count();
    if (cc === 0) return current;
    if (!current) return candidate;
    if (!current.preferred && candidate.preferred) return candidate;
    if (current.preferred && !candidate.preferred) return current;
    if (current.preferred && candidate.preferred) return compareMasks(current, candidate);
    // Neither preferred: the one closest to the widest of the providers' narrowest hints.
    const cur = current.affinity!.count();
    if (cur > bestNonPreferredCount) return compareMasks(current, candidate);
    if (cur === bestNonPreferredCount) {
      return cc !== bestNonPreferredCount ? current : compareMasks(current, candidate);
    }
    if (cc > bestNonPreferredCount) return current;
    if (cc === bestNonPreferredCount) return candidate;
    if (cc > cur) return candidate;
    if (cc < cur) return current;
    return compareMasks(current, candidate);
  };
  const defaultAffinity = numa.defaultAffinityMask();
  let best: TopologyHint | undefined;
  const iterate = (i: number, accum: TopologyHint[]): void => {
    if (i === hints.length) {
      best = compare(best, mergePermutation(defaultAffinity, accum));
      return;
    }
    for (const h of hints[i]!) iterate(i + 1, [...accum, h]);
  };
  iterate(0, []);
  return best ?? { affinity: defaultAffinity, preferred: false };
}

/** Policy.Merge: the best hint and whether the pod is admitted with it. */
export function mergeByPolicy(
  policy: Exclude<TopologyPolicyName, 'none'>,
  numa: NUMAInfo,
  providers: readonly ProviderHints[],
  opts: TopologyPolicyOptions,
): { hint: TopologyHint; admit: boolean } {
  let filtered = filterProvidersHints(providers);
  if (policy === 'single-numa-node') {
    filtered = filtered.map((hs) =>
      hs.filter((h) => h.preferred && (h.affinity === undefined || h.affinity.count() === 1)),
    );
  }
  let hint = mergeHints(numa, filtered, policy, opts);
  if (policy === 'single-numa-node' && hint.affinity?.isEqual(numa.defaultAffinityMask())) {
    hint = { affinity: undefined, preferred: hint.preferred };
  }
  return { hint, admit: policy === 'best-effort' ? true : hint.preferred };
}
