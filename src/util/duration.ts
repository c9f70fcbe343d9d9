/**
 * Durations as Go prints them (`time.Duration.String`). Messages the kubelet builds with `%s` or `%v` of a
 * duration ("back-off 1m20s restarting failed container=...") must read the same here, because users and
 * tools match on them.
 */

import { goQuote } from './goquote.js';

const units: [suffix: string, ns: number][] = [
  ['h', 3_600e9],
  ['m', 60e9],
];

function trimFraction(int: bigint, frac: bigint, digits: number): string {
  if (frac === 0n) return int.toString();
  const f = frac.toString().padStart(digits, '0').replace(/0+$/, '');
  return `${int}.${f}`;
}

/**
 * Formats `ms` milliseconds like Go's Duration.String: "0s", "1.5s", "1m20s", "5m0s", "1h0m0s", and
 * sub-second values with the largest fitting unit ("500ms", "1.5µs"). Resolution is one nanosecond;
 * non-finite input yields "0s" rather than garbage.
 */
export function formatGoDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '0s';
  let ns = BigInt(Math.round(ms * 1e6));
  if (ns === 0n) return '0s';
  const sign = ns < 0n ? '-' : '';
  if (ns < 0n) ns = -ns;

  if (ns < 1_000_000_000n) {
    if (ns < 1_000n) return `${sign}${ns}ns`;
    if (ns < 1_000_000n) return `${sign}${trimFraction(ns / 1_000n, ns % 1_000n, 3)}µs`;
    return `${sign}${trimFraction(ns / 1_000_000n, ns % 1_000_000n, 6)}ms`;
  }

  let out = '';
  let rest = ns;
  let started = false;
  for (const [suffix, unitNs] of units) {
    const u = BigInt(unitNs);
    const n = rest / u;
    rest %= u;
    if (n > 0n || started) {
      out += `${n}${suffix}`;
      started = true;
    }
  }
  out += `${trimFraction(rest / 1_000_000_000n, rest % 1_000_000_000n, 9)}s`;
  return sign + out;
}

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** time.ParseDuration, in milliseconds ("1m30s" -> 90000), with Go's error messages. */
export function parseGoDuration(s: string): number {
  const invalid = (): Error => new Error(`time: invalid duration ${goQuote(s)}`);
  let rest = s;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest.startsWith('-')) sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') throw invalid();
  let total = 0;
  while (rest !== '') {
    const num = /^(\d*)(?:\.(\d*))?/.exec(rest);
    const whole = num?.[1] ?? '';
    const frac = num?.[2];
    if (whole === '' && (frac === undefined || frac === '')) throw invalid();
    rest = rest.slice(num?.[0].length ?? 0);
    const unit = /^[^\d.]*/.exec(rest)?.[0] ?? '';
    if (unit === '') throw new Error(`time: missing unit in duration ${goQuote(s)}`);
    const ms = DURATION_UNITS[unit];
    if (ms === undefined) throw new Error(`time: unknown unit ${goQuote(unit)} in duration ${goQuote(s)}`);
    rest = rest.slice(unit.length);
    total += Number(`${whole || '0'}.${frac ?? ''}0`) * ms;
  }
  return sign * total;
}
