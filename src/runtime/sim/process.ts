/**
 * The main process of each simulated container, driven by the clock: it runs from start until its
 * behaviour's exit time, answers SIGTERM as its behaviour says, and dies at a stop's SIGKILL deadline, or
 * when the simulated kernel OOM-kills it: its declared memory usage (usage.ts) exceeds its memory limit
 * (exit 137, reason OOMKilled, finishedAt the moment it crossed). One timer per running container with a
 * finite run or a memory curve under a limit (at the natural exit, the OOM kill, or the next moment to look
 * again, whichever is first), one more while a stop waits on a SIGTERM-ignoring process.
 *
 * Also the sim's sense of time: nanosecond timestamps that are strictly increasing across the runtime (so
 * records created in the same fake millisecond still order), and cancellable delays for calls that take time.
 * A timestamp is kept as the clock reading `ms` and its stamp `offNs`, the nanoseconds it lies past
 * floor(ms) ms (0 unless readings had to be spread apart): `nanos(ms, offNs)` (records.ts) is the value.
 */
import type { Clock, TimerHandle } from '../../util/clock.js';
import { nanos, type ContainerRecord, type ExitRecord } from './records.js';
import { pendingResize, settleResize } from './resize.js';
import { nextMemoryEvent, startUsage } from './usage.js';

/** containerd's reason for an exit code that was not an OOM kill. */
export const reasonFor = (code: number): string => (code === 0 ? 'Completed' : 'Error');

/** What waits on a running process: a stop's pending SIGKILL (and when it fires), and who waits for the exit. */
interface Waiting {
  kill: { timer: TimerHandle; atMs: number } | undefined;
  waiters: ((err?: Error) => void)[];
}

export class Processes {
  private readonly delays = new Set<{ handle: TimerHandle; reject: (e: Error) => void }>();
  /** Only the containers something waits on, beside the records: most never have anything. */
  private readonly waiting = new Map<ContainerRecord, Waiting>();
  private lastNs = 0n;

  /** `changed` is told of every state change (the store's revision, store.ts). */
  constructor(
    private readonly clock: Clock,
    private readonly changed: () => void = () => undefined,
  ) {}

  /** Nanoseconds since the epoch, strictly increasing across calls. */
  nowNs(): bigint {
    const ms = this.clock.now();
    return nanos(ms, this.stamp(ms));
  }

  /** The stamp of clock reading `ms`: its timestamp is later than every earlier one. */
  stamp(ms: number): number {
    const base = BigInt(Math.floor(ms)) * 1_000_000n;
    const ns = base > this.lastNs ? base : this.lastNs + 1n;
    this.lastNs = ns;
    return Number(ns - base);
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

  /** Created -> running; schedules the natural exit or OOM kill. */
  start(c: ContainerRecord): void {
    c.state = 'running';
    this.changed();
    c.startedMs = this.clock.now();
    c.startedOffNs = this.stamp(c.startedMs);
    settleResize(c, c.startedMs);
    startUsage(c);
    this.schedule(c);
  }

  /**
   * A container adopted running (adopt.ts): it has run since `startedMs`, maybe long before now. Its natural
   * exit or OOM kill counts from then; one already due comes at the next tick, not during the adoption.
   */
  adopt(c: ContainerRecord, startedMs: number): void {
    c.state = 'running';
    this.changed();
    c.startedMs = startedMs;
    c.startedOffNs = 0;
    startUsage(c);
    c.exitTimer = this.clock.setTimer(0, () => this.wake(c));
  }

  /** A container adopted exited (adopt.ts): it ran from `startedMs` until `exit`; nothing is scheduled. */
  adoptExited(c: ContainerRecord, startedMs: number, exit: Omit<ExitRecord, 'offNs'>): void {
    c.state = 'exited';
    this.changed();
    c.startedMs = startedMs;
    c.startedOffNs = 0;
    c.exit = { ...exit, offNs: 0 };
  }

  /** After a resize of a running container: its memory limit, and so its OOM kill, may have moved. */
  resized(c: ContainerRecord): void {
    if (c.state === 'running' && c.behaviour.usage?.memory) this.schedule(c);
  }

  /** A start that failed after creation: containerd leaves the container exited 128, reason StartError. */
  failStart(c: ContainerRecord, message: string): void {
    const ms = this.clock.now();
    c.state = 'exited';
    this.changed();
    c.exit = { ms, offNs: this.stamp(ms), code: 128, reason: 'StartError', message };
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
    const atMs = this.clock.now() + timeoutSeconds * 1000;
    const w = this.waitingOn(c);
    if (atMs < (w.kill?.atMs ?? Infinity)) {
      w.kill?.timer.cancel();
      w.kill = { timer: this.clock.setTimer(timeoutSeconds * 1000, () => this.exit(c, 137, 'Error')), atMs };
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
      this.waitingOn(c).waiters.push((err) => (err ? reject(err) : resolve())),
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
    for (const c of containers) c.exitTimer?.cancel();
    for (const c of [...this.waiting.keys()]) this.settle(c, err);
  }

  /**
   * (Re)arms the exit timer at the earliest of: the natural exit, the OOM kill (which wins a tie), a look
   * further along a memory expression, a pending resize taking effect (it may move the limit). Exits at once
   * when one of them is due now.
   */
  private schedule(c: ContainerRecord): void {
    const now = this.clock.now();
    c.exitTimer?.cancel();
    c.exitTimer = undefined;
    const b = c.behaviour;
    const natural = b.exitAfterMs === undefined ? Infinity : c.startedMs + b.exitAfterMs;
    let wake = b.usage?.memory ? nextMemoryEvent(c) : undefined;
    const pending = b.usage?.memory ? pendingResize(c) : undefined;
    if (pending && (!wake || pending.atMs < wake.atMs)) wake = { atMs: pending.atMs, oom: false };
    if (wake && wake.atMs <= natural) {
      if (wake.oom && wake.atMs <= now) this.exit(c, 137, 'OOMKilled');
      else c.exitTimer = this.clock.setTimer(wake.atMs - now, () => this.wake(c));
    } else if (natural <= now) {
      this.naturalExit(c);
    } else if (natural !== Infinity) {
      c.exitTimer = this.clock.setTimer(natural - now, () => this.naturalExit(c));
    }
  }

  private wake(c: ContainerRecord): void {
    c.exitTimer = undefined;
    settleResize(c, this.clock.now());
    this.schedule(c);
  }

  private naturalExit(c: ContainerRecord): void {
    const b = c.behaviour;
    this.exit(c, b.exitCode, b.oomKilled ? 'OOMKilled' : reasonFor(b.exitCode));
  }

  private exit(c: ContainerRecord, code: number, reason: string): void {
    if (c.state !== 'running') return;
    const ms = this.clock.now();
    c.state = 'exited';
    this.changed();
    c.exit = { ms, offNs: this.stamp(ms), code, reason, message: '' };
    c.exitTimer?.cancel();
    c.exitTimer = undefined;
    this.settle(c);
  }

  private waitingOn(c: ContainerRecord): Waiting {
    let w = this.waiting.get(c);
    if (!w) this.waiting.set(c, (w = { kill: undefined, waiters: [] }));
    return w;
  }

  /** The process is gone (or the runtime closing): no SIGKILL to send, and the waits are over. */
  private settle(c: ContainerRecord, err?: Error): void {
    const w = this.waiting.get(c);
    if (!w) return;
    this.waiting.delete(c);
    w.kill?.timer.cancel();
    for (const f of w.waiters) f(err);
  }
}
