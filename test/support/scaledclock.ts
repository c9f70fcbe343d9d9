/**
 * A clock that runs `factor` times faster than the real one, for a test that must see something the kubelet
 * does after minutes (a service-account token refresh after 80 % of a 10-minute life) in seconds. Time starts
 * at the real now; timers and sleeps are shortened by the same factor.
 */
import { RealClock, type Clock, type TimerHandle } from '../../src/util/clock.js';

export class ScaledClock implements Clock {
  private readonly real = new RealClock();
  private readonly start = Date.now();

  constructor(private readonly factor: number) {
    if (!(factor >= 1)) throw new Error(`ScaledClock factor must be >= 1, got ${factor}`);
  }

  now(): number {
    return this.start + (Date.now() - this.start) * this.factor;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    return this.real.setTimer(ms / this.factor, fn);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.real.sleep(ms / this.factor, signal);
  }
}
