import { expect } from 'chai';
import { emptyPodStatus, PodCache } from '../../../../src/kubelet/container/cache.js';

describe('PodCache (used by the PLEG)', () => {
  it('reads an unknown pod as an empty status without error', () => {
    const c = new PodCache();
    expect(c.get('p')).to.deep.equal({ status: emptyPodStatus('p'), error: undefined });
  });

  it('getNewerThan waits for a newer write or a newer global timestamp', async () => {
    const c = new PodCache();
    c.set('p', emptyPodStatus('p', 'n', 'ns'), undefined, 100);
    expect((await c.getNewerThan('p', 50)).status.name).to.equal('n');
    let done = false;
    const waiting = c.getNewerThan('p', 200).then(() => (done = true));
    await Promise.resolve();
    expect(done).to.equal(false);
    c.set('q', emptyPodStatus('q'), undefined, 300);
    await Promise.resolve();
    expect(done).to.equal(false);
    c.updateTime(201);
    await waiting;
    expect(done).to.equal(true);
    const unknown = await c.getNewerThan('z', 100);
    expect(unknown.status.uid).to.equal('z');
  });
});
