/**
 * Many timers behind one: a TimerHeap whose earliest entry is kept armed on a single underlying timer.
 * The RealClock keeps every timer of the process this way on one Node timeout; the probe workers and the pod
 * workers keep theirs this way on one timer of their Clock (`timerQueueFor`). An entry costs one small
 * object, and a caller with many timers can share one callback that gets the entry's argument, so no closure
 * is made per timer either (a closure and its context are about 120 bytes; every pod has a pending resync
 * and a probe tick). Timing is the clock's: under a FakeClock each entry still runs at its own due time.
 *
 * When the underlying timer fires, every entry due by then runs in due order, equal due times in creation
 * order, except entries created by that batch's own callbacks: they wait for the next underlying timer (on
 * a real clock the next turn of the event loop, as a 0 ms setTimeout; on a FakeClock the same `advance`, at
 * their own due time). A callback that throws does not stop the batch: its error goes to `onError`.
 *
 * Invariant: the underlying timer is armed iff entries are pending (outside a batch), for a time no later
 * than the earliest; one that fires early (a cancelled entry, or a delay longer than it can hold) finds
 * nothing due and arms again.
 */
import { TimerHeap, type TimerEntry } from './timerheap.js';

/** What the queue arms: a clock's `now` and one-shot timer (a Clock satisfies it). */
export interface TimerSource {
  now(): number;
  setTimer(ms: number, fn: () => void): { cancel(): void };
}

function rethrowLater(err: unknown): void {
  process.nextTick(() => {
    throw err;
  });
}

export class TimerQueue {
  private readonly heap = new TimerHeap(() => this.disarm());
  private armed: { cancel(): void } | undefined;
  /** Due time the underlying timer is armed for (Infinity when none is). */
  private armedAt = Infinity;
  private firing = false;

  /** `onError` gets what a callback threw (default: rethrown on its own, as an uncaught timer error). */
  constructor(
    private readonly source: TimerSource,
    private readonly onError: (err: unknown) => void = rethrowLater,
  ) {}

  /** Calls `fn(arg)` once after `ms` (the source's time). The entry is the handle that cancels it. */
  setTimer<T>(ms: number, fn: (arg: T) => void, arg: T): TimerEntry<T> {
    const e = this.heap.add(this.source.now() + Math.max(0, ms), fn, arg);
    this.armFor(e.at);
    return e;
  }

  /** Calls `fn()` once after `ms`. */
  setCallback(ms: number, fn: () => void): TimerEntry<() => void> {
    const e = this.heap.addCallback(this.source.now() + Math.max(0, ms), fn);
    this.armFor(e.at);
    return e;
  }

  /** Pending entries. */
  get size(): number {
    return this.heap.size;
  }

  /** Arms for a new entry due at `at` when it is the earliest (a batch arms once, when it ends). */
  private armFor(at: number): void {
    if (!this.firing && at < this.armedAt) this.arm(at);
  }

  private arm(at: number): void {
    this.armed?.cancel();
    this.armedAt = at;
    this.armed = this.source.setTimer(at - this.source.now(), () => this.fire());
  }

  private disarm(): void {
    this.armed?.cancel();
    this.armed = undefined;
    this.armedAt = Infinity;
  }

  private fire(): void {
    this.armed = undefined;
    this.armedAt = Infinity;
    this.firing = true;
    const now = this.source.now();
    const limit = this.heap.nextSeq;
    try {
      for (let next = this.heap.takeDue(now, limit); next; next = this.heap.takeDue(now, limit)) {
        try {
          next.run();
        } catch (err) {
          this.onError(err);
        }
      }
    } finally {
      this.firing = false;
      const earliest = this.heap.peek();
      if (earliest) this.arm(earliest.at);
    }
  }
}

const queues = new WeakMap<TimerSource, TimerQueue>();

/** The timer queue of a clock shared by its many-timer users: one per clock, made on first use, gone with it. */
export function timerQueueFor(clock: TimerSource): TimerQueue {
  let q = queues.get(clock);
  if (!q) {
    q = new TimerQueue(clock);
    queues.set(clock, q);
  }
  return q;
}
