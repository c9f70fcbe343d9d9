/**
 * The pod churn of the chaos scenarios: one pod created per tick, and once `maxAlive` are alive the oldest
 * one deleted on the same tick, so the set of pods keeps turning over at a steady rate while whatever the
 * scenario breaks happens. Pods are deleted at any stage (pending, starting, running), which is the point.
 * Requests run in the background with at most `concurrency` in flight; a failed request is counted and
 * retried on a later tick (creates keep their name, so a create whose answer was lost is not doubled).
 */
export interface ChurnOptions {
  /** Stop creating after this many pods (default: until stop()). */
  total?: number;
  maxAlive: number;
  /** Ticks per second. */
  ratePerSecond: number;
  concurrency?: number;
  /** The name of pod number `i`. */
  name(i: number): string;
  /** Creates pod number `i`. */
  create(name: string, i: number): Promise<void>;
  delete(name: string): Promise<void>;
  /** Called after the n-th pod was created (not awaited). */
  onCreated?(n: number): void;
}

export class Churn {
  created = 0;
  deleted = 0;
  createFailures = 0;
  deleteFailures = 0;
  startedAt = 0;
  finishedAt = 0;
  /** Names alive (created, delete not yet requested), oldest first. */
  readonly alive: string[] = [];
  private next = 0;
  private inFlight = 0;
  private stopped = false;
  private readonly retryCreate: number[] = [];
  private readonly retryDelete: string[] = [];

  constructor(private readonly o: ChurnOptions) {}

  stop(): void {
    this.stopped = true;
  }

  /** Resolves once `total` pods were created (or stop() was called) and every request has finished. */
  async run(): Promise<void> {
    this.startedAt = Date.now();
    const tickMs = 1000 / this.o.ratePerSecond;
    const limit = this.o.concurrency ?? 8;
    let due = Date.now();
    while (!this.stopped && (this.o.total === undefined || this.created < this.o.total)) {
      if (this.inFlight < limit) {
        const i = this.retryCreate.shift() ?? this.next++;
        if (this.o.total === undefined || i < this.o.total) this.spawn(() => this.createOne(i));
      }
      if (this.alive.length > this.o.maxAlive || this.retryDelete.length > 0) {
        const name = this.retryDelete.shift() ?? this.alive.shift();
        if (name !== undefined && this.inFlight < limit) this.spawn(() => this.deleteOne(name));
        else if (name !== undefined) this.retryDelete.push(name);
      }
      due += tickMs;
      await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
    }
    while (this.inFlight > 0) await new Promise((r) => setTimeout(r, 20));
    this.finishedAt = Date.now();
  }

  private spawn(fn: () => Promise<void>): void {
    this.inFlight++;
    void fn().finally(() => this.inFlight--);
  }

  private async createOne(i: number): Promise<void> {
    const name = this.o.name(i);
    try {
      await this.o.create(name, i);
    } catch (err) {
      // AlreadyExists: an earlier attempt whose answer was lost got through after all.
      if ((err as { kind?: string }).kind !== 'AlreadyExists') {
        this.createFailures++;
        this.retryCreate.push(i);
        return;
      }
    }
    this.alive.push(name);
    this.created++;
    this.o.onCreated?.(this.created);
  }

  private async deleteOne(name: string): Promise<void> {
    try {
      await this.o.delete(name);
      this.deleted++;
    } catch (err) {
      if ((err as { kind?: string }).kind === 'NotFound') {
        this.deleted++;
        return;
      }
      this.deleteFailures++;
      this.retryDelete.push(name);
    }
  }
}
