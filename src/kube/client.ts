/**
 * The client API calls go through: a KubeConfig for credentials, a token bucket in front of every request
 * (kubelet defaults 50 QPS, burst 100), typed errors by status code, and a hook that counts requests by verb
 * and code. Objects travel as plain JSON in their wire shape; nothing is re-serialised.
 *
 * `withLimits` makes a sibling over the same connections, credentials, user agent and hook but with a rate
 * limit of its own, as the kubelet keeps separate clients for heartbeats (no limit) and events (their own
 * QPS): a flood of ordinary requests queued in one bucket must not delay a node Lease renewal.
 *
 * Requests go over HTTP/1.1 connection pools (`withPool`); watches of an https server over HTTP/2, all of a
 * client family's on one connection (transport.ts, h2watches.ts). What an answer that is not a success
 * means, and when a request is sent again, is apierrors.ts; a request's timeout, deadline.ts.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeConnection } from './kubeconfig.js';
import { RealClock, type Clock } from '../util/clock.js';
import { KindError } from '../util/errors.js';
import { TokenBucket, Unlimited, type Priority, type RateLimiter } from './tokenbucket.js';
import { parseJSON, readWatchEvents } from './watchstream.js';
import type { Readable } from 'node:stream';
import { answerError, headerText, retryWaitMs } from './apierrors.js';
import { requestDeadline, type RequestDeadline } from './deadline.js';
import { openStream, sendRequest } from './dispatch.js';
import {
  checkConnections,
  connectionOf,
  DEFAULT_CONNECTIONS,
  IDLE_CONNECTION_TIMEOUT_MS,
  newTransport,
  requestPath,
  type Query,
  type Transport,
} from './transport.js';

export { apiError, MAX_RETRIES, retryAfterSeconds } from './apierrors.js';
export { requestDeadline, type RequestDeadline } from './deadline.js';
export { connectionOf, IDLE_CONNECTION_TIMEOUT_MS } from './transport.js';

export type Verb = 'GET' | 'LIST' | 'WATCH' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'DELETECOLLECTION';

export interface RequestOptions {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query;
  body?: unknown;
  /** Defaults to application/json; patches name their type (strategic-merge, merge, json, apply). */
  contentType?: string;
  signal?: AbortSignal;
  /** Whole-request timeout; defaults to 60 s. */
  timeoutMs?: number;
  /**
   * `low`: waits for the rate limiter's token behind every `normal` request (reads that stand in for what a
   * kubelet watches: ConfigMaps, Secrets, claims). Default `normal`.
   */
  priority?: Priority;
  /** The answer is not wanted: a successful body is neither kept nor parsed (resolves undefined). */
  ignoreAnswer?: boolean;
  /** The Accept header; defaults to application/json (see PartialObjectMetadataJSON). */
  accept?: string;
  /**
   * The answer's metadata.managedFields are cut from its text before it is parsed (see managedfields.ts for
   * the kinds this suits); they are then absent from what the request resolves to.
   */
  dropManagedFields?: boolean;
}

/** How a watch's events are read: `dropManagedFields` as for a request, for each event's object. */
export type WatchOptions = Pick<RequestOptions, 'dropManagedFields'>;

/**
 * Asks the API server for an object's metadata alone (kind PartialObjectMetadata), for a write whose caller
 * reads only the answer's metadata: the server then encodes, and the client parses, a fraction of the object.
 */
export const PartialObjectMetadataJSON = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';

export interface KubeClientOptions {
  qps?: number;
  burst?: number;
  /** Lift the rate limit entirely (benchmarks). */
  unlimited?: boolean;
  /** At most this many connections in the client's pool (see `withPool`); DEFAULT_CONNECTIONS if unset. */
  connections?: number;
  /** How long a pool's connection may sit unused before it is closed; IDLE_CONNECTION_TIMEOUT_MS if unset. */
  idleTimeoutMs?: number;
  clock?: Clock;
  userAgent?: string;
  /** Called once per finished request, for metrics. `code` is 0 when no HTTP response came back. */
  onRequest?: (verb: Verb, resource: string, code: number, durationMs: number) => void;
  /**
   * Awaited before a request goes out and again when its response has arrived, before the body is parsed
   * and the caller goes on (the process's TimeSlicer): what follows an API call (a pod sync, a volume
   * mount, the next status patch) then takes its turn with the pod syncs instead of running unbroken in
   * the I/O phase, and a burst of requests leaving or answers arriving does not hold the loop.
   */
  yieldToLoop?: () => Promise<void>;
}

/**
 * The rate limit of a sibling client (`withLimits`): no limit at all, or its own token bucket. `prompt`: the
 * sibling does not take turns through the parent's `yieldToLoop` (heartbeats: a Lease renewal never waits
 * behind pod work).
 */
export type ClientLimits = ({ unlimited: true } | { qps: number; burst: number }) & { prompt?: boolean };

export const PatchTypes = {
  strategic: 'application/strategic-merge-patch+json',
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

const realClock = new RealClock();

/**
 * What a request path names, for metrics: the resource (`pods`, `pods/status`, `things` of /apis/g/v/things)
 * and whether it is a collection (a GET on it is a LIST), from one split of the path per request.
 */
export function pathTarget(path: string): { resource: string; collection: boolean } {
  // /api/v1/namespaces/ns/pods/name/status -> pods/status; /apis/g/v/things -> things
  const q = path.indexOf('?');
  const parts = (q < 0 ? path : path.slice(0, q)).split('/').filter(Boolean);
  let rest = parts.slice(parts[0] === 'api' ? 2 : 3);
  const namespaced = rest[0] === 'namespaces';
  const collection = namespaced ? rest.length === 1 || rest.length === 3 : rest.length === 1;
  if (namespaced && rest.length > 2) rest = rest.slice(2);
  const resource = rest[0] ?? '';
  return { resource: rest.length >= 3 ? `${resource}/${rest[2]}` : resource, collection };
}

function newLimiter(opts: KubeClientOptions): RateLimiter {
  return opts.unlimited
    ? new Unlimited()
    : new TokenBucket(opts.clock ?? new RealClock(), opts.qps ?? 50, opts.burst ?? 100);
}

export class KubeClient {
  private readonly limiter: RateLimiter;

  private constructor(
    readonly server: string,
    private readonly transport: Transport,
    private readonly opts: KubeClientOptions,
    /** A limiter to share (`withPool`); a new one from `opts` otherwise. */
    limiter?: RateLimiter,
  ) {
    this.limiter = limiter ?? newLimiter(opts);
  }

  /** Builds a client from a loaded KubeConfig (its current context). */
  static async fromKubeConfig(kc: KubeConfig, opts: KubeClientOptions = {}): Promise<KubeClient> {
    return KubeClient.fromConnection(await connectionOf(kc), opts);
  }

  /** Builds a client from a server and its request options (see loadPlainKubeConfig). */
  static fromConnection(conn: KubeConnection, opts: KubeClientOptions = {}): KubeClient {
    const { server, options } = conn;
    const connections = opts.connections ?? DEFAULT_CONNECTIONS;
    checkConnections(connections);
    const transport = newTransport(
      server,
      options,
      opts.userAgent ?? 'kubelet-operator',
      connections,
      opts.idleTimeoutMs ?? IDLE_CONNECTION_TIMEOUT_MS,
    );
    return new KubeClient(server, transport, opts);
  }

  /**
   * A sibling client: the same server, connection pool, credentials, user agent and `onRequest` hook, but its
   * own rate limiter, so requests queued on this client's bucket never delay the sibling's and the other way
   * round. Invalid limits (qps <= 0, burst < 1) throw InvalidArgument. Siblings share one pool: `close()` on
   * any of them closes the connections of all.
   */
  withLimits(limits: ClientLimits): KubeClient {
    const { clock, userAgent, onRequest, yieldToLoop } = this.opts;
    return new KubeClient(this.server, this.transport, {
      clock,
      userAgent,
      onRequest,
      ...(yieldToLoop && !limits.prompt ? { yieldToLoop } : {}),
      ...('unlimited' in limits ? { unlimited: true } : { qps: limits.qps, burst: limits.burst }),
    });
  }

  /**
   * A sibling client over a connection pool of its own, at most `maxSockets` connections (Infinity: no bound),
   * sharing everything else with this one, its rate limiter included. Requests wait for a free connection in
   * their pool, first come first served, so a pool per kind of traffic keeps one kind's backlog from holding
   * up another's: a burst's Events do not delay status writes, and neither delays a Lease renewal. Siblings
   * of the returned client (`withLimits`) share its pool.
   */
  withPool(maxSockets: number): KubeClient {
    checkConnections(maxSockets);
    const pool = this.transport.newPool(maxSockets);
    this.transport.pools.add(pool);
    return new KubeClient(this.server, { ...this.transport, pool }, this.opts, this.limiter);
  }

  /**
   * One request; resolves to the parsed JSON body (undefined for an empty body). Errors are KindErrors.
   *
   * An answer of 429 or 5xx that carries `Retry-After` (API Priority and Fairness rejecting a request it
   * could not queue, a server shedding load) is sent again after that many seconds, up to MAX_RETRIES
   * times: client-go's REST client does the same for every verb, so a kubelet's writes ride out a rejection
   * that ours would otherwise lose. All attempts share the request's timeout; an answer whose wait would
   * outlast it, or a caller that aborts meanwhile, ends the request with that answer's error. Each attempt
   * takes a token of the rate limiter and is reported to `onRequest`.
   */
  async request<T = unknown>(req: RequestOptions): Promise<T> {
    const deadline = requestDeadline(req.timeoutMs ?? 60_000, req.signal);
    try {
      for (let retries = 0; ; retries++) {
        try {
          return await this.attempt<T>(req, deadline);
        } catch (err) {
          const waitMs = retryWaitMs(err, retries);
          if (waitMs === undefined || Date.now() + waitMs >= deadline.endsAt) throw err;
          // Rejects at once if the caller has aborted, or as soon as it does.
          await (this.opts.clock ?? realClock).sleep(waitMs, req.signal).catch(() => {
            throw err;
          });
        }
      }
    } finally {
      deadline.release();
    }
  }

  private async attempt<T>(req: RequestOptions, deadline: RequestDeadline): Promise<T> {
    await this.limiter.acquire(req.priority);
    await this.opts.yieldToLoop?.();
    const url = requestPath(this.transport, req.path, req.query);
    const target = pathTarget(req.path);
    // The API verb, as RBAC names it: a GET or DELETE of a collection is a list or a deletecollection.
    const verb: Verb = !target.collection
      ? req.method
      : req.method === 'GET'
        ? 'LIST'
        : req.method === 'DELETE'
          ? 'DELETECOLLECTION'
          : req.method;
    const started = Date.now();
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const what = `${req.method} ${req.path}`;
    let code = 0;
    // When the answer was in: the latency metric leaves out the turn waited for afterwards.
    let answeredAt: number | undefined;
    try {
      const headers: Record<string, string> = {};
      if (req.accept !== undefined) headers.Accept = req.accept;
      if (body !== undefined) headers['Content-Type'] = req.contentType ?? 'application/json';
      const answer = await sendRequest(
        this.transport,
        req.method,
        url,
        headers,
        body,
        !!req.ignoreAnswer,
        (r) => deadline.attach(r),
      );
      const { status, bytes } = answer;
      code = status;
      answeredAt = answer.endedAt;
      await this.opts.yieldToLoop?.();
      if (status < 200 || status >= 300) {
        throw answerError(status, bytes.toString('utf8'), what, answer.retryAfter);
      }
      if (bytes.length === 0 || req.ignoreAnswer) return undefined as T;
      return parseJSON(bytes, req.dropManagedFields) as T;
    } catch (err) {
      if (err instanceof KindError) throw err;
      if (deadline.timedOut())
        throw new KindError('DeadlineExceeded', `${what}: timed out`, {}, { cause: err });
      throw new KindError('Unavailable', `${what}: ${(err as Error).message}`, {}, { cause: err });
    } finally {
      this.opts.onRequest?.(verb, target.resource, code, (answeredAt ?? Date.now()) - started);
    }
  }

  /**
   * Streams a watch: calls `onEvent` for each event line until the server closes the stream (resolves) or
   * the request fails (rejects with a KindError). Abort `signal` to stop; that resolves quietly.
   *
   * A watch answered 429 or 5xx with `Retry-After` is sent again after that many seconds, up to MAX_RETRIES
   * times, as client-go's REST client does for a watch before its reflector sees an error: API Priority and
   * Fairness that cannot queue a node's watch names when to come back, and the watch comes back then instead
   * of after the informer's own back-off. A stream that began (200) is never sent again from here.
   */
  async watch(
    path: string,
    query: RequestOptions['query'],
    onEvent: (event: { type: string; object: unknown }) => void,
    signal: AbortSignal,
    opts: WatchOptions = {},
  ): Promise<void> {
    for (let retries = 0; ; retries++) {
      try {
        return await this.watchOnce(path, query, onEvent, signal, opts);
      } catch (err) {
        const waitMs = retryWaitMs(err, retries);
        if (waitMs === undefined) throw err;
        const waited = await (this.opts.clock ?? realClock).sleep(waitMs, signal).then(
          () => true,
          () => false,
        );
        if (!waited || signal.aborted) return;
      }
    }
  }

  private async watchOnce(
    path: string,
    query: RequestOptions['query'],
    onEvent: (event: { type: string; object: unknown }) => void,
    signal: AbortSignal,
    opts: WatchOptions,
  ): Promise<void> {
    await this.limiter.acquire();
    const url = requestPath(this.transport, path, { ...query, watch: true });
    const started = Date.now();
    let code = 0;
    // The answer, over whichever connection carries it: an error's body, or the events until the end.
    const answer = (
      status: number,
      retryAfter: string | undefined,
      body: Readable,
      destroy: (err: Error) => void,
    ): Promise<void> => {
      code = status;
      return status === 200
        ? readWatchEvents(body, onEvent, opts.dropManagedFields, destroy)
        : new Promise((resolve, reject) => {
            const chunks: Buffer[] = [];
            body.on('data', (c: Buffer) => chunks.push(c));
            body.on('end', () =>
              reject(
                answerError(status, Buffer.concat(chunks).toString('utf8'), `WATCH ${path}`, retryAfter),
              ),
            );
            body.on('error', reject);
          });
    };
    try {
      const stream = await this.transport.h2?.open(url, this.transport.headers, signal);
      await new Promise<void>((resolve, reject) => {
        if (stream) {
          stream.once('response', (h) =>
            answer(Number(h[':status']), headerText(h['retry-after']), stream, (err) =>
              stream.destroy(err),
            ).then(resolve, reject),
          );
          stream.on('error', reject);
          // A reset stream closes without 'end'; one that ended (answered) is settled by `answer`.
          stream.once('close', () => {
            if (!stream.readableEnded)
              reject(new Error(`watch stream closed (HTTP/2 code ${stream.rstCode})`));
          });
          return;
        }
        openStream(this.transport, url, signal).then(
          (res) =>
            answer(res.status, res.retryAfter, res.body, (err) => res.body.destroy(err)).then(
              resolve,
              reject,
            ),
          reject,
        );
      });
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof KindError) throw err;
      throw new KindError('Unavailable', `WATCH ${path}: ${(err as Error).message}`, {}, { cause: err });
    } finally {
      this.opts.onRequest?.('WATCH', pathTarget(path).resource, code, Date.now() - started);
    }
  }

  /**
   * The HTTP/2 connections made for this client family's watches, and the watches sent over HTTP/1.1 because
   * the server refused HTTP/2 (undefined for a plain-HTTP server, whose watches are all HTTP/1.1).
   */
  watchStats(): Readonly<{ connections: number; fallbacks: number }> | undefined {
    return this.transport.h2?.stats;
  }

  /** Closes the keep-alive sockets of every pool this client's family has (see `withLimits`, `withPool`). */
  close(): void {
    // Ends every connection now, requests in flight with them (their callers see an error).
    for (const pool of this.transport.pools) pool.destroy().catch(() => undefined);
    this.transport.h2?.close();
  }
}
