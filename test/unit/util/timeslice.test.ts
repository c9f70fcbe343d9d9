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

  /**
   * Five callers park on a used-up slice; each, once released, works 6 ms after `depth` more promise steps (a
   * runtime call answered, then the pod sync carrying on). A 10 ms turn holds two of them, whatever the depth.
   */
  async function twoPerTurn(depth: number): Promise<void> {
    let t = 0;
    const s = new TimeSlicer(10, () => t);
    t = 10;
    const ran: number[] = [];
    const work = async (i: number): Promise<void> => {
      await s.yield();
      for (let step = 0; step < depth; step++) await Promise.resolve();
      t += 6;
      ran.push(i);
    };
    const done = [1, 2, 3, 4, 5].map(work);
    expect(s.waiting()).to.equal(5);
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    await turn();
    expect(ran, `first turn, work ${depth} steps deep: two callers fill its 10 ms`).to.deep.equal([1, 2]);
    await turn();
    expect(ran).to.deep.equal([1, 2, 3, 4]);
    await turn();
    await Promise.all(done);
    expect(ran).to.deep.equal([1, 2, 3, 4, 5]);
    expect(s.waiting()).to.equal(0);
  }

  it('gives parked callers one slice per loop turn between them, in the order they parked', () =>
    twoPerTurn(0));

  it('reads the clock only after a released caller has run its whole promise chain', () => twoPerTurn(5));
});
