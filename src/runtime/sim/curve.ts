/**
 * Usage curves of behaviour profiles, compiled: what a container uses (cores of cpu, bytes of memory or
 * disk) as a function of time. Four kinds (profile.ts validates the data):
 *
 * - constant;
 * - ramp: linear from `from` at the container's start to `to` after `durationSeconds`, then `to`;
 * - periodic: between `min` and `max` every `periodSeconds`, shaped `sine` (the default), `square`,
 *   `triangle` or `sawtooth`; every shape is at `min` at phase 0 (sine and triangle peak at half a period,
 *   square is at `max` for the last `duty` of the period, default half, sawtooth rises to `max` and drops).
 *   Phase 0 is the container's start (`phase: start`, the default) or the epoch of the runtime's clock
 *   (`phase: clock`: every container is in step, whenever it started);
 * - expr: an expression of t, clock and restarts (expr.ts), negative values read as 0.
 *
 * The first three are closed forms: their integral under a cap (cpu is capped by its CFS quota) and the
 * first moment they exceed a limit (memory, for OOM kills) are exact and O(1), independent of when or how
 * often anyone asks. Expressions have no closed form; usage.ts samples them on a 1 s grid.
 * A compiled curve is immutable and shared by every container of a behaviour.
 */
import { compileExpr, type ExprFn } from './expr.js';
import type { CurveSpec, SimProfile } from './profile.js';

/** A curve with closed forms: t in seconds since the container started, clock0 its start (epoch seconds). */
export interface ClosedCurve {
  readonly kind: 'closed';
  readonly spec: CurveSpec;
  value(t: number, clock0: number): number;
  /** ∫ min(value, cap) dt from t0 to t1 (t0 <= t1); `cap` may be Infinity. */
  integral(t0: number, t1: number, clock0: number, cap: number): number;
  /** The first t >= t0 at which the value exceeds `limit` (or starts to); Infinity when it never does. */
  firstAbove(t0: number, limit: number, clock0: number): number;
}

export interface ExprCurve {
  readonly kind: 'expr';
  readonly spec: CurveSpec;
  readonly fn: ExprFn;
}

export type Curve = ClosedCurve | ExprCurve;

/** One linear piece on [a, b): v0 at a, changing by `slope` per second. */
interface Piece {
  readonly a: number;
  readonly b: number;
  readonly v0: number;
  readonly slope: number;
}

/** A function of x (seconds) in closed form: on [0, Infinity) for a one-off, [0, period] for a periodic. */
interface Form {
  value(x: number): number;
  /** ∫ min(f, cap) over [x0, x1] inside the domain. */
  integral(x0: number, x1: number, cap: number): number;
  /** The first x >= x0 inside the domain where f exceeds `limit`, or undefined. */
  firstAbove(x0: number, limit: number): number | undefined;
}

export type Shape = 'sine' | 'square' | 'triangle' | 'sawtooth';

export interface UsageCurves {
  /** Cores. */
  readonly cpu?: Curve;
  /** Working set bytes. */
  readonly memory?: Curve;
  /** Writable layer bytes. */
  readonly disk?: Curve;
}

/** The profile's usage compiled, or undefined when it declares none (a constant memoryUsageBytes counts). */
export function compileUsage(p: SimProfile): UsageCurves | undefined {
  const memory = p.usage?.memory ?? (p.memoryUsageBytes ? { constant: p.memoryUsageBytes } : undefined);
  const out: { -readonly [K in keyof UsageCurves]: UsageCurves[K] } = {};
  if (p.usage?.cpu) out.cpu = compileCurve(p.usage.cpu);
  if (memory) out.memory = compileCurve(memory);
  if (p.usage?.disk) out.disk = compileCurve(p.usage.disk);
  return out.cpu || out.memory || out.disk ? Object.freeze(out) : undefined;
}

/** Compiles validated curve data (cores or bytes already). Throws ExprError for a bad expression. */
export function compileCurve(spec: CurveSpec): Curve {
  if (spec.expr !== undefined) return Object.freeze({ kind: 'expr', spec, fn: compileExpr(spec.expr) });
  if (spec.ramp) {
    const { from, to, durationSeconds: d } = spec.ramp;
    const pieces = d > 0 ? [piece(0, d, from, to), piece(d, Infinity, to, to)] : [piece(0, Infinity, to, to)];
    return closed(spec, new Linear(pieces), undefined, false);
  }
  if (spec.periodic) {
    const { min, max, periodSeconds: p, shape = 'sine', duty = 0.5, phase = 'start' } = spec.periodic;
    const form =
      shape === 'sine' ? new Sine(min, max, p) : new Linear(periodicPieces(shape, min, max, p, duty));
    return closed(spec, form, p, phase === 'clock');
  }
  const c = spec.constant ?? 0;
  return closed(spec, new Linear([piece(0, Infinity, c, c)]), undefined, false);
}

function piece(a: number, b: number, v0: number, v1: number): Piece {
  return { a, b, v0, slope: b === Infinity || b === a ? 0 : (v1 - v0) / (b - a) };
}

function periodicPieces(
  shape: Exclude<Shape, 'sine'>,
  min: number,
  max: number,
  p: number,
  duty: number,
): Piece[] {
  if (shape === 'triangle') return [piece(0, p / 2, min, max), piece(p / 2, p, max, min)];
  if (shape === 'sawtooth') return [piece(0, p, min, max)];
  const rise = (1 - duty) * p;
  return [piece(0, rise, min, min), piece(rise, p, max, max)].filter((q) => q.b > q.a);
}

/** ∫ min(v, cap) over a width `w` on which v goes linearly from v0 to v1. */
export function cappedTrapezoid(w: number, v0: number, v1: number, cap: number): number {
  if (!(w > 0)) return 0;
  if (v0 <= cap && v1 <= cap) return (w * (v0 + v1)) / 2;
  if (v0 >= cap && v1 >= cap) return w * cap;
  const s = (w * (cap - v0)) / (v1 - v0);
  return v0 < cap ? (s * (v0 + cap)) / 2 + (w - s) * cap : s * cap + ((w - s) * (cap + v1)) / 2;
}

class Linear implements Form {
  constructor(private readonly pieces: readonly Piece[]) {}

  value(x: number): number {
    for (const q of this.pieces) if (x < q.b) return at(q, Math.max(x, q.a));
    const last = this.pieces[this.pieces.length - 1]!;
    return at(last, last.b);
  }

  integral(x0: number, x1: number, cap: number): number {
    let sum = 0;
    for (const q of this.pieces) {
      const lo = Math.max(x0, q.a);
      const hi = Math.min(x1, q.b);
      if (hi > lo) sum += cappedTrapezoid(hi - lo, at(q, lo), at(q, hi), cap);
    }
    return sum;
  }

  firstAbove(x0: number, limit: number): number | undefined {
    for (const q of this.pieces) {
      if (q.b <= x0) continue;
      const lo = Math.max(x0, q.a);
      if (at(q, lo) > limit) return lo;
      if (q.slope > 0) {
        const x = q.a + (limit - q.v0) / q.slope;
        if (x < q.b) return Math.max(x, lo);
      }
    }
    return undefined;
  }
}

const at = (q: Piece, x: number): number => (q.slope === 0 ? q.v0 : q.v0 + q.slope * (x - q.a));

/** mid - amp·cos(2πx/p) on [0, p]: `min` at 0 and p, `max` at p/2. */
class Sine implements Form {
  private readonly mid: number;
  private readonly amp: number;
  private readonly w: number;

  constructor(
    private readonly min: number,
    private readonly max: number,
    private readonly p: number,
  ) {
    this.mid = (min + max) / 2;
    this.amp = (max - min) / 2;
    this.w = (2 * Math.PI) / p;
  }

  value(x: number): number {
    return this.mid - this.amp * Math.cos(this.w * x);
  }

  integral(x0: number, x1: number, cap: number): number {
    return this.primitive(x1, cap) - this.primitive(x0, cap);
  }

  firstAbove(x0: number, limit: number): number | undefined {
    if (limit < this.min) return x0;
    if (limit >= this.max) return undefined;
    // Above the limit while cos(θ) < -s, i.e. for θ in (β, 2π - β).
    const beta = Math.acos(-(limit - this.mid) / this.amp);
    const theta = this.w * x0;
    if (theta > beta && theta < 2 * Math.PI - beta) return x0;
    return theta <= beta ? beta / this.w : undefined;
  }

  /** ∫ from 0 to x (x in [0, p]) of min(value, cap). */
  private primitive(x: number, cap: number): number {
    if (cap <= this.min) return cap * x;
    const theta = this.w * x;
    const whole = this.mid * x - (this.amp * Math.sin(theta)) / this.w;
    if (cap >= this.max) return whole;
    // Minus the part above the cap, for θ in (β, 2π - β).
    const beta = Math.acos(-(cap - this.mid) / this.amp);
    const upper = Math.min(Math.max(theta, beta), 2 * Math.PI - beta);
    const excess = (this.mid - cap) * (upper - beta) - this.amp * (Math.sin(upper) - Math.sin(beta));
    return whole - excess / this.w;
  }
}

function closed(spec: CurveSpec, form: Form, period: number | undefined, clockPhase: boolean): ClosedCurve {
  const x = (t: number, clock0: number): number => (clockPhase ? clock0 + t : t);
  if (period === undefined) {
    return Object.freeze({
      kind: 'closed',
      spec,
      value: (t: number) => form.value(t),
      integral: (t0: number, t1: number, _c: number, cap: number) => form.integral(t0, t1, cap),
      firstAbove: (t0: number, limit: number) => form.firstAbove(t0, limit) ?? Infinity,
    });
  }
  // Split x into whole periods and a remainder, so that clock-phase curves (x near 1.8e9) keep precision.
  const split = (v: number): [number, number] => {
    const k = Math.floor(v / period);
    return [k, Math.min(Math.max(v - k * period, 0), period)];
  };
  return Object.freeze({
    kind: 'closed',
    spec,
    value: (t: number, clock0: number) => form.value(split(x(t, clock0))[1]),
    integral: (t0: number, t1: number, clock0: number, cap: number) => {
      const [k0, r0] = split(x(t0, clock0));
      const [k1, r1] = split(x(t1, clock0));
      if (k0 === k1) return form.integral(r0, r1, cap);
      const whole = k1 - k0 - 1 > 0 ? (k1 - k0 - 1) * form.integral(0, period, cap) : 0;
      return form.integral(r0, period, cap) + whole + form.integral(0, r1, cap);
    },
    firstAbove: (t0: number, limit: number, clock0: number) => {
      const offset = x(0, clock0);
      const [k, r] = split(x(t0, clock0));
      const here = form.firstAbove(r, limit);
      if (here !== undefined) return Math.max(t0, k * period + here - offset);
      const next = form.firstAbove(0, limit);
      return next === undefined ? Infinity : Math.max(t0, (k + 1) * period + next - offset);
    },
  });
}
