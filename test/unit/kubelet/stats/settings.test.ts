import { expect } from 'chai';
import { volumeStatsAggPeriodFrom } from '../../../../src/kubelet/stats/settings.js';

describe('stats/settings: volumeStatsAggPeriod', () => {
  const cases: [string | undefined, { periodMs: number; error?: string }][] = [
    [undefined, { periodMs: 60_000 }],
    ['0s', { periodMs: 60_000 }],
    ['0', { periodMs: 60_000 }],
    ['10s', { periodMs: 10_000 }],
    ['1m30s', { periodMs: 90_000 }],
    ['-1s', { periodMs: -1_000 }],
    ['ten', { periodMs: 60_000, error: 'volumeStatsAggPeriod: time: invalid duration "ten"' }],
  ];
  for (const [value, want] of cases) {
    it(`${String(value)} -> ${JSON.stringify(want)}`, () => {
      expect(volumeStatsAggPeriodFrom(value)).to.deep.equal(want);
    });
  }
});
