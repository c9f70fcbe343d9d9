import { expect } from 'chai';
import { formatGoDuration } from '../../../src/util/duration.js';

describe('formatGoDuration', () => {
  it('prints durations as Go does', () => {
    const cases: [number, string][] = [
      [0, '0s'],
      [1, '1ms'],
      [1.5, '1.5ms'],
      [0.001, '1µs'],
      [0.000001, '1ns'],
      [500, '500ms'],
      [1000, '1s'],
      [1500, '1.5s'],
      [10_000, '10s'],
      [60_000, '1m0s'],
      [80_000, '1m20s'],
      [300_000, '5m0s'],
      [3_600_000, '1h0m0s'],
      [3_661_500, '1h1m1.5s'],
      [-2500, '-2.5s'],
      [Number.NaN, '0s'],
    ];
    for (const [ms, want] of cases) expect(formatGoDuration(ms), String(ms)).to.equal(want);
  });
});
