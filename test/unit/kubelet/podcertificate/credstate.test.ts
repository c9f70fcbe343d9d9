// The credential state machine of one podCertificate projection (credstate.ts), as the kubelet's
// podcertificate manager decides: table tests over (state, the request it waits on, the time).
import { expect } from 'chai';
import type { PodCertificateRequest } from '../../../../src/api/podcertificaterequest.js';
import {
  ASSUME_DELETED_AFTER_MS,
  cleanCertificateChain,
  credentialBundle,
  INITIAL,
  pendingRequestName,
  REFRESH_OVERDUE_AFTER_MS,
  requestCreated,
  step,
  type CredState,
  type StepResult,
} from '../../../../src/kubelet/podcertificate/credstate.js';
import { FakeClock } from '../../../../src/util/clock.js';

const T0 = Date.UTC(2026, 11, 1, 12, 0, 0);
const MIN = 60_000;
const HOUR = 60 * MIN;
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const pem = (b64: string): string => `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;

function request(name: string, status?: PodCertificateRequest['status']): PodCertificateRequest {
  return {
    metadata: { namespace: 'ns', name, creationTimestamp: iso(T0) },
    spec: {
      signerName: 'example.com/s',
      podName: 'p',
      podUID: 'u',
      serviceAccountName: 'default',
      serviceAccountUID: 'sa',
      nodeName: 'n',
      nodeUID: 'nu',
      stubPKCS10Request: '',
    },
    ...(status ? { status } : {}),
  };
}
const cond = (type: string, reason: string, message: string) => ({
  type,
  status: 'True' as const,
  reason,
  message,
  lastTransitionTime: iso(T0),
});
const issued = (name: string, chain = pem('AAEC')) =>
  request(name, {
    conditions: [cond('Issued', 'Reason', 'Issued')],
    certificateChain: chain,
    notBefore: iso(T0),
    beginRefreshAt: iso(T0 + 20 * HOUR),
    notAfter: iso(T0 + 24 * HOUR),
  });

const wait: CredState = { kind: 'wait', privateKey: 'KEY1', requestName: 'req-a', abandonAt: T0 + 12 * MIN };
const fresh: CredState = {
  kind: 'fresh',
  privateKey: 'KEY1',
  certChain: pem('AAEC'),
  beginRefreshAt: T0 + 20 * HOUR,
  notAfter: T0 + 24 * HOUR,
  overdueEventRecorded: false,
  expiredEventRecorded: false,
};
const waitRefresh: CredState = {
  ...fresh,
  kind: 'waitRefresh',
  refreshPrivateKey: 'KEY2',
  refreshRequestName: 'req-b',
  refreshAbandonAt: T0 + 20 * HOUR + 12 * MIN,
};

interface Case {
  name: string;
  state: CredState;
  now: number;
  request?: PodCertificateRequest;
  want: (r: StepResult) => void;
}

const cases: Case[] = [
  {
    name: 'initial: create a request',
    state: INITIAL,
    now: T0,
    want: (r) => expect(r).to.deep.equal({ state: INITIAL, events: [], action: { kind: 'create' } }),
  },
  {
    name: 'wait, request not in the informer yet: retried, state kept',
    state: wait,
    now: T0 + MIN,
    want: (r) =>
      expect(r).to.deep.equal({
        state: wait,
        events: [],
        action: {
          kind: 'retry',
          error:
            'while getting PodCertificateRequest "ns/req-a": podcertificaterequest.certificates.k8s.io "req-a" not found',
        },
      }),
  },
  {
    name: 'wait, request gone past the abandon time: back to initial',
    state: wait,
    now: T0 + 12 * MIN + 1,
    want: (r) =>
      expect(r).to.deep.equal({
        state: INITIAL,
        events: [],
        action: { kind: 'retry', error: 'PodCertificateRequest "ns/req-a" appears to have been deleted' },
      }),
  },
  {
    name: 'wait, request pending: nothing to do',
    state: wait,
    now: T0 + MIN,
    request: request('req-a'),
    want: (r) => expect(r).to.deep.equal({ state: wait, events: [], action: { kind: 'done' } }),
  },
  {
    name: 'wait, issued: fresh with the cleaned chain, beginRefreshAt plus jitter',
    state: wait,
    now: T0 + MIN,
    request: issued('req-a', `junk\n${pem('AAEC')}between\n${pem('AwQF')}`),
    want: (r) => {
      expect(r.action).to.deep.equal({ kind: 'done' });
      expect(r.events).to.deep.equal([]);
      expect(r.state).to.deep.equal({
        ...fresh,
        certChain: pem('AAEC') + pem('AwQF'),
        beginRefreshAt: T0 + 20 * HOUR + 7_000,
      });
    },
  },
  {
    name: 'wait, denied: denied for good, with the kubelet Event (its reason as the format)',
    state: wait,
    now: T0 + MIN,
    request: request('req-a', { conditions: [cond('Denied', 'UnsupportedKeyType', 'use "ED25519"')] }),
    want: (r) => {
      expect(r.state).to.deep.equal({
        kind: 'denied',
        reason: 'UnsupportedKeyType',
        message: 'use "ED25519"',
      });
      expect(r.events).to.deep.equal([
        {
          reason: 'Denied',
          message:
            'UnsupportedKeyType%!(EXTRA string=PodCertificateRequest ns/req-a was denied, reason="UnsupportedKeyType", message="use \\"ED25519\\"")',
        },
      ]);
    },
  },
  {
    name: 'wait, failed: failed for good, with the kubelet Event',
    state: wait,
    now: T0 + MIN,
    request: request('req-a', { conditions: [cond('Failed', 'SignerDown', 'try later')] }),
    want: (r) => {
      expect(r.state).to.deep.equal({ kind: 'failed', reason: 'SignerDown', message: 'try later' });
      expect(r.events).to.deep.equal([
        {
          reason: 'Failed',
          message:
            'SignerDown%!(EXTRA string=PodCertificateRequest ns/req-a failed, reason="SignerDown", message="try later")',
        },
      ]);
    },
  },
  {
    name: 'denied stays denied',
    state: { kind: 'denied', reason: 'R', message: 'M' },
    now: T0 + 100 * HOUR,
    want: (r) =>
      expect(r).to.deep.equal({
        state: { kind: 'denied', reason: 'R', message: 'M' },
        events: [],
        action: { kind: 'done' },
      }),
  },
  {
    name: 'fresh before beginRefreshAt: nothing to do',
    state: fresh,
    now: T0 + 20 * HOUR - 1,
    want: (r) => expect(r).to.deep.equal({ state: fresh, events: [], action: { kind: 'done' } }),
  },
  {
    name: 'fresh from beginRefreshAt: create a refresh request, no Event yet',
    state: fresh,
    now: T0 + 20 * HOUR,
    want: (r) => expect(r).to.deep.equal({ state: fresh, events: [], action: { kind: 'create' } }),
  },
  {
    name: 'fresh overdue and expired: both Events, marked as recorded, and a refresh request',
    state: fresh,
    now: T0 + 25 * HOUR,
    want: (r) => {
      expect(r.action).to.deep.equal({ kind: 'create' });
      expect(r.events).to.deep.equal([
        { reason: 'CertificateOverdueForRefresh', message: 'PodCertificate refresh overdue' },
        { reason: 'CertificateExpired', message: 'PodCertificate expired' },
      ]);
      expect(r.state).to.deep.include({ overdueEventRecorded: true, expiredEventRecorded: true });
    },
  },
  {
    name: 'waitRefresh, pending and overdue: the Event once, old credentials kept',
    state: waitRefresh,
    now: T0 + 20 * HOUR + REFRESH_OVERDUE_AFTER_MS + 1,
    request: request('req-b'),
    want: (r) => {
      expect(r.action).to.deep.equal({ kind: 'done' });
      expect(r.events.map((e) => e.reason)).to.deep.equal(['CertificateOverdueForRefresh']);
      expect(r.state).to.deep.equal({ ...waitRefresh, overdueEventRecorded: true });
      expect(
        step(r.state, 'ns', { now: T0 + 21 * HOUR, jitterMs: 0, request: request('req-b') }).events,
      ).to.deep.equal([]);
    },
  },
  {
    name: 'waitRefresh, issued: fresh with the refresh key',
    state: waitRefresh,
    now: T0 + 20 * HOUR + MIN,
    request: issued('req-b', pem('BgcI')),
    want: (r) =>
      expect(r.state).to.deep.equal({
        ...fresh,
        privateKey: 'KEY2',
        certChain: pem('BgcI'),
        beginRefreshAt: T0 + 20 * HOUR + 7_000,
      }),
  },
  {
    name: 'waitRefresh, denied: the old credentials go too',
    state: waitRefresh,
    now: T0 + 20 * HOUR + MIN,
    request: request('req-b', { conditions: [cond('Denied', 'Nope', 'no')] }),
    want: (r) => expect(r.state).to.deep.equal({ kind: 'denied', reason: 'Nope', message: 'no' }),
  },
  {
    name: 'waitRefresh, request gone past the abandon time: fresh again (which asks anew)',
    state: waitRefresh,
    now: T0 + 20 * HOUR + 12 * MIN + 1,
    want: (r) => {
      expect(r.state).to.deep.equal(fresh);
      expect(r.action).to.deep.equal({
        kind: 'retry',
        error: 'PodCertificateRequest appears to have been deleted',
      });
    },
  },
];

describe('podCertificate credential state (kubelet podcertificate manager)', () => {
  for (const c of cases) {
    it(c.name, () => {
      c.want(
        step(c.state, 'ns', { now: c.now, jitterMs: 7_000, ...(c.request ? { request: c.request } : {}) }),
      );
    });
  }

  it('walks initial -> wait -> fresh -> waitRefresh -> fresh on a fake clock', () => {
    const clock = new FakeClock(T0);
    let s: CredState = INITIAL;
    expect(step(s, 'ns', { now: clock.now(), jitterMs: 0 }).action.kind).to.equal('create');
    s = requestCreated(
      s,
      { name: 'req-a', creationTimestamp: iso(T0), privateKey: 'KEY1' },
      clock.now(),
      60_000,
    );
    expect(s).to.deep.equal({
      kind: 'wait',
      privateKey: 'KEY1',
      requestName: 'req-a',
      abandonAt: T0 + ASSUME_DELETED_AFTER_MS + 60_000,
    });
    expect(pendingRequestName(s)).to.equal('req-a');
    expect(credentialBundle(s)).to.deep.equal({ ok: false, error: 'credential bundle is not issued yet' });
    clock.advance(2_000);
    s = step(s, 'ns', { now: clock.now(), jitterMs: 0, request: issued('req-a') }).state;
    expect(credentialBundle(s)).to.deep.equal({ ok: true, privateKey: 'KEY1', certChain: pem('AAEC') });
    clock.advance(20 * HOUR);
    const r = step(s, 'ns', { now: clock.now(), jitterMs: 0 });
    expect(r.action.kind).to.equal('create');
    // A created request without a creation time counts from now.
    s = requestCreated(r.state, { name: 'req-b', privateKey: 'KEY2' }, clock.now(), 0);
    expect(s.kind).to.equal('waitRefresh');
    expect(pendingRequestName(s)).to.equal('req-b');
    // Still served while the refresh is out.
    expect(credentialBundle(s)).to.deep.equal({ ok: true, privateKey: 'KEY1', certChain: pem('AAEC') });
    s = step(s, 'ns', { now: clock.now(), jitterMs: 0, request: issued('req-b', pem('BgcI')) }).state;
    expect(credentialBundle(s)).to.deep.equal({ ok: true, privateKey: 'KEY2', certChain: pem('BgcI') });
    // A state that asked for no request is not changed by one.
    const denied: CredState = { kind: 'denied', reason: 'R', message: 'M' };
    expect(requestCreated(denied, { name: 'x', privateKey: 'K' }, clock.now(), 0)).to.equal(denied);
  });

  it('words the bundle of a denied or failed projection as the kubelet does', () => {
    expect(credentialBundle({ kind: 'denied', reason: 'R', message: 'a "b"' })).to.deep.equal({
      ok: false,
      error: 'PodCertificateRequest was permanently denied: reason="R" message="a \\"b\\""',
    });
    expect(credentialBundle({ kind: 'failed', reason: 'R', message: 'M' })).to.deep.equal({
      ok: false,
      error: 'PodCertificateRequest was permanently failed: reason="R" message="M"',
    });
  });

  it('cleans a chain: every block as CERTIFICATE, headers and what lies between dropped', () => {
    const withHeaders =
      '-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\nAAEC\n-----END CERTIFICATE-----\n';
    const other = '-----BEGIN TRUSTED CERTIFICATE-----\nAwQF\n-----END TRUSTED CERTIFICATE-----\n';
    expect(cleanCertificateChain(`text\n${withHeaders}more\n${other}tail`)).to.equal(
      pem('AAEC') + pem('AwQF'),
    );
    expect(cleanCertificateChain('no pem here')).to.equal('');
  });
});
