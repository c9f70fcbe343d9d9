import { expect } from 'chai';
import { Backoff } from '../../../../src/kubelet/backoff.js';
import {
  evalPullError,
  ImagePullBackOff,
  imagePullBackOffKey,
  newImagePullBackOff,
  type PullOutcome,
} from '../../../../src/kubelet/images/pullbackoff.js';

const s = 1000;

function clockAt(start: number) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('image pull back-off', () => {
  it('keys schedules by pod UID and image, with the kubelet settings', () => {
    expect(imagePullBackOffKey('u1', 'nginx:1')).to.equal('u1_nginx:1');
    expect(newImagePullBackOff()).to.include({
      initialMs: 10 * s,
      maxMs: 300 * s,
      hasExpiredFunc: undefined,
    });
  });

  it('backs off after a failure, measured from the failed pull, and appends the last error', async () => {
    const p = new ImagePullBackOff();
    const clock = clockAt(0);
    let pulls = 0;
    const failing = (): PullOutcome => {
      pulls++;
      return { ok: false, message: 'rpc error: not found' };
    };
    const first = await p.ensureImage('u1', 'img:1', failing, clock);
    expect(first).to.deep.include({
      ok: false,
      error: 'ErrImagePull',
      message: 'rpc error: not found',
      pullAttempted: true,
    });
    clock.t = 9_999;
    const waiting = await p.ensureImage('u1', 'img:1', failing, clock);
    expect(waiting).to.deep.include({
      ok: false,
      error: 'ImagePullBackOff',
      message: 'Back-off pulling image "img:1": ErrImagePull: rpc error: not found',
      pullAttempted: false,
    });
    expect(pulls).to.equal(1);
    // Another pod, or another image, has its own schedule.
    expect((await p.ensureImage('u2', 'img:1', failing, clock)).pullAttempted).to.equal(true);
    clock.t = 10 * s;
    expect((await p.ensureImage('u1', 'img:1', failing, clock)).pullAttempted).to.equal(true);
    expect(p.backoff.get('u1_img:1')).to.equal(20 * s);
  });

  it('takes the time for Next after a slow pull, and counts a throwing pull as a failure', async () => {
    const p = new ImagePullBackOff();
    const clock = clockAt(0);
    const r = await p.ensureImage(
      'u1',
      'img',
      () => {
        clock.t = 30 * s;
        throw new Error('RegistryUnavailable: dial tcp: timeout');
      },
      clock,
    );
    expect(r).to.deep.include({
      error: 'RegistryUnavailable',
      message: 'image pull failed for img because the registry is unavailable: dial tcp: timeout',
    });
    expect(p.check('u1', 'img', 39 * s).inBackOff).to.equal(true);
    expect(p.check('u1', 'img', 40 * s).inBackOff).to.equal(false);
  });

  it('forgets the remembered error once a pull may go ahead, and GCs on success', async () => {
    const b = new Backoff(10 * s, 20 * s);
    const p = new ImagePullBackOff(b);
    p.recordFailure('old', 'img', 'boom', 0);
    p.recordFailure('u1', 'img', 'boom', 30 * s);
    expect(p.check('u1', 'img', 45 * s).inBackOff).to.equal(false);
    p.recordFailure('u1', 'img', '', 45 * s); // no text: nothing to append
    expect(p.check('u1', 'img', 46 * s)).to.deep.equal({
      inBackOff: true,
      error: 'ImagePullBackOff',
      message: 'Back-off pulling image "img"',
    });
    const ok = await p.ensureImage('u2', 'img', () => ({ ok: true, imageRef: 'sha256:1' }), clockAt(46 * s));
    expect(ok).to.deep.include({ ok: true, imageRef: 'sha256:1' });
    expect(b.has('old')).to.equal(false);
    expect(b.has('u1_img')).to.equal(true);
  });

  it('maps CRI error prefixes like evalCRIPullErr', () => {
    expect(evalPullError('i', 'SignatureValidationFailed: bad sig')).to.deep.equal({
      error: 'SignatureValidationFailed',
      message: 'image pull failed for i because the signature validation failed: bad sig',
    });
    expect(evalPullError('i', 'denied')).to.deep.equal({ error: 'ErrImagePull', message: 'denied' });
  });
});
