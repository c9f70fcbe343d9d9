import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import {
  Backoff,
  crashLoopHasExpired,
  doBackOff,
  getStableKey,
  newCrashLoopBackOff,
} from '../../../src/kubelet/backoff.js';
import { hashContainer } from '../../../src/kubelet/container/helpers.js';
import { asContainerID, type KubeContainerStatus } from '../../../src/kubelet/container/types.js';
import { KindError } from '../../../src/util/errors.js';

const s = 1000;

describe('Backoff (flowcontrol)', () => {
  it('doubles from the initial delay up to the max, per key', () => {
    const b = new Backoff(1 * s, 5 * s);
    const seen: number[] = [];
    for (let t = 1; t <= 5; t++) {
      b.next('a', t * s, t * s);
      seen.push(b.get('a'));
    }
    expect(seen).to.deep.equal([1, 2, 4, 5, 5].map((x) => x * s));
    expect(b.get('b')).to.equal(0);
    expect(b.has('b')).to.equal(false);
  });

  it('restarts at the initial delay once idle for more than twice the max (not at exactly twice)', () => {
    const b = new Backoff(1 * s, 5 * s);
    b.next('a', 0, 0);
    b.next('a', 0, 0);
    b.next('a', 10 * s, 10 * s); // exactly 2*max: still live
    expect(b.get('a')).to.equal(4 * s);
    b.next('a', 20 * s + 1, 20 * s + 1);
    expect(b.get('a')).to.equal(1 * s);
  });

  it('IsInBackOffSince is strict at the boundary and measured from the event time', () => {
    const b = new Backoff(10 * s, 300 * s);
    b.next('k', 0, 0);
    expect(b.isInBackOffSince('k', 0, 9_999)).to.equal(true);
    expect(b.isInBackOffSince('k', 0, 10 * s)).to.equal(false);
    expect(b.isInBackOffSince('k', 5 * s, 14 * s)).to.equal(true);
    expect(b.isInBackOffSince('missing', 0, 0)).to.equal(false);
  });

  it('IsInBackOffSinceUpdate is measured from the last update, and is false for expired entries', () => {
    const b = new Backoff(10 * s, 300 * s);
    b.next('k', 100 * s, 100 * s);
    expect(b.isInBackOffSinceUpdate('k', 109 * s)).to.equal(true);
    expect(b.isInBackOffSinceUpdate('k', 110 * s)).to.equal(false);
    const short = new Backoff(10 * s, 300 * s, { hasExpired: () => true });
    short.next('k', 0, 0);
    expect(short.isInBackOffSinceUpdate('k', 0)).to.equal(false);
    expect(short.isInBackOffSince('k', 0, 0)).to.equal(false);
  });

  it('records the call time, not the event time, as the last update', () => {
    const b = new Backoff(10 * s, 300 * s);
    b.next('k', 0, 50 * s); // an old event noticed late
    expect(b.isInBackOffSinceUpdate('k', 55 * s)).to.equal(true);
    expect(b.isInBackOffSinceUpdate('k', 60 * s)).to.equal(false);
  });

  it('Reset forgets a key; GC drops only expired entries', () => {
    const b = new Backoff(1 * s, 5 * s);
    b.next('old', 0, 0);
    b.next('new', 8 * s, 8 * s);
    b.gc(10 * s);
    expect(b.size).to.equal(2);
    b.gc(10 * s + 1);
    expect([b.has('old'), b.has('new')]).to.deep.equal([false, true]);
    b.reset('new');
    expect(b.size).to.equal(0);
  });

  it('handles a zero max and rejects negative or non-finite durations', () => {
    const b = new Backoff(0, 0);
    b.next('k', 0, 0);
    expect(b.get('k')).to.equal(0);
    expect(b.isInBackOffSince('k', 0, 0)).to.equal(false);
    for (const [i, m] of [
      [-1, 10],
      [1, Number.NaN],
      [Number.POSITIVE_INFINITY, 1],
    ]) {
      expect(() => new Backoff(i!, m!)).to.throw(KindError, /finite/);
    }
  });
});

describe('newCrashLoopBackOff', () => {
  it('uses 10s/300s by default and 1s/60s with ReduceDefaultCrashLoopBackOffDecay', () => {
    expect(newCrashLoopBackOff()).to.include({ initialMs: 10 * s, maxMs: 300 * s });
    expect(newCrashLoopBackOff({ featureGates: { ReduceDefaultCrashLoopBackOffDecay: true } })).to.include({
      initialMs: 1 * s,
      maxMs: 60 * s,
    });
  });

  it('applies maxContainerRestartPeriod only with KubeletCrashLoopBackOffMax, lowering the initial delay', () => {
    const gate = { KubeletCrashLoopBackOffMax: true };
    expect(newCrashLoopBackOff({ maxContainerRestartPeriodSeconds: 5 })).to.include({ maxMs: 300 * s });
    expect(newCrashLoopBackOff({ featureGates: gate, maxContainerRestartPeriodSeconds: 5 })).to.include({
      initialMs: 5 * s,
      maxMs: 5 * s,
    });
    expect(newCrashLoopBackOff({ featureGates: gate, maxContainerRestartPeriodSeconds: 100 })).to.include({
      initialMs: 10 * s,
      maxMs: 100 * s,
    });
    expect(newCrashLoopBackOff({ featureGates: gate })).to.include({ initialMs: 10 * s, maxMs: 300 * s });
  });

  it('restarts a crashing container on the capped schedule (maxContainerRestartPeriod 30s: 10s, 20s, 30s, 30s)', () => {
    const b = newCrashLoopBackOff({
      featureGates: { KubeletCrashLoopBackOffMax: true },
      maxContainerRestartPeriodSeconds: 30,
    });
    const delays: number[] = [];
    let t = 0;
    for (let i = 0; i < 5; i++) {
      b.next('k', t, t);
      delays.push(b.get('k'));
      expect(b.isInBackOffSince('k', t, t + b.get('k') - 1)).to.equal(true);
      expect(b.isInBackOffSince('k', t, t + b.get('k'))).to.equal(false);
      t += b.get('k');
    }
    expect(delays).to.deep.equal([10 * s, 20 * s, 30 * s, 30 * s, 30 * s]);
    // Under the initial delay: every restart waits the period.
    const short = newCrashLoopBackOff({
      featureGates: { KubeletCrashLoopBackOffMax: true },
      maxContainerRestartPeriodSeconds: 2,
    });
    short.next('k', 0, 0);
    short.next('k', 2 * s, 2 * s);
    expect(short.get('k')).to.equal(2 * s);
  });

  it('rejects a restart period outside 1s..300s', () => {
    const gate = { KubeletCrashLoopBackOffMax: true };
    for (const p of [0, 0.5, 301, Number.NaN]) {
      expect(() => newCrashLoopBackOff({ featureGates: gate, maxContainerRestartPeriodSeconds: p })).to.throw(
        KindError,
        /between 1s and 300s/,
      );
    }
  });

  it('expires entries 10 minutes after the last restart, whatever the max', () => {
    expect(crashLoopHasExpired(600 * s, 0, 1)).to.equal(false);
    expect(crashLoopHasExpired(600 * s + 1, 0, 1)).to.equal(true);
    const b = newCrashLoopBackOff({ featureGates: { ReduceDefaultCrashLoopBackOffDecay: true } });
    b.next('k', 0, 0);
    b.next('k', 200 * s, 200 * s); // beyond 2*max (120s) but within 600s: keeps growing
    expect(b.get('k')).to.equal(2 * s);
  });
});

describe('doBackOff', () => {
  const pod: Pod = {
    metadata: { name: 'web', namespace: 'prod', uid: 'u1' },
    spec: { containers: [{ name: 'app', image: 'nginx:1' }] },
  };
  const app = pod.spec.containers[0]!;
  const rec = (state: KubeContainerStatus['state'], finishedAt?: number, id = 'x'): KubeContainerStatus => ({
    id: asContainerID(id),
    name: 'app',
    state,
    restartCount: 0,
    hash: hashContainer(app),
    ...(finishedAt === undefined ? {} : { finishedAt }),
  });

  it('builds the stable key from pod identity, container name and spec hash', () => {
    expect(getStableKey(pod, app)).to.equal(`web_prod_u1_app_${hashContainer(app)}`);
    expect(getStableKey(pod, { ...app, image: 'nginx:2' })).to.not.equal(getStableKey(pod, app));
  });

  it('does nothing without an exited record, even if a running one exists', () => {
    const b = newCrashLoopBackOff();
    expect(doBackOff(pod, app, { containers: [rec('running')] }, b, 0)).to.deep.equal({
      inBackOff: false,
      message: '',
    });
    expect(b.size).to.equal(0);
  });

  it('uses the newest exited record, skipping newer non-exited ones', () => {
    const b = newCrashLoopBackOff();
    const status = {
      containers: [rec('created', undefined, 'c'), rec('exited', 100 * s, 'b'), rec('exited', 0, 'a')],
    };
    doBackOff(pod, app, status, b, 100 * s); // Next -> 10s
    const r = doBackOff(pod, app, status, b, 105 * s);
    expect(r.inBackOff).to.equal(true);
  });

  it('reports the kubelet message with a Go-formatted delay and a BackOff warning event', () => {
    const b = newCrashLoopBackOff();
    const key = getStableKey(pod, app);
    for (let i = 0; i < 4; i++) b.next(key, 0, 0); // 80s
    const r = doBackOff(pod, app, { containers: [rec('exited', 0)] }, b, 10 * s);
    expect(r).to.deep.equal({
      inBackOff: true,
      error: 'CrashLoopBackOff',
      message: 'back-off 1m20s restarting failed container=app pod=web_prod(u1)',
      event: {
        type: 'Warning',
        reason: 'BackOff',
        message: 'Back-off restarting failed container app in pod web_prod(u1)',
      },
    });
  });

  it('advances the schedule when out of back-off, with the exit time as the event time', () => {
    const b = newCrashLoopBackOff();
    const key = getStableKey(pod, app);
    b.next(key, 0, 0);
    expect(doBackOff(pod, app, { containers: [rec('exited', 0)] }, b, 10 * s).inBackOff).to.equal(false);
    expect(b.get(key)).to.equal(20 * s);
    // Ran 11 minutes after the last restart: the schedule starts over.
    expect(doBackOff(pod, app, { containers: [rec('exited', 670 * s)] }, b, 670 * s).inBackOff).to.equal(
      false,
    );
    expect(b.get(key)).to.equal(10 * s);
  });

  it('treats a record without finishedAt as having finished long ago', () => {
    const b = newCrashLoopBackOff();
    b.next(getStableKey(pod, app), 0, 0);
    expect(doBackOff(pod, app, { containers: [rec('exited')] }, b, 20 * s).inBackOff).to.equal(false);
  });
});
