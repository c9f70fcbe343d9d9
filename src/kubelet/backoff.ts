/**
 * Back-off for container restarts.
 *
 * - `Backoff` is client-go's `flowcontrol.Backoff` with zero jitter (what the kubelet uses): per-key
 *   exponential delays that reset after an idle period.
 * - `newCrashLoopBackOff` builds the kubelet's crash-loop instance (kubelet.go).
 * - `doBackOff` is the check SyncPod runs before starting a container (kuberuntime_manager.go).
 *
 * Pure: every method takes the current time (epoch ms) as an argument; nothing reads a clock or sets a timer.
 */
import type { Container, Pod } from '../api/core.js';
import { hashContainer } from './container/helpers.js';
import type { RuntimePodStatus } from './container/types.js';
import { formatGoDuration } from '../util/duration.js';
import { KindError } from '../util/errors.js';

/**
 * Decides whether an entry is stale, so that the next `next()` starts over at the initial delay and `gc()`
 * may drop it (client-go: `HasExpiredFunc`). Arguments in epoch ms / ms.
 */
export type HasExpiredFunc = (eventTime: number, lastUpdate: number, maxMs: number) => boolean;

interface BackoffEntry {
  backoffMs: number;
  lastUpdate: number;
}

/** client-go's default expiry: idle for more than twice the maximum delay. */
export const defaultHasExpired: HasExpiredFunc = (eventTime, lastUpdate, maxMs) =>
  eventTime - lastUpdate > 2 * maxMs;

/**
 * Per-key exponential back-off (client-go `flowcontrol.Backoff`, zero jitter).
 *
 * Invariants: every entry's delay is within [initial, max]; `lastUpdate` is the time of the last `next()`
 * for that key. Keys are independent. Not safe for concurrent mutation from several async tasks without
 * the caller's serialisation (JavaScript runs each call to completion, so single calls are atomic).
 */
export class Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
  readonly hasExpiredFunc: HasExpiredFunc | undefined;
  private readonly entries = new Map<string, BackoffEntry>();

  /**
   * Throws `KindError('InvalidArgument')` unless 0 <= initialMs and 0 <= maxMs, both finite.
   * (client-go accepts initial > max; the first delay is then `initial` and later ones are capped at max.)
   */
  constructor(initialMs: number, maxMs: number, opts: { hasExpired?: HasExpiredFunc } = {}) {
    for (const [what, v] of [
      ['initial', initialMs],
      ['max', maxMs],
    ] as const) {
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        throw new KindError('InvalidArgument', `back-off ${what} duration must be a finite number >= 0`, {
          [what]: v,
        });
      }
    }
    this.initialMs = initialMs;
    this.maxMs = maxMs;
    this.hasExpiredFunc = opts.hasExpired;
  }

  private expired(eventTime: number, lastUpdate: number): boolean {
    return (this.hasExpiredFunc ?? defaultHasExpired)(eventTime, lastUpdate, this.maxMs);
  }

  /** The current delay for `id` in ms; 0 when there is no entry. */
  get(id: string): number {
    return this.entries.get(id)?.backoffMs ?? 0;
  }

  /** Whether an entry exists for `id` (expired or not; `gc()` removes expired ones). */
  has(id: string): boolean {
    return this.entries.has(id);
  }

  /**
   * Moves `id` to its next delay: the initial one when there is no entry or the entry expired relative to
   * `eventTime`, otherwise double the current one capped at max. Records `now` as the last update.
   */
  next(id: string, eventTime: number, now: number): void {
    const entry = this.entries.get(id);
    if (!entry || this.expired(eventTime, entry.lastUpdate)) {
      this.entries.set(id, { backoffMs: this.initialMs, lastUpdate: now });
      return;
    }
    entry.backoffMs = Math.min(entry.backoffMs * 2, this.maxMs);
    entry.lastUpdate = now;
  }

  /** True when the entry is live and less than its delay has passed since `eventTime`. */
  isInBackOffSince(id: string, eventTime: number, now: number): boolean {
    const entry = this.entries.get(id);
    if (!entry || this.expired(eventTime, entry.lastUpdate)) return false;
    return now - eventTime < entry.backoffMs;
  }

  /** True when the entry is live and less than its delay separates `eventTime` from the last update. */
  isInBackOffSinceUpdate(id: string, eventTime: number): boolean {
    const entry = this.entries.get(id);
    if (!entry || this.expired(eventTime, entry.lastUpdate)) return false;
    return eventTime - entry.lastUpdate < entry.backoffMs;
  }

  /** Forgets `id`: its next delay is the initial one. */
  reset(id: string): void {
    this.entries.delete(id);
  }

  /** Drops every entry that has expired relative to `now`. Callers run it periodically. */
  gc(now: number): void {
    for (const [id, entry] of this.entries) {
      if (this.expired(now, entry.lastUpdate)) this.entries.delete(id);
    }
  }

  /** Number of live entries (for metrics and tests). */
  get size(): number {
    return this.entries.size;
  }
}

/** Crash-loop delays (kubelet.go): default, and under `ReduceDefaultCrashLoopBackOffDecay`. */
export const InitialCrashLoopBackOffMs = 10_000;
export const MaxCrashLoopBackOffMs = 300_000;
export const ReducedInitialCrashLoopBackOffMs = 1_000;
export const ReducedMaxCrashLoopBackOffMs = 60_000;
/** A container that ran this long since its last restart starts over at the initial delay. */
export const CrashLoopBackOffResetMs = 600_000;

/** The kubelet's crash-loop expiry: measured from the last restart, independent of the maximum delay. */
export const crashLoopHasExpired: HasExpiredFunc = (eventTime, lastUpdate) =>
  eventTime - lastUpdate > CrashLoopBackOffResetMs;

export interface CrashLoopBackOffOptions {
  /** Only `ReduceDefaultCrashLoopBackOffDecay` and `KubeletCrashLoopBackOffMax` matter here. */
  featureGates?: Readonly<Record<string, boolean | undefined>>;
  /** kubelet config `crashLoopBackOff.maxContainerRestartPeriod`, in seconds (1..300). */
  maxContainerRestartPeriodSeconds?: number;
}

/**
 * The kubelet's container restart back-off. Initial/max are 10s/300s, 1s/60s with
 * `ReduceDefaultCrashLoopBackOffDecay`; with `KubeletCrashLoopBackOffMax` a configured
 * `maxContainerRestartPeriod` replaces the max (and lowers the initial delay if it is smaller).
 * The configured period is ignored while that gate is off, as the kubelet's constructor does.
 * Throws `KindError('InvalidArgument')` for a configured period outside the kubelet's accepted 1s..300s.
 */
export function newCrashLoopBackOff(opts: CrashLoopBackOffOptions = {}): Backoff {
  const gates = opts.featureGates ?? {};
  let initial = InitialCrashLoopBackOffMs;
  let max = MaxCrashLoopBackOffMs;
  if (gates.ReduceDefaultCrashLoopBackOffDecay) {
    initial = ReducedInitialCrashLoopBackOffMs;
    max = ReducedMaxCrashLoopBackOffMs;
  }
  const period = opts.maxContainerRestartPeriodSeconds;
  if (gates.KubeletCrashLoopBackOffMax && period !== undefined) {
    if (typeof period !== 'number' || !Number.isFinite(period) || period < 1 || period > 300) {
      throw new KindError('InvalidArgument', 'maxContainerRestartPeriod must be between 1s and 300s', {
        maxContainerRestartPeriodSeconds: period,
      });
    }
    max = period * 1000;
    if (max < initial) initial = max;
  }
  return new Backoff(initial, max, { hasExpired: crashLoopHasExpired });
}

/**
 * The crash-loop key of a container (kubelet: `GetStableKey`): pod name, namespace and UID, container name
 * and spec hash. The hash covers name and image, so a new image starts a fresh schedule.
 */
export function getStableKey(pod: Pod, container: Pick<Container, 'name' | 'image'>): string {
  const m = pod.metadata;
  return `${m.name ?? ''}_${m.namespace ?? ''}_${m.uid ?? ''}_${container.name}_${hashContainer(container)}`;
}

/** The kubelet's one-line pod description (`format.Pod`): `name_namespace(uid)`. */
export function formatPod(pod: Pod): string {
  const m = pod.metadata;
  return `${m.name ?? ''}_${m.namespace ?? ''}(${m.uid ?? ''})`;
}

/** An event for the caller to record; pure code does not hold a recorder. */
export interface BackOffEvent {
  type: 'Warning';
  reason: 'BackOff';
  message: string;
}

export type DoBackOffResult =
  | { inBackOff: false; message: ''; error?: undefined; event?: undefined }
  | { inBackOff: true; message: string; error: 'CrashLoopBackOff'; event: BackOffEvent };

/**
 * The check before (re)starting `container` (kubelet: `doBackOff`). The reference time is the finish time
 * of the container's newest exited record; without one the container is not in back-off and the schedule
 * is not advanced. In back-off: error `CrashLoopBackOff`, the kubelet's message and a `BackOff` event.
 * Otherwise the schedule advances (`next(key, finishedAt, now)`) and the caller starts the container.
 * A record without `finishedAt` counts as having finished at the epoch (Go's zero time: long ago).
 */
export function doBackOff(
  pod: Pod,
  container: Pick<Container, 'name' | 'image'>,
  status: Pick<RuntimePodStatus, 'containers'>,
  backoff: Backoff,
  now: number,
): DoBackOffResult {
  const exited = status.containers.find((c) => c.name === container.name && c.state === 'exited');
  if (!exited) return { inBackOff: false, message: '' };
  const finishedAt = typeof exited.finishedAt === 'number' ? exited.finishedAt : 0;
  const key = getStableKey(pod, container);
  if (backoff.isInBackOffSince(key, finishedAt, now)) {
    const podDesc = formatPod(pod);
    return {
      inBackOff: true,
      error: 'CrashLoopBackOff',
      message: `back-off ${formatGoDuration(backoff.get(key))} restarting failed container=${container.name} pod=${podDesc}`,
      event: {
        type: 'Warning',
        reason: 'BackOff',
        message: `Back-off restarting failed container ${container.name} in pod ${podDesc}`,
      },
    };
  }
  backoff.next(key, finishedAt, now);
  return { inBackOff: false, message: '' };
}
