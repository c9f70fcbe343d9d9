/**
 * Interning: values that many objects hold equal copies of are kept once. The status manager's cache and the
 * pod informer use it for what pods have in common: most of a pod's objects have an identical twin in
 * another pod.
 *
 * Values are identified by their JSON text and deep-frozen when first stored: the holders' contract is that
 * what they keep is never mutated, only replaced, and a shared value that someone modified would change
 * other pods, so a mistaken write throws instead. The table is bounded: two generations of at most
 * `max` entries each; a value not asked for during a whole generation is dropped (it stays alive, shared,
 * in the statuses that hold it; a later equal value simply becomes a new shared instance).
 */
export const DEFAULT_INTERN_ENTRIES = 4096;

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

export class Interner {
  private current = new Map<string, unknown>();
  private previous = new Map<string, unknown>();
  /**
   * Every object this table ever handed out as a shared instance. Asked for one of them again (a status
   * that kept its conditions, a pod version whose unchanged parts the informer shared with the last one),
   * `value` answers it as it is, without writing its JSON text and hashing that; such a value stays the
   * shared instance even after its generation was dropped.
   */
  private readonly handedOut = new WeakSet<object>();

  constructor(private readonly max = DEFAULT_INTERN_ENTRIES) {}

  /** The shared, frozen instance equal to `v` (by JSON text); `v` itself when it is not an object. */
  value<T>(v: T): T {
    if (typeof v !== 'object' || v === null) return v;
    if (this.handedOut.has(v)) return v;
    const shared = this.lookup(JSON.stringify(v), v, true);
    this.handedOut.add(shared as object);
    return shared;
  }

  /** The shared instance of a string (one copy of e.g. an image name across a node's pods). */
  string(s: string | undefined): string | undefined {
    return s === undefined ? undefined : this.lookup(s, s, false);
  }

  /** Entries in both generations (tests). */
  get size(): number {
    return this.current.size + this.previous.size;
  }

  private lookup<T>(key: string, v: T, freeze: boolean): T {
    const hit = this.current.get(key);
    if (hit !== undefined) return hit as T;
    const old = this.previous.get(key);
    const shared = old !== undefined ? (old as T) : freeze ? deepFreeze(v) : v;
    if (this.current.size >= this.max) {
      this.previous = this.current;
      this.current = new Map();
    }
    this.current.set(key, shared);
    return shared;
  }
}

/**
 * The process's interner: every node's status manager and the pod informer share it, so equal parts of
 * pods on different nodes are kept once too, and one bounded table serves them all.
 */
export const processInterner = new Interner(8192);
