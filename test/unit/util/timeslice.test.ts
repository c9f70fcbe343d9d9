import { expect } from 'chai';
import { TimeSlicer } from '../../../src/util/timeslice.js';

describe('TimeSlicer', () => {
  it('resolves at once within a slice and through a macrotask once the slice is used up', async () => {
    let t = 0;
    const s = new TimeSlicer(10, () => t);
    const order: string[] = [];
    setImmediate(() => order.push('macrotask'));
    await s.yield();
    order.push('within the slice');
    t = 10;
    await s.yield();
    order.push('after the slice');
    expect(order).to.deep.equal(['within the slice', 'macrotask', 'after the slice']);
    // A new slice starts when the loop has turned.
    setImmediate(() => order.push('second macrotask'));
    t = 15;
    await s.yield();
    order.push('new slice');
    expect(order.at(-1)).to.equal('new slice');
    expect(order).to.not.include('second macrotask');
  });
});
