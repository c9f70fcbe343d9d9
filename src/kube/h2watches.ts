/**
 * Watches over HTTP/2: every watch of a client family shares one connection (another one past the server's
 * stream limit), as client-go multiplexes its watches over its one connection to the API server. On HTTP/1.1
 * a watch holds a TLS connection of its own for its whole life, and the operator keeps one per served node
 * (its pods) besides the VirtualNode, Service and shard watches; an idle connection costs several times the
 * memory of an idle stream.
 *
 * Requests stay on HTTP/1.1: on HTTP/2 they cost the same CPU, and their pools bound how many run at once
 * (client.ts). A server that does not speak HTTP/2 (its
 * TLS refuses the `h2` protocol, chooses none, or agrees to `h2` and then sends no SETTINGS) gets the watches
 * over HTTP/1.1 for five minutes, then is asked again. A connection that fails for another reason (the server
 * down, a reset) fails the watches waiting for it, as an HTTP/1.1 connection would fail its watch: the caller
 * tries again over HTTP/2, and no watch is left on HTTP/1.1 for its whole life by a passing failure.
 */
import http2 from 'node:http2';
import type tls from 'node:tls';
import { KindError } from '../util/errors.js';

export interface Http2WatchOptions {
  /** The server's origin, `https://host:port`. */
  origin: string;
  secureContext: tls.SecureContext;
  servername?: string;
  rejectUnauthorized?: boolean;
}

/** How long watches go over HTTP/1.1 after the server refused HTTP/2. */
const FALLBACK_MS = 5 * 60_000;

/**
 * Streams opened on a connection before the server's SETTINGS said how many it takes: no more than a server
 * in front of us allows (kube-apiserver's limit is 100, nginx's 128, HAProxy's 100), so that none waits in a
 * queue for a slot a long-running watch would never free.
 */
const STREAMS_BEFORE_SETTINGS = 100;

/** A connection whose server has sent no SETTINGS by then is given up (`refused`: it speaks no HTTP/2). */
const SETTINGS_TIMEOUT_MS = 30_000;

/** Flow-control windows: a burst of one node's pod events, or a megabyte object, never waits for credit. */
const STREAM_WINDOW = 1 << 20;
const CONNECTION_WINDOW = 16 << 20;

interface Connection {
  session: http2.ClientHttp2Session;
  /** Streams open or about to be opened on it. */
  streams: number;
  /**
   * How the connection came up: `ready` once the server's SETTINGS arrived; `refused` when the server does
   * not speak HTTP/2 (its TLS refused `h2` or chose no protocol, or no SETTINGS came in time); `failed` when
   * it went before either (the server down, a reset: HTTP/1.1 would fare no better, so it is not remembered).
   */
  ready: Promise<'ready' | 'refused' | 'failed'>;
  /** Why it failed, when it did. */
  error?: Error;
  /** The server's stream limit once its SETTINGS arrived. */
  limit: number;
  /** The server sent GOAWAY: its open streams finish, no new one starts on it. */
  goingAway: boolean;
}

export class Http2Watches {
  private connections: Connection[] = [];
  private refusedAt = -Infinity;
  private closed = false;
  /** Connections made, and watches sent over HTTP/1.1 because a connection could not be made HTTP/2. */
  readonly stats = { connections: 0, fallbacks: 0 };

  constructor(private readonly opts: Http2WatchOptions) {}

  /**
   * Opens a GET of `target` (path and query) with `headers`; undefined when the watch is to go over HTTP/1.1
   * (this client is closed, or the server did not take HTTP/2 a short while ago). Aborting `signal` resets
   * the stream. Rejects (KindError Unavailable) when the connection failed before HTTP/2 came up.
   */
  async open(
    target: string,
    headers: Readonly<Record<string, string>>,
    signal: AbortSignal,
  ): Promise<http2.ClientHttp2Stream | undefined> {
    if (this.closed || Date.now() - this.refusedAt < FALLBACK_MS) return undefined;
    const conn = this.pick();
    conn.streams++;
    const how = await conn.ready;
    if (how !== 'ready' || conn.session.closed || conn.session.destroyed) {
      this.release(conn);
      if (this.closed) return undefined;
      if (how === 'refused') {
        this.stats.fallbacks++;
        this.refusedAt = Date.now();
        return undefined;
      }
      const why = `HTTP/2 connection to ${this.opts.origin} failed: ${conn.error?.message ?? 'closed'}`;
      throw new KindError('Unavailable', why, {}, { cause: conn.error });
    }
    const h: http2.OutgoingHttpHeaders = { ':method': 'GET', ':path': target };
    for (const [k, v] of Object.entries(headers)) h[k.toLowerCase()] = v;
    let stream: http2.ClientHttp2Stream;
    try {
      stream = conn.session.request(h, { endStream: true, signal });
    } catch (err) {
      this.release(conn);
      throw err;
    }
    stream.once('close', () => this.release(conn));
    return stream;
  }

  /** Closes every connection; later watches go over HTTP/1.1 (the client is being closed). */
  close(): void {
    this.closed = true;
    for (const c of this.connections.splice(0)) c.session.destroy();
  }

  /** A connection with room for one more stream, a new one if none has. */
  private pick(): Connection {
    for (const c of this.connections) {
      if (c.goingAway || c.session.closed || c.session.destroyed) continue;
      if (c.streams < c.limit) return c;
    }
    return this.connect();
  }

  private connect(): Connection {
    const { origin, secureContext, servername, rejectUnauthorized } = this.opts;
    const session = http2.connect(origin, {
      secureContext,
      ...(servername !== undefined ? { servername } : {}),
      ...(rejectUnauthorized !== undefined ? { rejectUnauthorized } : {}),
      settings: { initialWindowSize: STREAM_WINDOW, enablePush: false },
    });
    this.stats.connections++;
    let settle: (how: 'ready' | 'refused' | 'failed') => void = () => undefined;
    const conn: Connection = {
      session,
      streams: 0,
      limit: STREAMS_BEFORE_SETTINGS,
      goingAway: false,
      ready: new Promise((resolve) => (settle = resolve)),
    };
    // A server that sends no SETTINGS in time is given up.
    const timer = setTimeout(() => {
      settle('refused');
      session.destroy();
    }, SETTINGS_TIMEOUT_MS);
    timer.unref();
    const settleOnce = (how: 'ready' | 'refused' | 'failed'): void => {
      clearTimeout(timer);
      settle(how);
    };
    session.once('remoteSettings', (settings) => {
      const max = settings.maxConcurrentStreams;
      if (max !== undefined && max > 0) conn.limit = max;
      settleOnce('ready');
    });
    session.once('connect', () => {
      // A TLS server that ignores ALPN: Node's session would wait for SETTINGS that never come.
      if (session.alpnProtocol !== 'h2') {
        settleOnce('refused');
        session.destroy();
        return;
      }
      session.setLocalWindowSize(CONNECTION_WINDOW);
    });
    // Without a listener an 'error' would throw; the streams on it see the failure themselves.
    session.on('error', (err: NodeJS.ErrnoException) => {
      conn.error ??= err;
      settleOnce(err.code === 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL' ? 'refused' : 'failed');
    });
    session.once('goaway', () => (conn.goingAway = true));
    session.once('close', () => {
      settleOnce('failed');
      this.connections = this.connections.filter((c) => c !== conn);
    });
    this.connections.push(conn);
    return conn;
  }

  /** One stream fewer on `conn`; a connection left without streams is closed. */
  private release(conn: Connection): void {
    conn.streams--;
    if (conn.streams > 0) return;
    this.connections = this.connections.filter((c) => c !== conn);
    if (!conn.session.closed && !conn.session.destroyed) conn.session.close();
  }
}
