import { expect } from 'chai';
import { CpuRates, MonotonicSum } from '../../../../src/kubelet/stats/cpu.js';

describe('stats/cpu', () => {
  describe('CpuRates', () => {
    it('has no rate for a first sample, then the rate between samples in nano-cores', () => {
      const r = new CpuRates();
      expect(r.rate('a', { timeMs: 1_000, coreNanoSeconds: 0 })).to.equal(undefined);
      r.endRound();
      // 0.5 s of CPU over 2 s: a quarter of a core.
      expect(r.rate('a', { timeMs: 3_000, coreNanoSeconds: 500_000_000 })).to.equal(250_000_000);
    });

    it('keeps the older sample when a second reading comes in the same millisecond', () => {
      const r = new CpuRates();
      r.rate('a', { timeMs: 1_000, coreNanoSeconds: 0 });
      r.endRound();
      expect(r.rate('a', { timeMs: 2_000, coreNanoSeconds: 1e9 })).to.equal(1e9);
      r.endRound();
      expect(r.rate('a', { timeMs: 2_000, coreNanoSeconds: 1e9 })).to.equal(undefined);
      r.endRound();
      expect(r.rate('a', { timeMs: 4_000, coreNanoSeconds: 2e9 })).to.equal(5e8);
    });

    it('gives no rate for a counter that went backwards, and forgets keys not sampled in a round', () => {
      const r = new CpuRates();
      r.rate('a', { timeMs: 1_000, coreNanoSeconds: 5e9 });
      r.rate('b', { timeMs: 1_000, coreNanoSeconds: 1 });
      r.endRound();
      expect(r.rate('a', { timeMs: 2_000, coreNanoSeconds: 1e9 })).to.equal(undefined);
      r.endRound();
      expect(r.size()).to.equal(1);
      expect(r.rate('a', { timeMs: 3_000, coreNanoSeconds: 2e9 })).to.equal(1e9);
    });
  });

  describe('MonotonicSum', () => {
    it('never goes backwards when members restart or disappear', () => {
      const s = new MonotonicSum();
      expect(
        s.round([
          ['c1', 100],
          ['c2', 50],
        ]),
      ).to.equal(150);
      // c1 restarted (its counter fell to 10), c2 went on.
      expect(
        s.round([
          ['c1', 10],
          ['c2', 60],
        ]),
      ).to.equal(100 + 10 + 60);
      // c2 is gone: its 60 stays counted.
      expect(s.round([['c1', 20]])).to.equal(100 + 20 + 60);
      expect(s.members()).to.equal(1);
      expect(s.round([])).to.equal(180);
    });
  });
});
