/**
 * Cooperative time slicing for long chains of microtasks. Work that never waits for real I/O (pod syncs on
 * the simulated runtime) runs as one unbroken chain of promise callbacks, and the event loop cannot fire a
 * timer or read a socket until the chain ends (long stalls while thousands of pods start). A
 * `TimeSlicer` hands out a promise that resolves at once while the current slice is young, and otherwise
 * parks the caller until the loop has turned, so the loop turns at least every `sliceMs` without paying a
 * macrotask per call (which would cost CPU and break up the I/O batching).
 *
 * The slice belongs to the loop turn, not to the caller: parked callers are released by one macrotask per
 * turn, in the order they parked, only while that turn's slice lasts; the rest wait for the next turn. (Each
 * parked caller used to get a macrotask of its own, and each started a fresh slice: fifty parked pod syncs
 * made one check phase of half a second.)
 *
 * The clock is read only once a released caller has gone as far as it can: until it waits for real I/O,
 * parks again or ends, i.e. until the microtask queue has drained (a `process.nextTick` callback queued from
 * a microtask runs only then). Reading it after one microtask instead saw only the released caller's first
 * step (a runtime call of a few microseconds), so a turn released a hundred callers before any of them did
 * its real work, and that work then ran on in the same check phase: at 2,000 hostile pods, check phases of
 * 16 ms at the median and 100 ms at the 99th percentile on a 10 ms slice.
 */
export class TimeSlicer {
  private sliceStart: number;
  private parked: (() => void)[] = [];
  private head = 0;
  private scheduled = false;

  constructor(
    private readonly sliceMs = 10,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.sliceStart = now();
  }

  /** Resolves immediately within a slice; after a turn of the event loop once the slice is used up. */
  yield(): Promise<void> {
    if (this.now() - this.sliceStart < this.sliceMs) return RESOLVED;
    return new Promise((resolve) => {
      this.parked.push(resolve);
      this.schedule();
    });
  }

  /** Callers parked now (for tests and metrics). */
  waiting(): number {
    return this.parked.length - this.head;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => void this.turn());
  }

  /**
   * One loop turn: a new slice, and parked callers released one by one (each runs until the microtask queue
   * is empty before the next is released) until the slice is used up.
   */
  private async turn(): Promise<void> {
    this.scheduled = false;
    this.sliceStart = this.now();
    while (this.head < this.parked.length && this.now() - this.sliceStart < this.sliceMs) {
      const resolve = this.parked[this.head]!;
      this.parked[this.head++] = NOOP;
      resolve();
      await microtasksDrained();
    }
    if (this.head >= this.parked.length) {
      this.parked = [];
      this.head = 0;
    } else {
      if (this.head > 1024) {
        this.parked = this.parked.slice(this.head);
        this.head = 0;
      }
      this.schedule();
    }
  }
}

const RESOLVED: Promise<void> = Promise.resolve();
const NOOP = (): void => {};

/**
 * Resolves once every microtask queued before and while it waits has run. Node runs the nextTick queue only
 * when the microtask queue is empty, so its callback comes after the released caller's whole promise chain.
 */
function microtasksDrained(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}

/** One slicer for the whole process: every node's pod syncs share the one event loop. */
export const processSlicer = new TimeSlicer();
