/**
 * ConfigMaps, Secrets and the like as the kubelet's cache-based object manager reads them
 * (pkg/kubelet/util/manager/cache_based_manager.go, the `Cache` change-detection strategy): a GET per object,
 * kept for a TTL and shared by every pod of the node that refers to it. Watching the referenced objects instead
 * would need `watch` on all ConfigMaps and Secrets of the cluster (RBAC cannot narrow a watch to the names a
 * node's pods use), which a kubelet gets from the Node authorizer and an operator cannot.
 *
 * Contract: `get` resolves the object, or `undefined` when the API server says it does not exist (NotFound is
 * cached like an object, so a pod waiting for a missing ConfigMap costs one GET per TTL, not one per retry);
 * any other failure rejects and is not cached. Concurrent gets of one key share one request. `maxAgeMs`
 * lets a caller that must see updates sooner (a pod resync refreshing its volumes) ask for a fresher copy.
 */
import type { Clock } from '../../util/clock.js';

export interface ObjectGetter<T> {
  /** Resolves undefined for NotFound; rejects on any other failure. */
  get(namespace: string, name: string): Promise<T | undefined>;
}

interface Entry<T> {
  value: T | undefined;
  fetchedAt: number;
}

export class ObjectCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly inflight = new Map<string, Promise<T | undefined>>();

  constructor(
    private readonly getter: ObjectGetter<T>,
    private readonly clock: Pick<Clock, 'now'>,
    /** How long a fetched object (or a NotFound) is served without asking again. */
    private readonly ttlMs: number,
    /** Entries older than this are dropped by `prune`. */
    private readonly maxIdleMs = 10 * 60_000,
  ) {}

  async get(namespace: string, name: string, maxAgeMs = this.ttlMs): Promise<T | undefined> {
    const key = `${namespace}/${name}`;
    const e = this.entries.get(key);
    if (e && this.clock.now() - e.fetchedAt <= Math.min(maxAgeMs, this.ttlMs)) return e.value;
    let p = this.inflight.get(key);
    if (!p) {
      p = this.getter.get(namespace, name).then(
        (value) => {
          this.inflight.delete(key);
          this.entries.set(key, { value, fetchedAt: this.clock.now() });
          return value;
        },
        (err: unknown) => {
          this.inflight.delete(key);
          throw err;
        },
      );
      this.inflight.set(key, p);
    }
    return p;
  }

  /** Forgets one object, so the next get asks the API server. */
  invalidate(namespace: string, name: string): void {
    this.entries.delete(`${namespace}/${name}`);
  }

  /** Drops entries nobody asked for in `maxIdleMs`. */
  prune(): void {
    const now = this.clock.now();
    for (const [k, e] of this.entries) if (now - e.fetchedAt > this.maxIdleMs) this.entries.delete(k);
  }

  get size(): number {
    return this.entries.size;
  }
}
