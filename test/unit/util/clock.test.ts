import { expect } from 'chai';
import { FakeClock, RealClock } from '../../../src/util/clock.js';

describe('FakeClock', () => {
  it('fires timers in due order, each seeing its own due time', () => {
    const clock = new FakeClock(1000);
    const seen: [string, number][] = [];
    clock.setTimer(30, () => seen.push(['b', clock.now()]));
    clock.setTimer(10, () => {
      seen.push(['a', clock.now()]);
      clock.setTimer(5, () => seen.push(['a2', clock.now()]));
    });
    clock.advance(100);
    expect(seen).to.deep.equal([
      ['a', 1010],
      ['a2', 1015],
      ['b', 1030],
    ]);
    expect(clock.now()).to.equal(1100);
  });

  it('does not fire cancelled timers or timers beyond the target', () => {
    const clock = new FakeClock(0);
    let fired = 0;
    const h = clock.setTimer(10, () => fired++);
    clock.setTimer(50, () => fired++);
    h.cancel();
    clock.advance(49);
    expect(fired).to.equal(0);
    expect(clock.pendingTimers()).to.equal(1);
    clock.advance(1);
    expect(fired).to.equal(1);
  });

  it('resolves sleep on advance and rejects it on abort', async () => {
    const clock = new FakeClock(0);
    const p = clock.sleep(20);
    clock.advance(20);
    await p;
    const ac = new AbortController();
    const q = clock.sleep(20, ac.signal);
    ac.abort(new Error('stop'));
    let err: unknown;
    await q.catch((e: unknown) => (err = e));
    expect((err as Error).message).to.equal('stop');
  });
});

describe('RealClock', () => {
  it('does not fire a timer longer than setTimeout can hold (about 24.8 days) at once', async () => {
    const clock = new RealClock();
    let fired = 0;
    const month = 30 * 24 * 3600 * 1000;
    const t = clock.setTimer(month, () => fired++);
    const ac = new AbortController();
    const slept = clock.sleep(month, ac.signal).then(
      () => 'resolved',
      () => 'aborted',
    );
    await new Promise((r) => setTimeout(r, 50));
    expect(fired).to.equal(0);
    t.cancel();
    ac.abort();
    expect(await slept).to.equal('aborted');
  });

  it('still fires short timers and sleeps', async () => {
    const clock = new RealClock();
    let fired = 0;
    clock.setTimer(5, () => fired++);
    await clock.sleep(30);
    expect(fired).to.equal(1);
  });

  it('fires timers in due order, equal due times in creation order, and not cancelled ones', async () => {
    const clock = new RealClock();
    const order: string[] = [];
    clock.setTimer(20, () => order.push('b'));
    clock.setTimer(5, () => order.push('a'));
    clock.setTimer(20, () => order.push('c'));
    clock.setTimer(10, () => order.push('x')).cancel();
    const cancelledLate = clock.setTimer(25, () => order.push('y'));
    clock.setTimer(22, () => cancelledLate.cancel());
    await clock.sleep(60);
    expect(order).to.deep.equal(['a', 'b', 'c']);
  });

  it('runs a timer set by a firing callback on a later turn, even with 0 ms', async () => {
    const clock = new RealClock();
    const order: string[] = [];
    // Both 5 ms timers must fall due in the same millisecond to be one batch: set them right after the clock
    // turns a millisecond (on a loaded machine the clock could otherwise turn between the two calls, and then
    // the chained 0 ms timer would rightly come before the later 'second').
    for (const t = Date.now(); Date.now() === t;);
    clock.setTimer(5, () => {
      order.push('first');
      clock.setTimer(0, () => order.push('chained'));
      queueMicrotask(() => order.push('microtask'));
    });
    clock.setTimer(5, () => order.push('second'));
    await clock.sleep(40);
    expect(order).to.deep.equal(['first', 'second', 'microtask', 'chained']);
  });

  it('keeps firing the batch when a callback throws, and hands the error over', async () => {
    const errors: unknown[] = [];
    const clock = new RealClock((e) => errors.push(e));
    let fired = 0;
    clock.setTimer(5, () => {
      throw new Error('boom');
    });
    clock.setTimer(5, () => fired++);
    await clock.sleep(30);
    expect(fired).to.equal(1);
    expect((errors[0] as Error).message).to.equal('boom');
  });

  it('re-arms for an earlier timer set after a later one', async () => {
    const clock = new RealClock();
    const at: number[] = [];
    const t0 = Date.now();
    clock.setTimer(10_000, () => at.push(-1));
    clock.setTimer(10, () => at.push(Date.now() - t0));
    await clock.sleep(60);
    expect(at).to.have.length(1);
    expect(at[0], 'fired for the 10 ms timer, not the 10 s one').to.be.within(9, 5_000);
  });
});
