import { expect } from 'chai';
import {
  containerIDKey,
  ResultsManager,
  type ProbeResultUpdate,
} from '../../../../src/kubelet/prober/results.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';
import { asPodUID } from '../../../../src/kubelet/container/types.js';

const UID = asPodUID('uid');

describe('prober ResultsManager', () => {
  it('emits on a new ID and on a change, not on a repeated value', () => {
    const m = new ResultsManager('readiness');
    const seen: ProbeResultUpdate[] = [];
    m.subscribe((u) => seen.push(u));
    m.set('containerd://a', 'failure', UID);
    m.set('containerd://a', 'failure', UID);
    m.set('containerd://a', 'success', UID);
    expect(seen.map((u) => u.result)).to.deep.equal(['failure', 'success']);
    expect(seen[0]).to.deep.include({ containerID: 'containerd://a', podUID: 'uid', probeType: 'readiness' });
  });

  it('never emits on remove, and a removed ID counts as new again', () => {
    const m = new ResultsManager('liveness');
    const seen: string[] = [];
    m.subscribe((u) => seen.push(u.result));
    m.set('x://a', 'success', UID);
    m.remove('x://a');
    expect(m.get('x://a')).to.equal(undefined);
    m.set('x://a', 'success', UID);
    expect(seen).to.deep.equal(['success', 'success']);
  });

  it('answers for the API form and the bare runtime ID alike', () => {
    const m = new ResultsManager('startup');
    m.set('containerd://abc', 'success', UID);
    expect(m.get('abc')).to.equal('success');
    expect(m.get('containerd://abc')).to.equal('success');
    expect(containerIDKey('docker://x')).to.equal('x');
  });

  it('re-setting an ID, in either form, keeps one entry with the latest value', () => {
    const m = new ResultsManager('readiness');
    const seen: string[] = [];
    m.subscribe((u) => seen.push(`${u.containerID}=${u.result}`));
    m.set('containerd://a', 'failure', UID);
    m.set(['containerd://', 'a'].join(''), 'failure', UID); // an equal string, another object
    m.set('a', 'success', UID);
    m.set('containerd://b', 'success', UID);
    m.set('containerd://a', 'success', UID);
    expect(m.size).to.equal(2);
    expect(m.get('containerd://a')).to.equal('success');
    expect(m.get('b')).to.equal('success');
    expect(seen).to.deep.equal(['containerd://a=failure', 'a=success', 'containerd://b=success']);
  });

  it('rejects an empty ID or an unknown result with InvalidArgument; unsubscribe works', () => {
    const m = new ResultsManager('startup');
    expect(() => m.set('', 'success', UID))
      .to.throw()
      .satisfy(isInvalidArgument);
    try {
      m.set('a', 'maybe' as never, UID);
      expect.fail('no error');
    } catch (err) {
      expect(isInvalidArgument(err)).to.equal(true);
    }
    const seen: string[] = [];
    const off = m.subscribe((u) => seen.push(u.result));
    off();
    m.set('a', 'success', UID);
    expect(seen).to.deep.equal([]);
  });

  it('keeps storing and notifying other listeners when one throws', () => {
    const m = new ResultsManager('readiness');
    const seen: string[] = [];
    m.subscribe(() => {
      throw new Error('boom');
    });
    m.subscribe((u) => seen.push(u.result));
    m.set('a', 'success', UID);
    expect(m.get('a')).to.equal('success');
    expect(seen).to.deep.equal(['success']);
  });
});
