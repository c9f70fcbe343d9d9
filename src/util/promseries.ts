/**
 * Counters and histograms whose label sets are found by their values, one map per label, with no key string
 * or label check per call, and whose series a caller may keep to skip even that: counting on a series touches
 * numbers only. prom-client's own Counter and Histogram take a label object on every call, check it, build a
 * key string from it and look the bucket up by a number-keyed property, on hot paths (every request, pod
 * sync, relist and probe is counted). These register in a prom-client Registry like its own metrics and answer it in the same
 * shape, so the exposition text is the same line for line.
 */
import type { Metric, Registry } from 'prom-client';
import { labelPairs, type MetricData, type MetricFamilyData } from './prometheus/family.js';
import { NativeHistogramBuckets, type NativeHistogramOptions } from './prometheus/nativehistogram.js';

/** A counter of one label set. */
export interface CounterSeries {
  inc(n?: number): void;
}

/** A histogram of one label set. */
export interface HistogramSeries {
  observe(value: number): void;
}

interface Config<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: readonly Registry[];
}

type Labels<L extends string> = Readonly<Record<L, string>>;

/** What the registry formats: one sample, its own labels (`le`) and the series' labels. */
interface Sample {
  value: number;
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  metricName?: string;
  /** Always null: no exemplars here (prom-client's buckets carry the member all the same). */
  exemplar?: null;
}

interface Entry<L extends string, S> {
  labels: Labels<L>;
  series: S;
}

/** A level of the lookup: a label's value -> the next level, or the entry after the last label. */
type Level<L extends string, S> = Map<string, Level<L, S> | Entry<L, S>>;

/** Series by label values, looked up one label at a time in the order of `labelNames`. */
export abstract class SeriesMetric<L extends string, S> {
  readonly name: string;
  readonly help: string;
  readonly aggregator = 'sum';
  abstract readonly type: 'counter' | 'histogram';
  /** Every series, in the order made (the order of the exposition). */
  protected readonly entries: Entry<L, S>[] = [];
  private readonly root: Level<L, S> = new Map();
  /** The series of a metric without labels. */
  private unlabelled: Entry<L, S> | undefined;
  private readonly labelNames: readonly L[];

  constructor(cfg: Config<L>) {
    this.name = cfg.name;
    this.help = cfg.help;
    this.labelNames = cfg.labelNames;
    // The registry calls get() (or getForPromString) and reset(), and reads name and type: what this has.
    for (const r of cfg.registers) r.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels` (every label name given, no other), made on first use. */
  series(labels: Labels<L>): S {
    const names = this.labelNames;
    let level = this.root;
    let found: Entry<L, S> | undefined = names.length === 0 ? this.unlabelled : undefined;
    for (let i = 0; i < names.length; i++) {
      const v = labels[names[i]!];
      if (typeof v !== 'string') throw new TypeError(`${this.name}: label ${names[i]} is missing`);
      const next = level.get(v);
      if (next === undefined) break;
      if (i === names.length - 1) found = next as Entry<L, S>;
      else level = next as Level<L, S>;
    }
    return (found ?? this.add(labels)).series;
  }

  /** Makes the series of `labels`, checked: every label name given (a string), no other. */
  private add(labels: Labels<L>): Entry<L, S> {
    const names = this.labelNames;
    for (const n of names) {
      if (typeof labels[n] !== 'string') throw new TypeError(`${this.name}: label ${n} is missing`);
    }
    for (const n of Object.keys(labels)) {
      if (!names.includes(n as L)) throw new TypeError(`${this.name}: unknown label ${n}`);
    }
    const entry: Entry<L, S> = { labels: { ...labels }, series: this.newSeries() };
    if (names.length === 0) this.unlabelled = entry;
    let level = this.root;
    for (let i = 0; i < names.length; i++) {
      const v = labels[names[i]!];
      if (i === names.length - 1) {
        level.set(v, entry);
        break;
      }
      let next = level.get(v) as Level<L, S> | undefined;
      if (next === undefined) level.set(v, (next = new Map()));
      level = next;
    }
    this.entries.push(entry);
    return entry;
  }

  protected abstract newSeries(): S;
  protected abstract samples(): Sample[];
  /** One series in the protobuf exposition's shape. */
  protected abstract metricData(series: S): Omit<MetricData, 'label'>;

  /** The family in the protobuf exposition's shape (src/util/prometheus/exposition.ts). */
  family(): MetricFamilyData {
    return {
      name: this.name,
      help: this.help,
      type: this.type === 'counter' ? 'COUNTER' : 'HISTOGRAM',
      metric: this.entries.map((e) => ({ label: labelPairs(e.labels), ...this.metricData(e.series) })),
    };
  }
  /** Sets every series' counts to zero; the series stay (their holders keep counting into them). */
  abstract reset(): void;

  getForPromString(): Promise<{
    name: string;
    help: string;
    type: string;
    values: Sample[];
    aggregator: string;
  }> {
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      values: this.samples(),
      aggregator: this.aggregator,
    });
  }

  /** prom-client's JSON shape: a sample's labels hold the series' labels too. */
  async get(): Promise<{ name: string; help: string; type: string; values: Sample[]; aggregator: string }> {
    const data = await this.getForPromString();
    for (const s of data.values) {
      s.labels = { ...s.labels, ...s.sharedLabels };
      delete s.sharedLabels;
    }
    return data;
  }
}

class CounterCell implements CounterSeries {
  count = 0;
  inc(n = 1): void {
    if (!(n >= 0) || !Number.isFinite(n)) throw new TypeError(`a counter grows by a finite n >= 0, not ${n}`);
    this.count += n;
  }
}

export class SeriesCounter<L extends string> extends SeriesMetric<L, CounterCell> {
  readonly type = 'counter';

  /** Counts `n` for `labels` (a lookup of the series per call, by its label values). */
  inc(labels: Labels<L>, n = 1): void {
    this.series(labels).inc(n);
  }

  protected newSeries(): CounterCell {
    return new CounterCell();
  }

  protected samples(): Sample[] {
    return this.entries.map((e) => ({ value: e.series.count, labels: { ...e.labels } }));
  }

  protected metricData(series: CounterCell): Omit<MetricData, 'label'> {
    return { counter: { value: series.count } };
  }

  reset(): void {
    for (const e of this.entries) e.series.count = 0;
  }
}

class HistogramCell implements HistogramSeries {
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;
  /** The native buckets, when the histogram keeps them (see NativeHistogramOptions). */
  readonly native: NativeHistogramBuckets | undefined;
  constructor(
    private readonly bounds: readonly number[],
    native: NativeHistogramOptions | undefined,
  ) {
    this.buckets = new Float64Array(bounds.length);
    this.native = native ? new NativeHistogramBuckets(native) : undefined;
  }
  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`a histogram observes finite values, not ${value}`);
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]!) {
        this.buckets[i]!++;
        break;
      }
    }
    this.native?.observe(value);
    this.sum += value;
    this.count++;
  }
}

export class SeriesHistogram<L extends string> extends SeriesMetric<L, HistogramCell> {
  readonly type = 'histogram';
  private readonly bounds: readonly number[];
  private readonly native: NativeHistogramOptions | undefined;

  /**
   * `native`: keep native buckets too, as a component-base histogram does with the NativeHistograms gate
   * (KUBERNETES_NATIVE_HISTOGRAMS); the text exposition stays classic, the protobuf one carries both.
   */
  constructor(cfg: Config<L> & { buckets: readonly number[]; native?: NativeHistogramOptions }) {
    super(cfg);
    this.bounds = [...cfg.buckets].sort((a, b) => a - b);
    // A bad factor fails here, when the metric is made, not on the first observation.
    if (cfg.native) new NativeHistogramBuckets(cfg.native);
    this.native = cfg.native;
  }

  /** Observes `value` for `labels` (a lookup of the series per call, by its label values). */
  observe(labels: Labels<L>, value: number): void {
    this.series(labels).observe(value);
  }

  protected newSeries(): HistogramCell {
    return new HistogramCell(this.bounds, this.native);
  }

  protected metricData(series: HistogramCell): Omit<MetricData, 'label'> {
    let acc = 0;
    const bucket = this.bounds.map((upperBound, i) => {
      acc += series.buckets[i]!;
      return { cumulativeCount: acc, upperBound };
    });
    return {
      histogram: { sampleCount: series.count, sampleSum: series.sum, bucket, ...series.native?.snapshot() },
    };
  }

  /** Per series: the cumulative buckets, `+Inf`, the sum and the count, as prom-client's Histogram. */
  protected samples(): Sample[] {
    const out: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, series } of this.entries) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += series.buckets[i]!;
        out.push({
          value: acc,
          labels: { le: this.bounds[i]! },
          sharedLabels: { ...labels },
          metricName: bucket,
          exemplar: null,
        });
      }
      out.push({
        value: series.count,
        labels: { le: '+Inf' },
        sharedLabels: { ...labels },
        metricName: bucket,
        exemplar: null,
      });
      out.push({
        value: series.sum,
        labels: {},
        sharedLabels: { ...labels },
        metricName: `${this.name}_sum`,
      });
      out.push({
        value: series.count,
        labels: {},
        sharedLabels: { ...labels },
        metricName: `${this.name}_count`,
      });
    }
    return out;
  }

  reset(): void {
    for (const { series } of this.entries) {
      series.buckets.fill(0);
      series.native?.reset();
      series.sum = 0;
      series.count = 0;
    }
  }
}
