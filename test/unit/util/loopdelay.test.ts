import { expect } from 'chai';
import { EventLoopDelaySampler } from '../../../src/util/loopdelay.js';

describe('EventLoopDelaySampler', () => {
  it('observes how much later than its resolution each tick comes, a stall as one observation of its length', () => {
    let t = 1000;
    const seen: number[] = [];
    const s = new EventLoopDelaySampler({ observe: (v) => seen.push(v) }, 10, () => t);
    s.start();
    s.stop();
    for (const step of [10, 12, 10, 310, 9]) {
      t += step;
      s.tick();
    }
    expect(seen.map((v) => Math.round(v * 1000))).to.deep.equal([0, 2, 0, 300, 0]);
  });
});
