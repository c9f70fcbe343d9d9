import { expect } from 'chai';
import { BoundedChannel } from '../../../src/util/channel.js';
import { isInvalidArgument } from '../../../src/util/errors.js';

describe('BoundedChannel', () => {
  it('refuses sends beyond capacity and drains in order', () => {
    const ch = new BoundedChannel<number>(2);
    expect([ch.trySend(1), ch.trySend(2), ch.trySend(3)]).to.deep.equal([true, true, false]);
    expect(ch.drain()).to.deep.equal([1, 2]);
    expect(ch.tryReceive()).to.equal(undefined);
  });

  it('hands a value straight to a waiting receiver; abort rejects', async () => {
    const ch = new BoundedChannel<string>(1);
    const p = ch.receive();
    expect(ch.trySend('a')).to.equal(true);
    expect(await p).to.equal('a');
    expect(ch.length).to.equal(0);
    const ac = new AbortController();
    const q = ch.receive(ac.signal);
    ac.abort(new Error('stop'));
    let err: unknown;
    await q.catch((e: unknown) => (err = e));
    expect((err as Error).message).to.equal('stop');
    expect(ch.trySend('b')).to.equal(true);
    expect(ch.length).to.equal(1);
  });

  it('rejects a capacity that is not a positive integer', () => {
    expect(() => new BoundedChannel(0))
      .to.throw()
      .satisfy(isInvalidArgument);
  });
});
