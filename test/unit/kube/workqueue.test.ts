import { expect } from 'chai';
import { runWorkers, WorkQueue } from '../../../src/kube/workqueue.js';
import { FakeClock } from '../../../src/util/clock.js';

describe('WorkQueue', () => {
  it('coalesces repeated adds of a queued key', async () => {
    const q = new WorkQueue<string>(new FakeClock());
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.length).to.equal(2);
    expect(await q.get()).to.equal('a');
    expect(await q.get()).to.equal('b');
  });

  it('never hands out a key being processed; re-queues it on done when re-added', async () => {
    const q = new WorkQueue<string>(new FakeClock());
    q.add('a');
    const k = await q.get();
    q.add('a');
    expect(q.length).to.equal(0, 'a is processing, so it waits');
    q.done(k!);
    expect(q.length).to.equal(1);
    expect(await q.get()).to.equal('a');
    q.done('a');
    expect(q.length).to.equal(0);
  });

  it('wakes a waiting get', async () => {
    const q = new WorkQueue<string>(new FakeClock());
    const p = q.get();
    q.add('x');
    expect(await p).to.equal('x');
  });

  it('backs off exponentially per key and resets on forget', () => {
    const clock = new FakeClock(0);
    const q = new WorkQueue<string>(clock, { baseDelayMs: 10, maxDelayMs: 35 });
    q.addRateLimited('a');
    clock.advance(9);
    expect(q.length).to.equal(0);
    clock.advance(1);
    expect(q.length).to.equal(1);
    void q.get();
    q.done('a');
    q.addRateLimited('a'); // 20 ms
    clock.advance(19);
    expect(q.length).to.equal(0);
    clock.advance(1);
    expect(q.length).to.equal(1);
    q.addRateLimited('a'); // 40 -> capped at 35; key already queued so the add is a no-op on fire
    expect(q.numRequeues('a')).to.equal(3);
    q.forget('a');
    expect(q.numRequeues('a')).to.equal(0);
  });

  it('keeps the earliest of two delayed adds', () => {
    const clock = new FakeClock(0);
    const q = new WorkQueue<string>(clock);
    q.addAfter('a', 100);
    q.addAfter('a', 50);
    q.addAfter('a', 80);
    clock.advance(50);
    expect(q.length).to.equal(1);
  });

  it('shutDown releases waiters and runWorkers returns', async () => {
    const q = new WorkQueue<string>(new FakeClock());
    const seen: string[] = [];
    const done = runWorkers(q, 2, async (k) => {
      seen.push(k);
    });
    q.add('a');
    q.add('b');
    await new Promise((r) => setImmediate(r));
    q.shutDown();
    await done;
    expect(seen.sort()).to.deep.equal(['a', 'b']);
  });

  it('runWorkers retries a failing sync with back-off', async () => {
    const clock = new FakeClock(0);
    const q = new WorkQueue<string>(clock, { baseDelayMs: 100 });
    let calls = 0;
    const errors: unknown[] = [];
    const done = runWorkers(
      q,
      1,
      async () => {
        calls++;
        if (calls === 1) throw new Error('boom');
      },
      (_k, e) => errors.push(e),
    );
    q.add('a');
    await new Promise((r) => setImmediate(r));
    expect(calls).to.equal(1);
    clock.advance(100);
    await new Promise((r) => setImmediate(r));
    expect(calls).to.equal(2);
    expect(errors).to.have.length(1);
    expect(q.numRequeues('a')).to.equal(0, 'success forgets the back-off');
    q.shutDown();
    await done;
  });
});
