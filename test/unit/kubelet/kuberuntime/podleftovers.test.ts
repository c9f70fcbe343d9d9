import { expect } from 'chai';
import { PodLeftovers } from '../../../../src/kubelet/kuberuntime/podleftovers.js';

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
    );
    expect(orphaned).to.deep.equal([['uid-a', { namespace: 'ns', name: 'a' }]]);
    l.forget('uid-a');
    expect(l.size).to.equal(2);
  });

  it('has a failed removal logged once per pod, and again for a pod recorded anew after it was forgotten', () => {
    const l = new PodLeftovers();
    l.record('ns', 'a', 'uid-a');
    expect(l.logFailure('uid-a')).to.equal(true);
    expect(l.logFailure('uid-a')).to.equal(false);
    expect(l.logFailure('uid-a')).to.equal(false);
    l.forget('uid-a');
    l.record('ns', 'a', 'uid-a');
    expect(l.logFailure('uid-a')).to.equal(true);
    // A pod that is not recorded (a removal with the pod itself) is always logged.
    expect(l.logFailure('uid-x')).to.equal(true);
    expect(l.logFailure('uid-x')).to.equal(true);
  });
});
