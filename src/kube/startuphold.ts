/**
 * Holds back a process's writes that can wait while its nodes start. A hundred VirtualNodes starting at once
 * each send what makes them Ready (the Node, created Ready) beside what can come a moment later: five Events
 * each (Starting, three pressure conditions, NodeReady, as the kubelet), the Lease, and, once a node has
 * started, its VirtualNode's status and its pods' list and watch. On a busy API server those made every
 * node's registration wait. Two holds use this (ManagedNodeDeps): Events wait until the starting nodes have
 * posted their first status (`eventHold`), and a new Node's first Lease waits until the nodes starting have
 * registered (`leaseHold`). Nothing is dropped, and both waits are bounded: a node counts as starting for at
 * most `maxMs`, and a waiter waits at most `maxMs` at a time.
 */
import type { Clock } from '../util/clock.js';

export class StartupHold {
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
