// Shard Leases in memory with the API server's rules the coordinator depends on: resourceVersion
// preconditions on update (Conflict), AlreadyExists on create, NotFound, watch from a resourceVersion.
// `forReplica` gives one replica its own handle that can be cut off (every call fails Unavailable).
import type { Lease } from '../../../../src/api/node.js';
import type { ListWatcher, WatchEvent } from '../../../../src/kube/informer.js';
import type { ShardLeaseAPI } from '../../../../src/operator/shard/api.js';
import { KindError } from '../../../../src/util/errors.js';

const clone = <T>(v: T): T => structuredClone(v);

export class FakeLeaseStore {
  private rv = 100;
  readonly store = new Map<string, Lease>();
  private readonly history: { rv: number; event: WatchEvent }[] = [];
  private readonly watchers = new Set<(e: WatchEvent) => void>();
  /** Every accepted write: [holder written, lease name, verb]. */
  readonly writes: { by: string; name: string; verb: string; holder?: string }[] = [];

  private emit(type: string, obj: Lease): void {
    const event = { type, object: clone(obj) };
    this.history.push({ rv: Number(obj.metadata.resourceVersion), event });
    for (const w of [...this.watchers]) w(clone(event));
  }

  forReplica(id: string): ShardLeaseAPI & { cut: boolean } {
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

  /** Records an accepted write and tells the watches. */
  record(by: string, verb: string, obj: Lease, type: 'ADDED' | 'MODIFIED' | 'DELETED'): void {
    this.writes.push({ by, name: obj.metadata.name ?? '', verb, holder: obj.spec.holderIdentity });
    this.emit(type, obj);
  }

  /** Replays what happened after `resourceVersion`, then follows. */
  follow(resourceVersion: string, w: (e: WatchEvent) => void): () => void {
    for (const h of this.history) if (h.rv > Number(resourceVersion)) w(clone(h.event));
    this.watchers.add(w);
    return () => this.watchers.delete(w);
  }
}

function replicaHandle(self: FakeLeaseStore, id: string): ShardLeaseAPI & { cut: boolean } {
  const handle = {
    cut: false,
    leases: {
      async list() {
        if (handle.cut) throw new KindError('Unavailable', 'cut off');
        return { items: [...self.store.values()].map(clone), resourceVersion: self.revision };
      },
      watch(resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal) {
        const unfollow = self.follow(resourceVersion, (e) => {
          if (!handle.cut) onEvent(e);
        });
        return new Promise<void>((resolve) => {
          const end = (): void => {
            unfollow();
            resolve();
          };
          if (signal.aborted) end();
          else signal.addEventListener('abort', end, { once: true });
        });
      },
    } satisfies ListWatcher<Lease>,
    async create(lease: Lease) {
      if (handle.cut) throw new KindError('Unavailable', 'cut off');
      const name = lease.metadata.name ?? '';
      if (self.store.has(name)) throw new KindError('AlreadyExists', `${name} exists`);
      const stored = clone(lease);
      stored.metadata.resourceVersion = self.bump();
      self.store.set(name, stored);
      self.record(id, 'create', stored, 'ADDED');
      return clone(stored);
    },
    async update(lease: Lease) {
      if (handle.cut) throw new KindError('Unavailable', 'cut off');
      const name = lease.metadata.name ?? '';
      const cur = self.store.get(name);
      if (!cur) throw new KindError('NotFound', `${name} not found`);
      if (lease.metadata.resourceVersion !== cur.metadata.resourceVersion)
        throw new KindError('Conflict', `${name} changed`);
      const stored = clone(lease);
      stored.metadata.resourceVersion = self.bump();
      self.store.set(name, stored);
      self.record(id, 'update', stored, 'MODIFIED');
      return clone(stored);
    },
    async delete(name: string) {
      if (handle.cut) throw new KindError('Unavailable', 'cut off');
      const cur = self.store.get(name);
      if (!cur) return;
      self.store.delete(name);
      const gone = clone(cur);
      gone.metadata.resourceVersion = self.bump();
      self.record(id, 'delete', gone, 'DELETED');
    },
  };
  return handle;
}
