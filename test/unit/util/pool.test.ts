import { expect } from 'chai';
import { forEachConcurrently } from '../../../src/util/pool.js';

describe('forEachConcurrently', () => {
  it('keeps at most `limit` calls in flight, starts each item once in order, and waits for all', async () => {
    const started: number[] = [];
    const done: number[] = [];
    let inFlight = 0;
    let most = 0;
    await forEachConcurrently([5, 1, 4, 2, 3, 0], 3, async (ms) => {
      started.push(ms);
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, ms));
      inFlight--;
      done.push(ms);
    });
    expect(started).to.deep.equal([5, 1, 4, 2, 3, 0]);
    expect(most).to.equal(3);
    expect(done.length).to.equal(6);
  });

  it('does nothing for no items and runs one at a time with a limit of one (or less)', async () => {
    await forEachConcurrently([], 4, () => Promise.reject(new Error('never called')));
    let inFlight = 0;
    let most = 0;
    await forEachConcurrently([1, 2, 3], 0, async () => {
      most = Math.max(most, ++inFlight);
      await Promise.resolve();
      inFlight--;
    });
    expect(most).to.equal(1);
  });
});
