import { expect } from 'chai';
import { createHash } from 'node:crypto';
import {
  parseCredentialProviderConfig,
  parseCredentialProviderResponse,
  pluginCredentials,
  PluginProvider,
  type CredentialProvider,
  type PluginIO,
} from '../../../../src/kubelet/credentialprovider/plugin.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const V1 = 'credentialprovider.kubelet.k8s.io/v1';
const POD = { namespace: 'ns', name: 'p', uid: 'pod-uid', serviceAccountName: 'builder' };

function fakeIO(answer: (stdin: Record<string, unknown>) => Record<string, unknown>) {
  const state = {
    t: 0,
    runs: [] as Record<string, unknown>[],
    tokens: [] as string[],
    annotations: { 'example.com/role': 'puller' } as Record<string, string>,
  };
  const io: PluginIO = {
    exec: async (_name, _args, _env, stdin) => {
      const req = JSON.parse(stdin) as Record<string, unknown>;
      state.runs.push(req);
      return JSON.stringify({ kind: 'CredentialProviderResponse', apiVersion: V1, ...answer(req) });
    },
    serviceAccount: async () => ({ uid: 'sa-uid', annotations: state.annotations }),
    serviceAccountToken: async (ns, name, uid, audience, pod) => {
      const t = `token-${ns}-${name}-${uid}-${audience}-${pod.uid}-${state.tokens.length}`;
      state.tokens.push(t);
      return t;
    },
    now: () => state.t,
    sha256: sha,
  };
  return { io, state };
}

const provider = (extra: Partial<CredentialProvider> = {}): CredentialProvider => ({
  name: 'test-plugin',
  matchImages: ['*.registry.io', '127.0.0.1:5000'],
  defaultCacheDurationMs: 60_000,
  apiVersion: V1,
  args: [],
  env: [],
  ...extra,
});

describe('credential provider plugins (kubelet pkg/credentialprovider/plugin)', () => {
  it('reads a CredentialProviderConfig and refuses what the kubelet refuses', () => {
    const ok = parseCredentialProviderConfig(`
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: test-plugin
    matchImages: ["*.registry.io"]
    defaultCacheDuration: 10m
    apiVersion: ${V1}
    args: ["--verbose"]
    env: [{name: A, value: b}]
    tokenAttributes:
      serviceAccountTokenAudience: registry.io
      requireServiceAccount: true
      requiredServiceAccountAnnotationKeys: [example.com/role]
      cacheType: ServiceAccount
`);
    expect(ok).to.deep.equal({
      providers: [
        {
          name: 'test-plugin',
          matchImages: ['*.registry.io'],
          defaultCacheDurationMs: 600_000,
          apiVersion: V1,
          args: ['--verbose'],
          env: [{ name: 'A', value: 'b' }],
          tokenAttributes: {
            serviceAccountTokenAudience: 'registry.io',
            requireServiceAccount: true,
            requiredServiceAccountAnnotationKeys: ['example.com/role'],
            optionalServiceAccountAnnotationKeys: [],
            cacheType: 'ServiceAccount',
          },
        },
      ],
    });
    const bad = parseCredentialProviderConfig(
      JSON.stringify({
        kind: 'CredentialProviderConfig',
        providers: [
          { name: 'a/b', matchImages: [], apiVersion: 'v9', defaultCacheDuration: 'soon' },
          {
            name: 'x',
            matchImages: ['r.io'],
            apiVersion: 'credentialprovider.kubelet.k8s.io/v1beta1',
            defaultCacheDuration: '1m',
            tokenAttributes: { requireServiceAccount: false, requiredServiceAccountAnnotationKeys: ['k'] },
          },
        ],
      }),
    );
    expect((bad as { errors: string[] }).errors).to.deep.equal([
      `providers[0].name: Invalid value: "a/b": provider name cannot contain '/'`,
      'providers[0].apiVersion: Unsupported value: "v9"',
      'providers[0].matchImages: Required value: at least 1 item in matchImages is required',
      'providers[0].defaultCacheDuration: Invalid value: time: invalid duration "soon"',
      'providers[1].tokenAttributes: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version',
      'providers[1].tokenAttributes.serviceAccountTokenAudience: Required value',
      'providers[1].tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set',
      'providers[1].tokenAttributes.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token',
    ]);
  });

  it('checks the response as the kubelet does', () => {
    expect(() =>
      parseCredentialProviderResponse('{"kind":"CredentialProviderResponse","apiVersion":"v0"}', V1),
    ).to.throw(
      'apiVersion from credential plugin response did not match expected apiVersion:credentialprovider.kubelet.k8s.io/v1, actual apiVersion:v0',
    );
    expect(() =>
      parseCredentialProviderResponse(
        `{"kind":"CredentialProviderResponse","apiVersion":"${V1}","cacheKeyType":"Pod"}`,
        V1,
      ),
    ).to.throw('credential provider plugin did not return a valid cacheKeyType: Pod');
  });

  it("asks only for matching images, and caches by the answer's key type and duration", async () => {
    const { io, state } = fakeIO((req) => ({
      cacheKeyType: 'Registry',
      cacheDuration: '30s',
      auth: { [String(req.image).split('/')[0]!]: { username: 'u', password: `p${state.runs.length}` } },
    }));
    const p = new PluginProvider(provider(), io);
    expect((await p.provide('quay.io/x', POD)).config.size).to.equal(0);
    expect(state.runs).to.have.length(0);
    const first = await p.provide('eu.registry.io/team/a', POD);
    expect(first.config.get('eu.registry.io')).to.deep.equal({ username: 'u', password: 'p1', email: '' });
    expect(state.runs[0]).to.deep.equal({
      kind: 'CredentialProviderRequest',
      apiVersion: V1,
      image: 'eu.registry.io/team/a',
    });
    // Same registry, other image: from the cache; after 30 s, asked again.
    await p.provide('eu.registry.io/team/b', POD);
    expect(state.runs).to.have.length(1);
    state.t = 30_000;
    expect((await p.provide('eu.registry.io/team/b', POD)).config.get('eu.registry.io')?.password).to.equal(
      'p2',
    );
  });

  it("a cacheDuration of 0 is not cached; without one, the provider's default applies", async () => {
    const zero = fakeIO(() => ({
      cacheKeyType: 'Image',
      cacheDuration: '0s',
      auth: { 'a.registry.io': { username: 'u', password: 'p' } },
    }));
    const pz = new PluginProvider(provider(), zero.io);
    await pz.provide('a.registry.io/x', POD);
    await pz.provide('a.registry.io/x', POD);
    expect(zero.state.runs).to.have.length(2);
    const dflt = fakeIO(() => ({
      cacheKeyType: 'Global',
      auth: { '*.registry.io': { username: 'u', password: 'p' } },
    }));
    const pd = new PluginProvider(provider({ defaultCacheDurationMs: 1000 }), dflt.io);
    await pd.provide('a.registry.io/x', POD);
    await pd.provide('b.registry.io/y', POD);
    expect(dflt.state.runs).to.have.length(1);
    dflt.state.t = 1000;
    await pd.provide('b.registry.io/y', POD);
    expect(dflt.state.runs).to.have.length(2);
  });

  it('service account mode: sends a token for the audience with the annotations; skips pods that did not opt in', async () => {
    const ta = {
      serviceAccountTokenAudience: 'registry.io',
      requireServiceAccount: true,
      requiredServiceAccountAnnotationKeys: ['example.com/role'],
      optionalServiceAccountAnnotationKeys: ['example.com/missing'],
      cacheType: 'ServiceAccount' as const,
    };
    const { io, state } = fakeIO(() => ({
      cacheKeyType: 'Image',
      auth: { 'a.registry.io': { username: 'sa', password: 'from-token' } },
    }));
    const p = new PluginProvider(provider({ tokenAttributes: ta }), io);
    const got = await p.provide('a.registry.io/x', POD);
    expect(got.serviceAccount).to.deep.equal({ uid: 'sa-uid', namespace: 'ns', name: 'builder' });
    expect(state.runs[0]).to.deep.equal({
      kind: 'CredentialProviderRequest',
      apiVersion: V1,
      image: 'a.registry.io/x',
      serviceAccountToken: 'token-ns-builder-sa-uid-registry.io-pod-uid-0',
      serviceAccountAnnotations: { 'example.com/role': 'puller' },
    });
    // No ServiceAccount, or one without the required annotation: the plugin is not asked.
    expect((await p.provide('a.registry.io/x', { ...POD, serviceAccountName: '' })).config.size).to.equal(0);
    state.annotations = {};
    expect((await p.provide('a.registry.io/y', POD)).config.size).to.equal(0);
    expect(state.runs).to.have.length(1);
  });

  it('refuses the token echoed back as a password unless the cache type is Token', async () => {
    const ta = {
      serviceAccountTokenAudience: 'registry.io',
      requireServiceAccount: true,
      requiredServiceAccountAnnotationKeys: [],
      optionalServiceAccountAnnotationKeys: [],
      cacheType: 'ServiceAccount' as const,
    };
    const { io } = fakeIO((req) => ({
      cacheKeyType: 'Image',
      auth: { 'a.registry.io': { username: 'x', password: String(req.serviceAccountToken) } },
    }));
    const p = new PluginProvider(provider({ tokenAttributes: ta }), io);
    let err: Error | undefined;
    await p.provide('a.registry.io/x', POD).catch((e: Error) => (err = e));
    expect(err?.message).to.contain('returned the service account token as the password');
    const asToken = new PluginProvider(provider({ tokenAttributes: { ...ta, cacheType: 'Token' } }), io);
    expect((await asToken.provide('a.registry.io/x', POD)).config.size).to.equal(1);
  });

  it("gives every plugin's matching credentials in order, a failing plugin skipped", async () => {
    const good = fakeIO(() => ({
      cacheKeyType: 'Image',
      auth: { '127.0.0.1:5000': { username: 'good', password: 'p' } },
    }));
    const broken: PluginIO = { ...good.io, exec: async () => Promise.reject(new Error('exit status 1')) };
    const errors: string[] = [];
    const creds = await pluginCredentials(
      [new PluginProvider(provider({ name: 'broken' }), broken), new PluginProvider(provider(), good.io)],
      '127.0.0.1:5000/private/busybox',
      POD,
      sha,
      (name, err) => errors.push(`${name}: ${err.message}`),
    );
    expect(creds.map((c) => [c.auth.username, c.source])).to.deep.equal([['good', undefined]]);
    expect(errors).to.deep.equal([
      'broken: failed to get credential from external registry credential provider: error execing credential provider plugin broken for image 127.0.0.1:5000/private/busybox: exit status 1',
    ]);
  });
});
