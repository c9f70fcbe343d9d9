/**
 * The pod status cache (kubelet: pkg/kubelet/container/cache.go). The PLEG writes the inspected runtime
 * status of each pod here; pod workers read it, waiting with `getNewerThan` until the cache has caught up
 * with the moment they care about.
 *
 * Each entry holds the status, the inspection error (if it failed) and when it was written. A global
 * timestamp says "every entry is at least this fresh"; the PLEG sets it after each complete relist.
 */
import type { PodUID, RuntimePodStatus } from './types.js';

/** What the cache knows about one pod. `error` is set when the last inspection failed. */
export interface PodCacheEntry {
  readonly status: RuntimePodStatus;
  readonly error: unknown;
  /** Epoch ms of the write. */
  readonly modified: number;
}

/** The status of a pod nobody has inspected: no sandboxes, no containers, no IPs. */
export function emptyPodStatus(uid: string, name = '', namespace = ''): RuntimePodStatus {
  return { uid: uid as PodUID, name, namespace, sandboxes: [], containers: [], ips: [] };
}

interface Waiter {
  uid: string;
  minTime: number;
  resolve: (e: { status: RuntimePodStatus; error: unknown }) => void;
}

/**
 * Contract: `get` never fails (an unknown pod reads as an empty status without error); `set` always
 * stores (the generic PLEG does not compare timestamps) and returns true; `getNewerThan` resolves once
 * the pod's entry was written after `minTime` or the global timestamp passed `minTime`.
 */
export class PodCache {
  private readonly entries = new Map<string, PodCacheEntry>();
  private timestamp: number | undefined;
  private waiters: Waiter[] = [];

  /** The cached status and error of a pod (empty status, no error, when unknown). */
  get(uid: string): { status: RuntimePodStatus; error: unknown } {
    const e = this.entries.get(uid);
    return e ? { status: e.status, error: e.error } : { status: emptyPodStatus(uid), error: undefined };
  }

  /** The raw entry, or undefined when the pod is not cached. */
  entry(uid: string): PodCacheEntry | undefined {
    return this.entries.get(uid);
  }

  /** Stores the result of an inspection made at `timestamp`. Returns whether it was stored. */
  set(uid: string, status: RuntimePodStatus, error: unknown, timestamp: number): boolean {
    this.entries.set(uid, { status, error, modified: timestamp });
    this.notify(uid);
    return true;
  }

  delete(uid: string): void {
    this.entries.delete(uid);
  }

  /** Declares every entry fresh as of `timestamp` (called after a complete relist). */
  updateTime(timestamp: number): void {
    this.timestamp = timestamp;
    this.notify(undefined);
  }

  /** The global timestamp, if one was set. */
  get globalTimestamp(): number | undefined {
    return this.timestamp;
  }

  /** Resolves with the pod's entry once it is newer than `minTime` (see the class contract). */
  getNewerThan(uid: string, minTime: number): Promise<{ status: RuntimePodStatus; error: unknown }> {
    const ready = this.newerThan(uid, minTime);
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve) => this.waiters.push({ uid, minTime, resolve }));
  }

  private newerThan(uid: string, minTime: number): { status: RuntimePodStatus; error: unknown } | undefined {
    const e = this.entries.get(uid);
    const globalNewer = this.timestamp !== undefined && this.timestamp > minTime;
    if (!e) return globalNewer ? { status: emptyPodStatus(uid), error: undefined } : undefined;
    return e.modified > minTime || globalNewer ? { status: e.status, error: e.error } : undefined;
  }

  private notify(uid: string | undefined): void {
    const still: Waiter[] = [];
    for (const w of this.waiters) {
      const ready = uid === undefined || w.uid === uid ? this.newerThan(w.uid, w.minTime) : undefined;
      if (ready) w.resolve(ready);
      else still.push(w);
    }
    this.waiters = still;
  }
}
