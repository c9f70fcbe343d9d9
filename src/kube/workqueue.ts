/**
 * A keyed work queue with client-go's guarantees, for controllers that sync by key:
 * - a key is never handed to two workers at once;
 * - adding a key that is already queued does nothing (updates coalesce);
 * - adding a key that is being processed queues it again once `done` is called;
 * - `addRateLimited` re-adds after a per-key exponential back-off (base doubling to max); `forget` resets it.
 * The sync function reads the latest object from a cache by key, so coalescing never loses an update.
 */
import type { Clock, TimerHandle } from '../util/clock.js';

export interface WorkQueueOptions {
  /** First retry delay in ms (client-go: 5 ms). */
  baseDelayMs?: number;
  /** Retry delay cap in ms (client-go: 1000 s; we cap at 5 min so a broken object is retried reasonably). */
  maxDelayMs?: number;
}

export class WorkQueue<K = string> {
  private readonly queue: K[] = [];
  private head = 0;
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly failures = new Map<K, number>();
  private readonly delayed = new Map<K, { at: number; timer: TimerHandle }>();
  private readonly waiters: ((key: K | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(
    private readonly clock: Clock,
    opts: WorkQueueOptions = {},
  ) {
    this.baseDelayMs = opts.baseDelayMs ?? 5;
    this.maxDelayMs = opts.maxDelayMs ?? 5 * 60_000;
  }

  /** Number of keys waiting to be handed out. */
  get length(): number {
    return this.queue.length - this.head;
  }

  add(key: K): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds the key after `delayMs`; an earlier pending delayed add of the same key wins. */
  addAfter(key: K, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    const at = this.clock.now() + delayMs;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    existing?.timer.cancel();
    const timer = this.clock.setTimer(delayMs, () => {
      this.delayed.delete(key);
      this.add(key);
    });
    this.delayed.set(key, { at, timer });
  }

  /** Re-adds after this key's next back-off delay. */
  addRateLimited(key: K): void {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    this.addAfter(key, Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** n));
  }

  /** How many times the key has been rate-limited since the last `forget`. */
  numRequeues(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: K): void {
    this.failures.delete(key);
  }

  /** Resolves with the next key, or undefined once the queue is shut down and drained. */
  get(): Promise<K | undefined> {
    const key = this.shift();
    if (key !== undefined) return Promise.resolve(key);
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks the key processed; if it was added meanwhile, it is queued again. */
  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) this.push(key);
  }

  /** Stops accepting keys; pending `get` calls resolve with undefined. Delayed adds are dropped. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const d of this.delayed.values()) d.timer.cancel();
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  private push(key: K): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queue.push(key);
  }

  private shift(): K | undefined {
    if (this.head >= this.queue.length) return undefined;
    const key = this.queue[this.head++] as K;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }
}

/**
 * Runs `workers` loops that take keys and call `sync`. A sync that throws is retried with back-off
 * (`addRateLimited`); one that succeeds resets the key's back-off. Resolves when the queue shuts down.
 */
export async function runWorkers<K>(
  queue: WorkQueue<K>,
  workers: number,
  sync: (key: K) => Promise<void>,
  onError: (key: K, err: unknown) => void = () => {},
): Promise<void> {
  const loop = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        await sync(key);
        queue.forget(key);
      } catch (err) {
        onError(key, err);
        queue.addRateLimited(key);
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, workers) }, loop));
}
