import { expect } from 'chai';
import { createHash } from 'node:crypto';
import {
  bearerToken,
  CREDENTIAL_ID_KEY,
  subresourcesFor,
  userFromCertSubject,
  verbFor,
  WebhookAuth,
  type AuthApi,
  type UserInfo,
} from '../../../src/server/nodeapi/auth.js';
import type { Clock } from '../../../src/util/clock.js';

class FakeClock {
  t = 1_000_000;
  now(): number {
    return this.t;
  }
}

describe('node API auth', () => {
  it('maps paths and methods as the kubelet does', () => {
    expect(subresourcesFor('/containerLogs/ns/p/c')).to.deep.equal(['proxy']);
    expect(subresourcesFor('/exec/ns/p/c')).to.deep.equal(['proxy']);
    expect(subresourcesFor('/stats/summary')).to.deep.equal(['stats']);
    expect(subresourcesFor('/metrics/cadvisor')).to.deep.equal(['metrics']);
    expect(subresourcesFor('/logs/')).to.deep.equal(['log']);
    expect(subresourcesFor('/spec/')).to.deep.equal(['spec']);
    expect(subresourcesFor('/pods')).to.deep.equal(['pods', 'proxy']);
    expect(subresourcesFor('/healthz')).to.deep.equal(['healthz', 'proxy']);
    expect(subresourcesFor('/statsx')).to.deep.equal(['proxy']);
    expect(verbFor('GET')).to.equal('get');
    expect(verbFor('POST')).to.equal('create');
    expect(verbFor('DELETE')).to.equal('delete');
    expect(bearerToken('Bearer abc')).to.equal('abc');
    expect(bearerToken('Basic abc')).to.equal(undefined);
    expect(userFromCertSubject({ CN: 'kube-apiserver-kubelet-client', O: 'system:masters' })).to.deep.equal({
      username: 'kube-apiserver-kubelet-client',
      groups: ['system:masters', 'system:authenticated'],
    });
  });

  it('takes the UID from the subject UID attribute and the credential ID from the DER (AllowParsingUserUIDFromCertAuth)', () => {
    const der = Buffer.from('not really DER');
    const fp = createHash('sha256').update(der).digest('hex');
    const cases: {
      subject: { CN?: string | string[]; O?: string | string[]; UID?: string | string[] };
      der?: Buffer;
      want: UserInfo | undefined | string;
    }[] = [
      {
        subject: { CN: 'alice', UID: 'uid-1' },
        want: { username: 'alice', uid: 'uid-1', groups: ['system:authenticated'] },
      },
      {
        subject: { CN: 'alice', O: ['g1', 'g2'], UID: 'uid-1' },
        der,
        want: {
          username: 'alice',
          uid: 'uid-1',
          groups: ['g1', 'g2', 'system:authenticated'],
          extra: { [CREDENTIAL_ID_KEY]: [`X509SHA256=${fp}`] },
        },
      },
      {
        subject: { CN: 'alice' },
        der,
        want: {
          username: 'alice',
          groups: ['system:authenticated'],
          extra: { [CREDENTIAL_ID_KEY]: [`X509SHA256=${fp}`] },
        },
      },
      { subject: { UID: 'uid-1' }, want: undefined }, // no CN: not this authenticator's user
      { subject: { CN: 'alice', UID: ['a', 'b'] }, want: 'expected 1 UID, but found multiple: [a b]' },
      { subject: { CN: 'alice', UID: '' }, want: 'UID cannot be an empty string' },
    ];
    for (const c of cases) {
      if (typeof c.want === 'string') {
        expect(() => userFromCertSubject(c.subject, c.der), JSON.stringify(c.subject))
          .to.throw(c.want)
          .with.property('kind', 'InvalidArgument');
      } else {
        expect(userFromCertSubject(c.subject, c.der), JSON.stringify(c.subject)).to.deep.equal(c.want);
      }
    }
  });

  it('sends the UID and extra of a certificate user in the SubjectAccessReview', async () => {
    const specs: unknown[] = [];
    const api: AuthApi = {
      request: <T>(req: { body: unknown }): Promise<T> => {
        specs.push((req.body as { spec: unknown }).spec);
        return Promise.resolve({ status: { allowed: true } } as T);
      },
    };
    const auth = new WebhookAuth(api, new FakeClock() as unknown as Clock);
    const user = userFromCertSubject({ CN: 'alice', O: 'g', UID: 'uid-1' }, Buffer.from('x'))!;
    await auth.authorize({
      user,
      verb: 'get',
      nodeName: 'n',
      subresources: ['stats'],
      path: '/stats/summary',
    });
    expect(specs).to.deep.equal([
      {
        user: 'alice',
        uid: 'uid-1',
        groups: ['g', 'system:authenticated'],
        extra: user.extra,
        resourceAttributes: {
          verb: 'get',
          group: '',
          version: 'v1',
          resource: 'nodes',
          subresource: 'stats',
          name: 'n',
        },
      },
    ]);
  });

  it('authorizes /configz as configz then proxy, /flagz as configz, /statusz as statusz (auth.go and auth_test.go)', () => {
    expect(subresourcesFor('/configz')).to.deep.equal(['configz', 'proxy']);
    expect(subresourcesFor('/flagz')).to.deep.equal(['configz']);
    expect(subresourcesFor('/statusz')).to.deep.equal(['statusz']);
    expect(subresourcesFor('/statusz/x')).to.deep.equal(['statusz']);
    expect(subresourcesFor('/statuszx')).to.deep.equal(['proxy']);
    expect(subresourcesFor('/flagzx')).to.deep.equal(['proxy']);
  });

  it('caches token reviews for 2 min and decisions for 5 min allowed / 30 s denied', async () => {
    const clock = new FakeClock();
    const calls: string[] = [];
    let allow = false;
    const api: AuthApi = {
      request: <T>(req: { path: string; body: unknown }): Promise<T> => {
        calls.push(req.path.split('/').pop()!);
        if (req.path.endsWith('tokenreviews')) {
          const token = (req.body as { spec: { token: string } }).spec.token;
          return Promise.resolve({
            status: token === 'good' ? { authenticated: true, user: { username: 'u', groups: ['g'] } } : {},
          } as T);
        }
        return Promise.resolve({ status: { allowed: allow } } as T);
      },
    };
    const auth = new WebhookAuth(api, clock as unknown as Clock);
    expect(await auth.authenticateToken('bad')).to.equal(undefined);
    expect(await auth.authenticateToken('bad')).to.equal(undefined);
    expect(calls.length).to.equal(2); // failures are not cached
    const user = (await auth.authenticateToken('good'))!;
    await auth.authenticateToken('good');
    expect(calls.length).to.equal(3);
    clock.t += 2 * 60_000 + 1;
    await auth.authenticateToken('good');
    expect(calls.length).to.equal(4);

    calls.length = 0;
    const attrs = { user, verb: 'get', nodeName: 'n', subresources: ['proxy'], path: '/x' };
    expect((await auth.authorize(attrs)).allowed).to.equal(false);
    allow = true;
    expect((await auth.authorize(attrs)).allowed).to.equal(false); // denied, cached 30 s
    clock.t += 30_001;
    expect((await auth.authorize(attrs)).allowed).to.equal(true);
    allow = false;
    clock.t += 4 * 60_000;
    expect((await auth.authorize(attrs)).allowed).to.equal(true); // allowed, cached 5 min
    clock.t += 60_001;
    expect((await auth.authorize(attrs)).allowed).to.equal(false);
    expect(calls.length).to.equal(3);
  });

  it('tries the fine-grained subresource, then proxy', async () => {
    const seen: string[] = [];
    const api: AuthApi = {
      request: <T>(req: { body: unknown }): Promise<T> => {
        const sub = (req.body as { spec: { resourceAttributes: { subresource: string } } }).spec
          .resourceAttributes.subresource;
        seen.push(sub);
        return Promise.resolve({ status: { allowed: sub === 'proxy' } } as T);
      },
    };
    const auth = new WebhookAuth(api, new FakeClock() as unknown as Clock);
    const d = await auth.authorize({
      user: { username: 'u', groups: [] },
      verb: 'get',
      nodeName: 'n',
      subresources: ['pods', 'proxy'],
      path: '/pods',
    });
    expect(d.allowed).to.equal(true);
    expect(seen).to.deep.equal(['pods', 'proxy']);
  });
});
