/**
 * Event-loop delay as a cumulative histogram. prom-client's `nodejs_eventloop_lag_p99_seconds` and friends are
 * computed over the time since the previous scrape and reset by every scrape, so two scrapers (a Prometheus
 * and a test, or two Prometheus replicas) each see a slice of the other's window, and a percentile over a
 * longer window cannot be had at all. A histogram's buckets only grow: `histogram_quantile` over any range
 * works, for any number of scrapers.
 *
 * How it samples: a timer every `resolutionMs`; how much later than due it fires is one observation (what
 * libuv's and prom-client's monitors measure too). A stall longer than the resolution is one observation of
 * its length, not one per missed tick.
 */
export interface DelayObserver {
  observe(seconds: number): void;
}

export class EventLoopDelaySampler {
  private timer: NodeJS.Timeout | undefined;
  private last = 0;

  constructor(
    private readonly observer: DelayObserver,
    private readonly resolutionMs = 10,
    private readonly now: () => number = () => performance.now(),
  ) {}

  start(): this {
    this.last = this.now();
    this.timer = setInterval(() => this.tick(), this.resolutionMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One timer firing: records how late it is (exported for tests, which drive it with their own clock). */
  tick(): void {
    const now = this.now();
    this.observer.observe(Math.max(0, now - this.last - this.resolutionMs) / 1000);
    this.last = now;
  }
}
