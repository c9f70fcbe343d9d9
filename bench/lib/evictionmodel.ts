// The eviction scenario's model (pure): the fleet-wide memory ramp its sim pods declare, the node capacity that
// puts each node's threshold crossing a known time after the ramp starts, and from what was declared and seen,
// when a node crossed its memory.available threshold before each eviction, which pod the kubelet's ranking
// had to pick, and how many nodes were under MemoryPressure over time.
//
// Pod j of a node (0-based) uses base + j * step bytes until the ramp starts at t0, then every pod grows by the
// same bytes per second for rampSeconds (an expression of the runtime's `clock`, so all pods of all nodes ramp
// in step), then stays. Every pod's usage is above its memory request and all have one priority, so the
// kubelet's memory ranking (usage above requests, priority, usage minus requests) evicts the highest j still
// running first. One eviction frees at least `base` bytes, several seconds of the node's ramp, so each
// eviction normally ends its pressure and the next one follows a fresh crossing.

const MI = 2 ** 20;

export interface RampPlan {
  podsPerNode: number;
  /** Epoch ms, a whole second: the ramp's start. */
  t0Ms: number;
  rampSeconds: number;
  /** Pod j's usage before the ramp: baseBytes + j * stepBytes. */
  baseBytes: number;
  stepBytes: number;
  /** Every pod's growth, bytes per second, during the ramp. */
  podSlopeBytesPerSec: number;
  /** Each pod's memory request. */
  requestBytes: number;
  /** evictionHard memory.available. */
  thresholdBytes: number;
  /** The VirtualNode's memory capacity. */
  capacityBytes: number;
}

export interface RampOptions {
  podsPerNode: number;
  t0Ms: number;
  /** Seconds from the ramp's start to a node's first crossing, for the operator's estimated share. */
  leadSeconds: number;
  /** Seconds the ramp lasts (longer than leadSeconds: the rest is the time the evictions get). */
  rampSeconds: number;
  /** The operator's resident memory per node expected at the crossing (Summary's `kubelet` container). */
  operatorShareBytes: number;
  /** The node's growth, bytes per second (default 4 MiB/s). */
  nodeSlopeBytesPerSec?: number;
}

export function rampPlan(o: RampOptions): RampPlan {
  if (!(o.podsPerNode >= 1 && o.rampSeconds > o.leadSeconds && o.leadSeconds > 0))
    throw new Error('a ramp needs pods, and a lead shorter than the ramp');
  const baseBytes = 64 * MI;
  const stepBytes = Math.floor((64 * MI) / o.podsPerNode);
  const podSlopeBytesPerSec = Math.round((o.nodeSlopeBytesPerSec ?? 4 * MI) / o.podsPerNode);
  const thresholdBytes = 500 * MI;
  const m = o.podsPerNode;
  const atStart = m * baseBytes + (stepBytes * m * (m - 1)) / 2;
  const atCrossing = atStart + m * podSlopeBytesPerSec * o.leadSeconds;
  // available = capacity - pods - operator share; met when available < threshold.
  const capacityBytes = Math.ceil((atCrossing + o.operatorShareBytes + thresholdBytes) / MI) * MI;
  return {
    podsPerNode: m,
    t0Ms: Math.ceil(o.t0Ms / 1000) * 1000,
    rampSeconds: o.rampSeconds,
    baseBytes,
    stepBytes,
    podSlopeBytesPerSec,
    requestBytes: 32 * MI,
    thresholdBytes,
    capacityBytes,
  };
}

/** Pod j's declared memory, an expression of the runtime's clock (src/runtime/sim/expr.ts). */
export function podMemoryExpr(p: RampPlan, j: number): string {
  const base = p.baseBytes + j * p.stepBytes;
  return `${base} + ${p.podSlopeBytesPerSec} * clamp(clock - ${p.t0Ms / 1000}, 0, ${p.rampSeconds})`;
}

/** What podMemoryExpr evaluates to at `atMs`. */
export function podMemoryBytes(p: RampPlan, j: number, atMs: number): number {
  const s = Math.min(Math.max((atMs - p.t0Ms) / 1000, 0), p.rampSeconds);
  return p.baseBytes + j * p.stepBytes + p.podSlopeBytesPerSec * s;
}

/** A pod of one node: its index j and when its eviction was seen (Failed); unset while it runs. */
export interface NodePod {
  index: number;
  goneAtMs?: number;
}

function present(pod: NodePod, atMs: number): boolean {
  return pod.goneAtMs === undefined || atMs < pod.goneAtMs;
}

/** The node's memory.available at `atMs` as declared: capacity - pods still there - the operator's share. */
export function availableBytes(
  p: RampPlan,
  pods: readonly NodePod[],
  atMs: number,
  shareBytes: number,
): number {
  let used = shareBytes;
  for (const pod of pods) if (present(pod, atMs)) used += podMemoryBytes(p, pod.index, atMs);
  return p.capacityBytes - used;
}

/**
 * The start of the pressure that ended in the eviction seen at `failedAtMs`: walking back from just before it
 * in `stepMs` steps, the earliest moment of the unbroken stretch in which available < threshold (pods count
 * until their Failed is seen, so a pod's own memory counts until its eviction). Undefined when the threshold
 * was not met just before the eviction, or not since `fromMs`.
 */
export function pressureStartMs(
  p: RampPlan,
  pods: readonly NodePod[],
  failedAtMs: number,
  shareAt: (ms: number) => number,
  fromMs: number,
  stepMs = 50,
): number | undefined {
  const met = (t: number): boolean => availableBytes(p, pods, t, shareAt(t)) < p.thresholdBytes;
  let t = failedAtMs - 1;
  if (!met(t)) return undefined;
  while (t - stepMs >= fromMs && met(t - stepMs)) t -= stepMs;
  return t - stepMs >= fromMs ? t : undefined;
}

/** The pod the kubelet's memory ranking picks at `atMs` (every pod above its request): the highest j left. */
export function expectedVictim(pods: readonly NodePod[], atMs: number): number | undefined {
  let best: number | undefined;
  for (const pod of pods)
    if (present(pod, atMs - 1) && (best === undefined || pod.index > best)) best = pod.index;
  return best;
}

/** Linear interpolation over (t, value) samples sorted by t; the nearest end outside them; 0 without any. */
export function interpolate(samples: readonly { t: number; v: number }[], atMs: number): number {
  if (samples.length === 0) return 0;
  if (atMs <= samples[0]!.t) return samples[0]!.v;
  const last = samples[samples.length - 1]!;
  if (atMs >= last.t) return last.v;
  let lo = 0;
  let hi = samples.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (samples[mid]!.t <= atMs) lo = mid;
    else hi = mid;
  }
  const a = samples[lo]!;
  const b = samples[hi]!;
  return b.t === a.t ? b.v : a.v + ((b.v - a.v) * (atMs - a.t)) / (b.t - a.t);
}

/** Per node, the times its MemoryPressure was seen turning True or False, in order. */
export type PressureTransitions = ReadonlyMap<string, readonly { atMs: number; pressure: boolean }[]>;

/** How many nodes were under MemoryPressure at fromMs, fromMs + stepMs, ... up to toMs. */
export function pressureCounts(
  transitions: PressureTransitions,
  fromMs: number,
  toMs: number,
  stepMs: number,
): { atMs: number; nodes: number }[] {
  const out: { atMs: number; nodes: number }[] = [];
  for (let t = fromMs; t <= toMs; t += stepMs) {
    let n = 0;
    for (const list of transitions.values()) {
      let on = false;
      for (const x of list) if (x.atMs <= t) on = x.pressure;
      if (on) n++;
    }
    out.push({ atMs: t, nodes: n });
  }
  return out;
}

/** The most events inside any window of `windowMs` (sliding, starting at an event), per second. */
export function peakRate(timesMs: readonly number[], windowMs: number): number {
  const s = [...timesMs].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < s.length; i++) {
    while (s[j]! < s[i]! - windowMs + 1) j++;
    best = Math.max(best, i - j + 1);
  }
  return best / (windowMs / 1000);
}
