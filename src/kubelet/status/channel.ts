/**
 * The status manager's update channel (kubelet: podStatusChannel, a `chan struct{}` of capacity one).
 * A send when a signal is already pending is dropped, so any burst of changes makes one signal and one
 * sync, and a slow sync never queues work behind it. No timers: the consumer awaits `wait()`.
 */
export class UpdateChannel {
  private pending = false;
  private readonly listeners = new Set<() => void>();
  private waiters: (() => void)[] = [];

  /**
   * @param onListenerError receives what a listener threw; a failing listener must not fail the
   * mutator that signalled.
   */
  constructor(private readonly onListenerError: (err: unknown) => void = () => undefined) {}

  /** Non-blocking send: sets the signal unless one is pending; wakes waiters and listeners on a set. */
  send(): void {
    if (this.pending) return;
    this.pending = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
    for (const l of this.listeners) {
      try {
        l();
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }

  /** Receive without blocking: clears the signal and says whether there was one. */
  take(): boolean {
    const had = this.pending;
    this.pending = false;
    return had;
  }

  /** Whether a signal is pending. */
  peek(): boolean {
    return this.pending;
  }

  /** Resolves once a signal is pending (at once if one is). Does not consume it. */
  wait(): Promise<void> {
    if (this.pending) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Calls `listener` on each empty -> signalled transition. Returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
