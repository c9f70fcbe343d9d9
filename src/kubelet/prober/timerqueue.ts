/**
 * One clock timer for all the prober's timers on a Clock. Every probe worker always has one timer pending
 * (its start jitter, then its ticker), and a clock timer costs several objects (the handle, its cancel
 * closure, the clock's own record, the callback's closure); here a pending timer is one small entry in a
 * binary min-heap, and the callback is a shared function called with the entry's argument, so no closure
 * is created per timer either.
 *
 * Timing is the clock's: the queue keeps one clock timer armed for its earliest entry and, when it fires,
 * runs every entry due by `clock.now()` in due-time order, equal due times in scheduling order, as a
 * FakeClock does for its own timers; so under a FakeClock each entry still runs at its own due time.
 *
 * The heap is the process's one timer heap (src/util/timerheap.ts). Invariant: the clock timer is armed
 * iff the heap is not empty (a fire that finds nothing due re-arms), for a time no later than the earliest
 * entry.
 */
import type { Clock, TimerHandle } from '../../util/clock.js';
import { TimerHeap, type TimerEntry } from '../../util/timerheap.js';

/** A pending (or spent) timer of a TimerQueue; `cancel` removes it if it has not fired yet. */
export type QueuedTimer<T = unknown> = TimerEntry<T>;

export class TimerQueue {
  private readonly heap = new TimerHeap(() => this.disarm());
  private armed: TimerHandle | undefined = undefined;
  /** Due time the clock timer is armed for (Infinity when none is). */
  private armedAt = Infinity;

  constructor(private readonly clock: Clock) {}

  /** Calls `fn(arg)` once after `ms` (the clock's time). The handle cancels it. */
  setTimer<T>(ms: number, fn: (arg: T) => void, arg: T): QueuedTimer<T> {
    const t = this.heap.add(this.clock.now() + Math.max(0, ms), fn, arg);
    if (t.at < this.armedAt) this.arm(t.at);
    return t;
  }

  /** Number of pending entries (not clock timers). */
  get size(): number {
    return this.heap.size;
  }

  private fire(): void {
    this.armed = undefined;
    this.armedAt = Infinity;
    try {
      const now = this.clock.now();
      for (let top = this.heap.takeDue(now); top; top = this.heap.takeDue(now)) top.run();
    } finally {
      const top = this.heap.peek();
      if (top && top.at < this.armedAt) this.arm(top.at);
    }
  }

  private arm(at: number): void {
    this.armed?.cancel();
    this.armedAt = at;
    this.armed = this.clock.setTimer(at - this.clock.now(), () => this.fire());
  }

  private disarm(): void {
    this.armed?.cancel();
    this.armed = undefined;
    this.armedAt = Infinity;
  }
}

const queues = new WeakMap<Clock, TimerQueue>();

/** The prober's timer queue of a clock (one per clock, created on first use, gone with the clock). */
export function timerQueueFor(clock: Clock): TimerQueue {
  let q = queues.get(clock);
  if (!q) {
    q = new TimerQueue(clock);
    queues.set(clock, q);
  }
  return q;
}
