/**
 * How long each CRI call may take (the kubelet's runtimeRequestTimeout and friends). Pure; validated at
 * construction, so a misconfigured node fails before its first call instead of on it.
 *
 * - `request` (default 2 min, kubelet runtimeRequestTimeout): mutating calls.
 * - `short` (10 s): Version, Status, List*, *Status.
 * - StopContainer: its grace period on top of `request` (the runtime may use all of it before SIGKILL).
 * - ExecSync: its own timeout plus `execGrace` (the runtime reports the timeout; the grace lets that answer
 *   arrive), or `request` when the exec has no timeout.
 * - `pull` (10 min): PullImage.
 */
import { KindError } from '../../util/errors.js';

export interface CriTimeouts {
  /** Mutating calls. Default 120 000 (kubelet runtimeRequestTimeout). */
  requestTimeoutMs?: number;
  /** Version, Status, List*, *Status. Default 10 000. */
  shortTimeoutMs?: number;
  /** Added to an ExecSync's own timeout for the call's deadline. Default 10 000. */
  execGraceMs?: number;
  /** PullImage. Default 600 000. */
  pullTimeoutMs?: number;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
export const DEFAULT_SHORT_TIMEOUT_MS = 10_000;
export const DEFAULT_EXEC_GRACE_MS = 10_000;
export const DEFAULT_PULL_TIMEOUT_MS = 600_000;

function positive(v: number | undefined, fallback: number, what: string): number {
  if (v === undefined) return fallback;
  if (!Number.isFinite(v) || v <= 0) throw new KindError('InvalidArgument', `${what} must be > 0, got ${v}`);
  return v;
}

/** Whole seconds as the CRI takes them (int64), never negative. */
function wholeSeconds(seconds: number): number {
  return Math.max(0, Math.ceil(seconds));
}

export class CriDeadlines {
  readonly requestMs: number;
  readonly shortMs: number;
  readonly execGraceMs: number;
  readonly pullMs: number;

  /** Throws InvalidArgument for a timeout that is not a positive number. */
  constructor(t: CriTimeouts = {}) {
    this.requestMs = positive(t.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS, 'requestTimeoutMs');
    this.shortMs = positive(t.shortTimeoutMs, DEFAULT_SHORT_TIMEOUT_MS, 'shortTimeoutMs');
    this.execGraceMs = positive(t.execGraceMs, DEFAULT_EXEC_GRACE_MS, 'execGraceMs');
    this.pullMs = positive(t.pullTimeoutMs, DEFAULT_PULL_TIMEOUT_MS, 'pullTimeoutMs');
  }

  /** StopContainer's grace period in whole seconds and the call's deadline. */
  stopContainer(timeoutSeconds: number): { graceSeconds: number; timeoutMs: number } {
    const graceSeconds = wholeSeconds(timeoutSeconds);
    return { graceSeconds, timeoutMs: graceSeconds * 1000 + this.requestMs };
  }

  /** ExecSync's timeout in whole seconds (0 = none) and the call's deadline. */
  execSync(timeoutSeconds: number): { seconds: number; timeoutMs: number } {
    const seconds = wholeSeconds(timeoutSeconds);
    return { seconds, timeoutMs: seconds > 0 ? seconds * 1000 + this.execGraceMs : this.requestMs };
  }
}
