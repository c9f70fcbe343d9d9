import { expect } from 'chai';
import { ReasonCache } from '../../../src/kubelet/reasoncache.js';

describe('ReasonCache', () => {
  it('stores StartContainer failures and forgets them on success; other actions are ignored', () => {
    const c = new ReasonCache();
    c.update('u', [
      { action: 'StartContainer', target: 'a', error: 'CrashLoopBackOff', message: 'back-off 20s' },
      { action: 'StartContainer', target: 'b', error: new Error('ErrImagePull'), message: 'pull failed' },
      { action: 'KillContainer', target: 'c', error: 'boom' },
      { action: 'StartContainer', target: 42, error: 'not a name' },
    ]);
    expect(c.get('u', 'a')).to.deep.equal({ reason: 'CrashLoopBackOff', message: 'back-off 20s' });
    expect(c.get('u', 'b')).to.deep.equal({ reason: 'ErrImagePull', message: 'pull failed' });
    expect(c.get('u', 'c')).to.equal(undefined);
    expect(c.size).to.equal(2);
    c.update('u', [{ action: 'StartContainer', target: 'a', error: null }]);
    expect(c.get('u', 'a')).to.equal(undefined);
    expect(c.get('other', 'b')).to.equal(undefined);
  });

  it('evicts the least recently used entry at capacity; get counts as a use', () => {
    const c = new ReasonCache(2);
    c.add('u', 'a', 'A');
    c.add('u', 'b', 'B');
    c.get('u', 'a');
    c.add('u', 'c', 'C');
    expect(c.get('u', 'b')).to.equal(undefined);
    expect(c.get('u', 'a')?.reason).to.equal('A');
    expect(c.get('u', 'c')?.reason).to.equal('C');
  });

  it('defaults to 1000 entries and tolerates a missing result list', () => {
    const c = new ReasonCache(0);
    expect(c.capacity).to.equal(1000);
    for (let i = 0; i < 1001; i++) c.add('u', `c${i}`, 'X');
    expect(c.size).to.equal(1000);
    expect(c.get('u', 'c0')).to.equal(undefined);
    c.update('u', undefined);
    expect(c.size).to.equal(1000);
  });

  it('returns copies, so callers cannot alter the cache', () => {
    const c = new ReasonCache();
    c.add('u', 'a', 'A', 'm');
    const item = c.get('u', 'a');
    if (item) item.reason = 'changed';
    expect(c.get('u', 'a')?.reason).to.equal('A');
  });
});
