/**
 * Cooperative time slicing for long chains of microtasks. Work that never waits for real I/O (pod syncs on
 * the simulated runtime) runs as one unbroken chain of promise callbacks, and the event loop cannot fire a
 * timer or read a socket until the chain ends: at 10,000 pods starting, 0.7 s at the 99th percentile. A
 * `TimeSlicer` hands out a promise that resolves at once while the current slice is young, and through a
 * macrotask (setImmediate) once it has run for `sliceMs`, so the loop turns at least that often without
 * paying a macrotask per call (one per call cost a fifth more CPU and broke up the I/O batching).
 */
export class TimeSlicer {
  private sliceStart: number;

  constructor(
    private readonly sliceMs = 10,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.sliceStart = now();
  }

  /** Resolves immediately within a slice; after a turn of the event loop once the slice is used up. */
  yield(): Promise<void> {
    if (this.now() - this.sliceStart < this.sliceMs) return RESOLVED;
    return new Promise((resolve) =>
      setImmediate(() => {
        this.sliceStart = this.now();
        resolve();
      }),
    );
  }
}

const RESOLVED: Promise<void> = Promise.resolve();

/** One slicer for the whole process: every node's pod syncs share the one event loop. */
export const processSlicer = new TimeSlicer();
