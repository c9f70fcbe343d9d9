import { expect } from 'chai';
import { SyncCancel } from '../../../../src/kubelet/util/synccancel.js';

describe('SyncCancel', () => {
  it('answers aborted without a signal, and the signal made later is already aborted', () => {
    const c = new SyncCancel();
    expect(c.aborted).to.equal(false);
    c.abort(new Error('pod is being terminated'));
    expect(c.aborted).to.equal(true);
    expect(c.signal.aborted).to.equal(true);
    expect((c.signal.reason as Error).message).to.equal('pod is being terminated');
  });

  it('fires a signal made before the abort, once, and calls each waiter once', () => {
    const c = new SyncCancel();
    const seen: string[] = [];
    c.signal.addEventListener('abort', () => seen.push('signal'));
    const off = c.onAbort(() => seen.push('kept'));
    c.onAbort(() => seen.push('second'));
    const removed = c.onAbort(() => seen.push('removed'));
    removed();
    c.abort();
    c.abort();
    off();
    expect(seen).to.deep.equal(['signal', 'kept', 'second']);
  });

  it('calls a waiter added after the abort at once', () => {
    const c = new SyncCancel();
    c.abort();
    let called = 0;
    c.onAbort(() => called++);
    expect(called).to.equal(1);
  });
});
