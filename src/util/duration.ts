/**
 * Durations as Go prints them (`time.Duration.String`). Messages the kubelet builds with `%s` or `%v` of a
 * duration ("back-off 1m20s restarting failed container=...") must read the same here, because users and
 * tools match on them.
 */

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
