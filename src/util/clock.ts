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

export class RealClock implements Clock {
  now(): number {
    return Date.now();
  }
  setTimer(ms: number, fn: () => void): TimerHandle {
    return longTimeout(ms, fn, false);
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

interface FakeTimer {
  at: number;
  seq: number;
  fn: () => void;
  /** Cancelled or fired: no longer pending. */
  done: boolean;
}

/** Earlier due time first; equal due times in creation order. */
const before = (a: FakeTimer, b: FakeTimer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/**
 * A clock that moves only when told to. `advance(ms)` fires due timers in time order, each seeing `now()`
 * equal to its own due time, so a chain of timers behaves as it would in real time.
 *
 * Timers live in a binary min-heap: setTimer and each firing are O(log n), cancel is O(1) (the entry is
 * dropped lazily when it reaches the top, and the heap is compacted once cancelled entries outnumber live
 * ones), so a simulation with 100,000 pending timers stays fast.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private heap: FakeTimer[] = [];
  private live = 0;

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const timer: FakeTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, done: false };
    this.push(timer);
    this.live++;
    return {
      cancel: () => {
        if (timer.done) return;
        timer.done = true;
        this.live--;
        if (this.heap.length > 64 && this.heap.length > 2 * this.live) this.compact();
      },
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const h = this.setTimer(ms, () => {
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

  /** Number of timers that have neither fired nor been cancelled. */
  pendingTimers(): number {
    return this.live;
  }

  /** Moves time forward, firing every timer due on the way (including ones those timers create). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next = this.heap[0];
      while (next?.done) {
        this.pop();
        next = this.heap[0];
      }
      if (!next || next.at > target) break;
      this.pop();
      this.current = Math.max(this.current, next.at);
      next.done = true;
      this.live--;
      next.fn();
    }
    this.current = target;
  }

  /** Sets the time (never backwards) and fires what became due. */
  set(time: number): void {
    this.advance(Math.max(0, time - this.current));
  }

  private push(t: FakeTimer): void {
    const h = this.heap;
    let i = h.length;
    h.push(t);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(t, h[parent]!)) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = t;
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop();
    if (last === undefined || h.length === 0) return;
    this.siftDown(0, last);
  }

  private siftDown(start: number, t: FakeTimer): void {
    const h = this.heap;
    const n = h.length;
    let i = start;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(h[child + 1]!, h[child]!)) child++;
      if (!before(h[child]!, t)) break;
      h[i] = h[child]!;
      i = child;
    }
    h[i] = t;
  }

  private compact(): void {
    this.heap = this.heap.filter((t) => !t.done);
    for (let i = (this.heap.length >> 1) - 1; i >= 0; i--) this.siftDown(i, this.heap[i]!);
  }
}
