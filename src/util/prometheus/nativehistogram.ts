/**
 * Native (sparse, exponential) histogram buckets as client_golang keeps them beside the classic ones, which
 * component-base turns on for every histogram with the NativeHistograms gate (v1.37: Beta, on): a bucket
 * factor of 1.1 and at most 160 buckets, no minimum reset duration and no maximum zero threshold, so the zero
 * bucket keeps its default width and too many buckets halve the resolution (the schema goes down by one).
 *
 * A bucket of schema s and index i holds the values v with 2^((i-1)/2^s) < |v| <= 2^(i/2^s); |v| at or
 * below the zero threshold counts in the zero bucket. Pure: observations in, spans and deltas out.
 */
import type { BucketSpan } from './family.js';

export const NATIVE_SCHEMA_MAX = 8;
export const NATIVE_SCHEMA_MIN = -4;
/** client_golang's default zero threshold: 2^-128. */
export const DEFAULT_NATIVE_ZERO_THRESHOLD = 2 ** -128;

export interface NativeHistogramOptions {
  /** The growth from one bucket to the next, at most (> 1): picks the schema. */
  bucketFactor: number;
  /** Populated buckets (both signs) past which the resolution halves; 0: no limit. */
  maxBucketNumber: number;
  /** Observations with |v| at or below it count as zero; default 2^-128. */
  zeroThreshold?: number;
}

/** component-base's native histogram options (k8s.io/component-base/metrics, internal defaults). */
export const KUBERNETES_NATIVE_HISTOGRAMS: NativeHistogramOptions = Object.freeze({
  bucketFactor: 1.1,
  maxBucketNumber: 160,
});

/** The largest schema n in [-4, 8] whose bucket growth 2^(2^-n) is at most `bucketFactor`. */
export function pickSchema(bucketFactor: number): number {
  if (!(bucketFactor > 1))
    throw new RangeError(`a native histogram's bucket factor is > 1, not ${bucketFactor}`);
  const floor = Math.floor(Math.log2(Math.log2(bucketFactor)));
  if (floor <= -NATIVE_SCHEMA_MAX) return NATIVE_SCHEMA_MAX;
  if (floor >= -NATIVE_SCHEMA_MIN) return NATIVE_SCHEMA_MIN;
  return 0 - floor; // not -0
}

/**
 * 2^x for 0 <= x <= 1 as Go's math.Exp2 computes it (the reduced argument through the remez polynomial of
 * exp), so the bucket bounds below are client_golang's to the last bit; 2 ** x differs by an ulp on some.
 */
function exp2(x: number): number {
  const k = x >= 0.5 ? 1 : 0;
  const t = x - k;
  const hi = t * 6.9314718036912381649e-1;
  const lo = -t * 1.90821492927058770002e-10;
  const r = hi - lo;
  const rr = r * r;
  const c =
    r -
    rr *
      (1.66666666666666657415e-1 +
        rr *
          (-2.77777777770155933842e-3 +
            rr *
              (6.61375632143793436117e-5 +
                rr * (-1.6533902205465251539e-6 + rr * 4.13813679705723846039e-8))));
  return (1 - (lo - (r * c) / (2 - c) - hi)) * 2 ** k;
}

/**
 * For schema s > 0, the 2^s upper bounds of a bucket's fraction (the mantissa in [0.5, 1)) within one power
 * of two, made as client_golang makes its table: every other bound is the coarser schema's, the ones between
 * are the previous bound times the schema's growth.
 */
export const NATIVE_BUCKET_BOUNDS: readonly (readonly number[])[] = (() => {
  const table: number[][] = [];
  let n = 1;
  for (let s = 0; s <= NATIVE_SCHEMA_MAX; s++) {
    const bounds = [0.5];
    const growth = exp2(2 ** -s);
    for (let j = 0; j < n - 1; j++) {
      bounds.push((j + 1) % 2 === 0 ? table[s - 1]![Math.floor(j / 2) + 1]! : bounds[j]! * growth);
    }
    table.push(bounds);
    n *= 2;
  }
  return table;
})();

const scratch = new DataView(new ArrayBuffer(8));

/** x = frac * 2^exp with frac in [0.5, 1), for a finite x > 0 (Go's math.Frexp). */
export function frexp(x: number): { frac: number; exp: number } {
  let shift = 0;
  scratch.setFloat64(0, x);
  if (((scratch.getUint32(0) >>> 20) & 0x7ff) === 0) {
    // Subnormal: scale into the normal range first.
    scratch.setFloat64(0, x * 2 ** 64);
    shift = 64;
  }
  const hi = scratch.getUint32(0);
  const biased = (hi >>> 20) & 0x7ff;
  scratch.setUint32(0, (hi & 0x800fffff) | (1022 << 20));
  return { frac: scratch.getFloat64(0), exp: biased - 1022 - shift };
}

/** The index of the bucket holding |v| (finite, non-zero) at `schema`. */
export function nativeBucketIndex(v: number, schema: number): number {
  const { frac, exp } = frexp(Math.abs(v));
  if (schema > 0) {
    const bounds = NATIVE_BUCKET_BOUNDS[schema]!;
    // The first bound >= frac (bounds.length when none is).
    let lo = 0;
    let hi = bounds.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (bounds[mid]! < frac) lo = mid + 1;
      else hi = mid;
    }
    return lo + (exp - 1) * bounds.length;
  }
  // A power of two is the upper bound of its bucket, not the start of the next.
  const key = frac === 0.5 ? exp - 1 : exp;
  const offset = (1 << -schema) - 1;
  return (key + offset) >> -schema;
}

/** Populated buckets as spans (gaps of one or two buckets filled with empty ones) and count deltas. */
export function nativeSpans(buckets: ReadonlyMap<number, number>): { spans: BucketSpan[]; deltas: number[] } {
  const keys = [...buckets.keys()].sort((a, b) => a - b);
  const spans: BucketSpan[] = [];
  const deltas: number[] = [];
  let prev = 0;
  let next = 0;
  const append = (count: number): void => {
    spans[spans.length - 1]!.length++;
    deltas.push(count - prev);
    prev = count;
  };
  keys.forEach((k, n) => {
    const gap = k - next;
    if (n === 0 || gap > 2) spans.push({ offset: gap, length: 0 });
    else for (let j = 0; j < gap; j++) append(0);
    append(buckets.get(k)!);
    next = k + 1;
  });
  return { spans, deltas };
}

/** What a histogram sends of its native buckets. */
export interface NativeHistogramSnapshot {
  schema: number;
  zeroThreshold: number;
  zeroCount: number;
  negativeSpan: BucketSpan[];
  negativeDelta: number[];
  positiveSpan: BucketSpan[];
  positiveDelta: number[];
}

/** One series' native buckets. */
export class NativeHistogramBuckets {
  readonly initialSchema: number;
  readonly zeroThreshold: number;
  schema: number;
  zeroCount = 0;
  readonly positive = new Map<number, number>();
  readonly negative = new Map<number, number>();

  constructor(private readonly opts: NativeHistogramOptions) {
    this.initialSchema = pickSchema(opts.bucketFactor);
    this.schema = this.initialSchema;
    const zt = opts.zeroThreshold ?? DEFAULT_NATIVE_ZERO_THRESHOLD;
    if (!(zt >= 0)) throw new RangeError(`a native histogram's zero threshold is >= 0, not ${zt}`);
    this.zeroThreshold = zt;
  }

  /** Counts a finite value; then, past the bucket limit, halves the resolution once. */
  observe(v: number): void {
    const into = v > this.zeroThreshold ? this.positive : v < -this.zeroThreshold ? this.negative : undefined;
    if (into) {
      const key = nativeBucketIndex(v, this.schema);
      into.set(key, (into.get(key) ?? 0) + 1);
    } else this.zeroCount++;
    // Checked after every observation, a zero too: one halving each time while over the limit.
    const max = this.opts.maxBucketNumber;
    if (max > 0 && this.positive.size + this.negative.size > max) this.doubleBucketWidth();
  }

  /** One schema down (to -4 at least): bucket i merges into ceil(i/2). */
  private doubleBucketWidth(): void {
    if (this.schema === NATIVE_SCHEMA_MIN) return;
    this.schema--;
    for (const m of [this.positive, this.negative]) {
      const old = [...m];
      m.clear();
      for (const [k, c] of old) {
        const merged = Math.ceil(k / 2) + 0; // + 0: no -0 key
        m.set(merged, (m.get(merged) ?? 0) + c);
      }
    }
  }

  reset(): void {
    this.schema = this.initialSchema;
    this.zeroCount = 0;
    this.positive.clear();
    this.negative.clear();
  }

  snapshot(): NativeHistogramSnapshot {
    const pos = nativeSpans(this.positive);
    const neg = nativeSpans(this.negative);
    // Without a zero bucket, an empty native histogram keeps one empty span, so it does not read as classic.
    if (
      this.zeroThreshold === 0 &&
      this.zeroCount === 0 &&
      pos.spans.length === 0 &&
      neg.spans.length === 0
    ) {
      pos.spans.push({ offset: 0, length: 0 });
    }
    return {
      schema: this.schema,
      zeroThreshold: this.zeroThreshold,
      zeroCount: this.zeroCount,
      negativeSpan: neg.spans,
      negativeDelta: neg.deltas,
      positiveSpan: pos.spans,
      positiveDelta: pos.deltas,
    };
  }
}
