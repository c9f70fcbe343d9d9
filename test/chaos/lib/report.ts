/**
 * What a chaos scenario prints and reads from the outside: a two-column table of what it measured (printed
 * whether the scenario passes or not, so a failure comes with its figures), and one metric from an operator
 * process's /metrics.
 */

/** Rows of (what, value), in the order they were measured. */
export class Measurements {
  private readonly rows: [string, string][] = [];

  constructor(private readonly title: string) {}

  add(what: string, value: string | number): void {
    this.rows.push([what, typeof value === 'number' ? formatNumber(value) : value]);
  }

  /** Milliseconds as seconds with one decimal. */
  addMs(what: string, ms: number): void {
    this.add(what, `${(ms / 1000).toFixed(1)} s`);
  }

  print(): void {
    const width = Math.max(...this.rows.map(([w]) => w.length), 10);
    const lines = [`      ${this.title}`, ...this.rows.map(([w, v]) => `        ${w.padEnd(width)}  ${v}`)];
    console.log(lines.join('\n'));
  }
}

function formatNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(3);
}

/** The value of `name` (no labels) in the Prometheus text a process serves on its health port. */
export async function scrapeMetric(port: number, name: string): Promise<number | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

/** Every series of `name` in a process's /metrics: its labels and value. */
export async function scrapeSeries(
  port: number,
  name: string,
): Promise<{ labels: Record<string, string>; value: number }[]> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  const out: { labels: Record<string, string>; value: number }[] = [];
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labels: Record<string, string> = {};
    for (const m of line.matchAll(/(\w+)="([^"]*)"/g)) labels[m[1]!] = m[2]!;
    out.push({ labels, value: Number(line.slice(line.lastIndexOf(' ') + 1)) });
  }
  return out;
}

/** Cumulative bucket counts of a Prometheus histogram: [upper bound, observations at or below it], ascending. */
export type Buckets = [number, number][];

/** The buckets of histogram `name` (no other labels) in Prometheus text; `+Inf` as Infinity. */
export function parseBuckets(text: string, name: string): Buckets {
  const out: Buckets = [];
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm')))
    out.push([m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2])]);
  return out.sort((a, b) => a[0] - b[0]);
}

/** What was observed between two scrapes of one histogram. */
export function bucketsBetween(before: Buckets, after: Buckets): Buckets {
  const old = new Map(before);
  return after.map(([le, n]) => [le, n - (old.get(le) ?? 0)]);
}

/**
 * The q-quantile (0..1) of a histogram, interpolated within its bucket as Prometheus' histogram_quantile
 * does; the highest finite bound when it falls in the +Inf bucket; NaN for no observations.
 */
export function histogramQuantile(q: number, buckets: Buckets): number {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(1, count - prevCount);
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}

/** The operator's cumulative event-loop delay histogram (src/util/loopdelay.ts). */
export const LOOP_DELAY_HISTOGRAM = 'kubelet_operator_event_loop_delay_seconds';

/**
 * Samples one process's event-loop delay every `everyMs`: prom-client's `nodejs_eventloop_lag_p99_seconds`
 * and `_max_seconds`, each over the time since the previous scrape (prom-client resets its monitor at every
 * collection, so the samples together cover the whole time the sampler ran), and the operator's cumulative
 * histogram, from which `overall` gives a percentile over the whole time between the first and last scrape.
 */
export class LagSampler {
  readonly samples: { at: number; p99: number; max: number; buckets: Buckets }[] = [];
  failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly port: number,
    private readonly everyMs = 2000,
  ) {}

  async start(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => {
      this.inFlight = this.sample();
    }, this.everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.inFlight;
    await this.sample();
  }

  private async sample(): Promise<void> {
    try {
      const res = await fetch(`http://127.0.0.1:${this.port}/metrics`, { signal: AbortSignal.timeout(5000) });
      const text = await res.text();
      const read = (n: string): number => {
        const line = text.split('\n').find((l) => l.startsWith(`${n} `));
        return line === undefined ? NaN : Number(line.slice(n.length + 1));
      };
      this.samples.push({
        at: Date.now(),
        p99: read('nodejs_eventloop_lag_p99_seconds'),
        max: read('nodejs_eventloop_lag_max_seconds'),
        buckets: parseBuckets(text, LOOP_DELAY_HISTOGRAM),
      });
    } catch {
      this.failures++;
    }
  }

  /** The q-quantile of the delay over the whole sampled time, in ms (NaN without two scrapes). */
  overallMs(q: number): number {
    const d = this.overall();
    return d ? histogramQuantile(q, d) * 1000 : NaN;
  }

  /** Observations over the whole sampled time, and how many of them were above `ms`. */
  overallAbove(ms: number): { total: number; above: number } {
    const d = this.overall() ?? [];
    const total = d.at(-1)?.[1] ?? 0;
    const atOrBelow = d.filter(([le]) => le <= ms / 1000).at(-1)?.[1] ?? 0;
    return { total, above: total - atOrBelow };
  }

  /** The histogram's observations between the first and the last scrape; undefined without two. */
  private overall(): Buckets | undefined {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    return first && last && first !== last ? bucketsBetween(first.buckets, last.buckets) : undefined;
  }

  worstP99Ms(): number {
    return Math.max(0, ...this.samples.map((s) => s.p99 * 1000));
  }

  /** The `n` worst scrapes by p99: `p99/max ms at +s` from `since`. */
  worst(n: number, since: number): string {
    return [...this.samples]
      .sort((a, b) => b.p99 - a.p99)
      .slice(0, n)
      .map(
        (s) =>
          `${(s.p99 * 1000).toFixed(0)}/${(s.max * 1000).toFixed(0)} ms at +${((s.at - since) / 1000).toFixed(0)} s`,
      )
      .join(', ');
  }

  worstMaxMs(): number {
    return Math.max(0, ...this.samples.map((s) => s.max * 1000));
  }
}

/** The p-th percentile (0..100) of `xs` by nearest rank; 0 for none. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
