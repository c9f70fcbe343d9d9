/**
 * Holds a process's Event writes back while its nodes start. A hundred VirtualNodes starting at once send
 * five Events each (Starting, three pressure conditions, NodeReady, as the kubelet) beside the requests that
 * make them Ready (Node create, Lease, first status); on a busy API server the Events then make every node's
 * registration wait. Events are asynchronous anyway, so they go once the starting nodes have posted their
 * first status. Nothing is dropped: the recorders' queues keep filling (bounded as always), and both holds
 * are bounded, a node counts as starting for at most `maxMs`, and a recorder waits at most `maxMs` at a time.
 */
import type { Clock } from '../util/clock.js';

export class EventHold {
  private starting = 0;
  private waiters: (() => void)[] = [];

  constructor(
    private readonly clock: Clock,
    private readonly maxMs = 10_000,
  ) {}

  /** A node is starting until `started` settles (or maxMs has passed). */
  track(started: Promise<unknown>): void {
    this.starting++;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      timer.cancel();
      if (--this.starting > 0) return;
      const waiters = this.waiters;
      this.waiters = [];
      for (const w of waiters) w();
    };
    const timer = this.clock.setTimer(this.maxMs, finish);
    started.then(finish, finish);
  }

  /** Nodes starting now. */
  get count(): number {
    return this.starting;
  }

  /** Undefined when no node is starting; otherwise resolves when none is, or after maxMs. */
  wait(): Promise<void> | undefined {
    if (this.starting === 0) return undefined;
    return new Promise((resolve) => {
      const timer = this.clock.setTimer(this.maxMs, resolve);
      this.waiters.push(() => {
        timer.cancel();
        resolve();
      });
    });
  }
}
