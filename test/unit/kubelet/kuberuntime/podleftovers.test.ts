import { expect } from 'chai';
import { PodLeftovers, RecheckAfterMs } from '../../../../src/kubelet/kuberuntime/podleftovers.js';

describe('PodLeftovers', () => {
  it('lists as orphaned only the recorded pods that may go and that the runtime no longer holds', () => {
    const l = new PodLeftovers();
    l.record('ns', 'a', 'uid-a');
    l.record('ns', 'b', 'uid-b');
    l.record('ns', 'c', 'uid-c');
    l.record('ns', 'ignored', '');
    expect(l.size).to.equal(3);
    const orphaned = l.orphaned(
      (uid) => uid !== 'uid-c',
      (uid) => uid === 'uid-b',
      0,
    );
    expect(orphaned).to.deep.equal([['uid-a', { namespace: 'ns', name: 'a' }]]);
  });

  it('keeps a removed pod for a second look RecheckAfterMs later, then forgets it', () => {
    const l = new PodLeftovers();
    const all = (): boolean => true;
    const none = (): boolean => false;
    l.record('ns', 'a', 'uid-a');
    l.removed('uid-a', 1_000);
    expect(l.size).to.equal(1);
    expect(l.orphaned(all, none, 1_000 + RecheckAfterMs - 1)).to.deep.equal([]);
    // Another removal in the meantime (the GC's, housekeeping's) does not move the second look.
    l.removed('uid-a', 3_000);
    const due = l.orphaned(all, none, 1_000 + RecheckAfterMs);
    expect(due.map(([uid]) => uid)).to.deep.equal(['uid-a']);
    // ...as long as the runtime holds nothing of it and its content may go.
    expect(l.orphaned(all, all, 1_000 + RecheckAfterMs)).to.deep.equal([]);
    l.removed('uid-a', 1_000 + RecheckAfterMs);
    expect(l.size).to.equal(0);
    // Removals of pods never recorded (a simulated runtime's) record nothing.
    l.removed('uid-x', 0);
    expect(l.size).to.equal(0);
  });

  it('takes a removed pod recorded again as its own once more: no second look, orphaned when it may go', () => {
    const l = new PodLeftovers();
    l.record('ns', 'a', 'uid-a');
    l.removed('uid-a', 0);
    l.record('ns', 'a', 'uid-a');
    expect(
      l
        .orphaned(
          () => true,
          () => false,
          1,
        )
        .map(([uid]) => uid),
    ).to.deep.equal(['uid-a']);
    l.removed('uid-a', 10);
    expect(l.size, 'the new removal gets its own second look').to.equal(1);
    l.removed('uid-a', 10 + RecheckAfterMs);
    expect(l.size).to.equal(0);
  });

  it('has a failed removal logged once per pod, and again for a pod recorded anew after it was forgotten', () => {
    const l = new PodLeftovers();
    l.record('ns', 'a', 'uid-a');
    expect(l.logFailure('uid-a')).to.equal(true);
    expect(l.logFailure('uid-a')).to.equal(false);
    expect(l.logFailure('uid-a')).to.equal(false);
    l.removed('uid-a', 0);
    l.removed('uid-a', RecheckAfterMs);
    l.record('ns', 'a', 'uid-a');
    expect(l.logFailure('uid-a')).to.equal(true);
    // A pod that is not recorded (a removal with the pod itself) is always logged.
    expect(l.logFailure('uid-x')).to.equal(true);
    expect(l.logFailure('uid-x')).to.equal(true);
  });
});
