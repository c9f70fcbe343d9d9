import { expect } from 'chai';
import type { Pod, PodSecurityContext, SecurityContext } from '../../../../src/api/core.js';
import type { ProjectedVolumeSource, ServiceAccountTokenProjection } from '../../../../src/api/volumes.js';
import type { ConfigMapLookup } from '../../../../src/kubelet/volume/configmap.js';
import type { FetchError } from '../../../../src/kubelet/volume/payload.js';
import {
  type ProjectedInputs,
  makeProjectedPayload,
  podCertificateSourceIndices,
  projectedSourceNames,
  serviceAccountTokenRequests,
  tokenRequestKey,
} from '../../../../src/kubelet/volume/projected.js';
import { type SecretLookup, decodeSecretData } from '../../../../src/kubelet/volume/secret.js';
import { files, message } from './fixtures.js';

function pod(podSc?: PodSecurityContext, containerSc: (SecurityContext | undefined)[] = [undefined]): Pod {
  return {
    metadata: { name: 'web-0', namespace: 'prod', uid: 'f00d', labels: { app: 'web' } },
    spec: {
      serviceAccountName: 'builder',
      ...(podSc ? { securityContext: podSc } : {}),
      containers: containerSc.map((sc, i) => ({
        name: `c${i}`,
        ...(sc ? { securityContext: sc } : {}),
        resources: { limits: { cpu: '500m' } },
      })),
    },
  };
}

const tokenSource: ServiceAccountTokenProjection = { path: 'token', expirationSeconds: 3607 };

/** The kube-api-access-xxxxx volume the ServiceAccount admission plugin adds to every pod. */
const kubeApiAccess: ProjectedVolumeSource = {
  defaultMode: 0o644,
  sources: [
    { serviceAccountToken: tokenSource },
    { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
    {
      downwardAPI: {
        items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
      },
    },
  ],
};

function inputs(
  p: Pod,
  over: {
    configMaps?: Record<string, ConfigMapLookup>;
    secrets?: Record<string, SecretLookup>;
    tokens?: [ServiceAccountTokenProjection, string | FetchError][];
  } = {},
): ProjectedInputs {
  return {
    pod: p,
    configMaps: new Map(
      Object.entries(over.configMaps ?? { 'kube-root-ca.crt': { data: { 'ca.crt': 'PEM' } } }),
    ),
    secrets: new Map(Object.entries(over.secrets ?? {})),
    tokens: new Map((over.tokens ?? [[tokenSource, 'jwt-token']]).map(([s, t]) => [tokenRequestKey(s), t])),
    nodeAllocatable: { cpu: '4' },
  };
}

function tokenFile(source: ProjectedVolumeSource, p: Pod) {
  const r = makeProjectedPayload(source, inputs(p));
  if (!r.ok) return expect.fail(r.message);
  return r.payload.get('token');
}

describe('projected volume payload (projected.collectData)', () => {
  it('builds kube-api-access: token, CA bundle and namespace', () => {
    expect(files(makeProjectedPayload(kubeApiAccess, inputs(pod())))).to.deep.equal({
      token: ['jwt-token', 0o644],
      'ca.crt': ['PEM', 0o644],
      namespace: ['prod', 0o644],
    });
  });

  it('applies the projected defaultMode to every source and item modes over it', () => {
    const source: ProjectedVolumeSource = {
      defaultMode: 0o440,
      sources: [
        {
          configMap: {
            name: 'cm',
            items: [
              { key: 'a', path: 'a' },
              { key: 'b', path: 'b', mode: 0o400 },
            ],
          },
        },
        { secret: { name: 's' } },
        {
          downwardAPI: {
            items: [
              {
                path: 'cpu',
                resourceFieldRef: { containerName: 'c0', resource: 'limits.cpu', divisor: '1m' },
              },
            ],
          },
        },
      ],
    };
    const r = makeProjectedPayload(
      source,
      inputs(pod(), {
        configMaps: { cm: { data: { a: 'A', b: 'B' } } },
        secrets: { s: decodeSecretData({ data: { pw: Buffer.from('hunter2').toString('base64') } }) },
      }),
    );
    expect(files(r)).to.deep.equal({
      a: ['A', 0o440],
      b: ['B', 0o400],
      pw: ['hunter2', 0o440],
      cpu: ['500', 0o440],
    });
  });

  it('uses the API default 0644 when defaultMode is absent', () => {
    const r = makeProjectedPayload(
      { sources: [{ configMap: { name: 'cm' } }] },
      inputs(pod(), { configMaps: { cm: { data: { a: 'A' } } } }),
    );
    expect(files(r)).to.deep.equal({ a: ['A', 0o644] });
  });

  it('merges in source order: a later source replaces an earlier file at the same path', () => {
    const source: ProjectedVolumeSource = {
      sources: [
        { configMap: { name: 'first' } },
        { secret: { name: 'second', items: [{ key: 'x', path: 'shared' }] } },
        { configMap: { name: 'third', items: [{ key: 'y', path: 'only-third' }] } },
      ],
    };
    const r = makeProjectedPayload(
      source,
      inputs(pod(), {
        configMaps: {
          first: { data: { shared: 'from-first', own: 'first-own' } },
          third: { data: { y: 'Y' } },
        },
        secrets: { second: decodeSecretData({ data: { x: Buffer.from('from-second').toString('base64') } }) },
      }),
    );
    expect(files(r)).to.deep.equal({
      shared: ['from-second', 0o644],
      own: ['first-own', 0o644],
      'only-third': ['Y', 0o644],
    });
  });

  it('honours optional per source and aggregates every failing source', () => {
    const source: ProjectedVolumeSource = {
      sources: [
        { configMap: { name: 'missing-optional', optional: true } },
        { configMap: { name: 'missing' } },
        { secret: { name: 'gone' } },
        { secret: { name: 'has', items: [{ key: 'nope', path: 'n' }] } },
        { downwardAPI: { items: [{ path: 'node', fieldRef: { fieldPath: 'spec.nodeName' } }] } },
      ],
    };
    const r = makeProjectedPayload(
      source,
      inputs(pod(), { configMaps: {}, secrets: { has: decodeSecretData({ data: {} }) } }),
    );
    expect(message(r)).to.equal(
      '[configmap "missing" not found, secret "gone" not found, references non-existent secret key: nope, unsupported fieldPath: spec.nodeName]',
    );
    if (r.ok) return;
    expect(r.errors).to.have.length(4);
  });

  it('an optional source with a missing key skips it; a lookup error fails even when optional', () => {
    const source: ProjectedVolumeSource = {
      sources: [
        {
          configMap: {
            name: 'cm',
            optional: true,
            items: [
              { key: 'absent', path: 'a' },
              { key: 'b', path: 'b' },
            ],
          },
        },
        { secret: { name: 's', optional: true } },
      ],
    };
    const ok = makeProjectedPayload(source, inputs(pod(), { configMaps: { cm: { data: { b: 'B' } } } }));
    expect(files(ok)).to.deep.equal({ b: ['B', 0o644] });
    const err = makeProjectedPayload(
      source,
      inputs(pod(), { configMaps: { cm: { data: {} } }, secrets: { s: { error: 'forbidden' } } }),
    );
    expect(message(err)).to.equal('forbidden');
  });

  it("projects a signer's selected ClusterTrustBundles", () => {
    const source: ProjectedVolumeSource = {
      sources: [
        {
          clusterTrustBundle: {
            signerName: 'example.com/signer',
            labelSelector: { matchLabels: { team: 'a' } },
            path: 'ca.pem',
          },
        },
        { configMap: { name: 'kube-root-ca.crt' } },
      ],
    };
    const pem = (b64: string): string => `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
    const bundle = (name: string, signerName: string, team: string, b64: string) => ({
      metadata: { name, labels: { team } },
      spec: { signerName, trustBundle: pem(b64) },
    });
    const withBundles = {
      ...inputs(pod()),
      trustBundles: new Map([
        [
          'all',
          [
            bundle('a1', 'example.com/signer', 'a', 'AAEC'),
            bundle('b1', 'example.com/signer', 'b', 'AwQF'),
            bundle('other', 'example.com/other', 'a', 'BgcI'),
          ],
        ],
      ]),
    };
    const out = files(makeProjectedPayload(source, withBundles));
    expect(out['ca.pem']).to.deep.equal([pem('AAEC'), 0o644]);
    expect(out['ca.crt']).to.deep.equal(['PEM', 0o644]);
  });

  it('writes the credentials of podCertificate sources: the bundle (key, then chain), the key, the chain', () => {
    const source: ProjectedVolumeSource = {
      sources: [
        {
          podCertificate: {
            signerName: 'example.com/s',
            keyType: 'ED25519',
            credentialBundlePath: 'bundle.pem',
          },
        },
        { configMap: { name: 'kube-root-ca.crt' } },
        {
          podCertificate: {
            signerName: 'example.com/s',
            keyType: 'ECDSAP256',
            keyPath: 'tls.key',
            certificateChainPath: 'tls.crt',
          },
        },
      ],
    };
    const bundle = (n: number) => ({ privateKey: `KEY${n}\n`, certChain: `CHAIN${n}\n` });
    const withCredentials = (p: Pod) => ({
      ...inputs(p),
      podCertificates: new Map([
        [0, bundle(0)],
        [2, bundle(2)],
      ]),
    });
    expect(files(makeProjectedPayload(source, withCredentials(pod())))).to.deep.equal({
      'bundle.pem': ['KEY0\nCHAIN0\n', 0o644],
      'ca.crt': ['PEM', 0o644],
      'tls.key': ['KEY2\n', 0o644],
      'tls.crt': ['CHAIN2\n', 0o644],
    });
    // As a token: 0600, owned by the pod's fsUser, when the pod has one or an fsGroup.
    const r = makeProjectedPayload(source, withCredentials(pod({ runAsUser: 1000 })));
    expect(r.ok && r.payload.get('tls.key')).to.deep.include({ mode: 0o600, fsUser: 1000 });
    expect(podCertificateSourceIndices(source)).to.deep.equal([0, 2]);

    // Not issued yet (the manager's words), and a credential the caller did not fetch.
    const waiting = {
      ...inputs(pod()),
      podCertificates: new Map([[0, { error: 'credential bundle is not issued yet' }]]),
    };
    expect(message(makeProjectedPayload(source, waiting))).to.equal(
      '[credential bundle is not issued yet, the credentials of podCertificate source 2 were not fetched]',
    );
  });

  it('ignores a source with nothing set and an absent sources list', () => {
    expect(files(makeProjectedPayload({ sources: [{}] }, inputs(pod())))).to.deep.equal({});
    expect(files(makeProjectedPayload({ sources: null }, inputs(pod())))).to.deep.equal({});
  });

  it('reports a token the caller did not resolve, or the token manager error', () => {
    const source: ProjectedVolumeSource = {
      sources: [{ serviceAccountToken: { path: 'token', audience: 'vault' } }],
    };
    expect(message(makeProjectedPayload(source, inputs(pod())))).to.equal(
      'no service account token was requested for projected path "token"',
    );
    const failed = inputs(pod(), {
      tokens: [[{ path: 'x', audience: 'vault' }, { error: 'serviceaccounts "builder" not found' }]],
    });
    expect(message(makeProjectedPayload(source, failed))).to.equal('serviceaccounts "builder" not found');
  });
});

describe('projected volume: the serviceAccountToken file mode and owner', () => {
  const cases: [string, Pod, { mode: number; fsUser?: number }][] = [
    ['no runAsUser, no fsGroup: defaultMode, no owner', pod(), { mode: 0o644 }],
    ['pod runAsUser: 0600 owned by it', pod({ runAsUser: 1000 }), { mode: 0o600, fsUser: 1000 }],
    [
      'every container the same runAsUser: 0600 owned by it',
      pod(undefined, [{ runAsUser: 7 }, { runAsUser: 7 }]),
      { mode: 0o600, fsUser: 7 },
    ],
    [
      'containers disagree: no owner, defaultMode',
      pod(undefined, [{ runAsUser: 7 }, { runAsUser: 8 }]),
      { mode: 0o644 },
    ],
    [
      'one container without a user: no owner',
      pod(undefined, [{ runAsUser: 7 }, undefined]),
      { mode: 0o644 },
    ],
    [
      'container overrides pod and they then agree',
      pod({ runAsUser: 5 }, [{ runAsUser: 9 }, { runAsUser: 9 }]),
      { mode: 0o600, fsUser: 9 },
    ],
    [
      'fsGroup alone: 0600 (SetVolumeOwnership makes it 0640), no owner',
      pod({ fsGroup: 2000 }),
      { mode: 0o600 },
    ],
    ['runAsUser 0 counts as a user', pod({ runAsUser: 0 }), { mode: 0o600, fsUser: 0 }],
  ];
  for (const [name, p, want] of cases) {
    it(name, () => {
      const f = tokenFile(kubeApiAccess, p);
      expect({ mode: f?.mode, fsUser: f?.fsUser }).to.deep.equal({ mode: want.mode, fsUser: want.fsUser });
    });
  }

  it('only the token is affected: configMap and downwardAPI files keep the defaultMode and no owner', () => {
    const r = makeProjectedPayload(kubeApiAccess, inputs(pod({ runAsUser: 1000, fsGroup: 2000 })));
    if (!r.ok) return expect.fail(r.message);
    expect(r.payload.get('ca.crt')).to.deep.include({ mode: 0o644 });
    expect(r.payload.get('ca.crt')?.fsUser).to.equal(undefined);
    expect(r.payload.get('token')).to.deep.include({ mode: 0o600, fsUser: 1000 });
  });
});

describe('projected volume: what the caller must look up', () => {
  it('lists distinct token requests in source order, keyed by audience and lifetime', () => {
    const source: ProjectedVolumeSource = {
      sources: [
        { serviceAccountToken: { path: 'a' } },
        { serviceAccountToken: { path: 'b', expirationSeconds: 3600 } },
        { serviceAccountToken: { path: 'c', audience: 'vault' } },
        { configMap: { name: 'cm' } },
      ],
    };
    expect(serviceAccountTokenRequests(source).map((s) => s.path)).to.deep.equal(['a', 'c']);
    expect(tokenRequestKey({ path: 'a' })).to.equal(tokenRequestKey({ path: 'b', expirationSeconds: 3600 }));
    expect(tokenRequestKey({ path: 'a' })).to.not.equal(tokenRequestKey({ path: 'a', audience: 'vault' }));
  });

  it('lists each referenced ConfigMap and Secret once', () => {
    const source: ProjectedVolumeSource = {
      sources: [
        { configMap: { name: 'a' } },
        { secret: { name: 's' } },
        { configMap: { name: 'a' } },
        { downwardAPI: {} },
      ],
    };
    expect(projectedSourceNames(source)).to.deep.equal({ configMaps: ['a'], secrets: ['s'] });
  });
});
