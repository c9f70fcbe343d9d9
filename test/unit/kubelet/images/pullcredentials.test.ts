import { expect } from 'chai';
import {
  credentialVerificationPolicy,
  imagePullCredentialsSettingsFrom,
  mergePulledRecord,
  mustAttemptImagePull,
  parsePulledRecord,
  podPullCredentials,
  pullCredentialsOf,
  trimImageTagDigest,
  validateAllowlist,
  type ImagePullCredentials,
  type ImagePulledRecord,
  type ImagePullSecret,
  type PodPullCredentials,
} from '../../../../src/kubelet/images/pullcredentials.js';

const NOW = '2026-12-07T01:00:00Z';
const IMAGE = 'registry.io/team/app:v1';
const secretA: ImagePullSecret = { uid: 'ua', namespace: 'ns', name: 'a', credentialHash: 'h1' };
const secretB: ImagePullSecret = { uid: 'ub', namespace: 'ns', name: 'b', credentialHash: 'h2' };
const sa = { uid: 'us', namespace: 'ns', name: 'default' };

function record(mapping: Record<string, ImagePullCredentials>): ImagePulledRecord {
  return {
    kind: 'ImagePulledRecord',
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    lastUpdatedTime: NOW,
    imageRef: 'sha256:abc',
    credentialMapping: mapping,
  };
}

describe('image pull credentials (KubeletEnsureSecretPulledImages)', () => {
  it("each verification policy says which present images need the pod's credentials checked", () => {
    const allow = ['registry.io/team/app', 'mirror.io/*'];
    const cases: [
      policy: Parameters<typeof credentialVerificationPolicy>[0],
      image: string,
      pulledByKubelet: boolean,
      want: boolean,
    ][] = [
      ['NeverVerify', IMAGE, true, false],
      ['NeverVerify', IMAGE, false, false],
      ['NeverVerifyPreloadedImages', IMAGE, true, true],
      ['NeverVerifyPreloadedImages', IMAGE, false, false],
      ['AlwaysVerify', IMAGE, false, true],
      ['NeverVerifyAllowlistedImages', IMAGE, true, false],
      ['NeverVerifyAllowlistedImages', 'registry.io/team/app@sha256:' + 'a'.repeat(64), true, false],
      ['NeverVerifyAllowlistedImages', 'registry.io/team/other:v1', false, true],
      ['NeverVerifyAllowlistedImages', 'mirror.io/x/y:1', true, false],
      ['NeverVerifyAllowlistedImages', 'mirror.iox/y:1', true, true],
    ];
    for (const [policy, image, pulled, want] of cases)
      expect(
        credentialVerificationPolicy(policy, allow)(image, pulled),
        `${policy} ${image} ${pulled}`,
      ).to.equal(want);
  });

  it("validates allowlist patterns with the kubelet's messages", () => {
    expect(validateAllowlist(['registry.io/app', 'registry.io/*'])).to.deep.equal([]);
    expect(validateAllowlist([' x', '/*', '*', 'a/*/b', 'registry.io/app:v1'])).to.deep.equal([
      'leading/trailing spaces are not allowed:  x',
      'at least registry hostname is required',
      "not a valid wildcard pattern, only patterns ending with '/*' are allowed: *",
      "not a valid wildcard pattern, only patterns ending with '/*' are allowed: a/*/b",
      'neither tag nor digest is accepted in an image reference: registry.io/app:v1',
    ]);
    expect(() => credentialVerificationPolicy('NeverVerifyAllowlistedImages', ['*'])).to.throw(
      'only patterns ending',
    );
  });

  it('trims tag and digest as trimImageTagDigest', () => {
    expect(trimImageTagDigest('r.io:5000/a/b:v1')).to.equal('r.io:5000/a/b');
    expect(trimImageTagDigest('r.io:5000/a/b')).to.equal('r.io:5000/a/b');
    expect(trimImageTagDigest('b:1@sha256:' + 'c'.repeat(64))).to.equal('b');
    expect(() => trimImageTagDigest('b@notadigest')).to.throw();
  });

  it('decides whether a pod must pull an image already present (MustAttemptImagePull)', () => {
    const pod =
      (p: Partial<PodPullCredentials>): (() => PodPullCredentials) =>
      () => ({ secrets: [], ...p });
    const always = credentialVerificationPolicy('AlwaysVerify');
    const preloaded = credentialVerificationPolicy('NeverVerifyPreloadedImages');
    const cases: [
      name: string,
      rec: ImagePulledRecord | undefined,
      intent: boolean,
      policy: typeof always,
      creds: () => PodPullCredentials,
      want: { pull: boolean; why: string; remember?: ImagePullCredentials },
    ][] = [
      [
        'preloaded image, default policy',
        undefined,
        false,
        preloaded,
        pod({}),
        { pull: false, why: 'policy' },
      ],
      ['preloaded image, AlwaysVerify', undefined, false, always, pod({}), { pull: true, why: 'no-record' }],
      [
        'intent left by a crash: pulled here, no record',
        undefined,
        true,
        preloaded,
        pod({}),
        { pull: true, why: 'no-record' },
      ],
      [
        'pulled anonymously: every pod may use it',
        record({ 'registry.io/team/app': { nodePodsAccessible: true } }),
        false,
        always,
        pod({}),
        { pull: false, why: 'node-accessible' },
      ],
      [
        'pulled with secret a, pod without secrets',
        record({ 'registry.io/team/app': { kubernetesSecrets: [secretA] } }),
        false,
        preloaded,
        pod({}),
        { pull: true, why: 'must-authenticate' },
      ],
      [
        'pulled with secret a, pod with secret a',
        record({ 'registry.io/team/app': { kubernetesSecrets: [secretA] } }),
        false,
        preloaded,
        pod({ secrets: [secretA] }),
        { pull: false, why: 'credentials-match' },
      ],
      [
        'same credentials in another secret: matched, and remembered',
        record({ 'registry.io/team/app': { kubernetesSecrets: [secretA] } }),
        false,
        preloaded,
        pod({ secrets: [{ ...secretB, credentialHash: 'h1' }] }),
        {
          pull: false,
          why: 'credentials-match',
          remember: { kubernetesSecrets: [{ ...secretB, credentialHash: 'h1' }] },
        },
      ],
      [
        'same secret with new contents: matched, new hash remembered',
        record({ 'registry.io/team/app': { kubernetesSecrets: [secretA] } }),
        false,
        preloaded,
        pod({ secrets: [{ ...secretA, credentialHash: 'h9' }] }),
        {
          pull: false,
          why: 'credentials-match',
          remember: { kubernetesSecrets: [{ ...secretA, credentialHash: 'h9' }] },
        },
      ],
      [
        'other secret, other credentials',
        record({ 'registry.io/team/app': { kubernetesSecrets: [secretA] } }),
        false,
        preloaded,
        pod({ secrets: [secretB] }),
        { pull: true, why: 'must-authenticate' },
      ],
      [
        'pulled under another name (same image ID)',
        record({ 'registry.io/team/alias': { kubernetesSecrets: [secretA] } }),
        false,
        preloaded,
        pod({ secrets: [secretA] }),
        { pull: true, why: 'must-authenticate' },
      ],
      [
        "pulled with the pod's service account (plugin token)",
        record({ 'registry.io/team/app': { kubernetesServiceAccounts: [sa] } }),
        false,
        preloaded,
        pod({ serviceAccount: sa }),
        { pull: false, why: 'credentials-match' },
      ],
      [
        'record without credentials (pulled in unknown circumstances)',
        record({ 'registry.io/team/app': {} }),
        false,
        preloaded,
        pod({ secrets: [secretA] }),
        { pull: true, why: 'must-authenticate' },
      ],
    ];
    for (const [name, rec, intent, policy, creds, want] of cases) {
      let asked = 0;
      const got = mustAttemptImagePull(IMAGE, rec, intent, policy, () => (asked++, creds()));
      expect(got, name).to.deep.equal(want);
      expect(asked, `${name}: credentials looked up at most once`).to.be.at.most(1);
    }
  });

  it("merges a pull's credentials into the record (pulledRecordMergeNewCreds)", () => {
    const first = mergePulledRecord(undefined, 'sha256:abc', IMAGE, { kubernetesSecrets: [secretB] }, NOW);
    expect(first).to.deep.equal({
      record: record({ 'registry.io/team/app': { kubernetesSecrets: [secretB] } }),
      changed: true,
    });
    const second = mergePulledRecord(
      first.record,
      'sha256:abc',
      'registry.io/team/app:v2',
      { kubernetesSecrets: [secretA] },
      'later',
    );
    expect(second.changed).to.equal(true);
    expect(second.record.credentialMapping['registry.io/team/app']).to.deep.equal({
      kubernetesSecrets: [secretA, secretB],
    });
    expect(
      mergePulledRecord(second.record, 'sha256:abc', IMAGE, { kubernetesSecrets: [secretA] }, 'x').changed,
    ).to.equal(false);
    const rehashed = mergePulledRecord(
      second.record,
      'sha256:abc',
      IMAGE,
      { kubernetesSecrets: [{ ...secretA, credentialHash: 'new' }] },
      'x',
    );
    expect(
      rehashed.record.credentialMapping['registry.io/team/app']?.kubernetesSecrets?.[0]?.credentialHash,
    ).to.equal('new');
    const open = mergePulledRecord(second.record, 'sha256:abc', IMAGE, { nodePodsAccessible: true }, 'x');
    expect(open.record.credentialMapping['registry.io/team/app']).to.deep.equal({ nodePodsAccessible: true });
    expect(
      mergePulledRecord(open.record, 'sha256:abc', IMAGE, { kubernetesSecrets: [secretA] }, 'x').changed,
    ).to.equal(false);
    expect(mergePulledRecord(open.record, 'sha256:abc', IMAGE, undefined, 'x').changed).to.equal(false);
    const sas = mergePulledRecord(
      first.record,
      'sha256:abc',
      'registry.io/other:1',
      { kubernetesServiceAccounts: [sa] },
      'x',
    );
    expect(sas.record.credentialMapping['registry.io/other']).to.deep.equal({
      kubernetesServiceAccounts: [sa],
    });
    expect(
      mergePulledRecord(undefined, 'sha256:abc', IMAGE, undefined, NOW).record.credentialMapping,
    ).to.deep.equal({});
  });

  it("turns the credentials used into a record, and the pod's into what the check compares", () => {
    expect(pullCredentialsOf(undefined)).to.deep.equal({ nodePodsAccessible: true });
    expect(pullCredentialsOf({ auth: {}, hash: 'h' })).to.deep.equal({ nodePodsAccessible: true });
    const fromSecret = {
      auth: { username: 'u' },
      hash: 'h1',
      source: { secret: { uid: 'ua', namespace: 'ns', name: 'a' } },
    };
    expect(pullCredentialsOf(fromSecret)).to.deep.equal({ kubernetesSecrets: [secretA] });
    const fromSA = { auth: {}, hash: 'x', source: { serviceAccount: sa } };
    expect(pullCredentialsOf(fromSA)).to.deep.equal({ kubernetesServiceAccounts: [sa] });
    expect(
      podPullCredentials([
        fromSecret,
        { auth: {}, hash: 'n' },
        fromSA,
        { ...fromSA, source: { serviceAccount: { ...sa, name: 'x' } } },
      ]),
    ).to.deep.equal({
      secrets: [secretA],
      serviceAccount: sa,
    });
  });

  it('reads back records the kubelet wrote, and refuses what is not one', () => {
    const text =
      '{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2024-10-21T12:26:40Z","imageRef":"testimage-anonpull","credentialMapping":{"docker.io/testing/test":{"nodePodsAccessible":true}}}';
    expect(parsePulledRecord(text)?.credentialMapping['docker.io/testing/test']).to.deep.equal({
      nodePodsAccessible: true,
    });
    expect(parsePulledRecord('{"kind":"ImagePullIntent","image":"x"}')).to.equal(undefined);
    expect(parsePulledRecord('not json')).to.equal(undefined);
  });
});

describe('imagePullCredentialsVerificationPolicy settings (kubelet config validation)', () => {
  it('defaults, accepts the four policies, and refuses what the kubelet refuses', () => {
    expect(imagePullCredentialsSettingsFrom({})).to.deep.equal({
      policy: 'NeverVerifyPreloadedImages',
      preloadedImagesVerificationAllowlist: [],
    });
    expect(
      imagePullCredentialsSettingsFrom({
        imagePullCredentialsVerificationPolicy: 'NeverVerifyAllowlistedImages',
        preloadedImagesVerificationAllowlist: ['r.io/*'],
      }),
    ).to.deep.equal({
      policy: 'NeverVerifyAllowlistedImages',
      preloadedImagesVerificationAllowlist: ['r.io/*'],
    });
    const errors = [
      { imagePullCredentialsVerificationPolicy: 'Sometimes' },
      {
        imagePullCredentialsVerificationPolicy: 'AlwaysVerify',
        preloadedImagesVerificationAllowlist: ['r.io/*'],
      },
      {
        imagePullCredentialsVerificationPolicy: 'NeverVerifyAllowlistedImages',
        preloadedImagesVerificationAllowlist: ['r.io/a:1'],
      },
    ].map((k) => (imagePullCredentialsSettingsFrom(k) as { error: string }).error);
    expect(errors).to.deep.equal([
      'invalid configuration: option "Sometimes" specified for imagePullCredentialsVerificationPolicy. Valid options are "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages" or "AlwaysVerify"',
      'invalid configuration: can\'t set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"',
      'invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: r.io/a:1',
    ]);
  });
});
