import { expect } from 'chai';
import {
  availableBytes,
  expectedVictim,
  interpolate,
  peakRate,
  podMemoryBytes,
  podMemoryExpr,
  pressureCounts,
  pressureStartMs,
  rampPlan,
  type NodePod,
} from '../../../bench/lib/evictionmodel.js';
import { compileExpr } from '../../../src/runtime/sim/expr.js';

const MI = 2 ** 20;
const T0 = 1_800_000_000_000;

describe('bench eviction model', () => {
  const plan = rampPlan({
    podsPerNode: 4,
    t0Ms: T0 - 400,
    leadSeconds: 60,
    rampSeconds: 180,
    operatorShareBytes: 0,
  });
  const noShare = (): number => 0;

  it('starts the ramp on a whole second and crosses the threshold leadSeconds into it', () => {
    expect(plan.t0Ms).to.equal(T0);
    const pods: NodePod[] = [0, 1, 2, 3].map((index) => ({ index }));
    // Capacity is rounded up to a MiB, so the crossing is at most a MiB of ramp later than the lead.
    const slope = plan.podSlopeBytesPerSec * 4;
    expect(availableBytes(plan, pods, T0 + 59_000, 0)).to.be.greaterThan(plan.thresholdBytes);
    expect(availableBytes(plan, pods, T0 + 60_000 + Math.ceil((MI / slope) * 1000) + 1, 0)).to.be.lessThan(
      plan.thresholdBytes,
    );
  });

  it('declares the same memory as the model computes, in the sim expression language', () => {
    for (const [j, offsetMs] of [
      [0, -5000],
      [3, 0],
      [2, 90_000],
      [1, 500_000],
    ] as const) {
      const fn = compileExpr(podMemoryExpr(plan, j));
      expect(fn(0, (T0 + offsetMs) / 1000, 0)).to.be.closeTo(podMemoryBytes(plan, j, T0 + offsetMs), 1);
    }
    expect(podMemoryBytes(plan, 3, T0 + 500_000)).to.equal(
      plan.baseBytes + 3 * plan.stepBytes + 180 * plan.podSlopeBytesPerSec,
    );
  });

  it('finds the start of the pressure that ended in an eviction, pods counting until they are gone', () => {
    const pods: NodePod[] = [0, 1, 2, 3].map((index) => ({ index }));
    const crossing = pressureStartMs(plan, pods, T0 + 70_000, noShare, T0)!;
    expect(crossing).to.be.within(T0 + 60_000, T0 + 61_000);
    // The operator's memory share moves the crossing earlier.
    const earlier = pressureStartMs(plan, pods, T0 + 70_000, () => 8 * MI, T0)!;
    expect(earlier).to.be.lessThan(crossing - 1000);
    // Pod 3 gone at +70 s frees more than the ramp adds for a while: an eviction at +75 s had no pressure.
    pods[3]!.goneAtMs = T0 + 70_000;
    expect(pressureStartMs(plan, pods, T0 + 75_000, noShare, T0)).to.equal(undefined);
    // Before the ramp started nothing is met; with no stretch since fromMs, undefined as well.
    expect(pressureStartMs(plan, pods, T0 + 10_000, noShare, T0)).to.equal(undefined);
  });

  it('expects the highest index still running as the victim', () => {
    const pods: NodePod[] = [{ index: 0 }, { index: 1, goneAtMs: 500 }, { index: 2, goneAtMs: 200 }];
    expect(expectedVictim(pods, 200)).to.equal(2);
    expect(expectedVictim(pods, 500)).to.equal(1);
    expect(expectedVictim(pods, 900)).to.equal(0);
    expect(expectedVictim([], 900)).to.equal(undefined);
  });

  it('interpolates samples and holds the ends', () => {
    const s = [
      { t: 10, v: 100 },
      { t: 20, v: 200 },
      { t: 40, v: 0 },
    ];
    const cases: [number, number][] = [
      [0, 100],
      [15, 150],
      [30, 100],
      [99, 0],
    ];
    for (const [at, want] of cases) expect(interpolate(s, at)).to.equal(want);
    expect(interpolate([], 5)).to.equal(0);
  });

  it('counts nodes under MemoryPressure over time and the peak rate', () => {
    const tr = new Map([
      [
        'a',
        [
          { atMs: 10, pressure: true },
          { atMs: 50, pressure: false },
        ],
      ],
      ['b', [{ atMs: 30, pressure: true }]],
    ]);
    expect(pressureCounts(tr, 0, 60, 20).map((x) => x.nodes)).to.deep.equal([0, 1, 2, 1]);
    expect(peakRate([0, 1000, 2000, 15_000], 10_000)).to.equal(0.3);
    expect(peakRate([], 10_000)).to.equal(0);
  });
});
