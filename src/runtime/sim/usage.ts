/**
 * What one running container uses, from its behaviour's usage curves (curve.ts): cpu (rate and cumulative
 * time, capped by the CFS quota), memory (working set, bounded by the limit) and the writable layer, and
 * when its memory first exceeds its limit (the simulated kernel's OOM kill).
 *
 * Per-container state (UsageState, a dozen numbers) exists only for started containers whose behaviour
 * declares usage, in a WeakMap beside the records: a container that declares none carries nothing.
 * Everything here is a function of the clock time asked about and of the container's history (start,
 * resizes), never of when or how often it was asked:
 * - cpu time is the integral of min(curve, cap) from the start. The cap changes only with a resize, at the
 *   moment the resize takes effect: the integral so far is kept (`segBase`) and a new segment starts.
 *   Closed-form curves integrate exactly; expressions are sampled at whole seconds after the start and
 *   integrated as the straight lines between samples (a trapezoid rule, exact under the cap), with the last
 *   whole second cached so a query costs O(seconds since the previous one).
 * - the OOM kill comes at the first moment memory exceeds the limit in effect: exact (to the millisecond)
 *   for closed forms; for expressions, the first whole second after the start at which the sample exceeds
 *   it, found by scanning ahead SCAN_SECONDS samples at a time. process.ts keeps one timer per container
 *   for it (at the crossing, or where the scan stopped).
 */
import type { LinuxContainerResources } from '../types.js';
import { cappedTrapezoid, type Curve, type ExprCurve } from './curve.js';
import { finishedMs, type ContainerRecord } from './records.js';

/**
 * What a running container whose behaviour declares no cpu or memory uses: a sleeping process's tenth of a
 * millicore and one MiB, not zero. metrics-server drops a container reporting zero cpu time or zero memory,
 * so a pod of such containers would be missing from `kubectl top`, as no real pod is.
 */
export const IDLE_CPU_CORES = 0.0001;
export const IDLE_MEMORY_BYTES = 1 << 20;

/** A started container's usage bookkeeping, for containers whose behaviour declares usage. */
export interface UsageState {
  /** The start, in seconds since the epoch of the clock. */
  readonly clock0: number;
  readonly restarts: number;
  /** The cpu cap (cores; Infinity without a quota) in effect since `segT` (seconds since the start). */
  cap: number;
  segT: number;
  /** Core-seconds used before `segT`. */
  segBase: number;
  /** Expressions: core-seconds from segT to the whole second gK (negative while gK < segT), and samples. */
  gK: number;
  gCum: number;
  gV: number;
  gNext: number;
  /** The memory limit (bytes; Infinity without one) in effect since `limT`. */
  limit: number;
  limT: number;
  /** Expressions: the next whole second whose memory sample has not been checked against the limit. */
  oomK: number;
}

/** Kept beside the records rather than in them: a container that declares no usage carries nothing. */
const states = new WeakMap<ContainerRecord, UsageState>();

/** Samples an expression checks per look ahead for an OOM kill. */
export const SCAN_SECONDS = 60;
/** Values beyond these read as these (keeps stats within safe integers). */
const MAX_CORES = 1e6;
const MAX_BYTES = Number.MAX_SAFE_INTEGER;
/** The CFS period when a quota comes without one (the kernel's default, 100 ms). */
const DEFAULT_CPU_PERIOD_US = 100_000;

/** Cores a container may use under its CFS quota and its cpuset; Infinity without either. */
export function cpuCap(r: LinuxContainerResources | undefined): number {
  const cpus = r?.cpusetCpus ? cpusetSize(r.cpusetCpus) : Infinity;
  const quota = r?.cpuQuota ?? 0;
  if (!(quota > 0)) return cpus;
  const period = r?.cpuPeriod ?? 0;
  return Math.min(cpus, quota / (period > 0 ? period : DEFAULT_CPU_PERIOD_US));
}

/** How many CPUs a cpuset list ("0-3,8") names; Infinity when it cannot be read. */
function cpusetSize(list: string): number {
  let n = 0;
  for (const part of list.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) return Infinity;
    n += (m[2] === undefined ? 0 : Number(m[2]) - Number(m[1])) + 1;
  }
  return n;
}

/** The memory limit in bytes; Infinity without one (unset or 0). */
export function memoryLimit(r: LinuxContainerResources | undefined): number {
  const limit = r?.memoryLimitInBytes ?? 0;
  return limit > 0 ? limit : Infinity;
}

/** Sets up the state of a container that has just started (nothing when it declares no usage). */
export function startUsage(c: ContainerRecord): void {
  const curves = c.behaviour.usage;
  if (!curves) return;
  const st: UsageState = {
    clock0: c.startedMs / 1000,
    restarts: c.spec.metadata.attempt,
    cap: cpuCap(c.resources),
    segT: 0,
    segBase: 0,
    gK: 0,
    gCum: 0,
    gV: 0,
    gNext: 0,
    limit: memoryLimit(c.resources),
    limT: 0,
    oomK: 0,
  };
  states.set(c, st);
  if (curves.cpu?.kind === 'expr') gridStart(curves.cpu, st, 0);
}

/** Whether the container has started with usage declared. */
export function tracksUsage(c: ContainerRecord): boolean {
  return states.has(c);
}

/** Seconds since the start at clock time `ms`, within the container's run. */
export function runSeconds(c: ContainerRecord, ms: number): number {
  const end = c.state === 'exited' ? finishedMs(c) : ms;
  return Math.max(0, Math.min(ms, end) - c.startedMs) / 1000;
}

/** To be called just before `next` replaces the container's resources, as of clock time `atMs`. */
export function resourcesChanging(c: ContainerRecord, next: LinuxContainerResources, atMs: number): void {
  const st = states.get(c);
  const cpu = c.behaviour.usage?.cpu;
  if (!st) return;
  const t = runSeconds(c, atMs);
  const cap = cpuCap(next);
  if (cpu && cap !== st.cap) {
    st.segBase = cpuSeconds(c, t);
    st.segT = t;
    st.cap = cap;
    if (cpu.kind === 'expr') gridStart(cpu, st, t);
  }
  const limit = memoryLimit(next);
  if (limit !== st.limit) {
    st.limit = limit;
    st.limT = t;
    st.oomK = Math.ceil(t);
  }
}

/** Core-seconds used from the start to `t` seconds after it (t never before a resize already applied). */
export function cpuSeconds(c: ContainerRecord, t: number): number {
  const st = states.get(c);
  const cpu = c.behaviour.usage?.cpu;
  if (!cpu) return IDLE_CPU_CORES * t;
  if (!st || t <= st.segT) return st?.segBase ?? 0;
  if (cpu.kind === 'closed') return st.segBase + cpu.integral(st.segT, t, st.clock0, st.cap);
  if (t < st.gK) gridStart(cpu, st, st.segT);
  while (st.gK + 1 <= t) {
    st.gCum += cappedTrapezoid(1, st.gV, st.gNext, st.cap);
    st.gK++;
    st.gV = st.gNext;
    st.gNext = sample(cpu, st, st.gK + 1, MAX_CORES);
  }
  return st.segBase + st.gCum + partial(st, t - st.gK);
}

/** Cores in use `t` seconds after the start, under the cap. */
export function cpuRate(c: ContainerRecord, t: number): number {
  const st = states.get(c);
  const cpu = c.behaviour.usage?.cpu;
  if (!cpu) return IDLE_CPU_CORES;
  if (!st) return 0;
  return Math.min(valueAt(cpu, st, t, MAX_CORES), st.cap);
}

/** The memory working set `t` seconds after the start, in bytes, at most the limit. */
export function memoryBytes(c: ContainerRecord, t: number): number {
  const st = states.get(c);
  const memory = c.behaviour.usage?.memory;
  if (!memory) return Math.min(IDLE_MEMORY_BYTES, st?.limit ?? memoryLimit(c.resources));
  if (!st) return 0;
  return Math.round(Math.min(valueAt(memory, st, t, MAX_BYTES), st.limit));
}

/** Bytes in the writable layer `t` seconds after the start. */
export function diskBytes(c: ContainerRecord, t: number): number {
  const st = states.get(c);
  const disk = c.behaviour.usage?.disk;
  return st && disk ? Math.round(valueAt(disk, st, t, MAX_BYTES)) : 0;
}

/**
 * The next moment (clock ms) the container's memory exceeds its limit (`oom`), or, for an expression with no
 * crossing among the next SCAN_SECONDS samples, the moment to look further; undefined when it never will.
 */
export function nextMemoryEvent(c: ContainerRecord): { atMs: number; oom: boolean } | undefined {
  const st = states.get(c);
  const memory = c.behaviour.usage?.memory;
  if (!st || !memory || st.limit === Infinity) return undefined;
  if (memory.kind === 'closed') {
    const t = memory.firstAbove(st.limT, st.limit, st.clock0);
    if (t === Infinity) return undefined;
    // The millisecond at or after the crossing (less a rounding hair), never before the limit took effect.
    const ms = Math.max(Math.ceil(t * 1000 - 1e-6), Math.ceil(st.limT * 1000));
    return { atMs: c.startedMs + ms, oom: true };
  }
  const end = st.oomK + SCAN_SECONDS;
  for (let k = st.oomK; k < end; k++) {
    if (sample(memory, st, k, MAX_BYTES) > st.limit) {
      st.oomK = k;
      return { atMs: c.startedMs + k * 1000, oom: true };
    }
  }
  st.oomK = end;
  return { atMs: c.startedMs + end * 1000, oom: false };
}

function valueAt(curve: Curve, st: UsageState, t: number, max: number): number {
  const v = curve.kind === 'closed' ? curve.value(t, st.clock0) : curve.fn(t, st.clock0 + t, st.restarts);
  return v > 0 ? Math.min(v, max) : 0;
}

function sample(curve: ExprCurve, st: UsageState, k: number, max: number): number {
  const v = curve.fn(k, st.clock0 + k, st.restarts);
  return v > 0 ? Math.min(v, max) : 0;
}

/** Restarts the sample cache at `t` (a cpu segment's start): gK = floor(t), gCum = -(the part before t). */
function gridStart(cpu: ExprCurve, st: UsageState, t: number): void {
  st.gK = Math.floor(t);
  st.gV = sample(cpu, st, st.gK, MAX_CORES);
  st.gNext = sample(cpu, st, st.gK + 1, MAX_CORES);
  st.gCum = 0;
  st.gCum = -partial(st, t - st.gK);
}

/** Core-seconds over [gK, gK + s] (s in [0, 1]) on the line between the samples, under the cap. */
function partial(st: UsageState, s: number): number {
  return cappedTrapezoid(s, st.gV, st.gV + (st.gNext - st.gV) * s, st.cap);
}
