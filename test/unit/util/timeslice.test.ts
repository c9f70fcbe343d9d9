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

  it('gives parked callers one slice per loop turn between them, in the order they parked', async () => {
    let t = 0;
    const s = new TimeSlicer(10, () => t);
    t = 10;
    const ran: number[] = [];
    // The slice that started at 0 is used up: five callers park, each then works 6 ms.
    const done = [1, 2, 3, 4, 5].map((i) =>
      s.yield().then(() => {
        t += 6;
        ran.push(i);
      }),
    );
    expect(s.waiting()).to.equal(5);
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    await turn();
    expect(ran, 'first turn: two callers fill its 10 ms').to.deep.equal([1, 2]);
    await turn();
    expect(ran).to.deep.equal([1, 2, 3, 4]);
    await turn();
    await Promise.all(done);
    expect(ran).to.deep.equal([1, 2, 3, 4, 5]);
    expect(s.waiting()).to.equal(0);
  });

  it('reads the clock only after a released caller has run its whole promise chain', async () => {
    let t = 0;
    const s = new TimeSlicer(10, () => t);
    t = 10;
    const ran: number[] = [];
    // Each caller does its 6 ms of work a few promise steps after it is released (a runtime call answered,
    // then the pod sync carrying on), not in its first step.
    const deepWork = async (i: number): Promise<void> => {
      await s.yield();
      for (let step = 0; step < 5; step++) await Promise.resolve();
      t += 6;
      ran.push(i);
    };
    const done = [1, 2, 3, 4, 5].map(deepWork);
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    await turn();
    expect(ran, 'first turn: two callers fill its 10 ms, deep work and all').to.deep.equal([1, 2]);
    await turn();
    expect(ran).to.deep.equal([1, 2, 3, 4]);
    await turn();
    await Promise.all(done);
    expect(ran).to.deep.equal([1, 2, 3, 4, 5]);
  });
});
