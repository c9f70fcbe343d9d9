/**
 * KubeletEnsureSecretPulledImages (the kubelet's images/pullmanager): which credentials pulled which image,
 * kept as ImagePulledRecords, and whether a pod may use an image already on the node without pulling it
 * again under the node's imagePullCredentialsVerificationPolicy. Pure: records come in and go out as data;
 * pullrecords.ts keeps them in the node's root (`image_manager/pulled`, `image_manager/pulling`).
 */
import type { TrackedAuthConfig } from '../credentialprovider/keyring.js';

export const IMAGE_PULL_CREDENTIALS_VERIFICATION_POLICIES = [
  'NeverVerify',
  'NeverVerifyPreloadedImages',
  'NeverVerifyAllowlistedImages',
  'AlwaysVerify',
] as const;
export type ImagePullCredentialsVerificationPolicy =
  (typeof IMAGE_PULL_CREDENTIALS_VERIFICATION_POLICIES)[number];
/** The kubelet's default. */
export const DEFAULT_VERIFICATION_POLICY: ImagePullCredentialsVerificationPolicy =
  'NeverVerifyPreloadedImages';

export interface ImagePullSecret {
  uid: string;
  namespace: string;
  name: string;
  credentialHash: string;
}
export interface ImagePullServiceAccount {
  uid: string;
  namespace: string;
  name: string;
}
/** Who may use an image pulled under one name (kubelet ImagePullCredentials). */
export interface ImagePullCredentials {
  kubernetesSecrets?: ImagePullSecret[];
  kubernetesServiceAccounts?: ImagePullServiceAccount[];
  /** Pulled without pod credentials: every pod of the node may use it. */
  nodePodsAccessible?: boolean;
}
/** The kubelet's ImagePulledRecord (kubelet.config.k8s.io/v1beta1), one per image ID. */
export interface ImagePulledRecord {
  kind: 'ImagePulledRecord';
  apiVersion: string;
  lastUpdatedTime: string;
  imageRef: string;
  /** By image name without tag or digest. */
  credentialMapping: Record<string, ImagePullCredentials>;
}
export const PULL_RECORD_API_VERSION = 'kubelet.config.k8s.io/v1beta1';

/** Decides whether an image on the node needs the pod's credentials checked (kubelet ImagePullPolicyEnforcer). */
export type CredentialVerificationRequired = (image: string, pulledByKubelet: boolean) => boolean;

/**
 * The name of an image without its tag and digest (kubelet trimImageTagDigest); throws on a reference whose
 * tag or digest is not at its end.
 */
export function trimImageTagDigest(image: string): string {
  let name = image;
  const at = name.indexOf('@');
  if (at >= 0) {
    const digest = name.slice(at + 1);
    if (!/^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/.test(digest))
      throw new Error(`invalid digest in image reference ${JSON.stringify(image)}`);
    name = name.slice(0, at);
  }
  const lastSlash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon > lastSlash) {
    const tag = name.slice(colon + 1);
    if (!/^[\w][\w.-]{0,127}$/.test(tag))
      throw new Error(`invalid tag in image reference ${JSON.stringify(image)}`);
    name = name.slice(0, colon);
  }
  if (name === '' || /\s/.test(name)) throw new Error(`invalid image reference ${JSON.stringify(image)}`);
  return name;
}

/**
 * The check of an allowlist pattern (kubelet getAllowlistImagePattern): an image name without tag or digest,
 * or a prefix ending in `/*` naming at least a registry. Returns the pattern's match form, or an error.
 */
function allowlistPattern(pattern: string): { prefix: boolean; value: string } | { error: string } {
  if (pattern !== pattern.trim()) return { error: `leading/trailing spaces are not allowed: ${pattern}` };
  const prefix = pattern.endsWith('/*');
  const trimmed = prefix ? pattern.slice(0, -1) : pattern;
  if (trimmed.length === 0) return { error: `the supplied pattern is too short: ${pattern}` };
  if (trimmed.includes('*'))
    return { error: `not a valid wildcard pattern, only patterns ending with '/*' are allowed: ${pattern}` };
  if (prefix) {
    if (trimmed.length === 1) return { error: 'at least registry hostname is required' };
    return { prefix: true, value: trimmed };
  }
  let bare: string;
  try {
    bare = trimImageTagDigest(trimmed);
  } catch (err) {
    return { error: `failed to parse as an image name: ${(err as Error).message}` };
  }
  if (bare !== trimmed)
    return { error: `neither tag nor digest is accepted in an image reference: ${pattern}` };
  return { prefix: false, value: trimmed };
}

/** The kubelet's validation of preloadedImagesVerificationAllowlist: one message per bad pattern. */
export function validateAllowlist(patterns: readonly string[]): string[] {
  return patterns.flatMap((p) => {
    const got = allowlistPattern(p);
    return 'error' in got ? [got.error] : [];
  });
}

/** The enforcer of a policy (kubelet NewImagePullCredentialVerificationPolicy); throws on a bad allowlist. */
export function credentialVerificationPolicy(
  policy: ImagePullCredentialsVerificationPolicy,
  allowlist: readonly string[] = [],
): CredentialVerificationRequired {
  switch (policy) {
    case 'NeverVerify':
      return () => false;
    case 'NeverVerifyPreloadedImages':
      return (_image, pulledByKubelet) => pulledByKubelet;
    case 'AlwaysVerify':
      return () => true;
    case 'NeverVerifyAllowlistedImages': {
      const exact = new Set<string>();
      const prefixes: string[] = [];
      for (const p of allowlist) {
        const got = allowlistPattern(p);
        if ('error' in got) throw new Error(got.error);
        if (got.prefix) prefixes.push(got.value);
        else exact.add(got.value);
      }
      return (image) => {
        let name: string;
        try {
          name = trimImageTagDigest(image);
        } catch {
          name = image;
        }
        return !(exact.has(name) || prefixes.some((p) => name.startsWith(p)));
      };
    }
  }
}

/** The credentials a successful pull leaves on the record (kubelet trackedToImagePullCreds). */
export function pullCredentialsOf(used: TrackedAuthConfig | undefined): ImagePullCredentials {
  const s = used?.source;
  if (!s) return { nodePodsAccessible: true };
  if (s.secret) return { kubernetesSecrets: [{ ...s.secret, credentialHash: used.hash }] };
  if (s.serviceAccount) return { kubernetesServiceAccounts: [{ ...s.serviceAccount }] };
  return {};
}

/** What a pod brings to the check: its secrets' credentials, and at most one service account. */
export interface PodPullCredentials {
  secrets: ImagePullSecret[];
  serviceAccount?: ImagePullServiceAccount;
}

/** kubelet getPodCredentials: the pod-sourced credentials among those the keyring found for the image. */
export function podPullCredentials(found: readonly TrackedAuthConfig[]): PodPullCredentials {
  const out: PodPullCredentials = { secrets: [] };
  for (const c of found) {
    if (c.source?.secret) out.secrets.push({ ...c.source.secret, credentialHash: c.hash });
    else if (c.source?.serviceAccount && !out.serviceAccount)
      out.serviceAccount = { ...c.source.serviceAccount };
  }
  return out;
}

/** At most this many secrets in a record before matches stop adding the pod's secret to it (kubelet's limit). */
export const WRITE_RECORD_WHILE_MATCHING_LIMIT = 100;

export type PullCheck =
  | { pull: true; why: 'no-record' | 'must-authenticate' | 'unknown-image-name' | 'unreadable-record' }
  | {
      pull: false;
      why: 'policy' | 'node-accessible' | 'credentials-match';
      /** Credentials to merge into the record (a secret seen under new coordinates or with a new hash). */
      remember?: ImagePullCredentials;
    };

/**
 * kubelet PullManager.MustAttemptImagePull for an image present on the node: `record` is the image ID's
 * pulled record (undefined: none), `pulledByKubelet` whether this node pulled it (a record, or a pull intent
 * left from a pull in flight or interrupted). `podCredentials` is asked only when the record needs it.
 */
export function mustAttemptImagePull(
  image: string,
  record: ImagePulledRecord | undefined,
  pulledByKubelet: boolean,
  requiresVerification: CredentialVerificationRequired,
  podCredentials: () => PodPullCredentials,
): PullCheck {
  if (!requiresVerification(image, pulledByKubelet || record !== undefined))
    return { pull: false, why: 'policy' };
  if (!record) return { pull: true, why: 'no-record' };
  let name: string;
  try {
    name = trimImageTagDigest(image);
  } catch {
    return { pull: true, why: 'unknown-image-name' };
  }
  const cached = record.credentialMapping[name];
  if (!cached) return { pull: true, why: 'must-authenticate' };
  if (cached.nodePodsAccessible) return { pull: false, why: 'node-accessible' };
  const cachedSecrets = cached.kubernetesSecrets ?? [];
  const cachedAccounts = cached.kubernetesServiceAccounts ?? [];
  if (cachedSecrets.length === 0 && cachedAccounts.length === 0)
    return { pull: true, why: 'must-authenticate' };
  const pod = podCredentials();
  const mayRemember = cachedSecrets.length < WRITE_RECORD_WHILE_MATCHING_LIMIT;
  for (const podSecret of pod.secrets) {
    for (const c of cachedSecrets) {
      const hashes = c.credentialHash.length > 0 && podSecret.credentialHash === c.credentialHash;
      const coords =
        podSecret.uid === c.uid && podSecret.namespace === c.namespace && podSecret.name === c.name;
      // Same credentials in another secret, or the same secret with new contents: let it count from now on.
      if (hashes)
        return {
          pull: false,
          why: 'credentials-match',
          ...(!coords && mayRemember ? { remember: { kubernetesSecrets: [podSecret] } } : {}),
        };
      if (coords && mayRemember)
        return { pull: false, why: 'credentials-match', remember: { kubernetesSecrets: [podSecret] } };
    }
  }
  const sa = pod.serviceAccount;
  if (
    sa &&
    cachedAccounts.some((a) => a.uid === sa.uid && a.namespace === sa.namespace && a.name === sa.name)
  )
    return { pull: false, why: 'credentials-match' };
  return { pull: true, why: 'must-authenticate' };
}

function secretKey(s: ImagePullSecret): string {
  return `${s.namespace}\u0000${s.name}\u0000${s.uid}`;
}
function accountKey(a: ImagePullServiceAccount): string {
  return `${a.namespace}\u0000${a.name}\u0000${a.uid}`;
}
const byKey =
  <T>(key: (t: T) => string) =>
  (a: T, b: T): number =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/**
 * The record after a pull or a match (kubelet writePulledRecordIfChanged and pulledRecordMergeNewCreds):
 * `credentials` undefined records the image as pulled with nobody allowed yet. `changed` false: nothing to write.
 */
export function mergePulledRecord(
  orig: ImagePulledRecord | undefined,
  imageRef: string,
  image: string,
  credentials: ImagePullCredentials | undefined,
  nowISO: string,
): { record: ImagePulledRecord; changed: boolean } {
  const name = trimImageTagDigest(image);
  if (!orig) {
    return {
      record: {
        kind: 'ImagePulledRecord',
        apiVersion: PULL_RECORD_API_VERSION,
        lastUpdatedTime: nowISO,
        imageRef,
        credentialMapping: credentials ? { [name]: credentials } : {},
      },
      changed: true,
    };
  }
  const unchanged = { record: orig, changed: false };
  if (!credentials) return unchanged;
  const secrets = credentials.kubernetesSecrets ?? [];
  const accounts = credentials.kubernetesServiceAccounts ?? [];
  if (!credentials.nodePodsAccessible && secrets.length === 0 && accounts.length === 0) return unchanged;
  const next = (c: ImagePullCredentials) => ({
    record: {
      ...orig,
      lastUpdatedTime: nowISO,
      credentialMapping: { ...orig.credentialMapping, [name]: c },
    },
    changed: true,
  });
  const selected = orig.credentialMapping[name];
  if (!selected) return next(credentials);
  if (selected.nodePodsAccessible) return unchanged;
  if (credentials.nodePodsAccessible) return next({ nodePodsAccessible: true });
  if (secrets.length > 0) {
    // One entry per secret (namespace, name, uid); a new hash replaces the old one.
    const merged = new Map((selected.kubernetesSecrets ?? []).map((s) => [secretKey(s), s]));
    let changed = false;
    for (const s of secrets) {
      const had = merged.get(secretKey(s));
      if (had?.credentialHash !== s.credentialHash) {
        merged.set(secretKey(s), s);
        changed = true;
      }
    }
    if (!changed) return unchanged;
    return next({ ...selected, kubernetesSecrets: [...merged.values()].sort(byKey(secretKey)) });
  }
  const have = new Set((selected.kubernetesServiceAccounts ?? []).map(accountKey));
  const added = accounts.filter((a) => !have.has(accountKey(a)));
  if (added.length === 0) return unchanged;
  return next({
    ...selected,
    kubernetesServiceAccounts: [...(selected.kubernetesServiceAccounts ?? []), ...added].sort(
      byKey(accountKey),
    ),
  });
}

/** A pulled record read back from disk, or undefined when it is not one (the kubelet then treats it as absent). */
export function parsePulledRecord(text: string): ImagePulledRecord | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Partial<ImagePulledRecord>;
  if (o.kind !== 'ImagePulledRecord' || typeof o.imageRef !== 'string') return undefined;
  if (typeof o.credentialMapping !== 'object' || o.credentialMapping === null)
    return { ...(o as ImagePulledRecord), credentialMapping: {} };
  return o as ImagePulledRecord;
}

/**
 * The kubelet's configuration check of imagePullCredentialsVerificationPolicy and
 * preloadedImagesVerificationAllowlist: the settings to use, or the first error in its words.
 */
export function imagePullCredentialsSettingsFrom(k: {
  imagePullCredentialsVerificationPolicy?: string;
  preloadedImagesVerificationAllowlist?: readonly string[];
}):
  | {
      policy: ImagePullCredentialsVerificationPolicy;
      preloadedImagesVerificationAllowlist: readonly string[];
    }
  | { error: string } {
  const policy = k.imagePullCredentialsVerificationPolicy ?? DEFAULT_VERIFICATION_POLICY;
  if (!(IMAGE_PULL_CREDENTIALS_VERIFICATION_POLICIES as readonly string[]).includes(policy))
    return {
      error: `invalid configuration: option ${JSON.stringify(policy)} specified for imagePullCredentialsVerificationPolicy. Valid options are "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages" or "AlwaysVerify"`,
    };
  const allowlist = k.preloadedImagesVerificationAllowlist ?? [];
  if (allowlist.length > 0 && policy !== 'NeverVerifyAllowlistedImages')
    return {
      error:
        'invalid configuration: can\'t set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"',
    };
  const bad = validateAllowlist(allowlist)[0];
  if (bad !== undefined)
    return {
      error: `invalid configuration: invalid image pattern in \`preloadedImagesVerificationAllowlist\`: ${bad}`,
    };
  return {
    policy: policy as ImagePullCredentialsVerificationPolicy,
    preloadedImagesVerificationAllowlist: allowlist,
  };
}
