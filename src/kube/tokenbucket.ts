/**
 * A token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter): `qps` tokens per second, at most
 * `burst` saved up. `acquire()` waits for a token; waiters are served in arrival order, so one busy caller
 * cannot starve the rest. One addition: a `low` priority waiter is served only when no `normal` one waits.
 * The operator reads ConfigMaps and Secrets by GET where a kubelet watches them (at no cost to its client's
 * rate), so thousands of pods naming missing objects queue thousands of GETs; at `low` they only take what
 * pod status writes and the rest leave over. Time and sleeping come from the Clock, so tests run on a
 * FakeClock.
 */
import type { Clock } from '../util/clock.js';
import { KindError } from '../util/errors.js';

export type Priority = 'normal' | 'low';

export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly waiting: Record<Priority, (() => void)[]> = { normal: [], low: [] };
  private pumping = false;

  constructor(
    private readonly clock: Clock,
    readonly qps: number,
    readonly burst: number,
  ) {
    if (!(qps > 0) || !(burst >= 1)) {
      throw new KindError(
        'InvalidArgument',
        `token bucket needs qps > 0 and burst >= 1 (got ${qps}, ${burst})`,
      );
    }
    this.tokens = burst;
    this.last = clock.now();
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }

  /** Takes a token if one is available now and nobody waits, without waiting. */
  tryAcquire(): boolean {
    this.refill();
    if (this.tokens >= 1 && !this.pumping) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }

  /**
   * Resolves when a token was taken. Calls of one priority are served first come, first served; `low` ones
   * only while no `normal` one waits.
   */
  acquire(priority: Priority = 'normal'): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.waiting[priority].push(resolve);
      void this.pump();
    });
  }

  /** Hands out tokens to the waiters as they come in, `normal` first; one pump runs at a time. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.waiting.normal.length + this.waiting.low.length > 0) {
        this.refill();
        if (this.tokens < 1) {
          // Chosen after the sleep: a `normal` waiter that came meanwhile goes first.
          await this.clock.sleep(Math.max(1, Math.ceil(((1 - this.tokens) / this.qps) * 1000)));
          continue;
        }
        this.tokens -= 1;
        (this.waiting.normal.shift() ?? this.waiting.low.shift())!();
      }
    } finally {
      this.pumping = false;
    }
  }
}

/** No limit at all (benchmarks lift client QPS limits on both sides). */
export class Unlimited {
  tryAcquire(): boolean {
    return true;
  }
  acquire(_priority?: Priority): Promise<void> {
    return Promise.resolve();
  }
}

export type RateLimiter = Pick<TokenBucket, 'acquire' | 'tryAcquire'>;
