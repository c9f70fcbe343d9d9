/**
 * Native histogram buckets as client_golang (v1.24.0, the one k8s.io/component-base v0.37.2 builds on) keeps
 * them. The expected schemas, spans and deltas are what a client_golang histogram with the same native
 * options wrote for the same observations (test/support/promcheck `observe`, run from the module cache).
 */
import { expect } from 'chai';
import {
  DEFAULT_NATIVE_ZERO_THRESHOLD,
  KUBERNETES_NATIVE_HISTOGRAMS,
  NATIVE_BUCKET_BOUNDS,
  NativeHistogramBuckets,
  frexp,
  nativeBucketIndex,
  nativeSpans,
  pickSchema,
  type NativeHistogramSnapshot,
} from '../../../../src/util/prometheus/nativehistogram.js';

const ZT = 2.938735877055719e-39;

describe('native histograms: schema, bucket index, spans', () => {
  it('takes component-base defaults: factor 1.1, at most 160 buckets, zero threshold 2^-128', () => {
    expect(KUBERNETES_NATIVE_HISTOGRAMS).to.deep.equal({ bucketFactor: 1.1, maxBucketNumber: 160 });
    expect(DEFAULT_NATIVE_ZERO_THRESHOLD).to.equal(ZT);
  });

  const schemas: [number, number][] = [
    [1.1, 3],
    [2, 0],
    [1.5, 1],
    [1.2, 2],
    [1.0001, 8],
    [1.003, 8],
    [4, -1],
    [16, -2],
    [256, -3],
    [65536, -4],
    [1e300, -4],
  ];
  for (const [factor, schema] of schemas) {
    it(`picks schema ${schema} for bucket factor ${factor}`, () =>
      expect(pickSchema(factor)).to.equal(schema));
  }
  for (const bad of [1, 0.5, 0, -2, NaN]) {
    it(`refuses bucket factor ${bad}`, () =>
      expect(() => pickSchema(bad)).to.throw(RangeError, /bucket factor/));
  }

  it("builds the fraction bounds of client_golang's table (schemas 1 to 3 written out there)", () => {
    expect(NATIVE_BUCKET_BOUNDS[0]).to.deep.equal([0.5]);
    expect(NATIVE_BUCKET_BOUNDS[1]).to.deep.equal([0.5, 0.7071067811865475]);
    expect(NATIVE_BUCKET_BOUNDS[2]).to.deep.equal([
      0.5, 0.5946035575013605, 0.7071067811865475, 0.8408964152537144,
    ]);
    expect(NATIVE_BUCKET_BOUNDS[3]).to.deep.equal([
      0.5, 0.5452538663326288, 0.5946035575013605, 0.6484197773255048, 0.7071067811865475, 0.7711054127039704,
      0.8408964152537144, 0.9170040432046711,
    ]);
    expect(NATIVE_BUCKET_BOUNDS[8]).to.have.length(256);
  });

  const frexps: [number, number, number][] = [
    [1, 0.5, 1],
    [0.75, 0.75, 0],
    [6, 0.75, 3],
    [Number.MAX_VALUE, 1 - 2 ** -53, 1024],
    [5e-324, 0.5, -1073],
    [2 ** -1030 * 3, 0.75, -1028],
  ];
  for (const [x, frac, exp] of frexps) {
    it(`splits ${x} into ${frac} * 2^${exp}`, () => expect(frexp(x)).to.deep.equal({ frac, exp }));
  }

  const indices: [number, number, number][] = [
    // [value, schema, index]: (2^((i-1)/2^s), 2^(i/2^s)]
    [1, 3, 0],
    [1.0000001, 3, 1],
    [2, 3, 8],
    [0.5, 3, -8],
    [1.1, 3, 2],
    [-1.1, 3, 2],
    [1, 0, 0],
    [1.5, 0, 1],
    [4, 0, 2],
    [5, 0, 3],
    [4, -1, 1],
    [5, -1, 2],
    [16, -2, 1],
    [17, -2, 2],
    [0.25, -1, -1],
    [3, 1, 4],
  ];
  for (const [v, schema, index] of indices) {
    it(`puts ${v} in bucket ${index} at schema ${schema}`, () =>
      expect(nativeBucketIndex(v, schema)).to.equal(index));
  }

  const spans: [string, [number, number][], NativeHistogramSnapshot['positiveSpan'], number[]][] = [
    ['nothing', [], [], []],
    ['one bucket', [[-3, 2]], [{ offset: -3, length: 1 }], [2]],
    [
      'a gap of two kept in the span',
      [
        [0, 1],
        [3, 4],
      ],
      [{ offset: 0, length: 4 }],
      [1, -1, 0, 4],
    ],
    [
      'a gap of three starts a span',
      [
        [0, 1],
        [4, 4],
      ],
      [
        { offset: 0, length: 1 },
        { offset: 3, length: 1 },
      ],
      [1, 3],
    ],
    [
      'unordered keys',
      [
        [7, 1],
        [5, 2],
        [-1, 3],
      ],
      [
        { offset: -1, length: 1 },
        { offset: 5, length: 3 },
      ],
      [3, -1, -2, 1],
    ],
  ];
  for (const [name, buckets, wantSpans, wantDeltas] of spans) {
    it(`writes spans and deltas: ${name}`, () => {
      expect(nativeSpans(new Map(buckets))).to.deep.equal({ spans: wantSpans, deltas: wantDeltas });
    });
  }
});

describe('native histograms: observations as client_golang counts them', () => {
  /** A snapshot with positive buckets only: spans as [offset, length]. */
  const positive = (
    schema: number,
    spans: [number, number][],
    positiveDelta: number[],
    zeroCount = 0,
  ): Omit<NativeHistogramSnapshot, 'zeroThreshold'> => ({
    schema,
    zeroCount,
    positiveSpan: spans.map(([offset, length]) => ({ offset, length })),
    positiveDelta,
    negativeSpan: [],
    negativeDelta: [],
  });
  const cases: {
    name: string;
    factor: number;
    max: number;
    values: number[];
    want: Omit<NativeHistogramSnapshot, 'zeroThreshold'>;
  }[] = [
    {
      name: 'durations at factor 1.1',
      factor: 1.1,
      max: 160,
      values: [0.005, 0.005, 0.0052, 0.0057, 0.1, 1, 1, 2.5, 30],
      want: positive(
        3,
        [
          [-61, 3],
          [32, 1],
          [25, 1],
          [10, 1],
          [28, 1],
        ],
        [2, -1, 0, 0, 1, -1, 0],
      ),
    },
    {
      name: 'zeros, values under the zero threshold, negatives',
      factor: 1.1,
      max: 160,
      values: [0, -0, 1e-40, -0.25, -0.3, 4],
      want: {
        ...positive(3, [[16, 1]], [1], 3),
        negativeSpan: [{ offset: -16, length: 4 }],
        negativeDelta: [1, -1, 0, 1],
      },
    },
    {
      name: 'a fifth bucket past a limit of 4 halves the resolution',
      factor: 1.1,
      max: 4,
      values: [1, 2, 3, 4, 5],
      want: positive(
        2,
        [
          [0, 1],
          [3, 7],
        ],
        [1, 0, -1, 0, 1, 0, -1, 1],
      ),
    },
    {
      name: 'halved once, then more buckets at the lower schema',
      factor: 1.1,
      max: 4,
      values: [0.001, 1000, 1, 2, 3],
      want: positive(
        2,
        [
          [-39, 1],
          [38, 1],
          [3, 4],
          [32, 1],
        ],
        [1, 0, 0, -1, 0, 1, 0],
      ),
    },
    {
      name: 'no limit',
      factor: 1.1,
      max: 0,
      values: [1, 1000000],
      want: positive(
        3,
        [
          [0, 1],
          [159, 1],
        ],
        [1, 0],
      ),
    },
    {
      name: 'factor 2 (schema 0), a power of two closing its bucket',
      factor: 2,
      max: 160,
      values: [1, 2, 3, 4, 0.5],
      want: positive(0, [[-1, 4]], [1, 0, 0, 1]),
    },
    {
      name: 'a limit of one bucket halves per new bucket',
      factor: 1.1,
      max: 1,
      values: [1, 1e300, 1e-300],
      want: positive(
        1,
        [
          [0, 1],
          [1993, 1],
        ],
        [1, 0],
        1,
      ),
    },
    {
      name: 'no observations',
      factor: 1.1,
      max: 160,
      values: [],
      want: positive(3, [], []),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const h = new NativeHistogramBuckets({ bucketFactor: c.factor, maxBucketNumber: c.max });
      for (const v of c.values) h.observe(v);
      expect(h.snapshot()).to.deep.equal({ ...c.want, zeroThreshold: ZT });
    });
  }

  it('a histogram of 400 spread values keeps at most 160 buckets, lowering its schema (-4 at least)', () => {
    const h = new NativeHistogramBuckets(KUBERNETES_NATIVE_HISTOGRAMS);
    for (let i = 0; i < 400; i++) h.observe(1.25 ** (i - 200));
    expect(h.schema).to.be.below(3);
    expect(h.positive.size).to.be.at.most(160);
    const tiny = new NativeHistogramBuckets({ bucketFactor: 1.1, maxBucketNumber: 1 });
    for (let i = -20; i < 20; i++) tiny.observe(10 ** (i * 15));
    expect(tiny.schema).to.equal(-4);
    expect(tiny.positive.size).to.be.above(1);
  });

  it('a zero threshold of 0 keeps an empty span on an empty histogram (so it reads as native)', () => {
    const h = new NativeHistogramBuckets({ bucketFactor: 1.1, maxBucketNumber: 160, zeroThreshold: 0 });
    expect(h.snapshot().positiveSpan).to.deep.equal([{ offset: 0, length: 0 }]);
    h.observe(0);
    expect(h.snapshot()).to.include({ zeroCount: 1, zeroThreshold: 0 });
    expect(h.snapshot().positiveSpan).to.deep.equal([]);
  });

  it('reset goes back to the first schema and empty buckets', () => {
    const h = new NativeHistogramBuckets({ bucketFactor: 1.1, maxBucketNumber: 2 });
    for (const v of [1, 2, 4, 8, 16, -1, 0]) h.observe(v);
    expect(h.schema).to.be.below(3);
    h.reset();
    expect(h.snapshot()).to.deep.equal({
      schema: 3,
      zeroThreshold: ZT,
      zeroCount: 0,
      positiveSpan: [],
      positiveDelta: [],
      negativeSpan: [],
      negativeDelta: [],
    });
  });
});
