/**
 * A token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter): `qps` tokens per second, at most
 * `burst` saved up. `acquire()` waits for a token; waiters are served in arrival order, so one busy caller
 * cannot starve the rest. Time and sleeping come from the Clock, so tests run on a FakeClock.
 */
import type { Clock } from '../util/clock.js';
import { KindError } from '../util/errors.js';

export class TokenBucket {
  private tokens: number;
  private last: number;
  private tail: Promise<void> = Promise.resolve();

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

  /** Takes a token if one is available now, without waiting. */
  tryAcquire(): boolean {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }

  /** Resolves when a token was taken. Calls are served first come, first served. */
  acquire(): Promise<void> {
    const turn = this.tail.then(async () => {
      this.refill();
      if (this.tokens < 1) {
        await this.clock.sleep(Math.ceil(((1 - this.tokens) / this.qps) * 1000));
        this.refill();
      }
      this.tokens = Math.max(0, this.tokens - 1);
    });
    this.tail = turn;
    return turn;
  }
}

/** No limit at all (benchmarks lift client QPS limits on both sides). */
export class Unlimited {
  tryAcquire(): boolean {
    return true;
  }
  acquire(): Promise<void> {
    return Promise.resolve();
  }
}

export type RateLimiter = Pick<TokenBucket, 'acquire' | 'tryAcquire'>;
