/**
 * The protobuf exposition of a registry: content negotiation as promhttp's (expfmt.Negotiate), every family
 * of prom-client's and of our series metrics in MetricFamily form, native buckets on the series histograms
 * that keep them, and the delimited encoding read back.
 */
import { expect } from 'chai';
import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import {
  decodeDelimited,
  encodeDelimited,
  familyOfPromClient,
  gatherFamilies,
  negotiateExposition,
  type ExpositionFormat,
} from '../../../../src/util/prometheus/exposition.js';
import { KUBERNETES_NATIVE_HISTOGRAMS } from '../../../../src/util/prometheus/nativehistogram.js';
import { SeriesCounter, SeriesHistogram } from '../../../../src/util/promseries.js';

const PROTO = 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily';
const ZT = 2 ** -128;

/** Native histogram bucket spans from [offset, length] pairs. */
const spans = (...pairs: [number, number][]) => pairs.map(([offset, length]) => ({ offset, length }));

/** A histogram labelled by node with Kubernetes' native bucket settings beside these classic buckets. */
const nodeNativeHistogram = (r: Registry, name: string, help: string, buckets: number[]) =>
  new SeriesHistogram({
    name,
    help,
    labelNames: ['node'],
    buckets,
    native: KUBERNETES_NATIVE_HISTOGRAMS,
    registers: [r],
  });

describe('exposition: content negotiation as promhttp', () => {
  const cases: [string | undefined, ExpositionFormat][] = [
    [undefined, 'text'],
    ['', 'text'],
    ['*/*', 'text'],
    [`${PROTO};encoding=delimited`, 'protobuf-delimited'],
    [`${PROTO}; encoding=delimited; q=0.7, text/plain;version=0.0.4;q=0.3`, 'protobuf-delimited'],
    // Prometheus with PrometheusProto after the text formats.
    [`text/plain;version=0.0.4;q=0.5,${PROTO};encoding=delimited;q=0.4`, 'text'],
    [`text/plain;version=0.0.4;q=0.3,${PROTO};encoding=delimited;q=0.7`, 'protobuf-delimited'],
    // Not text 0.0.4, not MetricFamily: the next clause decides.
    [`text/plain;version=1.0.0,${PROTO};encoding=delimited;q=0.1`, 'protobuf-delimited'],
    [`application/openmetrics-text;version=1.0.0,${PROTO};encoding=delimited;q=0.5`, 'protobuf-delimited'],
    ['application/vnd.google.protobuf;proto=other.Message;encoding=delimited', 'text'],
    [`${PROTO}`, 'text'],
    [`${PROTO};encoding=text`, 'text'],
    [`${PROTO};encoding=compact-text,${PROTO};encoding=delimited`, 'text'],
    // A wildcard ranks after a concrete type of the same q.
    [`*/*,${PROTO};encoding=delimited`, 'protobuf-delimited'],
    ['garbage;;,/,a/b/c', 'text'],
  ];
  for (const [accept, want] of cases) {
    it(`${JSON.stringify(accept)} -> ${want}`, () => expect(negotiateExposition(accept)).to.equal(want));
  }
});

describe('exposition: MetricFamily of every family', () => {
  it("converts prom-client's counters, gauges, histograms and summaries, series by their labels", async () => {
    const r = new Registry();
    const c = new Counter({ name: 'c_total', help: 'C.', labelNames: ['a'], registers: [r] });
    const g = new Gauge({ name: 'g', help: 'G.', registers: [r] });
    const h = new Histogram({
      name: 'h_seconds',
      help: 'H.',
      labelNames: ['a'],
      buckets: [0.1, 1],
      registers: [r],
    });
    const s = new Summary({ name: 's', help: 'S.', percentiles: [0.5, 0.9], registers: [r] });
    new Gauge({ name: 'unused', help: 'No series.', labelNames: ['x'], registers: [r] });
    c.inc({ a: 'x' }, 2);
    c.inc({ a: 'y' });
    g.set(-1.5);
    for (const [a, v] of [
      ['x', 0.05],
      ['x', 0.5],
      ['y', 5],
    ] as const)
      h.observe({ a }, v);
    for (const v of [1, 2, 3]) s.observe(v);
    const fams = await gatherFamilies(r);
    expect(fams.map((f) => [f.name, f.type, f.metric.length])).to.deep.equal([
      ['c_total', 'COUNTER', 2],
      ['g', 'GAUGE', 1],
      ['h_seconds', 'HISTOGRAM', 2],
      ['s', 'SUMMARY', 1],
    ]);
    expect(fams[0]!.metric).to.deep.equal([
      { label: [{ name: 'a', value: 'x' }], counter: { value: 2 } },
      { label: [{ name: 'a', value: 'y' }], counter: { value: 1 } },
    ]);
    expect(fams[1]).to.deep.equal({
      name: 'g',
      help: 'G.',
      type: 'GAUGE',
      metric: [{ label: [], gauge: { value: -1.5 } }],
    });
    expect(fams[2]!.metric[0]).to.deep.equal({
      label: [{ name: 'a', value: 'x' }],
      histogram: {
        sampleCount: 2,
        sampleSum: 0.55,
        bucket: [
          { cumulativeCount: 1, upperBound: 0.1 },
          { cumulativeCount: 2, upperBound: 1 },
        ],
      },
    });
    expect(fams[3]!.metric[0]!.summary).to.deep.equal({
      sampleCount: 3,
      sampleSum: 6,
      quantile: [
        { quantile: 0.5, value: 2 },
        { quantile: 0.9, value: 3 },
      ],
    });
  });

  it('gives a series histogram its native buckets beside the classic ones, and none without the option', async () => {
    const r = new Registry();
    const native = nodeNativeHistogram(r, 'kubelet_x_seconds', 'X.', [0.1, 1]);
    const classic = new SeriesHistogram({
      name: 'y',
      help: 'Y.',
      labelNames: [],
      buckets: [1],
      registers: [r],
    });
    const counter = new SeriesCounter({ name: 'z_total', help: 'Z.', labelNames: ['node'], registers: [r] });
    for (const v of [0.005, 0.005, 0.0052, 0.0057, 0.1, 1, 1, 2.5, 30]) native.observe({ node: 'n1' }, v);
    classic.observe({}, 3);
    counter.inc({ node: 'n1' }, 4);
    const fams = await gatherFamilies(r);
    expect(fams[0]).to.deep.equal({
      name: 'kubelet_x_seconds',
      help: 'X.',
      type: 'HISTOGRAM',
      metric: [
        {
          label: [{ name: 'node', value: 'n1' }],
          histogram: {
            sampleCount: 9,
            sampleSum: 0.005 + 0.005 + 0.0052 + 0.0057 + 0.1 + 1 + 1 + 2.5 + 30,
            bucket: [
              { cumulativeCount: 5, upperBound: 0.1 },
              { cumulativeCount: 7, upperBound: 1 },
            ],
            // client_golang's, for the same observations (nativehistogram.test.ts).
            schema: 3,
            zeroThreshold: ZT,
            zeroCount: 0,
            positiveSpan: spans([-61, 3], [32, 1], [25, 1], [10, 1], [28, 1]),
            positiveDelta: [2, -1, 0, 0, 1, -1, 0],
            negativeSpan: [],
            negativeDelta: [],
          },
        },
      ],
    });
    expect(fams[1]!.metric[0]!.histogram).to.deep.equal({
      sampleCount: 1,
      sampleSum: 3,
      bucket: [{ cumulativeCount: 0, upperBound: 1 }],
    });
    expect(fams[2]!.metric).to.deep.equal([
      { label: [{ name: 'node', value: 'n1' }], counter: { value: 4 } },
    ]);
    // A reset empties the native buckets too.
    await r.resetMetrics();
    const after = (await gatherFamilies(r))[0]!.metric[0]!.histogram!;
    expect(after).to.include({ sampleCount: 0, schema: 3, zeroCount: 0 });
    expect(after.positiveSpan).to.deep.equal([]);
  });

  it('encodes the delimited exposition and reads it back the same (field numbers, sint deltas, doubles)', async () => {
    const r = new Registry();
    const h = nodeNativeHistogram(r, 'h', 'H "q"\nx.', [1]);
    for (const v of [0, -0.25, -0.3, 4, 1e-3]) h.observe({ node: 'ü' }, v);
    new Gauge({ name: 'g', help: 'G.', registers: [r] }).set(NaN);
    const body = encodeDelimited(await gatherFamilies(r));
    // The first byte is the varint length of the first family.
    expect(body[0]).to.be.above(0);
    const back = decodeDelimited(body);
    expect(back).to.have.length(2);
    expect(back[0]).to.deep.include({ name: 'h', help: 'H "q"\nx.', type: 'HISTOGRAM' });
    const m = (back[0]!.metric as { label: unknown; histogram: Record<string, unknown> }[])[0]!;
    expect(m.label).to.deep.equal([{ name: 'node', value: 'ü' }]);
    expect(m.histogram).to.deep.equal({
      sampleCount: 5,
      sampleSum: 0 - 0.25 - 0.3 + 4 + 1e-3,
      bucket: [{ cumulativeCount: 4, upperBound: 1 }],
      schema: 3,
      zeroThreshold: ZT,
      zeroCount: 1,
      positiveSpan: spans([-79, 1], [94, 1]),
      positiveDelta: [1, 0],
      negativeSpan: spans([-16, 4]),
      negativeDelta: [1, -1, 0, 1],
    });
    expect((back[1]!.metric as { gauge: { value: number } }[])[0]!.gauge.value).to.be.NaN;
  });

  it('reads an unknown prom-client type as untyped', () => {
    const f = familyOfPromClient({
      name: 'u',
      help: 'U.',
      type: 'info',
      values: [{ value: 1, labels: { v: 1 } }],
    });
    expect(f).to.deep.equal({
      name: 'u',
      help: 'U.',
      type: 'UNTYPED',
      metric: [{ label: [{ name: 'v', value: '1' }], untyped: { value: 1 } }],
    });
  });
});
