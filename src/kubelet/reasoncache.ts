/**
 * The kubelet's ReasonCache (pkg/kubelet/reason_cache.go): the last start failure of each container, kept
 * so that the generated API status can say *why* a container is waiting (CrashLoopBackOff,
 * ImagePullBackOff, ErrImagePull, CreateContainerConfigError, RunContainerError, ...).
 *
 * Invariants: at most `capacity` entries (least recently used evicted first; a successful `get` counts as a
 * use, as in the Go LRU); an entry exists only for a container whose latest StartContainer attempt failed.
 */

/** Why the last start of a container failed: the error's string form and its human message. */
export interface ReasonItem {
  reason: string;
  message: string;
}

/** Read side, as convertToAPIContainerStatuses needs it. */
export interface ReasonCacheReader {
  get(uid: string, name: string): ReasonItem | undefined;
}

/**
 * One entry of a SyncPod result (kubelet: kubecontainer.SyncResult), reduced to what the cache reads.
 * Only `action === 'StartContainer'` entries matter; their `target` is the container name. `error` is the
 * failure (its string form is the reason, e.g. "CrashLoopBackOff"); absent/null/'' means success.
 */
export interface ContainerSyncResult {
  action: string;
  target: unknown;
  error?: string | Error | null;
  message?: string;
}

export const StartContainerAction = 'StartContainer';

/** Default size, as the kubelet's maxReasonCacheEntries. */
export const DefaultReasonCacheCapacity = 1000;

/** The failure's reason, or undefined for success. An Error object always means failure. */
function failureReason(e: string | Error | null | undefined): string | undefined {
  if (e instanceof Error) return e.message || e.name;
  return typeof e === 'string' && e !== '' ? e : undefined;
}

export class ReasonCache implements ReasonCacheReader {
  // Map iteration order is insertion order: re-inserting on use makes the first key the least recent.
  private readonly entries = new Map<string, ReasonItem>();
  readonly capacity: number;

  constructor(capacity = DefaultReasonCacheCapacity) {
    this.capacity = Number.isInteger(capacity) && capacity > 0 ? capacity : DefaultReasonCacheCapacity;
  }

  private static key(uid: string, name: string): string {
    return `${uid}_${name}`;
  }

  /** Records a start failure (kubelet: add). */
  add(uid: string, name: string, reason: string, message = ''): void {
    const key = ReasonCache.key(uid, name);
    this.entries.delete(key);
    this.entries.set(key, { reason, message });
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  /**
   * Applies one SyncPod result: every StartContainer failure is stored under (uid, container name), every
   * StartContainer success forgets that container's entry. Other actions and entries whose target is not a
   * name are ignored.
   */
  update(uid: string, results: readonly ContainerSyncResult[] | undefined | null): void {
    if (!Array.isArray(results)) return;
    for (const r of results) {
      if (typeof r !== 'object' || r === null || r.action !== StartContainerAction) continue;
      if (typeof r.target !== 'string') continue;
      const reason = failureReason(r.error);
      if (reason !== undefined) this.add(uid, r.target, reason, r.message ?? '');
      else this.remove(uid, r.target);
    }
  }

  /** Forgets a container's failure. */
  remove(uid: string, name: string): void {
    this.entries.delete(ReasonCache.key(uid, name));
  }

  /** The last start failure of the container, if its latest start failed. Marks the entry as used. */
  get(uid: string, name: string): ReasonItem | undefined {
    const key = ReasonCache.key(uid, name);
    const item = this.entries.get(key);
    if (!item) return undefined;
    this.entries.delete(key);
    this.entries.set(key, item);
    return { ...item };
  }

  get size(): number {
    return this.entries.size;
  }
}
