import { expect } from 'chai';
import { LeaseController, formatMicroTime } from '../../../src/node/lease.js';
import { FakeClock } from '../../../src/util/clock.js';
import { isInvalidArgument } from '../../../src/util/errors.js';
import { FakeNodeAPI, flush } from './fakeapi.js';

const T0 = Date.UTC(2026, 0, 1);

/** Advances the fake clock in small steps, letting async continuations run (and set timers) between. */
async function advance(clock: FakeClock, ms: number, step = 50): Promise<void> {
  for (let done = 0; done < ms; done += step) {
    clock.advance(Math.min(step, ms - done));
    await flush(5);
  }
}

function setup(opts: { uid?: string | undefined; renewIntervalMs?: number } = {}) {
  const clock = new FakeClock(T0);
  const api = new FakeNodeAPI(clock);
  let uid: string | undefined = 'uid' in opts ? opts.uid : 'node-uid-1';
  const lc = new LeaseController({
    api,
    clock,
    nodeName: 'vn-1',
    nodeUID: () => uid,
    renewIntervalMs: opts.renewIntervalMs,
  });
  return { clock, api, lc, setUID: (u: string | undefined) => (uid = u) };
}

describe('formatMicroTime', () => {
  it('writes metav1.MicroTime with six fractional digits', () => {
    expect(formatMicroTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678))).to.equal('2026-01-02T03:04:05.678000Z');
    expect(formatMicroTime(T0)).to.equal('2026-01-01T00:00:00.000000Z');
    expect(formatMicroTime(T0 + 1.5)).to.equal('2026-01-01T00:00:00.001500Z');
  });
});

describe('LeaseController', () => {
  it('rejects a config without its dependencies', () => {
    try {
      new LeaseController({ nodeName: 'x' } as never);
      expect.fail('constructor accepted a bad config');
    } catch (err) {
      expect(isInvalidArgument(err)).to.equal(true);
    }
  });

  it('creates the Lease owned by the Node, with holder, 40 s duration and a MicroTime renewTime', async () => {
    const { clock, api, lc } = setup();
    lc.start();
    await flush();
    await lc.ready;
    const lease = api.leases.get('vn-1')!;
    expect(lease.metadata.namespace).to.equal('kube-node-lease');
    expect(lease.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'Node', name: 'vn-1', uid: 'node-uid-1' },
    ]);
    expect(lease.spec).to.deep.equal({
      holderIdentity: 'vn-1',
      leaseDurationSeconds: 40,
      renewTime: '2026-01-01T00:00:00.000000Z',
    });
    expect(lc.lastRenewTime).to.equal(clock.now());
    await lc.stop();
  });

  it('renews every 10 s with a PUT on the lease in hand, no GET per heartbeat', async () => {
    const { clock, api, lc } = setup();
    lc.start();
    await flush();
    await advance(clock, 60_000, 500);
    expect(api.count('createLease')).to.equal(1);
    expect(api.count('updateLease')).to.equal(6);
    expect(api.count('getLease')).to.equal(1);
    expect(api.leases.get('vn-1')!.spec.renewTime).to.equal('2026-01-01T00:01:00.000000Z');
    expect(lc.lastRenewTime).to.equal(T0 + 60_000);
    await lc.stop();
  });

  it('after the Node was just created, creates the Lease without reading it first', async () => {
    const { clock, api, lc } = setup();
    lc.expectAbsent();
    lc.start();
    await flush();
    await lc.ready;
    await advance(clock, 10_000, 500);
    expect(api.calls.map((c) => c.method)).to.deep.equal(['createLease', 'updateLease']);
    await lc.stop();
  });

  it('reads and renews a Lease that exists although it was expected absent', async () => {
    const { clock, api, lc } = setup();
    await api.createLease({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'vn-1', namespace: 'kube-node-lease' },
      spec: { holderIdentity: 'someone-else' },
    });
    api.calls.length = 0;
    lc.expectAbsent();
    lc.start();
    await flush();
    await lc.ready;
    expect(api.calls.map((c) => c.method)).to.deep.equal(['createLease', 'getLease', 'updateLease']);
    expect(api.leases.get('vn-1')!.spec.holderIdentity).to.equal('vn-1');
    await advance(clock, 10_000, 500);
    expect(api.count('getLease'), 'later renewals PUT the lease in hand').to.equal(1);
    await lc.stop();
  });

  it('honours a custom renew interval and duration', async () => {
    const clock = new FakeClock(T0);
    const api = new FakeNodeAPI();
    const lc = new LeaseController({
      api,
      clock,
      nodeName: 'vn-1',
      nodeUID: () => 'u',
      renewIntervalMs: 1000,
      leaseDurationSeconds: 15,
    });
    lc.start();
    await flush();
    await advance(clock, 5000, 100);
    expect(api.count('updateLease')).to.equal(5);
    expect(api.leases.get('vn-1')!.spec.leaseDurationSeconds).to.equal(15);
    await lc.stop();
  });

  it('re-reads the Lease on a conflict and renews at once', async () => {
    const { clock, api, lc } = setup();
    lc.start();
    await flush();
    api.touchLease('vn-1');
    await advance(clock, 10_000, 500);
    expect(api.count('getLease')).to.equal(2);
    expect(lc.lastRenewTime).to.equal(T0 + 10_000);
    expect(api.leases.get('vn-1')!.spec.renewTime).to.equal('2026-01-01T00:00:10.000000Z');
    await lc.stop();
  });

  it('recreates a Lease deleted behind its back', async () => {
    const { clock, api, lc } = setup();
    lc.start();
    await flush();
    api.leases.delete('vn-1');
    await advance(clock, 10_000, 500);
    expect(api.count('createLease')).to.equal(2);
    expect(api.leases.get('vn-1')!.metadata.ownerReferences![0]!.uid).to.equal('node-uid-1');
    await lc.stop();
  });

  it('backs off 200 ms doubling to 7 s while the API fails', async () => {
    const { clock, api, lc } = setup();
    lc.start();
    await flush();
    api.fail('updateLease', 'Unavailable', 1);
    api.fail('getLease', 'Unavailable', 8);
    await advance(clock, 55_000, 50);
    const attempts = api.calls
      .filter((c) => c.at >= T0 + 10_000 && c.method !== 'createLease')
      .map((c) => `${c.method}@${c.at - T0 - 10_000}`);
    // PUT fails at 10 s; then GETs after 200, 400, 800, 1600, 3200, 6400, 7000, 7000 ms (8 failures),
    // the 9th GET after 7 s more succeeds and the PUT goes straight after it.
    const gaps = [200, 400, 800, 1600, 3200, 6400, 7000, 7000, 7000];
    let t = 0;
    const expected = ['updateLease@0'];
    for (const g of gaps) expected.push(`getLease@${(t += g)}`);
    expected.push(`updateLease@${t}`);
    expect(attempts.slice(0, expected.length)).to.deep.equal(expected);
    expect(lc.lastRenewTime).to.equal(T0 + 10_000 + t + 10_000);
    // After an overrun the next renewal is a whole interval later, not at once.
    expect(api.calls.filter((c) => c.method === 'updateLease').map((c) => c.at - T0 - 10_000)).to.deep.equal([
      0,
      t,
      t + 10_000,
    ]);
    await lc.stop();
  });

  it('adds the owner reference once the Node UID is known, and replaces one to an earlier Node', async () => {
    const { clock, api, lc, setUID } = setup({ uid: undefined });
    lc.start();
    await flush();
    expect(api.leases.get('vn-1')!.metadata.ownerReferences).to.equal(undefined);
    setUID('uid-a');
    await advance(clock, 10_000, 500);
    expect(api.leases.get('vn-1')!.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'Node', name: 'vn-1', uid: 'uid-a' },
    ]);
    setUID('uid-b');
    await advance(clock, 10_000, 500);
    expect(api.leases.get('vn-1')!.metadata.ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'Node', name: 'vn-1', uid: 'uid-b' },
    ]);
    await lc.stop();
  });

  it('fixes an existing Lease that lacks the owner reference, keeping other owners', async () => {
    const { api, lc } = setup();
    api.leases.set('vn-1', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: 'vn-1',
        namespace: 'kube-node-lease',
        resourceVersion: '1',
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'cm' }],
      },
      spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 99 },
    });
    lc.start();
    await flush();
    await lc.ready;
    const lease = api.leases.get('vn-1')!;
    expect(lease.metadata.ownerReferences!.map((r) => r.kind)).to.deep.equal(['ConfigMap', 'Node']);
    expect(lease.spec.holderIdentity).to.equal('vn-1');
    expect(lease.spec.leaseDurationSeconds).to.equal(40);
    expect(api.count('createLease')).to.equal(0);
    await lc.stop();
  });

  it('stops: no request after stop, done resolves, ready rejects if never renewed', async () => {
    const { clock, api, lc } = setup();
    api.fail('getLease', 'Unavailable', 100);
    lc.start();
    await flush();
    await lc.stop();
    let rejected = false;
    await lc.ready.catch(() => (rejected = true));
    expect(rejected).to.equal(true);
    const n = api.calls.length;
    await advance(clock, 60_000, 1000);
    expect(api.calls.length).to.equal(n);
    expect(clock.pendingTimers()).to.equal(0);
  });
});
