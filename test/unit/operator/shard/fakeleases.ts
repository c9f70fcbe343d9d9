// Shard Leases in memory with the API server's rules the coordinator depends on: resourceVersion
// preconditions on update (Conflict), AlreadyExists on create, NotFound, watch from a resourceVersion.
// `forReplica` gives one replica its own handle that can be cut off, as a stopped API server would: every
// call fails Unavailable, and the open watches break (so the informer backs off and watches again later
// from its last resourceVersion, without a fresh list); and given a latency, as a busy one would: each
// write is applied that long after it was sent.
import type { Lease } from '../../../../src/api/node.js';
import type { ListWatcher, WatchEvent } from '../../../../src/kube/informer.js';
import type { ShardLeaseAPI } from '../../../../src/operator/shard/api.js';
import type { Clock } from '../../../../src/util/clock.js';
import { KindError } from '../../../../src/util/errors.js';

const clone = <T>(v: T): T => structuredClone(v);

export class FakeLeaseStore {
  private rv = 100;
  readonly store = new Map<string, Lease>();
  private readonly history: { rv: number; event: WatchEvent }[] = [];
  private readonly watchers = new Set<(e: WatchEvent) => void>();
  /**
   * Every accepted write: who, which Lease, the verb, the holder written and whether it was a take (a
   * holder written with a new acquireTime: not a renewal, not a hand-back).
   */
  readonly writes: {
    by: string;
    name: string;
    verb: string;
    at: number;
    holder?: string;
    take: boolean;
  }[] = [];

  /** `clock` stamps the writes and times the latency of the replica handles. */
  constructor(readonly clock: Clock) {}

  private emit(type: string, obj: Lease): void {
    const event = { type, object: clone(obj) };
    this.history.push({ rv: Number(obj.metadata.resourceVersion), event });
    for (const w of [...this.watchers]) w(clone(event));
  }

  forReplica(id: string): ReplicaLeaseAPI {
    return replicaHandle(this, id);
  }

  /** The next resourceVersion. */
  bump(): string {
    return String(++this.rv);
  }

  /** The current resourceVersion. */
  get revision(): string {
    return String(this.rv);
  }

  /** Records an accepted write (replacing `previous`) and tells the watches. */
  record(
    by: string,
    verb: string,
    obj: Lease,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    previous?: Lease,
  ): void {
    this.writes.push({
      by,
      name: obj.metadata.name ?? '',
      verb,
      at: this.clock.now(),
      holder: obj.spec.holderIdentity,
      take:
        type !== 'DELETED' &&
        !!obj.spec.holderIdentity &&
        (previous?.spec.holderIdentity !== obj.spec.holderIdentity ||
          previous.spec.acquireTime !== obj.spec.acquireTime),
    });
    this.emit(type, obj);
  }

  /** Replays what happened after `resourceVersion`, then follows. */
  follow(resourceVersion: string, w: (e: WatchEvent) => void): () => void {
    for (const h of this.history) if (h.rv > Number(resourceVersion)) w(clone(h.event));
    this.watchers.add(w);
    return () => this.watchers.delete(w);
  }
}

/**
 * One replica's handle: `cut` = the API server is away for it; `latencyMs` = how long each write takes;
 * `listedAt` = when each list it made was answered; `refuse` = writes of the Leases it names are refused
 * (Forbidden) while the rest go through.
 */
export type ReplicaLeaseAPI = ShardLeaseAPI & {
  cut: boolean;
  latencyMs: number;
  listedAt: number[];
  refuse: ((name: string) => boolean) | undefined;
};

function replicaHandle(self: FakeLeaseStore, id: string): ReplicaLeaseAPI {
  let cut = false;
  /** Before a write of `name` is applied: its latency, then whether the API server is there and takes it. */
  const reach = async (name: string): Promise<void> => {
    if (handle.latencyMs > 0) await self.clock.sleep(handle.latencyMs);
    if (cut) throw unavailable();
    if (handle.refuse?.(name)) throw new KindError('Forbidden', `writes of ${name} refused`);
  };
  /** Ends each open watch with an error (the connection is gone). */
  const breakers = new Set<(err: Error) => void>();
  const unavailable = (): KindError => new KindError('Unavailable', 'cut off');
  const handle = {
    get cut(): boolean {
      return cut;
    },
    set cut(value: boolean) {
      cut = value;
      if (value) for (const b of [...breakers]) b(unavailable());
    },
    latencyMs: 0,
    listedAt: [] as number[],
    refuse: undefined as ((name: string) => boolean) | undefined,
    leases: {
      async list() {
        if (cut) throw unavailable();
        handle.listedAt.push(self.clock.now());
        return { items: [...self.store.values()].map(clone), resourceVersion: self.revision };
      },
      watch(resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal) {
        if (cut) return Promise.reject(unavailable());
        return new Promise<void>((resolve, reject) => {
          const unfollow = self.follow(resourceVersion, onEvent);
          const end = (err?: Error): void => {
            unfollow();
            breakers.delete(end);
            signal.removeEventListener('abort', onAbort);
            if (err) reject(err);
            else resolve();
          };
          const onAbort = (): void => end();
          breakers.add(end);
          if (signal.aborted) end();
          else signal.addEventListener('abort', onAbort, { once: true });
        });
      },
    } satisfies ListWatcher<Lease>,
    async create(lease: Lease) {
      const name = lease.metadata.name ?? '';
      await reach(name);
      if (self.store.has(name)) throw new KindError('AlreadyExists', `${name} exists`);
      const stored = clone(lease);
      stored.metadata.resourceVersion = self.bump();
      self.store.set(name, stored);
      self.record(id, 'create', stored, 'ADDED');
      return clone(stored);
    },
    async update(lease: Lease) {
      const name = lease.metadata.name ?? '';
      await reach(name);
      const cur = self.store.get(name);
      if (!cur) throw new KindError('NotFound', `${name} not found`);
      if (lease.metadata.resourceVersion !== cur.metadata.resourceVersion)
        throw new KindError('Conflict', `${name} changed`);
      const stored = clone(lease);
      stored.metadata.resourceVersion = self.bump();
      self.store.set(name, stored);
      self.record(id, 'update', stored, 'MODIFIED', cur);
      return clone(stored);
    },
    async delete(name: string) {
      await reach(name);
      const cur = self.store.get(name);
      if (!cur) return;
      self.store.delete(name);
      const gone = clone(cur);
      gone.metadata.resourceVersion = self.bump();
      self.record(id, 'delete', gone, 'DELETED', cur);
    },
  };
  return handle;
}
