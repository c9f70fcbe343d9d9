/**
 * The kubelet's token manager (pkg/kubelet/token/token_manager.go): service account tokens for the projected
 * `serviceAccountToken` sources of the node's pods, fetched through the TokenRequest API and cached until they
 * need a refresh.
 *
 * Invariants:
 * - One cache entry per key (service account, namespace, audiences, expirationSeconds, bound object), keyed
 *   exactly as the kubelet's keyFunc prints it, so a key is safe to log: it never holds a token.
 * - A cached token is handed out until it requires a refresh (older than 24 h, or past 80 % of its life, each
 *   brought forward by a jitter of 0-9 whole seconds, or issued in the future after a clock jump).
 * - A failed refresh keeps serving the old token while it is unexpired; only a token that is both expired and
 *   unrefreshable is an error.
 * - Entries leave when their pod's volumes are torn down (deleteServiceAccountToken) or, once expired, at the
 *   next cleanup (every minute while started).
 *
 * Time comes from the injected Clock and jitter from the injected random source. Whether tokens exist at all
 * (a node without an API server) is the caller's choice: give it a TokenRequester that refuses.
 */
import type { Clock, TimerHandle } from '../../util/clock.js';
import { KindError, errorKind, errorMessage } from '../../util/errors.js';
import { parseRFC3339 } from '../../util/rfc3339.js';

/** authentication.k8s.io/v1 BoundObjectReference; the kubelet binds tokens to the pod. */
export interface BoundObjectReference {
  kind: string;
  apiVersion: string;
  name: string;
  uid: string;
}

/** authentication.k8s.io/v1 TokenRequestSpec. */
export interface TokenRequestSpec {
  /** Absent: the API server's own audiences. */
  audiences?: string[];
  expirationSeconds?: number;
  boundObjectRef?: BoundObjectReference;
}

/** authentication.k8s.io/v1 TokenRequestStatus. */
export interface TokenRequestStatus {
  token: string;
  /** RFC3339. */
  expirationTimestamp: string;
}

/**
 * The API's answer. `spec` is what the server granted, which may differ from what was asked (it caps
 * expirationSeconds at its maximum); when absent, the request's spec is assumed.
 */
export interface TokenRequestResult {
  spec?: TokenRequestSpec;
  status: TokenRequestStatus;
}

/**
 * Creates a token for a service account (POST .../serviceaccounts/<name>/token). Rejects with an error whose
 * message is the API server's (e.g. `serviceaccounts "default" not found`), so the manager's wrapping reads
 * as the kubelet's. May be called concurrently.
 */
export interface TokenRequester {
  createToken(
    namespace: string,
    serviceAccountName: string,
    spec: TokenRequestSpec,
  ): Promise<TokenRequestResult>;
}

/** What a projected volume asks for: one audience (or none), a lifetime, the pod it is bound to. */
export interface ServiceAccountTokenRequest {
  audience?: string;
  /** Pass the API default (3600, DEFAULT_EXPIRATION_SECONDS) when the projection leaves it out. */
  expirationSeconds?: number;
  boundObjectRef: BoundObjectReference & { kind: 'Pod'; apiVersion: 'v1' };
}

export interface ServiceAccountToken {
  token: string;
  /** RFC3339. */
  expirationTimestamp: string;
}

/** The API default of serviceAccountToken.expirationSeconds. */
export const DEFAULT_EXPIRATION_SECONDS = 3600;
/** Tokens older than this are refreshed whatever their lifetime. */
export const MAX_TTL_MS = 24 * 60 * 60 * 1000;
/** How often expired entries are dropped. */
export const GC_PERIOD_MS = 60 * 1000;
/** Refreshes come up to this much early, in whole seconds, so a node's pods do not all refresh at once. */
export const MAX_JITTER_SECONDS = 10;

export interface TokenManagerOptions {
  requester: TokenRequester;
  clock: Clock;
  /** [0, 1) source for the refresh jitter; default Math.random. */
  random?: () => number;
  logger?: { error(msg: string, meta?: Record<string, unknown>): void };
}

interface CacheEntry {
  spec: TokenRequestSpec;
  status: TokenRequestStatus;
  expiresAt: number;
}

/** Go's %#v of a []string. */
function goStringSlice(values: readonly string[] | undefined): string {
  if (values === undefined) return '[]string(nil)';
  return `[]string{${values.map((v) => JSON.stringify(v)).join(', ')}}`;
}

/**
 * The cache key (keyFunc): `"<name>"/"<namespace>"/<audiences>/<expirationSeconds>/<bound ref>`, with the
 * audiences and the reference in Go syntax, as the kubelet logs it.
 */
export function tokenCacheKey(namespace: string, serviceAccountName: string, spec: TokenRequestSpec): string {
  const ref = spec.boundObjectRef ?? { kind: '', apiVersion: '', name: '', uid: '' };
  const q = JSON.stringify;
  const refText =
    `v1.BoundObjectReference{Kind:${q(ref.kind)}, APIVersion:${q(ref.apiVersion)}, ` +
    `Name:${q(ref.name)}, UID:${q(ref.uid)}}`;
  return `${q(serviceAccountName)}/${q(namespace)}/${goStringSlice(spec.audiences)}/${spec.expirationSeconds ?? 0}/${refText}`;
}

/** The spec the kubelet sends for a projected token: audiences only when one is named. */
export function tokenRequestSpecFor(request: ServiceAccountTokenRequest): TokenRequestSpec {
  const spec: TokenRequestSpec = { boundObjectRef: { ...request.boundObjectRef } };
  if (request.audience) spec.audiences = [request.audience];
  if (request.expirationSeconds !== undefined) spec.expirationSeconds = request.expirationSeconds;
  return spec;
}

/**
 * requiresRefresh, as a pure function of the cached token, the time and a [0, 1) draw for the jitter. Without
 * expirationSeconds the kubelet cannot tell the token's age and never refreshes it early.
 */
export function requiresRefresh(
  spec: Pick<TokenRequestSpec, 'expirationSeconds'>,
  expiresAt: number,
  now: number,
  random: number,
): boolean {
  const lifetime = spec.expirationSeconds;
  if (lifetime === undefined) return false;
  const issuedAt = expiresAt - lifetime * 1000;
  // Go truncates the float to whole seconds before scaling.
  const jitterMs = Math.floor(random * MAX_JITTER_SECONDS) * 1000;
  if (now > issuedAt + MAX_TTL_MS - jitterMs) return true;
  // Within the last 20 % of the lifetime (integer seconds, as upstream), plus the jitter.
  const lastFifthMs = Math.floor((lifetime * 20) / 100) * 1000;
  if (now > expiresAt - lastFifthMs - jitterMs) return true;
  // Issued in the future: the node's clock jumped back.
  return now < issuedAt;
}

/** The granted spec over the requested one, field by field (a server may cap expirationSeconds). */
function grantedSpec(requested: TokenRequestSpec, granted: TokenRequestSpec | undefined): TokenRequestSpec {
  const out: TokenRequestSpec = { ...requested };
  if (granted?.audiences !== undefined) out.audiences = [...granted.audiences];
  if (granted?.expirationSeconds !== undefined) out.expirationSeconds = granted.expirationSeconds;
  if (granted?.boundObjectRef !== undefined) out.boundObjectRef = { ...granted.boundObjectRef };
  return out;
}

export class TokenManager {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly requester: TokenRequester;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly logger: TokenManagerOptions['logger'];
  private timer: TimerHandle | undefined;

  constructor(opts: TokenManagerOptions) {
    if (!opts?.requester || !opts.clock) {
      throw new KindError('InvalidArgument', 'token manager needs a requester and a clock', {});
    }
    this.requester = opts.requester;
    this.clock = opts.clock;
    this.random = opts.random ?? Math.random;
    this.logger = opts.logger;
  }

  /**
   * The token for the pod's projected volume: the cached one unless it requires a refresh; else a new one
   * from the API. Errors (KindErrors, keeping the underlying kind) read as the kubelet's: `failed to fetch
   * token: <api message>` with nothing cached, `token <key> expired and refresh failed: <api message>` when the
   * cached one expired; with a still-valid cached token the failure is logged and the old token returned.
   */
  async getServiceAccountToken(
    namespace: string,
    serviceAccountName: string,
    request: ServiceAccountTokenRequest,
  ): Promise<ServiceAccountToken> {
    const spec = tokenRequestSpecFor(request);
    const key = tokenCacheKey(namespace, serviceAccountName, spec);
    const cached = this.cache.get(key);
    if (cached && !requiresRefresh(cached.spec, cached.expiresAt, this.clock.now(), this.random())) {
      return { ...cached.status };
    }
    let result: TokenRequestResult;
    try {
      result = await this.requester.createToken(namespace, serviceAccountName, spec);
    } catch (err) {
      const context = { key, namespace, serviceAccount: serviceAccountName };
      if (!cached) {
        throw new KindError(errorKind(err), `failed to fetch token: ${errorMessage(err)}`, context, {
          cause: err,
        });
      }
      if (this.expired(cached)) {
        throw new KindError(
          errorKind(err),
          `token ${key} expired and refresh failed: ${errorMessage(err)}`,
          context,
          { cause: err },
        );
      }
      this.logger?.error("Couldn't update token", { cacheKey: key, err: errorMessage(err) });
      return { ...cached.status };
    }
    const entry: CacheEntry = {
      spec: grantedSpec(spec, result.spec),
      status: { ...result.status },
      expiresAt: parseRFC3339(result.status.expirationTimestamp) ?? 0,
    };
    this.cache.set(key, entry);
    return { ...entry.status };
  }

  /** Forgets every token bound to the pod (called when its volumes are torn down). */
  deleteServiceAccountToken(podUID: string): void {
    for (const [key, entry] of this.cache) {
      if (entry.spec.boundObjectRef?.uid === podUID) this.cache.delete(key);
    }
  }

  /** Drops expired entries. */
  cleanup(): void {
    for (const [key, entry] of this.cache) if (this.expired(entry)) this.cache.delete(key);
  }

  /** Runs cleanup now and then every GC_PERIOD_MS until stop(). Idempotent. */
  start(): void {
    if (this.timer) return;
    const tick = (): void => {
      this.cleanup();
      this.timer = this.clock.setTimer(GC_PERIOD_MS, tick);
    };
    tick();
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** Number of cached tokens (for tests and metrics). */
  size(): number {
    return this.cache.size;
  }

  private expired(entry: CacheEntry): boolean {
    return this.clock.now() > entry.expiresAt;
  }
}
