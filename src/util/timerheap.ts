/**
 * Pending timers in one binary min-heap, earliest due first and equal due times in creation order. Every
 * timer of the process lives in one: the FakeClock fires its heap as it is advanced, and a TimerQueue
 * (timerqueue.ts) keeps one underlying timer armed for its heap's earliest entry: the RealClock's on a Node
 * timeout, the prober's on its Clock. A Node timeout per timer (every pod has a resync timer and probe
 * tickers) costs far more memory than an entry here: one small object that is also its own cancel handle, and its callback is called with the entry's
 * argument, so a caller with many timers can share one function instead of a closure per timer.
 *
 * Invariants: an entry is in the heap exactly while it is pending (`index >= 0`); cancelling a fired or
 * cancelled entry does nothing. add, cancel and taking the earliest entry are O(log n).
 */

/** A pending (or spent) timer; `cancel` removes it if it has not fired yet. */
export class TimerEntry<T = unknown> {
  /** Position in the heap; -1 once fired or cancelled. */
  index = -1;

  constructor(
    private readonly owner: TimerHeap,
    /** Due time (the owner's clock, ms). */
    readonly at: number,
    readonly seq: number,
    readonly fn: (arg: T) => void,
    readonly arg: T,
  ) {}

  cancel(): void {
    this.owner.remove(this as TimerEntry);
  }

  /** Runs the callback (the entry must have been taken from the heap first). */
  run(): void {
    this.fn(this.arg);
  }
}

/** Earlier due time first; equal due times in creation order. */
const before = (a: TimerEntry, b: TimerEntry): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

const call = (fn: () => void): void => fn();

export class TimerHeap {
  private readonly heap: TimerEntry[] = [];
  private seq = 0;

  /** `onEmpty` is called when a cancellation leaves the heap empty (an owner may disarm its clock timer). */
  constructor(private readonly onEmpty?: () => void) {}

  /** Pending entries. */
  get size(): number {
    return this.heap.length;
  }

  /** The sequence number the next entry will get: entries added from now on have one at least this. */
  get nextSeq(): number {
    return this.seq;
  }

  /** A timer calling `fn(arg)` at `at`. */
  add<T>(at: number, fn: (arg: T) => void, arg: T): TimerEntry<T> {
    const e = new TimerEntry<T>(this, at, this.seq++, fn, arg);
    this.heap.push(e as TimerEntry);
    this.siftUp(this.heap.length - 1, e as TimerEntry);
    return e;
  }

  /** A timer calling `fn()` at `at`. */
  addCallback(at: number, fn: () => void): TimerEntry<() => void> {
    return this.add(at, call, fn);
  }

  /** Removes a pending entry; nothing for a fired or cancelled one. */
  remove(e: TimerEntry): void {
    if (!this.take(e)) return;
    if (this.heap.length === 0) this.onEmpty?.();
  }

  /** The earliest pending entry, if any (not removed). */
  peek(): TimerEntry | undefined {
    return this.heap[0];
  }

  /**
   * Removes and returns the earliest entry when it is due at `now` and older than `seqLimit` (entries
   * created after a batch began can be kept for the next one); the caller runs it.
   */
  takeDue(now: number, seqLimit = Infinity): TimerEntry | undefined {
    const top = this.heap[0];
    if (top === undefined || top.at > now || top.seq >= seqLimit) return undefined;
    this.take(top);
    return top;
  }

  private take(e: TimerEntry): boolean {
    const i = e.index;
    if (i < 0 || this.heap[i] !== e) return false;
    e.index = -1;
    const last = this.heap.pop()!;
    if (i < this.heap.length) {
      const parent = (i - 1) >> 1;
      if (i > 0 && before(last, this.heap[parent]!)) this.siftUp(i, last);
      else this.siftDown(i, last);
    }
    return true;
  }

  private siftUp(start: number, t: TimerEntry): void {
    const h = this.heap;
    let i = start;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = h[parent]!;
      if (!before(t, p)) break;
      h[i] = p;
      p.index = i;
      i = parent;
    }
    h[i] = t;
    t.index = i;
  }

  private siftDown(start: number, t: TimerEntry): void {
    const h = this.heap;
    const n = h.length;
    let i = start;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && before(h[child + 1]!, h[child]!)) child++;
      const c = h[child]!;
      if (!before(c, t)) break;
      h[i] = c;
      c.index = i;
      i = child;
    }
    h[i] = t;
    t.index = i;
  }
}
