/**
 * The graceful shutdown state file (kubelet: `graceful_node_shutdown_state` in its root directory): when the
 * last shutdown started and ended, as the JSON of Go time values, so that the node's
 * kubelet_graceful_shutdown_{start,end}_time_seconds gauges come back after a restart. Pure: text in and out;
 * shell/loop.ts reads and writes the file.
 */

export const ShutdownStateFile = 'graceful_node_shutdown_state';

/** Milliseconds since the epoch; absent where Go's time is zero (not started, not ended). */
export interface ShutdownState {
  startMs?: number;
  endMs?: number;
}

/** Go's zero time.Time as encoding/json writes it. */
const GO_ZERO_TIME = '0001-01-01T00:00:00Z';
const GO_ZERO_MS = Date.parse(GO_ZERO_TIME);

export function encodeShutdownState(s: ShutdownState): string {
  const time = (ms: number | undefined) => (ms === undefined ? GO_ZERO_TIME : new Date(ms).toISOString());
  return JSON.stringify({ startTime: time(s.startMs), endTime: time(s.endMs) });
}

/** The state a file holds; throws, naming the field, on text that is not that JSON (the kubelet logs it). */
export function decodeShutdownState(text: string): ShutdownState {
  const v: unknown = JSON.parse(text);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
  const out: ShutdownState = {};
  for (const [key, field] of [
    ['startTime', 'startMs'],
    ['endTime', 'endMs'],
  ] as const) {
    const raw = (v as Record<string, unknown>)[key];
    if (raw === undefined) continue;
    const ms = typeof raw === 'string' ? Date.parse(raw) : NaN;
    if (Number.isNaN(ms)) throw new Error(`${key}: not a time: ${JSON.stringify(raw)}`);
    if (ms > GO_ZERO_MS) out[field] = ms;
  }
  return out;
}
