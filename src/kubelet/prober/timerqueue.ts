/**
 * One clock timer for all the prober's timers on a Clock. Every probe worker always has one timer pending
 * (its start jitter, then its ticker), and a clock timer costs several objects (the handle, its cancel
 * closure, the clock's own record, the callback's closure); in a TimerQueue (src/util/timerqueue.ts) on the
 * worker's Clock a pending timer is one small entry, and the callback is a shared function called with the
 * entry's argument, so no closure is created per timer either. Timing is the clock's: under a FakeClock each
 * entry still runs at its own due time.
 */
import type { Clock } from '../../util/clock.js';
import type { TimerEntry } from '../../util/timerheap.js';
import { TimerQueue } from '../../util/timerqueue.js';

export { TimerQueue };

/** A pending (or spent) timer of a TimerQueue; `cancel` removes it if it has not fired yet. */
export type QueuedTimer<T = unknown> = TimerEntry<T>;

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
