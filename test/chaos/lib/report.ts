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

/**
 * Samples prom-client's `nodejs_eventloop_lag_p99_seconds` of one process every `everyMs`: each scrape
 * reports the p99 of the event loop's delay since the previous one (prom-client resets its histogram at
 * every collection), so the samples together cover the whole time the sampler ran.
 */
export class LagSampler {
  readonly samples: { at: number; p99: number; max: number }[] = [];
  failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly port: number,
    private readonly everyMs = 2000,
  ) {}

  start(): void {
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
      });
    } catch {
      this.failures++;
    }
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
