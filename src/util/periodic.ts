/**
 * Named loops that each run a function every period after its previous run ended (never overlapping), on an
 * injected Clock, until stopped: the kubelet's wait.Until loops for relist, housekeeping and status sync.
 */
import type { Clock, TimerHandle } from './clock.js';
import { errorMessage } from './errors.js';

export interface PeriodicLoopsDeps {
  clock: Clock;
  /** Called with each run's promise, so an owner can wait for runs in flight. */
  track: (p: Promise<unknown>) => void;
  /** A run that throws is logged and the loop goes on. */
  onError: (name: string, err: string) => void;
}

export class PeriodicLoops<Name extends string> {
  private readonly timers = new Map<Name, TimerHandle>();
  private stopped = false;

  constructor(private readonly d: PeriodicLoopsDeps) {}

  every(name: Name, periodMs: number, fn: () => Promise<void> | void): void {
    const arm = (): void => {
      if (this.stopped) return;
      this.timers.set(
        name,
        this.d.clock.setTimer(periodMs, () => {
          this.timers.delete(name);
          if (this.stopped) return;
          this.d.track(
            Promise.resolve()
              .then(fn)
              .catch((err: unknown) => this.d.onError(name, errorMessage(err)))
              .finally(arm),
          );
        }),
      );
    };
    arm();
  }

  /** Cancels every pending timer; runs in flight finish but do not re-arm. */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
  }
}
