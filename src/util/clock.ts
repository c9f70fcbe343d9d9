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

export class RealClock implements Clock {
  now(): number {
    return Date.now();
  }
  setTimer(ms: number, fn: () => void): TimerHandle {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const t = setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      const onAbort = () => {
        clearTimeout(t);
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
  cancelled: boolean;
}

/**
 * A clock that moves only when told to. `advance(ms)` fires due timers in time order, each seeing `now()`
 * equal to its own due time, so a chain of timers behaves as it would in real time.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: FakeTimer[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const timer: FakeTimer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
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
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward, firing every timer due on the way (including ones those timers create). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => !t.cancelled);
      let next: FakeTimer | undefined;
      for (const t of this.timers) {
        if (t.at <= target && (!next || t.at < next.at || (t.at === next.at && t.seq < next.seq))) next = t;
      }
      if (!next) break;
      this.current = Math.max(this.current, next.at);
      next.cancelled = true;
      next.fn();
    }
    this.current = target;
  }

  /** Sets the time (never backwards) and fires what became due. */
  set(time: number): void {
    this.advance(Math.max(0, time - this.current));
  }
}
