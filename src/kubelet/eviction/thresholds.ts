/**
 * Eviction thresholds from the kubelet's configuration (kubelet: eviction.ParseThresholdConfig,
 * UpdateContainerFsThresholds). evictionHard and evictionSoft map a signal to a quantity ("100Mi") or a
 * percentage of capacity ("10%"); every soft threshold needs a grace period in evictionSoftGracePeriod;
 * evictionMinimumReclaim adds to a threshold once it is met, so pressure is only over when that much more
 * is free. A threshold with no grace period is hard.
 *
 * Errors carry the kubelet's wording, so a bad VirtualNode reads like a bad kubelet flag.
 */
import { parseGoDuration } from '../../util/duration.js';
import { goQuote } from '../../util/goquote.js';
import { formatQuantity, newQuantity, parseQuantity, type Quantity } from './quantity.js';
import { isSignal, type Signal } from './signals.js';

/** A quantity, or a share of the signal's capacity in (0, 1] held as the float32 the kubelet parses. */
export type ThresholdValue = { readonly quantity: Quantity } | { readonly percentage: number };

export interface Threshold {
  readonly signal: Signal;
  readonly operator: 'LessThan';
  readonly value: ThresholdValue;
  /** 0 for a hard threshold. */
  readonly gracePeriodMs: number;
  readonly minReclaim?: ThresholdValue;
}

/** The configuration the thresholds come from (KubeletConfiguration's eviction fields). */
export interface EvictionThresholdConfig {
  evictionHard?: Readonly<Record<string, string>>;
  evictionSoft?: Readonly<Record<string, string>>;
  evictionSoftGracePeriod?: Readonly<Record<string, string>>;
  evictionMinimumReclaim?: Readonly<Record<string, string>>;
  /** enforceNodeAllocatable; `pods` adds allocatableMemory.available beside a hard memory.available. */
  enforceNodeAllocatable?: readonly string[];
}

export function isHardThreshold(t: Threshold): boolean {
  return t.gracePeriodMs === 0;
}

const unsupported = (signal: string): Error => new Error(`unsupported eviction signal ${signal}`);

/** strconv.ParseFloat(s, 32) for the decimal forms a percentage is written in. */
function parseFloat32(s: string): number {
  const lower = s.toLowerCase();
  let v: number;
  if (/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s)) v = Number(s);
  else if (/^[+-]?(inf|infinity)$/.test(lower)) v = lower.startsWith('-') ? -Infinity : Infinity;
  else if (lower === 'nan') v = NaN;
  else throw new Error(`strconv.ParseFloat: parsing ${goQuote(s)}: invalid syntax`);
  const f = Math.fround(v);
  if (Number.isFinite(v) && !Number.isFinite(f)) {
    throw new Error(`strconv.ParseFloat: parsing ${goQuote(s)}: value out of range`);
  }
  return f;
}

function parsePercentage(s: string): number {
  return Math.fround(parseFloat32(s.replace(/%+$/, '')) / 100);
}

/** One evictionHard or evictionSoft entry; undefined for "0%" and "100%", which the kubelet drops. */
export function parseThresholdStatement(signal: string, val: string): Threshold | undefined {
  if (!isSignal(signal)) throw unsupported(signal);
  if (val.endsWith('%')) {
    if (val === '0%' || val === '100%') return undefined;
    const percentage = parsePercentage(val);
    if (percentage < 0) throw new Error(`eviction percentage threshold ${signal} must be >= 0%: ${val}`);
    if (percentage > 1) throw new Error(`eviction percentage threshold ${signal} must be <= 100%: ${val}`);
    return { signal, operator: 'LessThan', value: { percentage }, gracePeriodMs: 0 };
  }
  const quantity = parseQuantity(val);
  if (quantity.nano <= 0n) {
    throw new Error(`eviction threshold ${signal} must be positive: ${formatQuantity(quantity)}`);
  }
  return { signal, operator: 'LessThan', value: { quantity }, gracePeriodMs: 0 };
}

function parseStatements(statements: Readonly<Record<string, string>> | undefined): Threshold[] {
  const out: Threshold[] = [];
  for (const [signal, val] of Object.entries(statements ?? {})) {
    const t = parseThresholdStatement(signal, val);
    if (t) out.push(t);
  }
  return out;
}

function parseGracePeriods(statements: Readonly<Record<string, string>> | undefined): Map<Signal, number> {
  const out = new Map<Signal, number>();
  for (const [signal, val] of Object.entries(statements ?? {})) {
    if (!isSignal(signal)) throw unsupported(signal);
    const ms = parseGoDuration(val);
    if (ms < 0) throw new Error(`invalid eviction grace period specified: ${val}, must be a positive value`);
    out.set(signal, ms);
  }
  return out;
}

function parseMinimumReclaims(
  statements: Readonly<Record<string, string>> | undefined,
): Map<Signal, ThresholdValue> {
  const out = new Map<Signal, ThresholdValue>();
  for (const [signal, val] of Object.entries(statements ?? {})) {
    if (!isSignal(signal)) throw unsupported(signal);
    if (val.endsWith('%')) {
      const percentage = parsePercentage(val);
      if (percentage <= 0) {
        throw new Error(`eviction percentage minimum reclaim ${signal} must be positive: ${val}`);
      }
      out.set(signal, { percentage });
      continue;
    }
    const quantity = parseQuantity(val);
    if (quantity.nano < 0n) throw new Error(`negative eviction minimum reclaim specified for ${signal}`);
    out.set(signal, { quantity });
  }
  return out;
}

/**
 * The thresholds the kubelet runs with (ParseThresholdConfig): hard ones, then soft ones with their grace
 * periods, minimum reclaims attached to every threshold of their signal, and, when node allocatable is
 * enforced on pods, an allocatableMemory.available twin of each hard memory.available threshold.
 * Throws the kubelet's error for the first bad entry.
 */
export function parseThresholdConfig(config: EvictionThresholdConfig): Threshold[] {
  const hard = parseStatements(config.evictionHard);
  const soft = parseStatements(config.evictionSoft);
  const gracePeriods = parseGracePeriods(config.evictionSoftGracePeriod);
  const minReclaims = parseMinimumReclaims(config.evictionMinimumReclaim);
  const withGrace = soft.map((t) => {
    const gracePeriodMs = gracePeriods.get(t.signal);
    if (gracePeriodMs === undefined) {
      throw new Error(`grace period must be specified for the soft eviction threshold ${t.signal}`);
    }
    return { ...t, gracePeriodMs };
  });
  let out: Threshold[] = [...hard, ...withGrace].map((t) => {
    const minReclaim = minReclaims.get(t.signal);
    return minReclaim ? { ...t, minReclaim } : t;
  });
  if ((config.enforceNodeAllocatable ?? []).includes('pods')) {
    const twins = out
      .filter((t) => t.signal === 'memory.available' && isHardThreshold(t))
      .map((t): Threshold => ({
        signal: 'allocatableMemory.available',
        operator: t.operator,
        value: t.value,
        gracePeriodMs: 0,
        ...(t.minReclaim ? { minReclaim: t.minReclaim } : {}),
      }));
    out = [...out, ...twins];
  }
  return out;
}

/** A threshold with no value, as Go's zero Threshold reads when no source one exists (never met). */
function copyOf(signal: Signal, from: Threshold | undefined, keepGrace: boolean): Threshold {
  return {
    signal,
    operator: 'LessThan',
    value: from?.value ?? { percentage: 0 },
    gracePeriodMs: keepGrace ? (from?.gracePeriodMs ?? 0) : 0,
    ...(from?.minReclaim ? { minReclaim: from.minReclaim } : {}),
  };
}

/**
 * containerfs thresholds follow the filesystem the containers' writable layers live on
 * (UpdateContainerFsThresholds): nodefs's when images and containers share a filesystem with it or the
 * images have their own and the containers are on nodefs; imagefs's when containers and images share a
 * dedicated filesystem. Configured containerfs thresholds are replaced (with a warning each), others are
 * added. A soft containerfs threshold is always added, even with no soft source: it has a zero value and
 * is never met, as in the kubelet.
 */
export function updateContainerFsThresholds(
  thresholds: readonly Threshold[],
  hasImageFs: boolean,
  splitContainerImageFs: boolean,
): { thresholds: Threshold[]; warnings: string[] } {
  const find = (signal: Signal, hard: boolean): Threshold | undefined =>
    thresholds.findLast((t) => t.signal === signal && isHardThreshold(t) === hard);
  const warnings: string[] = [];
  const index = (signal: Signal, hard: boolean): number => {
    const i = thresholds.findLastIndex((t) => t.signal === signal && isHardThreshold(t) === hard);
    if (i >= 0) warnings.push(`found ${signal} for ${hard ? 'hard' : 'soft'} eviction. ignoring`);
    return i;
  };
  const slots = {
    hardDisk: index('containerfs.available', true),
    softDisk: index('containerfs.available', false),
    hardInodes: index('containerfs.inodesFree', true),
    softInodes: index('containerfs.inodesFree', false),
  };
  const out = [...thresholds];
  const put = (slot: number, t: Threshold): void => {
    if (slot >= 0) out[slot] = t;
    else out.push(t);
  };
  const fromNodeFs = hasImageFs === splitContainerImageFs;
  const fromImageFs = hasImageFs && !splitContainerImageFs;
  if (!fromNodeFs && !fromImageFs) return { thresholds: out, warnings };
  const disk = fromNodeFs ? 'nodefs.available' : 'imagefs.available';
  const inodes = fromNodeFs ? 'nodefs.inodesFree' : 'imagefs.inodesFree';
  put(slots.hardDisk, copyOf('containerfs.available', find(disk, true), false));
  put(slots.softDisk, copyOf('containerfs.available', find(disk, false), true));
  // The kubelet carries the (zero) grace period of the hard imagefs inodes threshold when it replaces a
  // configured hard containerfs.inodesFree; zero either way.
  put(slots.hardInodes, copyOf('containerfs.inodesFree', find(inodes, true), false));
  put(slots.softInodes, copyOf('containerfs.inodesFree', find(inodes, false), true));
  return { thresholds: out, warnings };
}

/** The threshold's value against a capacity, as GetThresholdQuantity: a percentage is truncated to bytes. */
export function thresholdQuantity(value: ThresholdValue, capacity: number): Quantity {
  if ('quantity' in value) return value.quantity;
  return newQuantity(Math.trunc(capacity * value.percentage), 'BinarySI');
}

function valueKey(v: ThresholdValue | undefined): string {
  if (v === undefined) return '-';
  return 'quantity' in v ? `q${v.quantity.nano}` : `p${v.percentage}`;
}

/** Identifies a threshold across rounds (the kubelet keys its maps by the threshold itself). */
export function thresholdKey(t: Threshold): string {
  return `${t.signal}|${t.gracePeriodMs}|${valueKey(t.value)}|${valueKey(t.minReclaim)}`;
}

/** The same threshold for mergeThresholds: signal, operator, grace period and value (not min reclaim). */
export function sameThreshold(a: Threshold, b: Threshold): boolean {
  return (
    a.signal === b.signal &&
    a.operator === b.operator &&
    a.gracePeriodMs === b.gracePeriodMs &&
    valueKey(a.value) === valueKey(b.value)
  );
}
