/**
 * Authentication and authorization of node API requests, as the kubelet does them in webhook mode:
 *
 * - a client certificate that verified against the client CA names the user (CN), groups (O) and UID (the
 *   subject's UID attribute, AllowParsingUserUIDFromCertAuth);
 * - otherwise a bearer token is checked with a TokenReview (authentication.k8s.io/v1);
 * - otherwise the request is anonymous and refused with 401 (anonymous auth is off).
 *
 * Authorization is a SubjectAccessReview on the `nodes` resource named after the node, with the verb from
 * the HTTP method and the subresource from the path (the kubelet's mapping, including the fine-grained
 * `pods`/`healthz`/`configz` subresources that fall back to `proxy`, and `/statusz` and `/flagz`, which are
 * `statusz` and `configz` with no fallback). Results are cached with the kubelet's
 * webhook TTLs: authentication 2 min (successes only), authorization 5 min allowed / 30 s denied.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../util/clock.js';
import { KindError } from '../../util/errors.js';

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

export interface Attributes {
  user: UserInfo;
  verb: string;
  nodeName: string;
  /** Subresources to try in order; the first allowed one wins (fine-grained, then `proxy`). */
  subresources: string[];
  path: string;
}

/** The kubelet's verb for an HTTP method. */
export function verbFor(method: string | undefined): string {
  switch (method) {
    case 'POST':
      return 'create';
    case 'GET':
    case 'HEAD':
      return 'get';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return 'delete';
    default:
      return '';
  }
}

function isSubpath(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
}

/**
 * Subresources the kubelet checks for a path, in order. Everything not listed (containerLogs, exec,
 * attach, portForward, run, runningpods, ...) is `proxy`. `/statusz` is `statusz` alone and `/flagz`
 * `configz` alone, without the `proxy` fallback (upstream's auth.go comment says `configz,proxy` for
 * /flagz; its code and auth_test.go give `configz` only).
 */
export function subresourcesFor(path: string): string[] {
  if (isSubpath(path, '/stats')) return ['stats'];
  if (isSubpath(path, '/metrics')) return ['metrics'];
  if (isSubpath(path, '/logs')) return ['log'];
  if (isSubpath(path, '/spec')) return ['spec'];
  if (isSubpath(path, '/checkpoint')) return ['checkpoint'];
  if (isSubpath(path, '/statusz')) return ['statusz'];
  if (isSubpath(path, '/flagz')) return ['configz'];
  if (isSubpath(path, '/pods') || isSubpath(path, '/runningpods')) return ['pods', 'proxy'];
  if (isSubpath(path, '/healthz')) return ['healthz', 'proxy'];
  if (isSubpath(path, '/configz')) return ['configz', 'proxy'];
  return ['proxy'];
}

/** The API calls auth needs; KubeClient.request satisfies it. */
export interface AuthApi {
  request<T>(req: { method: 'POST'; path: string; body: unknown }): Promise<T>;
}

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

interface SarStatus {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
}

export const AUTHN_TTL_MS = 2 * 60_000;
export const AUTHZ_ALLOWED_TTL_MS = 5 * 60_000;
export const AUTHZ_DENIED_TTL_MS = 30_000;
const MAX_CACHE = 10_000;

class TtlCache<V> {
  private readonly m = new Map<string, { v: V; until: number }>();
  constructor(private readonly clock: Clock) {}
  get(k: string): V | undefined {
    const e = this.m.get(k);
    if (!e) return undefined;
    if (e.until <= this.clock.now()) {
      this.m.delete(k);
      return undefined;
    }
    return e.v;
  }
  set(k: string, v: V, ttlMs: number): void {
    if (this.m.size >= MAX_CACHE) this.m.delete(this.m.keys().next().value!);
    this.m.set(k, { v, until: this.clock.now() + ttlMs });
  }
}

const sha = (s: string | Buffer): string => createHash('sha256').update(s).digest('hex');

export class WebhookAuth {
  private readonly tokens: TtlCache<UserInfo>;
  private readonly decisions: TtlCache<{ allowed: boolean; reason: string }>;

  constructor(
    private readonly api: AuthApi,
    clock: Clock,
  ) {
    this.tokens = new TtlCache(clock);
    this.decisions = new TtlCache(clock);
  }

  /** The user of a bearer token, or undefined when the API server does not authenticate it. */
  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    const key = sha(token);
    const hit = this.tokens.get(key);
    if (hit) return hit;
    const r = await this.api.request<{ status?: TokenReviewStatus }>({
      method: 'POST',
      path: '/apis/authentication.k8s.io/v1/tokenreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
    });
    const st = r.status;
    if (!st?.authenticated || !st.user?.username) return undefined;
    const user: UserInfo = {
      username: st.user.username,
      uid: st.user.uid,
      groups: st.user.groups ?? [],
      extra: st.user.extra,
    };
    this.tokens.set(key, user, AUTHN_TTL_MS);
    return user;
  }

  /** Allowed when any of the attribute's subresources is allowed; the reason of the last denial otherwise. */
  async authorize(a: Attributes): Promise<{ allowed: boolean; reason: string }> {
    let last = { allowed: false, reason: '' };
    for (const sub of a.subresources) {
      last = await this.authorizeOne(a, sub);
      if (last.allowed) return last;
    }
    return last;
  }

  private async authorizeOne(
    a: Attributes,
    subresource: string,
  ): Promise<{ allowed: boolean; reason: string }> {
    const spec = {
      user: a.user.username,
      uid: a.user.uid,
      groups: a.user.groups,
      extra: a.user.extra,
      resourceAttributes: {
        verb: a.verb,
        group: '',
        version: 'v1',
        resource: 'nodes',
        subresource,
        name: a.nodeName,
      },
    };
    const key = sha(JSON.stringify(spec));
    const hit = this.decisions.get(key);
    if (hit) return hit;
    const r = await this.api.request<{ status?: SarStatus }>({
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
    });
    const d = { allowed: r.status?.allowed === true, reason: r.status?.reason ?? '' };
    this.decisions.set(key, d, d.allowed ? AUTHZ_ALLOWED_TTL_MS : AUTHZ_DENIED_TTL_MS);
    return d;
  }
}

/** The Extra key under which the API server's authenticators name the credential a user came with. */
export const CREDENTIAL_ID_KEY = 'authentication.kubernetes.io/credential-id';

/**
 * The user of a verified client certificate, as the kubelet's x509 authenticator with
 * AllowParsingUserUIDFromCertAuth on: name from the subject's CN (none without one), groups from its O
 * values (and system:authenticated), UID from its UID attribute (OID 0.9.2342.19200300.100.1.1, unset when
 * absent), and, given the certificate's DER, the credential ID `X509SHA256=<hex of its SHA-256>` in Extra.
 * Throws InvalidArgument when the subject holds several UID attributes or an empty one: the kubelet then
 * does not authenticate the certificate (and tries the request's token).
 */
export function userFromCertSubject(
  subject: {
    CN?: string | string[];
    O?: string | string[];
    UID?: string | string[];
  },
  der?: Buffer,
): UserInfo | undefined {
  const cn = Array.isArray(subject.CN) ? subject.CN[0] : subject.CN;
  if (!cn) return undefined;
  const o = subject.O === undefined ? [] : Array.isArray(subject.O) ? subject.O : [subject.O];
  const uids = subject.UID === undefined ? [] : Array.isArray(subject.UID) ? subject.UID : [subject.UID];
  if (uids.length > 1) {
    throw new KindError('InvalidArgument', `expected 1 UID, but found multiple: [${uids.join(' ')}]`, {
      user: cn,
    });
  }
  if (uids[0] === '') throw new KindError('InvalidArgument', 'UID cannot be an empty string', { user: cn });
  return {
    username: cn,
    ...(uids[0] !== undefined ? { uid: uids[0] } : {}),
    groups: [...o, 'system:authenticated'],
    ...(der ? { extra: { [CREDENTIAL_ID_KEY]: [`X509SHA256=${sha(der)}`] } } : {}),
  };
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m ? m[1] : undefined;
}
