import { expect } from 'chai';
import { apiError, type RequestOptions } from '../../../../src/kube/client.js';
import { RestTokenRequester, apiServerMessage } from '../../../../src/kubelet/token/resttokenrequester.js';
import { TokenManager } from '../../../../src/kubelet/token/tokenmanager.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { KindError } from '../../../../src/util/errors.js';
import { kindRejection } from '../../../support/throws.js';

const TOKEN_PATH = '/api/v1/namespaces/prod/serviceaccounts/builder/token';
const spec = {
  audiences: ['vault'],
  expirationSeconds: 3600,
  boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'uid-1' },
};

/** Answers POSTs with `post` and GET /api/v1 with `discovery`, recording every request. */
function fakeClient(
  post: (req: RequestOptions) => unknown,
  discovery: () => unknown = () => ({ resources: [] }),
) {
  const requests: RequestOptions[] = [];
  return {
    requests,
    client: {
      async request<T>(req: RequestOptions): Promise<T> {
        requests.push(req);
        return (req.method === 'GET' ? discovery() : post(req)) as T;
      },
    },
  };
}

const notFound = (message: string) =>
  apiError(
    404,
    JSON.stringify({ kind: 'Status', reason: 'NotFound', message, code: 404 }),
    `POST ${TOKEN_PATH}`,
  );

describe('RestTokenRequester', () => {
  it('POSTs an authentication.k8s.io/v1 TokenRequest and returns the granted spec and status', async () => {
    const { client, requests } = fakeClient((req) => ({
      ...(req.body as object),
      spec: { ...spec, expirationSeconds: 600 },
      status: { token: 'jwt', expirationTimestamp: '2026-01-01T01:00:00Z' },
    }));
    const out = await new RestTokenRequester(client).createToken('prod', 'builder', spec);
    expect(requests).to.have.length(1);
    expect(requests[0]).to.deep.equal({
      method: 'POST',
      path: TOKEN_PATH,
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', metadata: {}, spec },
    });
    expect(out).to.deep.equal({
      spec: { ...spec, expirationSeconds: 600 },
      status: { token: 'jwt', expirationTimestamp: '2026-01-01T01:00:00Z' },
    });
  });

  it('escapes the namespace and name in the path', async () => {
    const { client, requests } = fakeClient(() => ({ status: { token: 't', expirationTimestamp: 'x' } }));
    await new RestTokenRequester(client).createToken('a b', 'c/d', spec);
    expect(requests[0]!.path).to.equal('/api/v1/namespaces/a%20b/serviceaccounts/c%2Fd/token');
  });

  it("rejects with the API server's message and kind, as client-go's StatusError reads", async () => {
    const { client } = fakeClient(
      () => {
        throw notFound('serviceaccounts "builder" not found');
      },
      () => ({ resources: [{ name: 'serviceaccounts' }, { name: 'serviceaccounts/token' }] }),
    );
    const err = await kindRejection(new RestTokenRequester(client).createToken('prod', 'builder', spec));
    expect(err.message).to.equal('serviceaccounts "builder" not found');
    expect(err.kind).to.equal('NotFound');
  });

  it('gives the token manager the kubelet\'s "failed to fetch token: <message>"', async () => {
    const { client } = fakeClient(
      () => {
        throw notFound('serviceaccounts "builder" not found');
      },
      () => ({ resources: [{ name: 'serviceaccounts/token' }] }),
    );
    const manager = new TokenManager({ requester: new RestTokenRequester(client), clock: new FakeClock() });
    const err = await kindRejection(
      manager.getServiceAccountToken('prod', 'builder', {
        audience: 'vault',
        expirationSeconds: 3600,
        boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: 'web', uid: 'uid-1' },
      }),
    );
    expect(err.message).to.equal('failed to fetch token: serviceaccounts "builder" not found');
  });

  it('says the API lacks TokenRequest when a 404 meets a discovery without serviceaccounts/token (asked once)', async () => {
    const { client, requests } = fakeClient(() => {
      throw notFound('the server could not find the requested resource');
    });
    const requester = new RestTokenRequester(client);
    for (let i = 0; i < 2; i++) {
      const err = await kindRejection(requester.createToken('prod', 'builder', spec));
      expect(err.message).to.equal('the API server does not have TokenRequest endpoints enabled');
    }
    expect(requests.filter((r) => r.method === 'GET')).to.have.length(1);
  });

  it('keeps a connection failure whole and a 403 without reason readable', async () => {
    const { client } = fakeClient(() => {
      throw new KindError('Unavailable', `POST ${TOKEN_PATH}: connect ECONNREFUSED`);
    });
    const err = await kindRejection(new RestTokenRequester(client).createToken('prod', 'builder', spec));
    expect(err.message).to.equal(`POST ${TOKEN_PATH}: connect ECONNREFUSED`);
    expect(err.kind).to.equal('Unavailable');

    const forbidden = apiError(403, JSON.stringify({ message: 'nope' }), `POST ${TOKEN_PATH}`);
    expect(apiServerMessage(forbidden, `POST ${TOKEN_PATH}`)).to.equal('nope');
    const bare = apiError(500, JSON.stringify({ reason: 'InternalError' }), `POST ${TOKEN_PATH}`);
    expect(apiServerMessage(bare, `POST ${TOKEN_PATH}`)).to.equal('InternalError');
  });

  it('refuses a response without a token', async () => {
    const { client } = fakeClient(() => ({ status: {} }));
    const err = await kindRejection(new RestTokenRequester(client).createToken('prod', 'builder', spec));
    expect(err.kind).to.equal('Internal');
  });
});
