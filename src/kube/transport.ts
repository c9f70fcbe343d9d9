/**
 * The connections a client family talks over: HTTP/1.1 keep-alive pools to one API server (one per kind of
 * traffic, `KubeClient.withPool`), all built from one TLS context, and the HTTP/2 connection its watches
 * share (h2watches.ts). A request's options are built here from the server parsed once, not from a URL per
 * request.
 */
import https from 'node:https';
import tls from 'node:tls';
import http from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeConnection } from './kubeconfig.js';
import { KindError } from '../util/errors.js';
import { Http2Watches } from './h2watches.js';

/** A request's query parameters; unset ones are left out. */
export type Query = Record<string, string | number | boolean | undefined>;

/**
 * What siblings share: the connection pool (with the TLS material), the request options and the headers
 * (the user agent's among them).
 */
export interface Transport {
  agent: https.Agent | http.Agent;
  /** Another pool of at most `maxSockets` connections to the same server with the same TLS context. */
  newAgent(maxSockets: number): https.Agent | http.Agent;
  /** Every pool made from the first transport (`close()` destroys them all). */
  pools: Set<https.Agent | http.Agent>;
  /** The watches of an https server, over HTTP/2 (shared by every client made from the first transport). */
  h2?: Http2Watches;
  /** The kubeconfig's request options without the TLS material (the agent holds that) and the headers. */
  requestOptions: https.RequestOptions;
  /** The kubeconfig's headers (a bearer token), then the user agent and `Accept` every request sends. */
  headers: Readonly<Record<string, string>>;
  /**
   * The server, parsed once: a request gets its options from here instead of from a URL parsed per request
   * (WHATWG URL parsing and Node's conversion of it were about 1 % of the operator's CPU in a create burst).
   */
  target: {
    /** The server as the kubeconfig names it. */
    server: string;
    module: typeof http | typeof https;
    protocol: string;
    hostname: string;
    port: string;
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

/**
 * Node's agents key their connection pools by a name built from each request's options (host, port and, for
 * TLS, every option that could change the connection), building it twice per request: when the request
 * asks for a socket and when the socket is freed. Every request of a transport goes to one server with one
 * TLS context and carries no connection options of its own, so one name serves them all (it also keys the
 * TLS session cache, which then holds that one server's session).
 */
const POOL_NAME = 'api-server';

/** A pool's size: a whole number of connections, at least one; Infinity for a pool without a bound. */
export function checkConnections(n: number): void {
  if (!(n === Infinity || (Number.isInteger(n) && n >= 1)))
    throw new KindError('InvalidArgument', `a connection pool needs at least one connection (got ${n})`);
}

/** The connections of a client's pool unless `withPool` gives it another (Node's agent queues the rest). */
export const DEFAULT_CONNECTIONS = 64;

/**
 * A pooled connection unused this long is closed, as client-go's transport closes an idle one after Go's
 * `IdleConnTimeout` (90 s). A burst opens every connection of its pool, and without this they all stayed
 * open for the life of the process: about 100 TLS connections for a hundred nodes, some 130 KiB of the
 * process's memory each and a connection each on the API server. A request in flight is never cut: Node's
 * agent applies the timeout to its free connections only (an answer may take longer, a watch for ever).
 */
export const IDLE_CONNECTION_TIMEOUT_MS = 90_000;

class OneServerHttpsAgent extends https.Agent {
  override getName(): string {
    return POOL_NAME;
  }
}

class OneServerHttpAgent extends http.Agent {
  override getName(): string {
    return POOL_NAME;
  }
}

export function newTransport(
  server: string,
  baseOptions: https.RequestOptions,
  userAgent: string,
  connections: number,
  idleTimeoutMs: number,
): Transport {
  const url = new URL(server);
  const target = {
    server,
    module: url.protocol === 'https:' ? https : http,
    protocol: url.protocol,
    // As Node's own conversion of a URL: an IPv6 literal without its brackets.
    hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
    port: url.port,
    prefix: url.pathname.replace(/\/+$/, ''),
  };
  const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername, ...rest } = baseOptions;
  // One TLS context for every connection: built per socket (Node's default when the key material
  // travels with each request) it cost about 3 ms of CPU per new connection, 0.3 s for 100 nodes
  // starting at once. The key material then stays out of the per-request options.
  const secureContext =
    url.protocol === 'https:' ? tls.createSecureContext({ ca, cert, key, pfx, passphrase }) : undefined;
  const newAgent = (maxSockets: number): https.Agent | http.Agent =>
    secureContext
      ? new OneServerHttpsAgent({
          keepAlive: true,
          maxSockets,
          timeout: idleTimeoutMs,
          rejectUnauthorized,
          servername,
          secureContext,
        })
      : new OneServerHttpAgent({ keepAlive: true, maxSockets, timeout: idleTimeoutMs });
  const agent = newAgent(connections);
  const { headers, ...requestOptions } = rest;
  return {
    agent,
    newAgent,
    pools: new Set([agent]),
    ...(secureContext
      ? {
          h2: new Http2Watches({
            origin: url.origin,
            secureContext,
            ...(servername !== undefined ? { servername } : {}),
            ...(rejectUnauthorized !== undefined ? { rejectUnauthorized } : {}),
          }),
        }
      : {}),
    requestOptions,
    headers: {
      ...(headers as Record<string, string> | undefined),
      'User-Agent': userAgent,
      Accept: 'application/json',
    },
    target,
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

/** A request over the transport's pool, with its headers after the transport's own. */
export function openRequest(
  t: Transport,
  method: string,
  target: string,
  headers: Record<string, string>,
  signal: AbortSignal | undefined,
): http.ClientRequest {
  const { requestOptions, agent } = t;
  const { module, protocol, hostname, port } = t.target;
  // Object.assign, not a spread with fields added after it: on Node 20 (V8 11) that literal cost about
  // 3 KB of garbage per request, new hidden classes each time; this one about 0.2 KB.
  return module.request(
    Object.assign({}, requestOptions, {
      protocol,
      hostname,
      // '' (none in the server's URL) is the protocol's default port, as Node reads it.
      port,
      path: target,
      method,
      agent,
      signal,
      headers: Object.assign({}, t.headers, headers),
    }),
  );
}
