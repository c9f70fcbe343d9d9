/**
 * An informer: a reflector that keeps a Map cache in step with the API server, plus handlers.
 *
 * The reflector lists, then watches from the list's resourceVersion with bookmarks on, and:
 * - on a watch that ends normally (server timeout), watches again from the last seen resourceVersion;
 * - on 410 Gone (resourceVersion too old), lists again at once and replays the difference as events;
 * - on any other failure, waits a jittered back-off (0.8 s doubling to 30 s) and tries again;
 * - when a watch is silent for longer than the watchdog allows (no event, no bookmark), drops it and
 *   watches again, so a connection that died without a FIN does not freeze the cache.
 * Handlers run synchronously after the cache is updated; a handler that throws is logged, never fatal.
 * Handlers get the objects held by the cache: they must not mutate them. A new version of an object shares
 * every subtree that did not change with the version it replaces (structshare.ts), so holders of the older
 * version do not keep a second copy of, say, a pod's spec after a status update.
 */
import type { Clock, TimerHandle } from '../util/clock.js';
import { KindError, errorKind, errorMessage } from '../util/errors.js';
import type { KubeClient, WatchOptions } from './client.js';
import { shareUnchanged } from './structshare.js';

export interface KObject {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

export interface WatchEvent {
  type: string;
  object: unknown;
}

/** The transport under an informer: a real REST one (restListWatcher) or a fake in unit tests. */
export interface ListWatcher<T> {
  list(signal: AbortSignal): Promise<ListResult<T>>;
  /** Streams events from `resourceVersion`; resolves when the server ends the stream or `signal` aborts. */
  watch(resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void>;
}

export interface InformerHandlers<T> {
  add?(obj: T): void;
  update?(oldObj: T, newObj: T): void;
  delete?(obj: T): void;
}

export interface InformerLogger {
  info(msg: string, meta?: Record<string, unknown>): void;
  warn(msg: string, meta?: Record<string, unknown>): void;
}

export interface InformerOptions {
  clock: Clock;
  /** Name for logs, e.g. "pods". */
  name: string;
  logger?: InformerLogger;
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** A watch with nothing received for this long is restarted. */
  watchdogMs?: number;
  /** Uniform [0,1) source for jitter; injectable for tests. */
  random?: () => number;
  /**
   * Applied to every object before it is stored or handed to handlers (client-go SetTransform), e.g.
   * stripManagedFields: what the cache does not need is not kept for every object.
   */
  transform?: (obj: KObject) => KObject;
  /**
   * Applied after the new version shared what did not change with the one it replaces (`prev`, absent for
   * a new object), e.g. interning what many objects have in common (podintern.ts). May modify `obj`.
   */
  compact?: (obj: KObject, prev: KObject | undefined) => KObject;
}

/**
 * Drops metadata.managedFields (client-go TransformStripManagedFields, as kube-scheduler and the
 * controller-manager do): server-side apply bookkeeping that nothing here reads, and often the largest part
 * of a pod's metadata.
 */
export function stripManagedFields(obj: KObject): KObject {
  const m = obj.metadata as (KObject['metadata'] & { managedFields?: unknown }) | undefined;
  if (m?.managedFields !== undefined) delete m.managedFields;
  return obj;
}

export function objectKey(obj: KObject): string {
  const m = obj.metadata ?? {};
  return m.namespace ? `${m.namespace}/${m.name ?? ''}` : (m.name ?? '');
}

/**
 * A ListWatcher over the REST API for one collection path (e.g. /api/v1/pods). With `dropManagedFields`, the
 * objects' managedFields are cut from the text before it is parsed (for kinds managedfields.ts suits); the
 * informer's stripManagedFields transform then finds nothing left to drop.
 */
export function restListWatcher<T extends KObject>(
  client: KubeClient,
  path: string,
  selectors: { fieldSelector?: string; labelSelector?: string } = {},
  random: () => number = Math.random,
  opts: WatchOptions = {},
  /** The client of the watches, when they are to go over another pool than the lists (default `client`). */
  watchClient: KubeClient = client,
): ListWatcher<T> {
  return {
    async list(signal) {
      const res = await client.request<{ items?: T[]; metadata?: { resourceVersion?: string } }>({
        method: 'GET',
        path,
        query: { ...selectors },
        signal,
        timeoutMs: 120_000,
        dropManagedFields: opts.dropManagedFields,
      });
      return { items: res.items ?? [], resourceVersion: res.metadata?.resourceVersion ?? '' };
    },
    watch(resourceVersion, onEvent, signal) {
      // Server-side timeout between 5 and 10 minutes, as client-go spreads reconnects.
      const timeoutSeconds = Math.floor(300 * (1 + random()));
      return watchClient.watch(
        path,
        { ...selectors, resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
        onEvent,
        signal,
        opts,
      );
    },
  };
}

class GoneError extends KindError {
  constructor(message: string) {
    super('Gone', message);
  }
}

const noObjects: readonly never[] = [];

export class Informer<T extends KObject> {
  private readonly store = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly indexers = new Map<string, (obj: T) => string[]>();
  /** By index name, then index value: the objects under it by key (the objects themselves, no second lookup). */
  private readonly indexes = new Map<string, Map<string, Map<string, T>>>();
  /**
   * An index value's objects as the array byIndex last handed out, until they change: callers that ask
   * every few seconds (housekeeping) get the same array, and can tell by its identity that nothing changed.
   */
  private readonly indexLists = new WeakMap<Map<string, T>, readonly T[]>();
  private resourceVersion = '';
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private stopController = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly watchdogMs: number;
  private readonly random: () => number;
  /** Counters for tests and metrics. */
  readonly stats = { lists: 0, watches: 0, relistsOnGone: 0, watchdogFired: 0, errors: 0, handlerErrors: 0 };

  constructor(
    private readonly lw: ListWatcher<T>,
    private readonly opts: InformerOptions,
  ) {
    this.backoffInitialMs = opts.backoffInitialMs ?? 800;
    this.backoffMaxMs = opts.backoffMaxMs ?? 30_000;
    this.watchdogMs = opts.watchdogMs ?? 150_000;
    this.random = opts.random ?? Math.random;
  }

  addHandlers(h: InformerHandlers<T>): void {
    this.handlers.push(h);
  }

  /** Adds a secondary index; must be called before start. */
  addIndex(name: string, fn: (obj: T) => string[]): void {
    this.indexers.set(name, fn);
    this.indexes.set(name, new Map());
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /**
   * Objects whose index `name` yields `value`. The same array until one of them changes (or one is added or
   * removed): callers must not modify it.
   */
  byIndex(name: string, value: string): readonly T[] {
    const objects = this.indexes.get(name)?.get(value);
    if (!objects) return noObjects;
    let list = this.indexLists.get(objects);
    if (!list) this.indexLists.set(objects, (list = [...objects.values()]));
    return list;
  }

  get size(): number {
    return this.store.size;
  }

  get lastSyncResourceVersion(): string {
    return this.resourceVersion;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list has been applied. */
  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  start(): void {
    if (this.loop) return;
    this.stopController = new AbortController();
    this.loop = this.run(this.stopController.signal);
  }

  async stop(): Promise<void> {
    this.stopController.abort(new Error('informer stopped'));
    await this.loop;
    this.loop = undefined;
  }

  private async run(stop: AbortSignal): Promise<void> {
    let needList = true;
    let failures = 0;
    while (!stop.aborted) {
      try {
        if (needList) {
          this.stats.lists++;
          const res = await this.lw.list(stop);
          this.replace(res.items);
          this.resourceVersion = res.resourceVersion;
          needList = false;
          this.markSynced();
        }
        const watchStarted = this.opts.clock.now();
        const received = await this.watchOnce(stop);
        if (received) failures = 0;
        else if (!stop.aborted && this.opts.clock.now() - watchStarted < 1000) {
          // A watch the server closes at once with nothing in it would spin; back off instead.
          throw new KindError('Unavailable', 'watch closed immediately without events');
        }
      } catch (err) {
        if (stop.aborted) break;
        if (err instanceof GoneError || errorKind(err) === 'Gone') {
          this.stats.relistsOnGone++;
          this.opts.logger?.info('watch expired, listing again', { informer: this.opts.name });
          needList = true;
          continue;
        }
        this.stats.errors++;
        const base = Math.min(this.backoffMaxMs, this.backoffInitialMs * 2 ** failures);
        const delay = Math.min(this.backoffMaxMs, base * (1 + this.random()));
        failures++;
        this.opts.logger?.warn('list/watch failed, backing off', {
          informer: this.opts.name,
          error: errorMessage(err),
          delayMs: Math.round(delay),
        });
        try {
          await this.opts.clock.sleep(delay, stop);
        } catch {
          break;
        }
      }
    }
  }

  /** One watch; resolves true if anything was received. Throws GoneError on 410. */
  private async watchOnce(stop: AbortSignal): Promise<boolean> {
    this.stats.watches++;
    const ac = new AbortController();
    const onStop = () => ac.abort();
    stop.addEventListener('abort', onStop, { once: true });
    let received = false;
    let failure: Error | undefined;
    let watchdog: TimerHandle | undefined;
    const arm = () => {
      watchdog?.cancel();
      watchdog = this.opts.clock.setTimer(this.watchdogMs, () => {
        this.stats.watchdogFired++;
        this.opts.logger?.warn('watch silent too long, restarting it', { informer: this.opts.name });
        ac.abort();
      });
    };
    arm();
    try {
      await this.lw.watch(
        this.resourceVersion,
        (e) => {
          if (failure) return;
          arm();
          received = true;
          try {
            this.apply(e);
          } catch (err) {
            failure = err as Error;
            ac.abort();
          }
        },
        ac.signal,
      );
    } finally {
      watchdog?.cancel();
      stop.removeEventListener('abort', onStop);
    }
    if (failure) throw failure;
    return received;
  }

  private apply(e: WatchEvent): void {
    const raw = e.object as T & { code?: number; message?: string; reason?: string };
    const obj =
      this.opts.transform && e.type !== 'ERROR' && e.type !== 'BOOKMARK'
        ? (this.opts.transform(raw) as typeof raw)
        : raw;
    switch (e.type) {
      case 'BOOKMARK': {
        const rv = obj.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        return;
      }
      case 'ERROR': {
        if (obj.code === 410) throw new GoneError(obj.message ?? 'resource version too old');
        throw new KindError('Unknown', `watch error event: ${obj.code ?? ''} ${obj.message ?? ''}`);
      }
      case 'ADDED':
      case 'MODIFIED': {
        const key = objectKey(obj);
        const old = this.store.get(key);
        const cur = this.versionOf(obj, old);
        this.put(key, cur);
        this.bump(cur);
        if (old) this.emit('update', old, cur);
        else this.emit('add', cur);
        return;
      }
      case 'DELETED': {
        const key = objectKey(obj);
        const old = this.store.get(key);
        this.remove(key);
        this.bump(obj);
        this.emit('delete', old ?? obj);
        return;
      }
      default:
        this.opts.logger?.warn('unknown watch event type ignored', {
          informer: this.opts.name,
          type: e.type,
        });
    }
  }

  /** The object to store for a fresh `obj` replacing `old`: sharing what did not change, then compacted. */
  private versionOf(obj: T, old: T | undefined): T {
    const shared = old ? shareUnchanged(old, obj) : obj;
    if (shared === old || !this.opts.compact) return shared;
    return this.opts.compact(shared, old) as T;
  }

  private bump(obj: KObject): void {
    const rv = obj.metadata?.resourceVersion;
    if (rv) this.resourceVersion = rv;
  }

  /** Applies a full list: adds, updates (resourceVersion changed) and deletes (gone from the list). */
  private replace(items: T[]): void {
    const seen = new Set<string>();
    for (const item of items) {
      const obj = this.opts.transform ? (this.opts.transform(item) as T) : item;
      const key = objectKey(obj);
      seen.add(key);
      const old = this.store.get(key);
      const cur = this.versionOf(obj, old);
      this.put(key, cur);
      if (!old) this.emit('add', cur);
      else if (old.metadata?.resourceVersion !== cur.metadata?.resourceVersion) this.emit('update', old, cur);
    }
    for (const [key, old] of [...this.store]) {
      if (seen.has(key)) continue;
      this.remove(key);
      this.emit('delete', old);
    }
  }

  private put(key: string, obj: T): void {
    const old = this.store.get(key);
    if (old) this.unindex(key, old);
    this.store.set(key, obj);
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const v of fn(obj)) {
        let objects = idx.get(v);
        if (!objects) idx.set(v, (objects = new Map()));
        objects.set(key, obj);
        this.indexLists.delete(objects);
      }
    }
  }

  private remove(key: string): void {
    const old = this.store.get(key);
    if (!old) return;
    this.unindex(key, old);
    this.store.delete(key);
  }

  private unindex(key: string, obj: T): void {
    for (const [name, fn] of this.indexers) {
      const idx = this.indexes.get(name)!;
      for (const v of fn(obj)) {
        const objects = idx.get(v);
        if (!objects) continue;
        objects.delete(key);
        this.indexLists.delete(objects);
        if (objects.size === 0) idx.delete(v);
      }
    }
  }

  private markSynced(): void {
    if (this.synced) return;
    this.synced = true;
    for (const w of this.syncWaiters.splice(0)) w();
  }

  private emit(kind: 'add', obj: T): void;
  private emit(kind: 'update', old: T, obj: T): void;
  private emit(kind: 'delete', obj: T): void;
  private emit(kind: 'add' | 'update' | 'delete', a: T, b?: T): void {
    for (const h of this.handlers) {
      try {
        if (kind === 'add') h.add?.(a);
        else if (kind === 'update') h.update?.(a, b!);
        else h.delete?.(a);
      } catch (err) {
        this.stats.handlerErrors++;
        this.opts.logger?.warn('informer handler failed', {
          informer: this.opts.name,
          event: kind,
          key: objectKey(a),
          error: errorMessage(err),
        });
      }
    }
  }
}
