// An in-memory OperatorAPI with the API server's behaviour where the controller depends on it: list then
// watch from a resourceVersion (events after it are replayed), generation bumped on spec changes, deletion
// of an object with finalizers only sets deletionTimestamp and the last finalizer's removal deletes it,
// resourceVersion preconditions on the finalizer patch (Conflict), NotFound quietly ignored as the REST
// writer does. Failures can be injected per write.
import type { Pod } from '../../../src/api/core.js';
import type { Node } from '../../../src/api/node.js';
import type { PodCertificateRequest } from '../../../src/api/podcertificaterequest.js';
import type { Service } from '../../../src/api/service.js';
import type { VirtualNode, VirtualNodeStatus } from '../../../src/api/virtualnode.js';
import { objectKey, type KObject, type ListWatcher, type WatchEvent } from '../../../src/kube/informer.js';
import type { OperatorAPI, VirtualNodeWriter } from '../../../src/operator/api.js';
import { VIRTUAL_NODE_LABEL } from '../../../src/node/registration.js';
import { KindError } from '../../../src/util/errors.js';

const clone = <T>(v: T): T => structuredClone(v);

interface Stored extends KObject {
  metadata: NonNullable<KObject['metadata']> & {
    generation?: number;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec?: unknown;
}

/** Shared resourceVersion counter: one etcd revision across collections, as the API server. */
export class Revision {
  private rv = 100;
  next(): string {
    return String(++this.rv);
  }
}

/** A watch event with the version it replaced (MODIFIED), for views that filter on a field. */
interface Recorded {
  rv: number;
  event: WatchEvent;
  prev?: KObject;
}

/** One collection: the store, its event history and its open watches. */
export class FakeCollection<T extends Stored> implements ListWatcher<T> {
  private readonly store = new Map<string, T>();
  private readonly history: Recorded[] = [];
  private readonly watchers = new Set<(r: Recorded) => void>();
  lists = 0;

  constructor(private readonly rev: Revision = new Revision()) {}

  async list(): Promise<{ items: T[]; resourceVersion: string }> {
    this.lists++;
    return this.snapshot();
  }

  private snapshot(): { items: T[]; resourceVersion: string } {
    return { items: [...this.store.values()].map(clone), resourceVersion: this.rev.next() };
  }

  watch(resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    return this.watchRecorded(resourceVersion, (r) => onEvent(clone(r.event)), signal);
  }

  private watchRecorded(
    resourceVersion: string,
    on: (r: Recorded) => void,
    signal: AbortSignal,
  ): Promise<void> {
    for (const h of this.history) if (h.rv > Number(resourceVersion)) on(h);
    this.watchers.add(on);
    return new Promise((resolve) => {
      const end = (): void => {
        this.watchers.delete(on);
        resolve();
      };
      if (signal.aborted) end();
      else signal.addEventListener('abort', end, { once: true });
    });
  }

  /**
   * The collection through a field selector, as the API server serves one: only matching objects are
   * listed, and an object that starts (stops) matching arrives as ADDED (DELETED).
   */
  where(matches: (o: T) => boolean): ListWatcher<T> & { lists: number } {
    const view = {
      lists: 0,
      list: async (): Promise<{ items: T[]; resourceVersion: string }> => {
        view.lists++;
        const all = this.snapshot();
        return { items: all.items.filter(matches), resourceVersion: all.resourceVersion };
      },
      watch: (resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal) =>
        this.watchRecorded(
          resourceVersion,
          ({ event, prev }) => {
            const now = matches(event.object as T);
            const before = event.type === 'MODIFIED' ? matches(prev as T) : now;
            if (!now && !before) return;
            const type = event.type !== 'MODIFIED' || now === before ? event.type : now ? 'ADDED' : 'DELETED';
            onEvent({ type, object: clone(event.object) });
          },
          signal,
        ),
    };
    return view;
  }

  /** Open watches, views' included. */
  get watching(): number {
    return this.watchers.size;
  }

  get(key: string): T | undefined {
    const o = this.store.get(key);
    return o ? clone(o) : undefined;
  }

  keys(): string[] {
    return [...this.store.keys()];
  }

  /**
   * Holds back what open watches are sent (a lagging watch): changes go on being made, and reach the
   * watches, in order, when the returned function is called.
   */
  holdWatches(): () => void {
    const held: Recorded[] = [];
    this.held = held;
    return () => {
      if (this.held === held) this.held = undefined;
      for (const r of held) this.deliver(r);
    };
  }

  private held: Recorded[] | undefined;

  private deliver(recorded: Recorded): void {
    for (const w of [...this.watchers]) w(recorded);
  }

  private emit(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T, prev?: T): void {
    const recorded: Recorded = {
      rv: Number(obj.metadata.resourceVersion),
      event: { type, object: clone(obj) },
    };
    if (prev) recorded.prev = clone(prev);
    this.history.push(recorded);
    if (this.held) this.held.push(recorded);
    else this.deliver(recorded);
  }

  create(obj: T): T {
    const key = objectKey(obj);
    if (this.store.has(key)) throw new KindError('AlreadyExists', `${key} already exists`);
    const stored = clone(obj);
    stored.metadata.resourceVersion = this.rev.next();
    stored.metadata.uid ??= `uid-${key}`;
    stored.metadata.generation = 1;
    this.store.set(key, stored);
    this.emit('ADDED', stored);
    return clone(stored);
  }

  /** Replaces the object (as a PUT would); a changed spec bumps the generation. */
  update(key: string, mutate: (o: T) => void): T {
    const cur = this.store.get(key);
    if (!cur) throw new KindError('NotFound', `${key} not found`);
    const next = clone(cur);
    mutate(next);
    if (JSON.stringify(next.spec) !== JSON.stringify(cur.spec))
      next.metadata.generation = (cur.metadata.generation ?? 1) + 1;
    next.metadata.resourceVersion = this.rev.next();
    // The last finalizer of an object being deleted goes: the object goes with it.
    const finalized =
      (cur.metadata.finalizers ?? []).length > 0 && (next.metadata.finalizers ?? []).length === 0;
    if (next.metadata.deletionTimestamp && finalized) {
      this.store.delete(key);
      this.emit('DELETED', next);
      return clone(next);
    }
    this.store.set(key, next);
    this.emit('MODIFIED', next, cur);
    return clone(next);
  }

  /**
   * A DELETE: an object with finalizers, or deleted with a grace period (`graceful`, as pods are), only gets
   * a deletionTimestamp; otherwise it goes at once.
   */
  delete(key: string, opts: { graceful?: boolean; at?: string } = {}): void {
    const at = opts.at ?? '2026-01-01T00:00:00Z';
    const cur = this.store.get(key);
    if (!cur) throw new KindError('NotFound', `${key} not found`);
    if ((cur.metadata.finalizers ?? []).length > 0 || opts.graceful) {
      if (!cur.metadata.deletionTimestamp) this.update(key, (o) => (o.metadata.deletionTimestamp = at));
      return;
    }
    this.store.delete(key);
    const gone = clone(cur);
    gone.metadata.resourceVersion = this.rev.next();
    this.emit('DELETED', gone);
  }
}

type WriteMethod = keyof VirtualNodeWriter;

export class FakeOperatorAPI implements OperatorAPI {
  private readonly rev = new Revision();
  readonly vns = new FakeCollection<VirtualNode & Stored>(this.rev);
  readonly podStore = new FakeCollection<Pod & Stored>(this.rev);
  readonly serviceStore = new FakeCollection<Service & Stored>(this.rev);
  readonly nodeStore = new FakeCollection<Node & Stored>(this.rev);
  readonly virtualNodes: ListWatcher<VirtualNode> = this.vns;
  /** Every node's pod view handed out, by node name (its `lists` count the lists of that node's pods). */
  readonly podViews = new Map<string, ListWatcher<Pod> & { lists: number }>();
  readonly services: ListWatcher<Service> = this.serviceStore;
  podsOfNode(nodeName: string): ListWatcher<Pod> {
    const view = this.podStore.where((p) => p.spec?.nodeName === nodeName);
    this.podViews.set(nodeName, view);
    return view;
  }
  /** The label selector VIRTUAL_NODE_LABEL (exists). */
  readonly virtualNodeNodes: ListWatcher<Node> = this.nodeStore.where(
    (n) => n.metadata.labels?.[VIRTUAL_NODE_LABEL] !== undefined,
  );
  readonly requestStore = new FakeCollection<PodCertificateRequest & Stored>(this.rev);
  /** Every node's PodCertificateRequest view handed out, by node name. */
  readonly requestViews = new Map<string, ListWatcher<PodCertificateRequest> & { lists: number }>();
  podCertificateRequestsOfNode(nodeName: string): ListWatcher<PodCertificateRequest> {
    const view = this.requestStore.where((r) => r.spec.nodeName === nodeName);
    this.requestViews.set(nodeName, view);
    return view;
  }
  /** Every write, in order. */
  readonly writes: { method: WriteMethod; name: string; body: unknown }[] = [];
  private readonly failures = new Map<WriteMethod, KindError[]>();

  /** The next `count` calls of `method` fail with `kind`. */
  fail(method: WriteMethod, kind: KindError['kind'], count = 1): void {
    const list = this.failures.get(method) ?? [];
    for (let i = 0; i < count; i++) list.push(new KindError(kind, `injected ${kind} on ${method}`));
    this.failures.set(method, list);
  }

  statusWrites(name: string): VirtualNodeStatus[] {
    return this.writes
      .filter((w) => w.method === 'patchStatus' && w.name === name)
      .map((w) => w.body as VirtualNodeStatus);
  }

  private enter(method: WriteMethod, name: string, body: unknown): void {
    this.writes.push({ method, name, body: clone(body) });
    const err = this.failures.get(method)?.shift();
    if (err) throw err;
  }

  readonly writer: VirtualNodeWriter = {
    patchFinalizers: async (name, resourceVersion, finalizers) => {
      this.enter('patchFinalizers', name, finalizers);
      const cur = this.vns.get(name);
      if (!cur) return false;
      if (resourceVersion && resourceVersion !== cur.metadata.resourceVersion)
        throw new KindError('Conflict', 'the object has been modified');
      this.vns.update(name, (o) => (o.metadata.finalizers = [...finalizers]));
      return true;
    },
    patchStatus: async (name, status) => {
      this.enter('patchStatus', name, status);
      if (!this.vns.get(name)) return;
      // The status subresource: status changes never bump the generation.
      this.vns.update(name, (o) => (o.status = { ...(o.status ?? {}), ...clone(status) }));
    },
  };
}

/** Lets pending promise callbacks run (the fakes resolve at once, so a few turns suffice). */
export async function flush(turns = 30): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((r) => setImmediate(r));
}
