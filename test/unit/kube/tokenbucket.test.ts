import { expect } from 'chai';
import { TokenBucket } from '../../../src/kube/tokenbucket.js';
import { FakeClock } from '../../../src/util/clock.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('TokenBucket', () => {
  it('allows a burst, then paces at qps', async () => {
    const clock = new FakeClock(0);
    const b = new TokenBucket(clock, 10, 3);
    expect([b.tryAcquire(), b.tryAcquire(), b.tryAcquire(), b.tryAcquire()]).to.deep.equal([
      true,
      true,
      true,
      false,
    ]);
    clock.advance(100);
    expect(b.tryAcquire()).to.equal(true);
    expect(b.tryAcquire()).to.equal(false);
  });

  it('serves waiters in order as tokens accrue', async () => {
    const clock = new FakeClock(0);
    const b = new TokenBucket(clock, 10, 1);
    const order: number[] = [];
    const ps = [1, 2, 3].map((i) => b.acquire().then(() => order.push(i)));
    await tick();
    expect(order).to.deep.equal([1]);
    for (let i = 0; i < 3; i++) {
      clock.advance(100);
      await tick();
      await tick();
    }
    await Promise.all(ps);
    expect(order).to.deep.equal([1, 2, 3]);
  });

  it('rejects nonsense settings with a typed error', () => {
    expect(() => new TokenBucket(new FakeClock(), 0, 1)).to.throw(/qps > 0/);
  });
});
