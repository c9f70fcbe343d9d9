// Usage curves of the simulated runtime's behaviour profiles, alone: the expression language (expr.ts) and
// the closed forms (curve.ts) — values, integrals under a cap, first crossings — checked against hand
// computations and against brute-force numerics.
import { expect } from 'chai';
import { compileCurve, type ClosedCurve, type Curve } from '../../../src/runtime/sim/curve.js';
import { compileExpr, exprProblem } from '../../../src/runtime/sim/expr.js';
import { parseSimProfile, type CurveSpec } from '../../../src/runtime/sim/profile.js';

const CLOCK0 = Date.UTC(2026, 0, 1, 0, 0, 7) / 1000 + 0.123;

function closed(spec: unknown): ClosedCurve {
  const c: Curve = compileCurve(parseSimProfile({ usage: { cpu: spec } }, 'test').usage!.cpu!);
  if (c.kind !== 'closed') throw new Error('expected a closed form');
  return c;
}

/** ∫ min(value, cap) by the trapezoid rule on a fine grid. */
function numeric(c: ClosedCurve, t0: number, t1: number, cap: number, clock0 = CLOCK0): number {
  const n = 100_000;
  const h = (t1 - t0) / n;
  let sum = 0;
  let prev = Math.min(c.value(t0, clock0), cap);
  for (let i = 1; i <= n; i++) {
    const v = Math.min(c.value(t0 + i * h, clock0), cap);
    sum += ((prev + v) / 2) * h;
    prev = v;
  }
  return sum;
}

describe('sim usage expressions (expr.ts)', () => {
  const at = (text: string, t = 10, clock = 1_767_225_600, restarts = 2): number =>
    compileExpr(text)(t, clock, restarts);

  it('follows the usual precedence: ^ over unary minus over * / % over + -, ^ right-associative', () => {
    expect(at('1 + 2 * 3')).to.equal(7);
    expect(at('(1 + 2) * 3')).to.equal(9);
    expect(at('10 - 4 - 3')).to.equal(3);
    expect(at('24 / 4 / 3')).to.equal(2);
    expect(at('10 % 4 * 2')).to.equal(4);
    expect(at('-2^2')).to.equal(-4);
    expect(at('(-2)^2')).to.equal(4);
    expect(at('2^3^2')).to.equal(512);
    expect(at('2^-1')).to.equal(0.5);
    expect(at('- -3 + +1')).to.equal(4);
    expect(at('-t % 3')).to.equal(-1);
  });

  it('reads t, clock and restarts, constants, functions and quantity suffixes', () => {
    expect(at('t', 12.5)).to.equal(12.5);
    expect(at('clock % 60', 0, 1_767_225_645)).to.equal(45);
    expect(at('restarts', 0, 0, 3)).to.equal(3);
    expect(at('64Mi * (restarts + 1)', 0, 0, 1)).to.equal(128 * 2 ** 20);
    expect(at('250m + 1k + 2Gi / 2Ki')).to.equal(0.25 + 1000 + 2 ** 20);
    expect(at('1.5e3 + .5')).to.equal(1500.5);
    expect(at('sin(pi / 2) + cos(0) + exp(0) + log(e)')).to.equal(4);
    expect(at('min(t, 3, 2) + max(1) + abs(-2) + floor(1.7) + ceil(1.2) + round(2.5) + sqrt(9)')).to.equal(
      2 + 1 + 2 + 1 + 2 + 3 + 3,
    );
    expect(at('clamp(t, 0, 4)') + at('clamp(-t, 0, 4)')).to.equal(4);
    expect([at('step(t - 10)'), at('step(t - 11)')]).to.deep.equal([1, 0]);
  });

  it('compiles each text once (a shared function) and folds constants', () => {
    expect(compileExpr('t * 2')).to.equal(compileExpr('t * 2'));
    expect(at('2 * 3 + max(1, 2)', NaN, NaN, NaN)).to.equal(8);
  });

  it('names the column and the problem of an expression that does not parse', () => {
    const cases: [string, RegExp][] = [
      ['', /column 1: empty expression/],
      ['1 +', /column 4: expected a number, a name or "\(", found end of expression/],
      ['1 2', /column 3: unexpected "2"/],
      ['2t', /column 2: unexpected "t" after a number/],
      ['5min', /column 2: unexpected "m" after a number/],
      ['x + 1', /column 1: unknown name "x"/],
      ['toString', /unknown name "toString"/],
      ['eval(1)', /column 1: unknown function "eval"/],
      ['min()', /column 5: expected a number/],
      ['clamp(1, 2)', /clamp\(\) takes 3 arguments/],
      ['sqrt(1, 2)', /sqrt\(\) takes 1 argument$/],
      ['(1 + 2', /column 7: expected "\)", found end of expression/],
      ['1 + 2)', /column 6: unexpected "\)"/],
      ['t > 1', /column 3: unexpected ">"/],
      ['('.repeat(100) + '1' + ')'.repeat(100), /nested deeper than 64/],
    ];
    for (const [text, message] of cases) expect(exprProblem(text), text).to.match(message);
    expect(exprProblem('0.2 + 0.1 * sin(t / 60)')).to.equal(undefined);
  });
});

describe('sim usage curves (curve.ts)', () => {
  it('a constant: its value always, integral value × time, under the cap', () => {
    const c = closed('1.5');
    expect(c.value(0, CLOCK0)).to.equal(1.5);
    expect(c.integral(2, 12, CLOCK0, Infinity)).to.equal(15);
    expect(c.integral(2, 12, CLOCK0, 0.5)).to.equal(5);
    expect(c.firstAbove(3, 1, CLOCK0)).to.equal(3);
    expect(c.firstAbove(3, 1.5, CLOCK0)).to.equal(Infinity);
  });

  it('a ramp: linear from the start, then holds; its integral and crossing are exact', () => {
    const c = closed({ ramp: { from: 0, to: '2', durationSeconds: 10 } });
    expect([0, 5, 10, 100].map((t) => c.value(t, CLOCK0))).to.deep.equal([0, 1, 2, 2]);
    expect(c.integral(0, 10, CLOCK0, Infinity)).to.equal(10);
    expect(c.integral(0, 20, CLOCK0, Infinity)).to.equal(30);
    // Under a cap of 1: 0.2·t up to 5 s (2.5), then 1 for 5 s.
    expect(c.integral(0, 10, CLOCK0, 1)).to.equal(7.5);
    expect(c.firstAbove(0, 1.5, CLOCK0)).to.equal(7.5);
    expect(c.firstAbove(8, 1.5, CLOCK0)).to.equal(8);
    expect(c.firstAbove(0, 2, CLOCK0)).to.equal(Infinity);
    const down = closed({ ramp: { from: 3, to: 1, durationSeconds: 4 } });
    expect(down.value(2, CLOCK0)).to.equal(2);
    expect(down.firstAbove(0, 2, CLOCK0)).to.equal(0);
    expect(down.firstAbove(2, 2, CLOCK0)).to.equal(Infinity);
    expect(closed({ ramp: { from: 0, to: 1, durationSeconds: 0 } }).value(0, CLOCK0)).to.equal(1);
  });

  it('periodic shapes start at min and take their documented values', () => {
    const shape = (s: string, extra = {}) =>
      closed({ periodic: { min: 1, max: 3, periodSeconds: 8, shape: s, ...extra } });
    const values = (c: ClosedCurve, ts: number[]) => ts.map((t) => +c.value(t, CLOCK0).toFixed(9));
    expect(values(shape('sine'), [0, 2, 4, 6, 8])).to.deep.equal([1, 2, 3, 2, 1]);
    expect(values(shape('triangle'), [0, 2, 4, 6, 8])).to.deep.equal([1, 2, 3, 2, 1]);
    expect(values(shape('sawtooth'), [0, 2, 4, 6, 7.999, 8])).to.deep.equal([1, 1.5, 2, 2.5, 2.99975, 1]);
    expect(values(shape('square'), [0, 3.9, 4, 7.9, 8])).to.deep.equal([1, 1, 3, 3, 1]);
    expect(values(shape('square', { duty: 0.25 }), [0, 5.9, 6, 7.9])).to.deep.equal([1, 1, 3, 3]);
    // Whole periods integrate to the mean: 0.25 × 3 + 0.75 × 1 = 1.5 a second for the 25 % duty square.
    expect(shape('square', { duty: 0.25 }).integral(0, 80, CLOCK0, Infinity)).to.equal(120);
    expect(shape('square', { duty: 0.25 }).integral(0, 80, CLOCK0, 2)).to.equal(100);
    expect(shape('sawtooth').integral(0, 80, CLOCK0, Infinity)).to.equal(160);
    // The default shape is sine.
    expect(
      closed({ periodic: { min: 1, max: 3, periodSeconds: 8 } }).integral(0, 80, CLOCK0, Infinity),
    ).to.be.closeTo(160, 1e-9);
  });

  it('a clock-phase curve is in step across containers, whenever they started', () => {
    const c = closed({ periodic: { min: 0, max: 1, periodSeconds: 60, shape: 'square', phase: 'clock' } });
    const epochMinute = Date.UTC(2026, 0, 1, 0, 10) / 1000;
    // Started 13 s and 42 s into the minute: both high in its second half, low in its first.
    for (const clock0 of [epochMinute + 13, epochMinute + 42]) {
      expect(c.value(epochMinute + 45 - clock0, clock0)).to.equal(1);
      expect(c.value(epochMinute + 75 - clock0, clock0)).to.equal(0);
      expect(c.firstAbove(epochMinute + 60 - clock0, 0.5, clock0)).to.be.closeTo(
        epochMinute + 90 - clock0,
        1e-6,
      );
    }
    const started = closed({ periodic: { min: 0, max: 1, periodSeconds: 60, shape: 'square' } });
    expect(started.value(45, epochMinute + 13)).to.equal(1);
    expect(started.value(45 - 13, epochMinute + 13)).to.equal(1);
  });

  it('integrates every closed form exactly under any cap, and finds the first crossing', () => {
    const specs: unknown[] = [
      '2',
      { ramp: { from: '100m', to: 2, durationSeconds: 30 } },
      { periodic: { min: '200m', max: '1800m', periodSeconds: 17 } },
      { periodic: { min: '200m', max: '1800m', periodSeconds: 17, phase: 'clock' } },
      { periodic: { min: '200m', max: '1800m', periodSeconds: 17, shape: 'square', duty: 0.3 } },
      { periodic: { min: '200m', max: '1800m', periodSeconds: 17, shape: 'triangle', phase: 'clock' } },
      { periodic: { min: '200m', max: '1800m', periodSeconds: 17, shape: 'sawtooth' } },
    ];
    for (const spec of specs) {
      const c = closed(spec);
      // The numeric rule blurs a jump over one step (up to 1.6 × 1 ms each); continuous shapes match closely.
      const jumps = /square|sawtooth/.test(JSON.stringify(spec));
      for (const cap of [Infinity, 5, 1, 0.1]) {
        for (const [t0, t1] of [
          [0, 100],
          [3.3, 40.7],
          [12, 13],
        ] as const) {
          const what = `${JSON.stringify(spec)} cap ${cap} over [${t0}, ${t1}]`;
          expect(c.integral(t0, t1, CLOCK0, cap), what).to.be.closeTo(
            numeric(c, t0, t1, cap),
            jumps ? 1e-2 : 1e-5,
          );
        }
      }
      for (const limit of [0.1, 1, 1.79, 2.5]) {
        for (const t0 of [0, 5.5, 20]) {
          let brute = Infinity;
          for (let t = t0; t < t0 + 100; t += 0.001)
            if (c.value(t, CLOCK0) > limit) {
              brute = t;
              break;
            }
          const found = c.firstAbove(t0, limit, CLOCK0);
          const what = `${JSON.stringify(spec)} above ${limit} from ${t0}`;
          if (brute === Infinity) expect(found, what).to.equal(Infinity);
          else expect(found, what).to.be.closeTo(brute, 0.0015);
        }
      }
    }
  });

  it('compiles an expression curve to its shared function', () => {
    const spec: CurveSpec = { expr: 'clamp(t / 10, 0, 1) * 2' };
    const c = compileCurve(spec);
    expect(c.kind).to.equal('expr');
    if (c.kind === 'expr') expect(c.fn(5, 0, 0)).to.equal(1);
  });
});
