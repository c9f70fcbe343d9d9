import { expect } from 'chai';
import {
  DEFAULT_EXPIRATION_SECONDS,
  GC_PERIOD_MS,
  TokenManager,
  requiresRefresh,
  tokenCacheKey,
  tokenRequestSpecFor,
  type ServiceAccountTokenRequest,
  type TokenRequestResult,
  type TokenRequester,
  type TokenRequestSpec,
} from '../../../../src/kubelet/token/tokenmanager.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { KindError } from '../../../../src/util/errors.js';
import { formatRFC3339 } from '../../../../src/util/rfc3339.js';
import { kindRejection } from '../../../support/throws.js';

const s = 1000;

interface Call {
  namespace: string;
  name: string;
  spec: TokenRequestSpec;
}

/** Issues `token-<n>` valid for the requested (or `grant`ed) lifetime from the clock's now; can be made to fail. */
class FakeRequester implements TokenRequester {
  calls: Call[] = [];
  failWith: Error | undefined;
  grantSeconds: number | undefined;
  constructor(private readonly clock: FakeClock) {}
  async createToken(namespace: string, name: string, spec: TokenRequestSpec): Promise<TokenRequestResult> {
    this.calls.push({ namespace, name, spec });
    if (this.failWith) throw this.failWith;
    const seconds = this.grantSeconds ?? spec.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
    return {
      spec: { ...spec, expirationSeconds: seconds },
      status: {
        token: `token-${this.calls.length}`,
        expirationTimestamp: formatRFC3339(this.clock.now() + seconds * s),
      },
    };
  }
}

function request(over: Partial<ServiceAccountTokenRequest> = {}): ServiceAccountTokenRequest {
  return {
    audience: 'vault',
    expirationSeconds: 3600,
    boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'uid-1' },
    ...over,
  };
}

function setup(random = 0) {
  const clock = new FakeClock();
  const requester = new FakeRequester(clock);
  const logged: { msg: string; meta?: Record<string, unknown> }[] = [];
  const manager = new TokenManager({
    requester,
    clock,
    random: () => random,
    logger: { error: (msg, meta) => logged.push({ msg, meta }) },
  });
  return { clock, requester, manager, logged };
}

describe('token manager: cache key and request spec', () => {
  it('prints the key as the kubelet keyFunc does (Go syntax, no token in it)', () => {
    const spec = tokenRequestSpecFor(request());
    expect(tokenCacheKey('prod', 'builder', spec)).to.equal(
      '"builder"/"prod"/[]string{"vault"}/3600/' +
        'v1.BoundObjectReference{Kind:"Pod", APIVersion:"v1", Name:"web", UID:"uid-1"}',
    );
    expect(tokenCacheKey('prod', 'builder', {})).to.equal(
      '"builder"/"prod"/[]string(nil)/0/v1.BoundObjectReference{Kind:"", APIVersion:"", Name:"", UID:""}',
    );
  });

  it('sends audiences only when the projection names one', () => {
    expect(tokenRequestSpecFor(request({ audience: '' }))).to.deep.equal({
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'uid-1' },
      expirationSeconds: 3600,
    });
    expect(tokenRequestSpecFor(request()).audiences).to.deep.equal(['vault']);
  });

  it('refuses to be built without a requester or a clock', () => {
    expect(() => new TokenManager({ clock: new FakeClock() } as never)).to.throw(KindError, /requester/);
  });
});

describe('token manager: requiresRefresh', () => {
  const exp = 10_000 * s;
  const spec = { expirationSeconds: 3600 };
  const iat = exp - 3600 * s;

  it('refreshes only after 80 % of the lifetime (strictly), without jitter', () => {
    expect(requiresRefresh(spec, exp, iat + 2880 * s, 0)).to.equal(false);
    expect(requiresRefresh(spec, exp, iat + 2880 * s + 1, 0)).to.equal(true);
  });

  it('brings the refresh forward by a jitter of whole seconds (0.95 -> 9 s)', () => {
    expect(requiresRefresh(spec, exp, iat + 2871 * s, 0.95)).to.equal(false);
    expect(requiresRefresh(spec, exp, iat + 2871 * s + 1, 0.95)).to.equal(true);
    // 0.999 still truncates to 9 s, never 10.
    expect(requiresRefresh(spec, exp, iat + 2871 * s, 0.999)).to.equal(false);
  });

  it('uses integer seconds for the last fifth, as upstream (601 s -> 120 s)', () => {
    const e = 1_000_000 * s;
    const odd = { expirationSeconds: 601 };
    expect(requiresRefresh(odd, e, e - 120 * s, 0)).to.equal(false);
    expect(requiresRefresh(odd, e, e - 120 * s + 1, 0)).to.equal(true);
  });

  it('refreshes a token older than 24 h even when far from its end', () => {
    const week = { expirationSeconds: 7 * 24 * 3600 };
    const e = 1_000_000 * s;
    const issued = e - 7 * 24 * 3600 * s;
    expect(requiresRefresh(week, e, issued + 24 * 3600 * s, 0)).to.equal(false);
    expect(requiresRefresh(week, e, issued + 24 * 3600 * s + 1, 0)).to.equal(true);
    expect(requiresRefresh(week, e, issued + (24 * 3600 - 5) * s + 1, 0.5)).to.equal(true);
  });

  it('refreshes a token issued in the future (the clock went back)', () => {
    expect(requiresRefresh(spec, exp, iat - 1, 0)).to.equal(true);
  });

  it('never refreshes early without expirationSeconds', () => {
    expect(requiresRefresh({}, exp, exp + 3600 * s, 0)).to.equal(false);
  });
});

describe('token manager: getServiceAccountToken', () => {
  it('caches per key and asks again only for another audience, lifetime, pod or account', async () => {
    const { requester, manager } = setup();
    const a = await manager.getServiceAccountToken('prod', 'builder', request());
    const b = await manager.getServiceAccountToken('prod', 'builder', request());
    expect(b).to.deep.equal(a);
    expect(requester.calls).to.have.length(1);
    expect(requester.calls[0]).to.deep.equal({
      namespace: 'prod',
      name: 'builder',
      spec: {
        audiences: ['vault'],
        expirationSeconds: 3600,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'uid-1' },
      },
    });
    await manager.getServiceAccountToken('prod', 'builder', request({ audience: 'other' }));
    await manager.getServiceAccountToken('prod', 'builder', request({ expirationSeconds: 7200 }));
    await manager.getServiceAccountToken(
      'prod',
      'builder',
      request({ boundObjectRef: { ...request().boundObjectRef, uid: 'uid-2' } }),
    );
    await manager.getServiceAccountToken('prod', 'deployer', request());
    await manager.getServiceAccountToken('dev', 'builder', request());
    expect(requester.calls).to.have.length(6);
    expect(manager.size()).to.equal(6);
  });

  it('serves the cached token until 80 % of its life, then fetches a new one', async () => {
    const { clock, requester, manager } = setup();
    const first = await manager.getServiceAccountToken('prod', 'builder', request());
    expect(first.token).to.equal('token-1');
    expect(first.expirationTimestamp).to.equal(formatRFC3339(clock.now() + 3600 * s));
    clock.advance(2880 * s);
    expect((await manager.getServiceAccountToken('prod', 'builder', request())).token).to.equal('token-1');
    clock.advance(1 * s);
    expect((await manager.getServiceAccountToken('prod', 'builder', request())).token).to.equal('token-2');
    expect(requester.calls).to.have.length(2);
  });

  it('judges the age by the lifetime the server granted, not the one asked for', async () => {
    const { clock, requester, manager } = setup();
    requester.grantSeconds = 600; // the server caps 3600 at 600
    await manager.getServiceAccountToken('prod', 'builder', request());
    clock.advance(60 * s);
    await manager.getServiceAccountToken('prod', 'builder', request());
    expect(requester.calls).to.have.length(1);
    clock.advance(421 * s); // past 480 s
    await manager.getServiceAccountToken('prod', 'builder', request());
    expect(requester.calls).to.have.length(2);
  });

  it('wraps a first failure as the kubelet does, keeping the kind and the server message', async () => {
    const { requester, manager } = setup();
    requester.failWith = new KindError('NotFound', 'serviceaccounts "builder" not found');
    const err = await kindRejection(manager.getServiceAccountToken('prod', 'builder', request()));
    expect(err.message).to.equal('failed to fetch token: serviceaccounts "builder" not found');
    expect(err.kind).to.equal('NotFound');
    expect(manager.size()).to.equal(0);
  });

  it('keeps serving a still-valid token when its refresh fails, and logs it', async () => {
    const { clock, requester, manager, logged } = setup();
    await manager.getServiceAccountToken('prod', 'builder', request());
    clock.advance(3000 * s);
    requester.failWith = new KindError('Unavailable', 'connection refused');
    const t = await manager.getServiceAccountToken('prod', 'builder', request());
    expect(t.token).to.equal('token-1');
    expect(logged).to.have.length(1);
    expect(logged[0]!.msg).to.equal("Couldn't update token");
    expect(logged[0]!.meta?.cacheKey).to.equal(
      tokenCacheKey('prod', 'builder', tokenRequestSpecFor(request())),
    );
  });

  it('fails once the cached token has expired and cannot be refreshed', async () => {
    const { clock, requester, manager } = setup();
    await manager.getServiceAccountToken('prod', 'builder', request());
    clock.advance(3600 * s + 1);
    requester.failWith = new KindError('Forbidden', 'denied');
    const err = await kindRejection(manager.getServiceAccountToken('prod', 'builder', request()));
    const key = tokenCacheKey('prod', 'builder', tokenRequestSpecFor(request()));
    expect(err.message).to.equal(`token ${key} expired and refresh failed: denied`);
    expect(err.kind).to.equal('Forbidden');
  });
});

describe('token manager: forgetting tokens', () => {
  it('deleteServiceAccountToken drops every token bound to the pod, and only those', async () => {
    const { manager, requester } = setup();
    await manager.getServiceAccountToken('prod', 'builder', request());
    await manager.getServiceAccountToken('prod', 'builder', request({ audience: 'other' }));
    const other = { kind: 'Pod' as const, apiVersion: 'v1' as const, name: 'db', uid: 'uid-2' };
    await manager.getServiceAccountToken('prod', 'builder', request({ boundObjectRef: other }));
    manager.deleteServiceAccountToken('uid-1');
    expect(manager.size()).to.equal(1);
    await manager.getServiceAccountToken('prod', 'builder', request({ boundObjectRef: other }));
    expect(requester.calls).to.have.length(3);
  });

  it('start() cleans up expired entries every minute through the clock; stop() ends it', async () => {
    const { clock, manager } = setup();
    await manager.getServiceAccountToken('prod', 'builder', request({ expirationSeconds: 600 }));
    await manager.getServiceAccountToken('prod', 'builder', request({ expirationSeconds: 3600 }));
    manager.start();
    manager.start();
    expect(clock.pendingTimers()).to.equal(1);
    clock.advance(600 * s); // exactly at expiry: not yet expired
    expect(manager.size()).to.equal(2);
    clock.advance(GC_PERIOD_MS);
    expect(manager.size()).to.equal(1);
    manager.stop();
    expect(clock.pendingTimers()).to.equal(0);
    clock.advance(3600 * s);
    expect(manager.size()).to.equal(1);
    manager.cleanup();
    expect(manager.size()).to.equal(0);
  });
});
