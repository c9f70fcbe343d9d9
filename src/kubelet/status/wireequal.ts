/**
 * Whether a status the API server serves and one the status manager built are the same value as the server
 * keeps it: the same members with the same values, in any key order, where a member that is undefined,
 * null, an empty list or an object with nothing but such members counts as absent. That is where the two
 * forms part although nothing differs: the server encodes a zero struct as `{}` and a zero time as null
 * (`lastState: {}`, `lastProbeTime: null`), and the status manager's writes leave such members out. A
 * false, a 0 or an empty string is a value here, not an absence (`started: false` says more than nothing).
 *
 * The same instance is equal without a look inside, so two statuses that share their interned parts
 * (src/util/intern.ts) compare in the time of what they do not share.
 */

function absent(v: unknown): boolean {
  if (v === undefined || v === null) return true;
  if (typeof v !== 'object') return false;
  if (Array.isArray(v)) return v.length === 0;
  for (const k in v) if (Object.hasOwn(v, k) && !absent((v as Record<string, unknown>)[k])) return false;
  return true;
}

export function wireEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!wireEqual(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  // Counts of present members, no key lists: this runs once for each status write that reaches the informer.
  let count = 0;
  for (const k in x) {
    if (!Object.hasOwn(x, k) || absent(x[k])) continue;
    if (!Object.hasOwn(y, k) || !wireEqual(x[k], y[k])) return false;
    count++;
  }
  for (const k in y) if (Object.hasOwn(y, k) && !absent(y[k])) count--;
  return count === 0;
}
