/**
 * CPU figures a runtime does not hand over ready-made, kept between scrapes as the kubelet's CRI stats
 * provider keeps them:
 *
 * - `usageNanoCores` when the runtime reports only the cumulative counter: the rate between the previous
 *   sample of the same container (or pod) and this one.
 * - Counters that never go backwards for sums whose members come and go: a pod whose sandbox is not measured
 *   as a whole is the sum of its running containers, and a virtual node is the sum of its pods. When a member
 *   disappears (a container restarted, a pod deleted) its last value is kept in a "retired" total, so the
 *   sum keeps counting as a cgroup would; a consumer computing rates (metrics-server) never sees a reset.
 *
 * No I/O and no clock: every sample carries its own time. Members not seen in a round are retired at the
 * end of that round (endRound), so memory follows what is alive.
 */

/** One cumulative sample: core-nanoseconds at `timeMs`. */
export interface CpuSample {
  timeMs: number;
  coreNanoSeconds: number;
}

/** Rates below this window are not computed (the two samples are the same reading). */
const MIN_WINDOW_MS = 1;

export class CpuRates {
  private previous = new Map<string, CpuSample>();
  private current = new Map<string, CpuSample>();

  /**
   * The rate since the previous sample of `key`, in nano-cores; undefined for the first sample, one taken
   * at the same time, or a counter that went backwards (the container was replaced under the same key).
   */
  rate(key: string, s: CpuSample): number | undefined {
    const prev = this.current.get(key) ?? this.previous.get(key);
    // Keep the older sample while a new one is not newer (two scrapes in the same millisecond).
    if (!prev || s.timeMs - prev.timeMs >= MIN_WINDOW_MS) this.current.set(key, s);
    else this.current.set(key, prev);
    if (!prev) return undefined;
    const dt = s.timeMs - prev.timeMs;
    const dc = s.coreNanoSeconds - prev.coreNanoSeconds;
    if (dt < MIN_WINDOW_MS || dc < 0) return undefined;
    return Math.round((dc / dt) * 1_000);
  }

  /** Forgets keys not sampled since the last endRound. */
  endRound(): void {
    this.previous = this.current;
    this.current = new Map();
  }

  size(): number {
    return this.previous.size;
  }
}

/** A monotonic sum over members that come and go (see the module comment). */
export class MonotonicSum {
  private retired = 0;
  private last = new Map<string, number>();

  /**
   * This round's total: every member's value now plus what retired members counted. A member whose value
   * fell was restarted under the same name, and one missing from `values` is gone: either way its last
   * value retires.
   */
  round(values: Iterable<readonly [member: string, value: number]>): number {
    const seen = new Map<string, number>();
    let sum = 0;
    for (const [member, value] of values) {
      const before = this.last.get(member);
      if (before !== undefined && value < before) this.retired += before;
      seen.set(member, value);
      sum += value;
    }
    for (const [member, v] of this.last) if (!seen.has(member)) this.retired += v;
    this.last = seen;
    return this.retired + sum;
  }

  members(): number {
    return this.last.size;
  }
}
