/**
 * A bounded table of shared values by key: equal things many holders keep (a node's pods allocated alike, the
 * simulated runtime's container specs, file heads in the in-memory pod directory) exist once. Holders replace a
 * shared value, never change it. Once the table holds `limit` values it starts over: the values already handed
 * out stay valid, only later sharing with them is lost, so no count of users has to be kept.
 */
export class SharedValues<T> {
  private readonly table = new Map<string, T>();

  constructor(private readonly limit: number) {}

  /** The shared value for `key`, made by `make` the first time; with no key, a value of its own. */
  get(key: string | undefined, make: () => T): T {
    if (key === undefined) return make();
    const hit = this.table.get(key);
    if (hit !== undefined) return hit;
    const value = make();
    if (this.table.size >= this.limit) this.table.clear();
    this.table.set(key, value);
    return value;
  }

  /** Keys held (tests). */
  get size(): number {
    return this.table.size;
  }
}
