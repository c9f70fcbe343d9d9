/**
 * The main process of each simulated container, driven by the clock: it runs from start until its
 * behaviour's exit time, answers SIGTERM as its behaviour says, and dies at a stop's SIGKILL deadline. One
 * timer per running container with a finite run, one more while a stop waits on a SIGTERM-ignoring process.
 *
 * Also the sim's sense of time: nanosecond timestamps that are strictly increasing across the runtime (so
 * records created in the same fake millisecond still order), and cancellable delays for calls that take time.
 */
import type { Clock, TimerHandle } from '../../util/clock.js';
import type { ContainerRecord } from './store.js';

/** containerd's reason for an exit code that was not an OOM kill. */
export const reasonFor = (code: number): string => (code === 0 ? 'Completed' : 'Error');

export class Processes {
  private readonly delays = new Set<{ handle: TimerHandle; reject: (e: Error) => void }>();
  private lastNs = 0n;

  constructor(private readonly clock: Clock) {}

  /** Nanoseconds since the epoch, strictly increasing across calls. */
  nowNs(): bigint {
    let ns = BigInt(Math.floor(this.clock.now())) * 1_000_000n;
    if (ns <= this.lastNs) ns = this.lastNs + 1n;
    this.lastNs = ns;
    return ns;
  }

  /** Waits `ms` on the clock; close() rejects it. */
  delay(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const entry = {
        handle: this.clock.setTimer(ms, () => {
          this.delays.delete(entry);
          resolve();
        }),
        reject,
      };
      this.delays.add(entry);
    });
  }

  /** Created -> running; schedules the natural exit. */
  start(c: ContainerRecord): void {
    const b = c.behaviour;
    c.state = 'running';
    c.startedAt = this.nowNs();
    c.startedMs = this.clock.now();
    if (b.exitAfterMs === 0) this.naturalExit(c);
    else if (b.exitAfterMs !== undefined)
      c.exitTimer = this.clock.setTimer(b.exitAfterMs, () => this.naturalExit(c));
  }

  /** A start that failed after creation: containerd leaves the container exited 128, reason StartError. */
  failStart(c: ContainerRecord, message: string): void {
    c.state = 'exited';
    c.finishedAt = this.nowNs();
    c.finishedMs = this.clock.now();
    c.exitCode = 128;
    c.reason = 'StartError';
    c.message = message;
  }

  /**
   * SIGTERM, then SIGKILL after `timeoutSeconds`; resolves when the process is gone. A process that honours
   * SIGTERM exits at once; one that ignores it runs on until its own exit or the deadline, whichever comes
   * first. Of two pending stops, the earlier deadline wins.
   */
  stop(c: ContainerRecord, timeoutSeconds: number): Promise<void> {
    if (c.state !== 'running') return Promise.resolve();
    const b = c.behaviour;
    if (!b.ignoresSigterm) {
      this.exit(c, b.sigtermExitCode, reasonFor(b.sigtermExitCode));
      return Promise.resolve();
    }
    if (!(timeoutSeconds > 0)) {
      this.exit(c, 137, 'Error');
      return Promise.resolve();
    }
    const killAt = this.clock.now() + timeoutSeconds * 1000;
    if (killAt < c.killAt) {
      c.killTimer?.cancel();
      c.killAt = killAt;
      c.killTimer = this.clock.setTimer(timeoutSeconds * 1000, () => this.exit(c, 137, 'Error'));
    }
    return this.waitForExit(c);
  }

  /** SIGKILL: exit 137 unless already exited. */
  kill(c: ContainerRecord): void {
    this.exit(c, 137, 'Error');
  }

  /** Resolves when the process exits or the container is forgotten; rejects if the runtime closes first. */
  waitForExit(c: ContainerRecord): Promise<void> {
    return new Promise((resolve, reject) =>
      (c.waiters ??= []).push((err) => (err ? reject(err) : resolve())),
    );
  }

  /** Kills the process (if running) and settles everything waiting on it: the record is about to go. */
  forget(c: ContainerRecord): void {
    this.kill(c);
    c.exitTimer?.cancel();
    this.settle(c);
  }

  /** Cancels every timer and delay; pending waits reject with `err`. */
  close(containers: Iterable<ContainerRecord>, err: Error): void {
    for (const d of this.delays) {
      d.handle.cancel();
      d.reject(err);
    }
    this.delays.clear();
    for (const c of containers) {
      c.exitTimer?.cancel();
      c.killTimer?.cancel();
      this.settle(c, err);
    }
  }

  private naturalExit(c: ContainerRecord): void {
    const b = c.behaviour;
    this.exit(c, b.exitCode, b.oomKilled ? 'OOMKilled' : reasonFor(b.exitCode));
  }

  private exit(c: ContainerRecord, code: number, reason: string): void {
    if (c.state !== 'running') return;
    c.state = 'exited';
    c.finishedAt = this.nowNs();
    c.finishedMs = this.clock.now();
    c.exitCode = code;
    c.reason = reason;
    c.exitTimer?.cancel();
    c.killTimer?.cancel();
    c.exitTimer = c.killTimer = undefined;
    c.killAt = Infinity;
    this.settle(c);
  }

  private settle(c: ContainerRecord, err?: Error): void {
    const waiters = c.waiters;
    if (!waiters) return;
    c.waiters = undefined;
    for (const w of waiters) w(err);
  }
}
