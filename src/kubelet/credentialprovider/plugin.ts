/**
 * The kubelet's credential provider plugins (pkg/credentialprovider/plugin): a CredentialProviderConfig
 * names executables in a bin dir and the images each serves (matchImages globs); for an image, the plugin is
 * run with a CredentialProviderRequest on stdin and answers registry credentials with a cache key type and
 * duration. With tokenAttributes (KubeletServiceAccountTokenForCredentialProviders) the request carries a
 * token of the pod's ServiceAccount for the configured audience, and the credentials count as that
 * ServiceAccount's. Pure: running the executable, reading ServiceAccounts and requesting tokens are given.
 */
import { parse as parseYAML } from 'yaml';
import { parseGoDuration } from '../../util/duration.js';
import {
  DockerKeyring,
  urlsMatch,
  type DockerConfig,
  type Sha256Hex,
  type TrackedAuthConfig,
} from './keyring.js';

export const CREDENTIAL_PROVIDER_API_VERSIONS = [
  'credentialprovider.kubelet.k8s.io/v1',
  'credentialprovider.kubelet.k8s.io/v1beta1',
  'credentialprovider.kubelet.k8s.io/v1alpha1',
] as const;

export interface TokenAttributes {
  serviceAccountTokenAudience: string;
  requireServiceAccount: boolean;
  requiredServiceAccountAnnotationKeys: string[];
  optionalServiceAccountAnnotationKeys: string[];
  cacheType: 'Token' | 'ServiceAccount';
}

export interface CredentialProvider {
  name: string;
  matchImages: string[];
  /** ms */
  defaultCacheDurationMs: number;
  apiVersion: string;
  args: string[];
  env: { name: string; value: string }[];
  tokenAttributes?: TokenAttributes;
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/**
 * A CredentialProviderConfig (kubelet.config.k8s.io/v1, YAML or JSON) checked as the kubelet checks it
 * (validateCredentialProviderConfig): the providers, or every error in its words.
 */
export function parseCredentialProviderConfig(
  text: string,
): { providers: CredentialProvider[] } | { errors: string[] } {
  let doc: unknown;
  try {
    doc = parseYAML(text);
  } catch (err) {
    return { errors: [`error decoding config: ${(err as Error).message}`] };
  }
  if (typeof doc !== 'object' || doc === null) return { errors: ['error decoding config: not an object'] };
  const d = doc as Record<string, unknown>;
  if (d.kind !== 'CredentialProviderConfig')
    return { errors: [`kind ${JSON.stringify(d.kind)} is not CredentialProviderConfig`] };
  const errors: string[] = [];
  const raw = Array.isArray(d.providers) ? (d.providers as Record<string, unknown>[]) : [];
  if (raw.length === 0) errors.push('providers: Required value: at least 1 item in plugins is required');
  const seen = new Set<string>();
  const providers: CredentialProvider[] = [];
  raw.forEach((p, i) => {
    const at = `providers[${i}]`;
    const name = typeof p.name === 'string' ? p.name : '';
    if (name === '') errors.push(`${at}.name: Required value`);
    else if (name.includes('/'))
      errors.push(`${at}.name: Invalid value: "${name}": provider name cannot contain '/'`);
    else if (/\s/.test(name))
      errors.push(`${at}.name: Invalid value: "${name}": provider name cannot contain spaces`);
    else if (name === '.' || name === '..')
      errors.push(`${at}.name: Invalid value: "${name}": provider name cannot be '${name}'`);
    if (seen.has(name)) errors.push(`${at}.name: Duplicate value: "${name}"`);
    seen.add(name);
    const apiVersion = typeof p.apiVersion === 'string' ? p.apiVersion : '';
    if (apiVersion === '') errors.push(`${at}.apiVersion: Required value`);
    else if (!(CREDENTIAL_PROVIDER_API_VERSIONS as readonly string[]).includes(apiVersion))
      errors.push(`${at}.apiVersion: Unsupported value: "${apiVersion}"`);
    const matchImages = strings(p.matchImages);
    if (matchImages.length === 0)
      errors.push(`${at}.matchImages: Required value: at least 1 item in matchImages is required`);
    for (const m of matchImages)
      if (m.startsWith('[') || /[\s#?]/.test(m))
        errors.push(`${at}.matchImages: Invalid value: "${m}": match image is invalid`);
    let defaultCacheDurationMs = 0;
    if (typeof p.defaultCacheDuration !== 'string') errors.push(`${at}.defaultCacheDuration: Required value`);
    else {
      try {
        defaultCacheDurationMs = parseGoDuration(p.defaultCacheDuration);
        if (defaultCacheDurationMs < 0)
          errors.push(`${at}.defaultCacheDuration: Invalid value: must be greater than or equal to 0`);
      } catch (err) {
        errors.push(`${at}.defaultCacheDuration: Invalid value: ${(err as Error).message}`);
      }
    }
    let tokenAttributes: TokenAttributes | undefined;
    if (p.tokenAttributes !== undefined && p.tokenAttributes !== null) {
      const t = p.tokenAttributes as Record<string, unknown>;
      const ta = `${at}.tokenAttributes`;
      if (apiVersion !== 'credentialprovider.kubelet.k8s.io/v1')
        errors.push(
          `${ta}: Forbidden: tokenAttributes is only supported for credentialprovider.kubelet.k8s.io/v1 API version`,
        );
      const audience = typeof t.serviceAccountTokenAudience === 'string' ? t.serviceAccountTokenAudience : '';
      if (audience === '') errors.push(`${ta}.serviceAccountTokenAudience: Required value`);
      if (typeof t.requireServiceAccount !== 'boolean')
        errors.push(`${ta}.requireServiceAccount: Required value`);
      const required = strings(t.requiredServiceAccountAnnotationKeys);
      const optional = strings(t.optionalServiceAccountAnnotationKeys);
      if (t.requireServiceAccount === false && required.length > 0)
        errors.push(
          `${ta}.requiredServiceAccountAnnotationKeys: Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set`,
        );
      const both = required.filter((k) => optional.includes(k));
      if (both.length > 0)
        errors.push(
          `${ta}: Invalid value: ${JSON.stringify(both)}: annotation keys cannot be both required and optional`,
        );
      const cacheType = t.cacheType;
      if (cacheType === undefined || cacheType === '')
        errors.push(
          `${ta}.cacheType: Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: ServiceAccount, Token`,
        );
      else if (cacheType !== 'Token' && cacheType !== 'ServiceAccount')
        errors.push(
          `${ta}.cacheType: Unsupported value: ${JSON.stringify(cacheType)}: supported values: "ServiceAccount", "Token"`,
        );
      tokenAttributes = {
        serviceAccountTokenAudience: audience,
        requireServiceAccount: t.requireServiceAccount === true,
        requiredServiceAccountAnnotationKeys: required,
        optionalServiceAccountAnnotationKeys: optional,
        cacheType: cacheType === 'Token' ? 'Token' : 'ServiceAccount',
      };
    }
    providers.push({
      name,
      matchImages,
      defaultCacheDurationMs,
      apiVersion,
      args: strings(p.args),
      env: Array.isArray(p.env)
        ? (p.env as Record<string, unknown>[]).map((e) => ({
            name: String(e.name ?? ''),
            value: String(e.value ?? ''),
          }))
        : [],
      ...(tokenAttributes ? { tokenAttributes } : {}),
    });
  });
  return errors.length > 0 ? { errors } : { providers };
}

/** What a plugin answers (CredentialProviderResponse). */
export interface CredentialProviderResponse {
  cacheKeyType: 'Image' | 'Registry' | 'Global';
  /** ms; undefined: the provider's default. */
  cacheDurationMs?: number;
  auth: Record<string, { username: string; password: string }>;
}

/** A plugin's stdout, checked as the kubelet checks it (apiVersion as configured, kind, cacheKeyType). */
export function parseCredentialProviderResponse(
  stdout: string,
  apiVersion: string,
): CredentialProviderResponse {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(stdout) as Record<string, unknown>;
  } catch {
    throw new Error('error reading GVK from response: not JSON');
  }
  if (v.apiVersion !== apiVersion)
    throw new Error(
      `apiVersion from credential plugin response did not match expected apiVersion:${apiVersion}, actual apiVersion:${String(v.apiVersion ?? '')}`,
    );
  if (v.kind !== 'CredentialProviderResponse')
    throw new Error(
      `failed to decode CredentialProviderResponse, unexpected Kind: ${JSON.stringify(v.kind ?? '')}`,
    );
  const kt = v.cacheKeyType;
  if (kt !== 'Image' && kt !== 'Registry' && kt !== 'Global')
    throw new Error(`credential provider plugin did not return a valid cacheKeyType: ${String(kt ?? '')}`);
  let cacheDurationMs: number | undefined;
  if (typeof v.cacheDuration === 'string') {
    try {
      cacheDurationMs = parseGoDuration(v.cacheDuration);
    } catch {
      throw new Error('error decoding credential provider plugin response from stdout');
    }
  }
  const auth: CredentialProviderResponse['auth'] = {};
  if (typeof v.auth === 'object' && v.auth !== null)
    for (const [k, a] of Object.entries(v.auth as Record<string, Record<string, unknown>>))
      auth[k] = { username: String(a?.username ?? ''), password: String(a?.password ?? '') };
  return { cacheKeyType: kt, ...(cacheDurationMs !== undefined ? { cacheDurationMs } : {}), auth };
}

/** The CredentialProviderRequest a plugin reads on stdin. */
export function credentialProviderRequest(
  apiVersion: string,
  image: string,
  token?: string,
  annotations?: Record<string, string>,
): string {
  return JSON.stringify({
    kind: 'CredentialProviderRequest',
    apiVersion,
    image,
    ...(token ? { serviceAccountToken: token } : {}),
    ...(annotations && Object.keys(annotations).length > 0 ? { serviceAccountAnnotations: annotations } : {}),
  });
}

/** The I/O a provider needs, given by the shell. */
export interface PluginIO {
  /** Runs `<binDir>/<name> args...` with `env` added to the process's, `stdin` in; resolves stdout. */
  exec(name: string, args: string[], env: { name: string; value: string }[], stdin: string): Promise<string>;
  /** The ServiceAccount's UID and annotations; rejects when it cannot be read. */
  serviceAccount(
    namespace: string,
    name: string,
  ): Promise<{ uid: string; annotations: Record<string, string> }>;
  /** A token of the ServiceAccount for `audience`, bound to the pod. */
  serviceAccountToken(
    namespace: string,
    name: string,
    serviceAccountUID: string,
    audience: string,
    pod: { name: string; uid: string },
  ): Promise<string>;
  now(): number;
  sha256: Sha256Hex;
}

/** The pod a lookup is for (the sandbox's metadata, and its ServiceAccount). */
export interface PluginPod {
  namespace: string;
  name: string;
  uid: string;
  serviceAccountName: string;
}

interface CacheEntry {
  config: DockerConfig;
  expiresAt: number;
}

/** One configured plugin with its cache (kubelet pluginProvider). */
export class PluginProvider {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inflight = new Map<string, Promise<CredentialProviderResponse>>();

  constructor(
    readonly provider: CredentialProvider,
    private readonly io: PluginIO,
  ) {}

  /** Whether the plugin serves the image (matchImages). */
  matches(image: string): boolean {
    return this.provider.matchImages.some((m) => urlsMatch(m, image));
  }

  private cached(key: string): DockerConfig | undefined {
    const e = this.cache.get(key);
    if (!e) return undefined;
    if (this.io.now() >= e.expiresAt) {
      this.cache.delete(key);
      return undefined;
    }
    return e.config;
  }

  /**
   * The plugin's credentials for `image` (a repository) and the ServiceAccount they count for; rejects with
   * the kubelet's error text (its caller logs it and goes on without them).
   */
  async provide(
    image: string,
    pod: PluginPod,
  ): Promise<{ config: DockerConfig; serviceAccount?: { uid: string; namespace: string; name: string } }> {
    const none = { config: new Map() as DockerConfig };
    if (!this.matches(image)) return none;
    const ta = this.provider.tokenAttributes;
    let token = '';
    let annotations: Record<string, string> = {};
    let saKey = '';
    let serviceAccount: { uid: string; namespace: string; name: string } | undefined;
    if (ta) {
      if (pod.serviceAccountName === '' && ta.requireServiceAccount) return none;
      if (pod.serviceAccountName !== '') {
        let sa: { uid: string; annotations: Record<string, string> };
        try {
          sa = await this.io.serviceAccount(pod.namespace, pod.serviceAccountName);
        } catch (err) {
          throw new Error(`failed to get service account: ${(err as Error).message}`);
        }
        for (const k of ta.requiredServiceAccountAnnotationKeys) {
          // A workload that has not opted in by the annotation: the plugin is not asked.
          if (!(k in sa.annotations)) return none;
          annotations[k] = sa.annotations[k]!;
        }
        for (const k of ta.optionalServiceAccountAnnotationKeys)
          if (k in sa.annotations) annotations[k] = sa.annotations[k]!;
        try {
          token = await this.io.serviceAccountToken(
            pod.namespace,
            pod.serviceAccountName,
            sa.uid,
            ta.serviceAccountTokenAudience,
            {
              name: pod.name,
              uid: pod.uid,
            },
          );
        } catch (err) {
          throw new Error(`failed to get service account token: ${(err as Error).message}`);
        }
        const sortedAnnotations = Object.keys(annotations)
          .sort()
          .map((k) => `${k}=${annotations[k]}`);
        saKey = JSON.stringify([
          pod.namespace,
          pod.serviceAccountName,
          sa.uid,
          sortedAnnotations,
          ...(ta.cacheType === 'Token' ? ['token', `sha256:${this.io.sha256(token)}`] : []),
        ]);
        serviceAccount = { uid: sa.uid, namespace: pod.namespace, name: pod.serviceAccountName };
      }
    } else annotations = {};
    const key = (base: string) => JSON.stringify([base, saKey]);
    const registry = image.split('/')[0]!;
    for (const base of [image, registry, '<global>']) {
      const hit = this.cached(key(base));
      if (hit) return { config: hit, ...(serviceAccount ? { serviceAccount } : {}) };
    }
    // One run for concurrent lookups of the same image (and token).
    const flightKey = JSON.stringify([image, token ? this.io.sha256(token) : '', annotations]);
    let flight = this.inflight.get(flightKey);
    if (!flight) {
      flight = this.run(image, token, annotations).finally(() => this.inflight.delete(flightKey));
      this.inflight.set(flightKey, flight);
    }
    const response = await flight;
    if (token !== '' && ta?.cacheType !== 'Token')
      for (const a of Object.values(response.auth))
        if (a.password === token)
          throw new Error(
            "credential provider plugin returned the service account token as the password which is not allowed when service account cache type is not set to 'Token'",
          );
    const config: DockerConfig = new Map(
      Object.entries(response.auth).map(([k, a]) => [
        k,
        { username: a.username, password: a.password, email: '' },
      ]),
    );
    const duration = response.cacheDurationMs ?? this.provider.defaultCacheDurationMs;
    if (duration > 0) {
      const base =
        response.cacheKeyType === 'Image'
          ? image
          : response.cacheKeyType === 'Registry'
            ? registry
            : '<global>';
      this.cache.set(key(base), { config, expiresAt: this.io.now() + duration });
    }
    return { config, ...(serviceAccount ? { serviceAccount } : {}) };
  }

  private async run(
    image: string,
    token: string,
    annotations: Record<string, string>,
  ): Promise<CredentialProviderResponse> {
    const p = this.provider;
    let stdout: string;
    try {
      stdout = await this.io.exec(
        p.name,
        p.args,
        p.env,
        credentialProviderRequest(p.apiVersion, image, token, annotations),
      );
    } catch (err) {
      throw new Error(
        `failed to get credential from external registry credential provider: error execing credential provider plugin ${p.name} for image ${image}: ${(err as Error).message}`,
      );
    }
    return parseCredentialProviderResponse(stdout, p.apiVersion);
  }
}

/**
 * Every plugin's credentials for an image (repository), in configuration order, as the keyring finds them
 * (most specific registry key first). Plugin failures are handed to `onError` and skipped, as the kubelet does.
 */
export async function pluginCredentials(
  providers: readonly PluginProvider[],
  image: string,
  pod: PluginPod,
  sha256: Sha256Hex,
  onError: (provider: string, err: Error) => void,
): Promise<TrackedAuthConfig[]> {
  const keyring = new DockerKeyring(sha256);
  for (const p of providers) {
    try {
      const got = await p.provide(image, pod);
      keyring.add(got.serviceAccount ? { serviceAccount: got.serviceAccount } : undefined, got.config);
    } catch (err) {
      onError(p.provider.name, err as Error);
    }
  }
  return keyring.lookup(image);
}
