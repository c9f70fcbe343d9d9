/**
 * Time comes from a Clock so that every decision can be replayed under a fake one. Pure code takes `now`
 * as a number argument; only the shell holds a Clock and creates timers through it.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after `ms`. The handle cancels it; cancelling a fired timer is a no-op. */
  setTimer(ms: number, fn: () => void): TimerHandle;
  /** Resolves after `ms` (or never, if the signal aborts first; then it rejects with the abort reason). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

import { TimerHeap } from './timerheap.js';
import { TimerQueue, type TimerSource } from './timerqueue.js';

/** setTimeout fires at once for delays over 2^31-1 ms (about 24.8 days); longer waits are chained. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** A timeout of any length; `ref` = whether it keeps the process alive. */
function longTimeout(ms: number, fn: () => void, ref: boolean): TimerHandle {
  let t: ReturnType<typeof setTimeout>;
  const due = Date.now() + Math.max(0, ms);
  const arm = (left: number): void => {
    t = setTimeout(
      () => {
        const rest = due - Date.now();
        if (rest > 0 && left > MAX_TIMEOUT_MS) arm(rest);
        else fn();
      },
      Math.min(Math.max(0, left), MAX_TIMEOUT_MS),
    );
    if (!ref) t.unref?.();
  };
  arm(Math.max(0, ms));
  return { cancel: () => clearTimeout(t) };
}

/** One unref'd Node timeout (delays past what setTimeout holds fire early; the TimerQueue re-arms). */
const nodeTimers: TimerSource = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, Math.min(Math.max(0, ms), MAX_TIMEOUT_MS));
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
};

/**
 * Wall-clock time. Timers share one TimerQueue on one Node timeout (timerqueue.ts), which does not keep
 * the process alive: a batch of due timers runs in due order, timers created by the batch wait for the
 * next turn of the event loop (as a 0 ms setTimeout would), and microtasks a callback queues run after the
 * batch (Node's own timers drain them after each callback: the order differs, nothing else). A callback
 * that throws does not stop the batch: the error is rethrown on its own, as an uncaught timer error would
 * be. `sleep` keeps the process alive for its duration.
 */
export class RealClock implements Clock {
  private readonly timers: TimerQueue;

  /** `onError` gets what a timer callback threw (default: rethrown on its own, as an uncaught error). */
  constructor(onError?: (err: unknown) => void) {
    this.timers = new TimerQueue(nodeTimers, onError);
  }

  now(): number {
    return Date.now();
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    return this.timers.setCallback(ms, fn);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = longTimeout(
        ms,
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        true,
      );
      const onAbort = () => {
        t.cancel();
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/**
 * `Clock.sleep` on the clock's own timers (setTimer): under a RealClock it never keeps the process alive,
 * for a wait nobody may be left to end (an Event write's retry, when no one closes its recorder). Rejects
 * with the abort reason when `signal` aborts first.
 */
export function sleepOnTimer(
  clock: Pick<Clock, 'setTimer'>,
  ms: number,
  signal?: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const h = clock.setTimer(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    const onAbort = () => {
      h.cancel();
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A clock that moves only when told to. `advance(ms)` fires due timers in time order, each seeing `now()`
 * equal to its own due time, so a chain of timers behaves as it would in real time.
 *
 * Timers live in a TimerHeap (setTimer, cancel and each firing O(log n)), so a simulation with 100,000
 * pending timers stays fast.
 */
export class FakeClock implements Clock {
  private current: number;
  private readonly timers = new TimerHeap();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    return this.timers.addCallback(this.current + Math.max(0, ms), fn);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOnTimer(this, ms, signal);
  }

  /** Number of timers that have neither fired nor been cancelled. */
  pendingTimers(): number {
    return this.timers.size;
  }

  /** Moves time forward, firing every timer due on the way (including ones those timers create). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (let next = this.timers.takeDue(target); next; next = this.timers.takeDue(target)) {
      this.current = Math.max(this.current, next.at);
      next.run();
    }
    this.current = target;
  }

  /** Sets the time (never backwards) and fires what became due. */
  set(time: number): void {
    this.advance(Math.max(0, time - this.current));
  }
}
