/**
 * The node's /metrics in either exposition promhttp serves: the text format 0.0.4 (prom-client writes it) or,
 * when the scraper's Accept asks for it, the delimited protobuf one (MetricFamily messages, each behind its
 * varint length), the only one that carries native histogram buckets. Every family of the registry goes in
 * both: our series metrics (src/util/promseries.ts) give their own families, native buckets included;
 * prom-client's counters, gauges, histograms and summaries are converted from what they report.
 */
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import type { Registry } from 'prom-client';
import { SeriesMetric } from '../promseries.js';
import { labelPairs, type MetricData, type MetricFamilyData, type MetricTypeName } from './family.js';

/** expfmt's delimited protobuf format, as promhttp names it in Content-Type. */
export const PROTO_DELIMITED_CONTENT_TYPE =
  'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited; escaping=underscores';

export type ExpositionFormat = 'text' | 'protobuf-delimited';

interface AcceptClause {
  type: string;
  subType: string;
  q: number;
  params: Record<string, string>;
}

/** An Accept header's clauses, by preference: q first, then a concrete type or subtype before a wildcard. */
export function parseAccept(header: string): AcceptClause[] {
  const out: AcceptClause[] = [];
  for (const raw of header.split(',')) {
    const [media = '', ...params] = raw.trim().split(';');
    const parts = media.split('/').map((p) => p.trim());
    if (parts.length > 2 || (parts.length === 1 && parts[0] !== '*')) continue;
    const clause: AcceptClause = { type: parts[0]!, subType: parts[1] ?? '*', q: 1, params: {} };
    for (const p of params) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const key = p.slice(0, eq).trim();
      const value = p.slice(eq + 1).trim();
      if (key === 'q') {
        const q = Number(value);
        if (Number.isFinite(q)) clause.q = q;
      } else clause.params[key] = value;
    }
    out.push(clause);
  }
  const rank = (c: AcceptClause): number => (c.type === '*' ? 2 : 0) + (c.subType === '*' ? 1 : 0);
  return out
    .map((c, i) => ({ c, i }))
    .sort((a, b) => b.c.q - a.c.q || rank(a.c) - rank(b.c) || a.i - b.i)
    .map((x) => x.c);
}

/**
 * The format promhttp answers with (expfmt.Negotiate): the first clause asking for MetricFamily protobuf
 * delimited, or for text/plain (version 0.0.4 or none), decides; text when none does. The protobuf text
 * encodings (`encoding=text`, `compact-text`), debug formats, are answered as text here.
 */
export function negotiateExposition(accept: string | undefined): ExpositionFormat {
  for (const c of parseAccept(accept ?? '')) {
    if (
      c.type === 'application' &&
      c.subType === 'vnd.google.protobuf' &&
      c.params.proto === 'io.prometheus.client.MetricFamily'
    ) {
      if (c.params.encoding === 'delimited') return 'protobuf-delimited';
      if (c.params.encoding === 'text' || c.params.encoding === 'compact-text') return 'text';
    }
    if (
      c.type === 'text' &&
      c.subType === 'plain' &&
      (c.params.version === undefined || c.params.version === '0.0.4')
    ) {
      return 'text';
    }
  }
  return 'text';
}

const TYPES: Record<string, MetricTypeName> = {
  counter: 'COUNTER',
  gauge: 'GAUGE',
  histogram: 'HISTOGRAM',
  summary: 'SUMMARY',
};

type Labels = Record<string, string | number>;

function without(labels: Labels | undefined, name: string): Labels {
  const out: Labels = {};
  for (const [k, v] of Object.entries(labels ?? {})) if (k !== name) out[k] = v;
  return out;
}

function seriesKey(labels: Labels): string {
  return JSON.stringify(labelPairs(labels));
}

/** What a prom-client metric reports (its get()): samples with their labels, `le` and `quantile` among them. */
export interface PromClientReport {
  name: string;
  help: string;
  type: string;
  values: { value: number; labels: Labels; metricName?: string }[];
}

/** A prom-client metric's report as a family: samples grouped into series by their labels. */
export function familyOfPromClient(m: PromClientReport): MetricFamilyData {
  const type = TYPES[m.type] ?? 'UNTYPED';
  const values = m.values;
  if (type === 'COUNTER' || type === 'GAUGE' || type === 'UNTYPED') {
    const field = type === 'COUNTER' ? 'counter' : type === 'GAUGE' ? 'gauge' : 'untyped';
    return {
      name: m.name,
      help: m.help,
      type,
      metric: values.map((v) => ({ label: labelPairs(v.labels), [field]: { value: v.value } })),
    };
  }
  // Histograms and summaries: one series per label set, without le / quantile.
  const series = new Map<string, MetricData>();
  const of = (labels: Labels): MetricData => {
    const key = seriesKey(labels);
    let d = series.get(key);
    if (!d) {
      d =
        type === 'HISTOGRAM'
          ? { label: labelPairs(labels), histogram: { sampleCount: 0, sampleSum: 0, bucket: [] } }
          : { label: labelPairs(labels), summary: { sampleCount: 0, sampleSum: 0, quantile: [] } };
      series.set(key, d);
    }
    return d;
  };
  for (const v of values) {
    const labels = v.labels;
    const suffix = v.metricName?.slice(m.name.length) ?? '';
    if (suffix === '_sum' || suffix === '_count') {
      const d = of(labels);
      const h = d.histogram ?? d.summary!;
      if (suffix === '_sum') h.sampleSum = v.value;
      else h.sampleCount = v.value;
    } else if (type === 'HISTOGRAM' && suffix === '_bucket') {
      const le = labels.le;
      const upperBound = le === '+Inf' ? Infinity : Number(le);
      // The +Inf bucket is the sample count: not sent, as client_golang does.
      if (upperBound !== Infinity) {
        of(without(labels, 'le')).histogram!.bucket.push({ cumulativeCount: v.value, upperBound });
      }
    } else if (type === 'SUMMARY' && labels.quantile !== undefined) {
      of(without(labels, 'quantile')).summary!.quantile.push({
        quantile: Number(labels.quantile),
        value: v.value,
      });
    }
  }
  for (const d of series.values()) d.histogram?.bucket.sort((a, b) => a.upperBound - b.upperBound);
  return { name: m.name, help: m.help, type, metric: [...series.values()] };
}

/** Every family of the registry with at least one series, in its order. */
export async function gatherFamilies(registry: Registry): Promise<MetricFamilyData[]> {
  const out: MetricFamilyData[] = [];
  // prom-client's types name what its metrics report, not the metrics; ours register as theirs do.
  for (const metric of registry.getMetricsAsArray() as unknown[]) {
    const family =
      metric instanceof SeriesMetric
        ? metric.family()
        : familyOfPromClient((await (metric as { get(): Promise<unknown> }).get()) as PromClientReport);
    if (family.metric.length > 0) out.push(family);
  }
  return out;
}

let metricFamilyType: protobuf.Type | undefined;

function metricFamilyMessage(): protobuf.Type {
  if (!metricFamilyType) {
    const root = protobuf.loadSync(fileURLToPath(new URL('./metrics.proto', import.meta.url)));
    metricFamilyType = root.lookupType('io.prometheus.client.MetricFamily');
  }
  return metricFamilyType;
}

/** The families as the delimited protobuf exposition: each MetricFamily behind its varint length. */
export function encodeDelimited(families: readonly MetricFamilyData[]): Buffer {
  const type = metricFamilyMessage();
  const writer = protobuf.Writer.create();
  for (const f of families) type.encodeDelimited(type.fromObject(f), writer);
  return Buffer.from(writer.finish());
}

/** The families read back from the delimited protobuf exposition (for tests and tools). */
export function decodeDelimited(body: Uint8Array): Record<string, unknown>[] {
  const type = metricFamilyMessage();
  const reader = protobuf.Reader.create(body);
  const out: Record<string, unknown>[] = [];
  while (reader.pos < reader.len) {
    out.push(type.toObject(type.decodeDelimited(reader), { longs: Number, enums: String, defaults: false }));
  }
  return out;
}
