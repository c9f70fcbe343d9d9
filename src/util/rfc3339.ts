/**
 * RFC3339 timestamps as the API server writes them (metav1.Time: UTC, whole seconds, `Z` suffix).
 *
 * The runtime view keeps epoch milliseconds; the API view keeps these strings. Converting here, in one
 * place, keeps the precision rule (sub-second parts are dropped, as metav1.Time's JSON form drops them)
 * consistent between the status generator and the status manager.
 */
import { KindError } from './errors.js';

/** The last second formatted: most calls in a burst (every pod syncing) ask for the same one. */
let lastSecond = Number.NaN;
let lastFormatted = '';

/** Formats epoch milliseconds as `YYYY-MM-DDTHH:MM:SSZ`, truncated to the second. Rejects non-finite input. */
export function formatRFC3339(ms: number): string {
  if (!Number.isFinite(ms)) throw new KindError('InvalidArgument', `not a time: ${String(ms)}`);
  const floored = Math.floor(ms / 1000) * 1000;
  if (floored === lastSecond) return lastFormatted;
  const d = new Date(floored);
  if (Number.isNaN(d.getTime())) throw new KindError('InvalidArgument', `time out of range: ${ms}`);
  lastFormatted = d.toISOString().replace(/\.\d{3}Z$/, 'Z');
  lastSecond = floored;
  return lastFormatted;
}

/** Like formatRFC3339, but an absent or non-finite time yields undefined (the field is left out). */
export function formatRFC3339Optional(ms: number | undefined | null): string | undefined {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return undefined;
  return formatRFC3339(ms);
}

/** Epoch milliseconds of an RFC3339 string, or undefined when it does not parse. */
export function parseRFC3339(s: string | undefined | null): number | undefined {
  if (typeof s !== 'string' || s === '') return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : t;
}
