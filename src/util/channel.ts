/**
 * A bounded FIFO with a non-blocking send, in the spirit of a buffered Go channel used with
 * `select { case ch <- v: default: }`: when full, `trySend` refuses and the caller decides (drop, count).
 * Receivers either take what is there (`tryReceive`, `drain`) or wait for the next value (`receive`).
 */
import { KindError } from './errors.js';

export class BoundedChannel<T> {
  readonly capacity: number;
  private readonly buffer: T[] = [];
  private readonly waiters: ((v: T) => void)[] = [];

  /** `capacity` must be a positive integer. */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new KindError('InvalidArgument', `channel capacity must be a positive integer: ${capacity}`);
    }
    this.capacity = capacity;
  }

  /** Number of buffered values. */
  get length(): number {
    return this.buffer.length;
  }

  /** Hands `v` to a waiting receiver or buffers it. Returns false (and drops nothing else) when full. */
  trySend(v: T): boolean {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter(v);
      return true;
    }
    if (this.buffer.length >= this.capacity) return false;
    this.buffer.push(v);
    return true;
  }

  /** The oldest buffered value, or undefined when empty. */
  tryReceive(): T | undefined {
    return this.buffer.shift();
  }

  /** Takes every buffered value, oldest first. */
  drain(): T[] {
    return this.buffer.splice(0, this.buffer.length);
  }

  /** Resolves with the next value; rejects with the signal's reason if it aborts first. */
  receive(signal?: AbortSignal): Promise<T> {
    if (this.buffer.length > 0) return Promise.resolve(this.buffer.shift() as T);
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const waiter = (v: T) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(v);
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal?.reason);
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
