/**
 * One round of the kubelet's eviction manager (kubelet: managerImpl.synchronize and the helpers it calls),
 * as a pure function: the previous round's state, this round's Summary, the active pods and the time in;
 * the next state, the node's pressure conditions and what to do out. The shell runs the decision: it evicts
 * local storage offenders, or records the EvictionThresholdMet Event, runs the node-level reclaim, checks
 * with a fresh Summary whether that was enough (reclaimResolved) and otherwise evicts the chosen pod.
 *
 * A round, in the kubelet's order:
 *  1. thresholds met now (without minimum reclaim), plus those met last round that are not yet relieved by
 *     their minimum reclaim;
 *  2. when each was first seen met (kept across rounds while it stays met);
 *  3. the node conditions those thresholds raise, each held for the pressure transition period after it was
 *     last seen;
 *  4. the thresholds to act on: met for at least their grace period (hard: at once) — this is what the next
 *     round calls "met last round" — and then only those whose signal was measured anew since last round;
 *  5. local storage limits, whose evictions end the round;
 *  6. the starved resource (memory first), the node-level reclaim for its signal, and the first pod in the
 *     signal's ranking that is not critical, with its grace period and message.
 */
import type { Pod } from '../../api/core.js';
import type { Summary } from '../stats/types.js';
import {
  hasLocalStorageLimit,
  ImmediateEvictionGracePeriodSeconds,
  localStorageEvictions,
} from './localstorage.js';
import { evictionMessage, podEviction, type PodEviction } from './message.js';
import { makeSignalObservations, type Observations } from './observations.js';
import { isCriticalPod } from './pods.js';
import { cmpQuantity, addQuantity } from './quantity.js';
import { nodeReclaimFor, rankFuncFor, type FsLayout, type NodeReclaim } from './rank.js';
import {
  isMemorySignal,
  PressureConditions,
  signalToNodeCondition,
  signalToResource,
  type PressureCondition,
  type StarvedResource,
} from './signals.js';
import {
  isHardThreshold,
  sameThreshold,
  thresholdKey,
  thresholdQuantity,
  type Threshold,
} from './thresholds.js';

export interface EvictionConfig {
  /** As parseThresholdConfig returns them, then updateContainerFsThresholds for the node's layout. */
  thresholds: readonly Threshold[];
  /** As parseThresholdConfig returns them: what configForLayout starts from once the layout is known. */
  configuredThresholds?: readonly Threshold[];
  /** evictionPressureTransitionPeriod (default 5 minutes). */
  pressureTransitionPeriodMs: number;
  /** evictionMaxPodGracePeriod, the most a soft eviction grants (default 0). */
  maxPodGracePeriodSeconds: number;
  /** localStorageCapacityIsolation (default true). */
  localStorageCapacityIsolation: boolean;
  layout: FsLayout;
}

/**
 * What the manager remembers between rounds. Invariants: every threshold in `thresholdsMet` has an entry in
 * `firstObservedAt`; `nodeConditions` are exactly the conditions of `conditionsLastObservedAt` seen within
 * the transition period at the last round.
 */
export interface EvictionState {
  /** The thresholds acted on last round (grace periods met). */
  readonly thresholdsMet: readonly Threshold[];
  /** By thresholdKey: the threshold and when it was first seen met without a break. */
  readonly firstObservedAt: ReadonlyMap<string, { threshold: Threshold; at: number }>;
  readonly conditionsLastObservedAt: ReadonlyMap<PressureCondition, number>;
  readonly nodeConditions: readonly PressureCondition[];
  readonly lastObservations: Observations;
}

export const initialEvictionState: EvictionState = {
  thresholdsMet: [],
  firstObservedAt: new Map(),
  conditionsLastObservedAt: new Map(),
  nodeConditions: [],
  lastObservations: new Map(),
};

/** A starved resource and what to do about it. */
export interface ReclaimDecision {
  /** The threshold whose signal is reclaimed. */
  threshold: Threshold;
  resource: StarvedResource;
  /** The Warning Event on the Node before anything is done. */
  event: { type: 'Warning'; reason: 'EvictionThresholdMet'; message: string };
  /** Tried first; when non-empty, the shell runs them and asks reclaimResolved with a fresh Summary. */
  nodeReclaim: NodeReclaim[];
  /** The active pods in eviction order. */
  ranked: Pod[];
  /** The pod to evict when node-level reclaim is not enough: the first non-critical one ranked. */
  eviction?: PodEviction;
}

export interface SynchronizeInput {
  config: EvictionConfig;
  state: EvictionState;
  summary: Summary;
  activePods: readonly Pod[];
  /** Milliseconds since the epoch. */
  now: number;
}

export interface SynchronizeResult {
  state: EvictionState;
  /** The node's pressure conditions after this round (also what admission reads). */
  nodeConditions: readonly PressureCondition[];
  /** Thresholds acted on this round, memory first. */
  thresholds: readonly Threshold[];
  /** Non-empty: evict these for local storage limits and end the round. */
  localStorage: PodEviction[];
  reclaim?: ReclaimDecision;
}

/** The thresholds met by the observations (thresholdsMet); with min reclaim, pressure lasts longer. */
export function thresholdsMet(
  thresholds: readonly Threshold[],
  observations: Observations,
  enforceMinReclaim: boolean,
): Threshold[] {
  return thresholds.filter((t) => {
    const observed = observations.get(t.signal);
    if (!observed) return false;
    let quantity = thresholdQuantity(t.value, observed.capacity);
    if (enforceMinReclaim && t.minReclaim) {
      quantity = addQuantity(quantity, thresholdQuantity(t.minReclaim, observed.capacity));
    }
    return cmpQuantity(quantity, observed.available) > 0;
  });
}

/** After node-level reclaim: true when, with a fresh Summary, no threshold is met counting min reclaim. */
export function reclaimResolved(thresholds: readonly Threshold[], summaryAfter: Summary): boolean {
  const { observations } = makeSignalObservations(summaryAfter);
  return thresholdsMet(thresholds, observations, true).length === 0;
}

function merge(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const out = [...a];
  for (const t of b) if (!out.some((o) => sameThreshold(o, t))) out.push(t);
  return out;
}

function nodeConditionsOf(thresholds: readonly Threshold[]): Set<PressureCondition> {
  return new Set(thresholds.map((t) => signalToNodeCondition[t.signal]));
}

/** Memory thresholds first, the rest in their order (byEvictionPriority; the kubelet's sort is unstable). */
function byEvictionPriority(thresholds: readonly Threshold[]): Threshold[] {
  return [
    ...thresholds.filter((t) => isMemorySignal(t.signal)),
    ...thresholds.filter((t) => !isMemorySignal(t.signal)),
  ];
}

/** The grace period an eviction grants: 1 s for a hard threshold, else the pod's, at most the maximum. */
export function evictionGracePeriodSeconds(
  threshold: Threshold,
  pod: Pod,
  maxPodGracePeriodSeconds: number,
): number {
  if (isHardThreshold(threshold)) return ImmediateEvictionGracePeriodSeconds;
  const own = pod.spec.terminationGracePeriodSeconds;
  return own === undefined ? maxPodGracePeriodSeconds : Math.min(maxPodGracePeriodSeconds, own);
}

/**
 * Whether this round's `synchronize` reads the pods' stats whatever the node's figures say: local storage
 * isolation is on and an active pod sets a limit it checks, or a threshold was acted on last round (its
 * ranking and message read them). Known before any Summary is read.
 */
export function podStatsNeededRegardless(input: Omit<SynchronizeInput, 'now' | 'summary'>): boolean {
  const { config, state, activePods } = input;
  if (config.thresholds.length === 0 && !config.localStorageCapacityIsolation) return false;
  if (config.localStorageCapacityIsolation && activePods.some(hasLocalStorageLimit)) return true;
  return state.thresholdsMet.length > 0;
}

/**
 * Whether this round's `synchronize` may read the pods' stats, judged from a Summary with the node's figures
 * alone: podStatsNeededRegardless, or a threshold met now. Otherwise synchronize gives the same result without
 * them, and the shell spares building every pod's stats each round (the kubelet reads them from cadvisor's
 * cache).
 */
export function needsPodStats(input: Omit<SynchronizeInput, 'now'>): boolean {
  if (input.config.thresholds.length === 0 && !input.config.localStorageCapacityIsolation) return false;
  if (podStatsNeededRegardless(input)) return true;
  const { observations } = makeSignalObservations(input.summary);
  return thresholdsMet(input.config.thresholds, observations, false).length > 0;
}

/** One synchronize round. Pure: the same input gives the same result. */
export function synchronize(input: SynchronizeInput): SynchronizeResult {
  const { config, state, summary, activePods, now } = input;
  if (config.thresholds.length === 0 && !config.localStorageCapacityIsolation) {
    return { state, nodeConditions: state.nodeConditions, thresholds: [], localStorage: [] };
  }
  const { observations, podStats } = makeSignalObservations(summary);

  let met = thresholdsMet(config.thresholds, observations, false);
  if (state.thresholdsMet.length > 0) {
    met = merge(met, thresholdsMet(state.thresholdsMet, observations, true));
  }

  const firstObservedAt = new Map<string, { threshold: Threshold; at: number }>();
  for (const t of met) {
    const key = thresholdKey(t);
    firstObservedAt.set(key, { threshold: t, at: state.firstObservedAt.get(key)?.at ?? now });
  }

  const conditionsLastObservedAt = new Map(state.conditionsLastObservedAt);
  for (const c of nodeConditionsOf(met)) conditionsLastObservedAt.set(c, now);
  const nodeConditions = PressureConditions.filter((c) => {
    const at = conditionsLastObservedAt.get(c);
    return at !== undefined && now - at < config.pressureTransitionPeriodMs;
  });

  const graceMet = [...firstObservedAt.values()]
    .filter(({ threshold, at }) => now - at >= threshold.gracePeriodMs)
    .map(({ threshold }) => threshold);

  const next: EvictionState = {
    thresholdsMet: graceMet,
    firstObservedAt,
    conditionsLastObservedAt,
    nodeConditions,
    lastObservations: observations,
  };

  // Act only on signals measured since last round, so a stale Summary does not evict twice for one reading.
  const fresh = graceMet.filter((t) => {
    const observed = observations.get(t.signal);
    if (!observed) return false;
    const last = state.lastObservations.get(t.signal);
    return last === undefined || observed.time === 0 || observed.time > last.time;
  });

  const result: SynchronizeResult = { state: next, nodeConditions, thresholds: [], localStorage: [] };
  if (config.localStorageCapacityIsolation) {
    result.localStorage = localStorageEvictions(activePods, podStats, config.layout.dedicatedImageFs);
    if (result.localStorage.length > 0) return result;
  }
  if (fresh.length === 0) return result;

  const thresholds = byEvictionPriority(fresh);
  result.thresholds = thresholds;
  const threshold = thresholds[0];
  if (threshold === undefined) return result;
  const resource = signalToResource[threshold.signal];
  const ranked = rankFuncFor(threshold.signal, config.layout)(activePods, podStats);
  const reclaim: ReclaimDecision = {
    threshold,
    resource,
    event: { type: 'Warning', reason: 'EvictionThresholdMet', message: `Attempting to reclaim ${resource}` },
    nodeReclaim: nodeReclaimFor(threshold.signal, config.layout),
    ranked,
  };
  const victim = ranked.find((p) => !isCriticalPod(p));
  if (victim) {
    const uid = victim.metadata.uid ?? '';
    const { message, annotations } = evictionMessage(
      resource,
      victim,
      podStats.get(uid),
      thresholds,
      observations,
    );
    const grace = evictionGracePeriodSeconds(threshold, victim, config.maxPodGracePeriodSeconds);
    reclaim.eviction = podEviction(victim, threshold.signal, grace, message, annotations, true);
  }
  result.reclaim = reclaim;
  return result;
}
