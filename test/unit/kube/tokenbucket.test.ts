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

  it('serves low-priority waiters only while no normal one waits', async () => {
    const clock = new FakeClock(0);
    const b = new TokenBucket(clock, 10, 1);
    const order: string[] = [];
    const ps = [
      b.acquire('low').then(() => order.push('low-1')), // takes the one saved token at once
      b.acquire('low').then(() => order.push('low-2')),
      b.acquire('low').then(() => order.push('low-3')),
      b.acquire().then(() => order.push('normal-1')),
    ];
    await tick();
    expect(order).to.deep.equal(['low-1']);
    clock.advance(100);
    await tick();
    await tick();
    // A normal request that came while the lows waited goes first, then one that comes later still does.
    ps.push(b.acquire('normal').then(() => order.push('normal-2')));
    for (let i = 0; i < 4; i++) {
      clock.advance(100);
      await tick();
      await tick();
    }
    await Promise.all(ps);
    expect(order).to.deep.equal(['low-1', 'normal-1', 'normal-2', 'low-2', 'low-3']);
    // No more tokens than qps allows: 5 in 0.5 s at 10/s with a burst of 1.
    expect(clock.now()).to.equal(500);
  });

  it('rejects nonsense settings with a typed error', () => {
    expect(() => new TokenBucket(new FakeClock(), 0, 1)).to.throw(/qps > 0/);
  });
});
