/**
 * The connections a client family talks over: HTTP/1.1 keep-alive pools to one API server (one per kind of
 * traffic, `KubeClient.withPool`), all built from one TLS context, and the HTTP/2 connection its watches
 * share (h2watches.ts). The pools are undici's (`Pool`, the HTTP client Node's own fetch is built on): a
 * request costs less CPU than through node:http's agent and ClientRequest, and the API server sees the same
 * HTTP/1.1 requests.
 */
import tls from 'node:tls';
import type https from 'node:https';
import type { Pool } from 'undici';
// The Pool class alone, not the package's index (see undici-pool.d.ts); the version is pinned in package.json.
import PoolClass from 'undici/lib/dispatcher/pool.js';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeConnection } from './kubeconfig.js';
import { KindError } from '../util/errors.js';
import { Http2Watches } from './h2watches.js';

/** A request's query parameters; unset ones are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/**
 * What siblings share: the connection pool (with the TLS material), the server and the headers (the user
 * agent's among them).
 */
export interface Transport {
  pool: Pool;
  /** Another pool of at most `connections` connections to the same server with the same TLS context. */
  newPool(connections: number): Pool;
  /** Every pool made from the first transport (`close()` destroys them all). */
  pools: Set<Pool>;
  /** The watches of an https server, over HTTP/2 (shared by every client made from the first transport). */
  h2?: Http2Watches;
  /** The kubeconfig's headers (a bearer token or basic credentials), then the user agent and `Accept`. */
  headers: Readonly<Record<string, string>>;
  /** The server, parsed once. */
  target: {
    /** The server as the kubeconfig names it. */
    server: string;
    /** The server's own path (a proxy's prefix), without a trailing slash. */
    prefix: string;
  };
}

/**
 * A path that a URL would keep as it is: printable ASCII outside the path's percent-encode set and the query
 * and fragment marks, no backslash (a URL turns it into a slash) and no dot segment. Anything else is
 * resolved through URL, as every path was before.
 */
const PLAIN_PATH = /^[!$-;=@-[\]-_a-z|~]*$/;

function isPlainPath(p: string): boolean {
  return PLAIN_PATH.test(p) && !p.includes('/.');
}

/** A request's query parameters, unset ones left out. */
function searchParams(query: Query): URLSearchParams {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  return params;
}

/** A pool's size: a whole number of connections, at least one; Infinity for a pool without a bound. */
export function checkConnections(n: number): void {
  if (!(n === Infinity || (Number.isInteger(n) && n >= 1)))
    throw new KindError('InvalidArgument', `a connection pool needs at least one connection (got ${n})`);
}

/** The connections of a client's pool unless `withPool` gives it another (the pool queues the rest). */
export const DEFAULT_CONNECTIONS = 64;

/**
 * A pooled connection unused this long is closed, as client-go's transport closes an idle one after Go's
 * `IdleConnTimeout` (90 s). A burst opens every connection of its pool, and without this they all stayed
 * open for the life of the process: about 100 TLS connections for a hundred nodes, some 130 KiB of the
 * process's memory each and a connection each on the API server. A request in flight is never cut: the pool
 * applies the timeout to its idle connections only (an answer may take longer, a watch for ever).
 */
export const IDLE_CONNECTION_TIMEOUT_MS = 90_000;

/**
 * The kubeconfig's request options the pools understand: the TLS material and checks go into the one TLS
 * context and the connect options, its headers (and basic credentials, as node:http's `auth` sends them)
 * into every request's headers. Nothing else of them applies to a connection to the API server.
 */
function splitOptions(base: https.RequestOptions): {
  tlsOptions: tls.SecureContextOptions;
  connect: { rejectUnauthorized?: boolean; servername?: string };
  headers: Record<string, string>;
} {
  const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername, headers, auth } = base;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries((headers ?? {}) as Record<string, unknown>))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  if (auth && !Object.keys(out).some((k) => k.toLowerCase() === 'authorization'))
    out.Authorization = `Basic ${Buffer.from(auth).toString('base64')}`;
  return {
    tlsOptions: { ca, cert, key, pfx, passphrase },
    connect: {
      ...(rejectUnauthorized !== undefined ? { rejectUnauthorized } : {}),
      ...(servername ? { servername } : {}),
    },
    headers: out,
  };
}

export function newTransport(
  server: string,
  baseOptions: https.RequestOptions,
  userAgent: string,
  connections: number,
  idleTimeoutMs: number,
): Transport {
  const url = new URL(server);
  const { tlsOptions, connect, headers } = splitOptions(baseOptions);
  // One TLS context for every connection: built per socket it cost about 3 ms of CPU per new connection,
  // 0.3 s for 100 nodes starting at once.
  const secureContext = url.protocol === 'https:' ? tls.createSecureContext(tlsOptions) : undefined;
  const newPool = (n: number): Pool =>
    new PoolClass(url.origin, {
      connections: n === Infinity ? null : n,
      // A server's Keep-Alive hint may shorten the idle timeout, never lengthen it (Go's server sends none).
      keepAliveTimeout: idleTimeoutMs,
      keepAliveMaxTimeout: idleTimeoutMs,
      // A request's deadline (deadline.ts) and a watch's signal end them; the pool sets no timer of its own.
      headersTimeout: 0,
      bodyTimeout: 0,
      ...(secureContext ? { connect: { ...connect, secureContext } } : {}),
    });
  const pool = newPool(connections);
  return {
    pool,
    newPool,
    pools: new Set([pool]),
    ...(secureContext
      ? {
          h2: new Http2Watches({ origin: url.origin, secureContext, ...connect }),
        }
      : {}),
    headers: { ...headers, 'User-Agent': userAgent, Accept: 'application/json' },
    target: { server, prefix: url.pathname.replace(/\/+$/, '') },
  };
}

/** The server and request options of a KubeConfig's current context, as client-node applies them. */
export async function connectionOf(kc: KubeConfig): Promise<KubeConnection> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KindError('InvalidArgument', 'kubeconfig has no current cluster');
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  // client-node adds an agent of its own; the client has its own pool (newTransport). Its cluster server has
  // no trailing slash (client-node drops it when it loads a kubeconfig).
  delete options.agent;
  return { server: cluster.server, options };
}
/** The request target (path and query) of `path` on the transport's server, encoded as a URL would have it. */
export function requestPath(t: Transport, path: string, query?: Query): string {
  const params = query ? searchParams(query) : undefined;
  const full = t.target.prefix + path;
  if (isPlainPath(full)) return params?.size ? `${full}?${params}` : full;
  // A query in the path itself is kept, the parameters set over it, as a URL's searchParams does.
  const u = new URL(t.target.server + path);
  for (const [k, v] of params ?? []) u.searchParams.set(k, v);
  return u.pathname + u.search;
}
