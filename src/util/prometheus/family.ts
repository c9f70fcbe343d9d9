/**
 * The Prometheus data model as the protobuf exposition carries it (io.prometheus.client, metrics.proto beside
 * this file), in plain objects whose member names are the proto fields' camelCase names, so the encoder
 * (exposition.ts) hands them to protobufjs as they are.
 */

export type MetricTypeName = 'COUNTER' | 'GAUGE' | 'SUMMARY' | 'UNTYPED' | 'HISTOGRAM';

export interface LabelPair {
  name: string;
  value: string;
}

/** A run of consecutive native buckets: its gap to the previous run (the first run: its first index). */
export interface BucketSpan {
  offset: number;
  length: number;
}

export interface ClassicBucket {
  cumulativeCount: number;
  upperBound: number;
}

export interface HistogramData {
  sampleCount: number;
  sampleSum: number;
  /** Classic buckets, cumulative, without the +Inf one (sampleCount is it). */
  bucket: ClassicBucket[];
  /** The native buckets, present only on a histogram that keeps them. */
  schema?: number;
  zeroThreshold?: number;
  zeroCount?: number;
  negativeSpan?: BucketSpan[];
  negativeDelta?: number[];
  positiveSpan?: BucketSpan[];
  positiveDelta?: number[];
}

export interface MetricData {
  label: LabelPair[];
  counter?: { value: number };
  gauge?: { value: number };
  untyped?: { value: number };
  summary?: { sampleCount: number; sampleSum: number; quantile: { quantile: number; value: number }[] };
  histogram?: HistogramData;
}

export interface MetricFamilyData {
  name: string;
  help: string;
  type: MetricTypeName;
  metric: MetricData[];
}

/** Label pairs sorted by name, as client_golang sends them. */
export function labelPairs(labels: Readonly<Record<string, string | number>>): LabelPair[] {
  return Object.keys(labels)
    .sort()
    .map((name) => ({ name, value: String(labels[name]) }));
}
