import { expect } from 'chai';
import { requestDeadline } from '../../../src/kube/client.js';

describe('kube client: requestDeadline', () => {
  it('aborts with a TimeoutError once the timeout passes, and says so', async () => {
    const d = requestDeadline(5);
    expect(d.signal.aborted).to.equal(false);
    await new Promise((r) => setTimeout(r, 30));
    expect(d.signal.aborted).to.equal(true);
    expect(d.timedOut()).to.equal(true);
    expect((d.signal.reason as DOMException).name).to.equal('TimeoutError');
    d.release();
  });

  it('follows the caller signal, already aborted or aborted later, without counting it as a timeout', () => {
    const early = new AbortController();
    early.abort(new Error('stop'));
    const a = requestDeadline(60_000, early.signal);
    expect(a.signal.aborted).to.equal(true);
    expect(a.timedOut()).to.equal(false);
    a.release();

    const late = new AbortController();
    const b = requestDeadline(60_000, late.signal);
    expect(b.signal.aborted).to.equal(false);
    late.abort(new Error('later'));
    expect(b.signal.aborted).to.equal(true);
    expect((b.signal.reason as Error).message).to.equal('later');
    expect(b.timedOut()).to.equal(false);
    b.release();
  });

  it('after release neither the timer nor the caller signal can abort it', async () => {
    const parent = new AbortController();
    const d = requestDeadline(5, parent.signal);
    d.release();
    await new Promise((r) => setTimeout(r, 30));
    parent.abort();
    expect(d.signal.aborted).to.equal(false);
    expect(d.timedOut()).to.equal(false);
  });
});
