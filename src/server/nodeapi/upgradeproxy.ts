/**
 * Proxies an HTTP upgrade (SPDY/3.1 or WebSocket) to a runtime's streaming server, the way the kubelet's
 * upgrade-aware handler does: dial the URL's host, send the original request line with the URL's path
 * and the upgrade headers, then copy bytes both ways. Neither protocol is parsed here, so whatever the two
 * ends negotiate (remotecommand v1-v5, portforward, channel.k8s.io, ...) works.
 *
 * Contract: copying uses stream backpressure in both directions, so a slow reader on either side holds at
 * most the sockets' buffers and never delays another request. When one side ends, the other is ended (its
 * buffered bytes, such as the exit status frame, are still delivered); an error on either side, or
 * closeAll(), destroys both. A streaming server that cannot be reached gets the client a 502 before any
 * upgrade.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';

/** Request headers the streaming server needs to accept the upgrade; all others stay here. */
const FORWARDED = new Set(['connection', 'upgrade', 'x-stream-protocol-version', 'origin', 'user-agent']);

function forwarded(name: string): boolean {
  const n = name.toLowerCase();
  return FORWARDED.has(n) || n.startsWith('sec-websocket-');
}

/** The request head sent to the streaming server: same method, the runtime URL's path and query. */
export function upstreamRequestHead(req: Pick<IncomingMessage, 'method' | 'rawHeaders'>, url: URL): string {
  const lines = [`${req.method ?? 'GET'} ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (forwarded(name)) lines.push(`${name}: ${req.rawHeaders[i + 1]!}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The Status reason of an HTTP error status, as the API server names them (none for the others). */
export function statusReasonOf(status: number): string | undefined {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return reasons[status];
}

/**
 * Answers a not-yet-upgraded socket with an HTTP error and closes it. The body is a v1 Status with the
 * message: the API server passes a node's refusal on to the client as it is, and kubectl (the WebSocket
 * and the SPDY executors alike) reads a Status, where it has been seen to lose a plain text message.
 */
export function writeRawResponse(socket: Duplex, status: number, text: string): void {
  if (socket.destroyed || socket.writableEnded) return;
  const reason = statusReasonOf(status);
  const body = Buffer.from(
    `${JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: text,
      ...(reason ? { reason } : {}),
      code: status,
    })}\n`,
    'utf8',
  );
  const head =
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json\r\n' +
    'X-Content-Type-Options: nosniff\r\n' +
    `Content-Length: ${body.length}\r\n` +
    'Connection: close\r\n\r\n';
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]));
}

export interface UpgradeProxyOptions {
  logger: Logger;
  /** How long to wait for the streaming server to accept the connection (default 10 s). */
  connectTimeoutMs?: number;
  /** How long an ended side may take to flush before it is destroyed (default 30 s). */
  lingerMs?: number;
}

export class UpgradeProxy {
  private readonly live = new Set<Duplex>();

  constructor(private readonly opts: UpgradeProxyOptions) {}

  /** Sockets currently held by proxied sessions (both sides count). */
  get activeSockets(): number {
    return this.live.size;
  }

  /** Destroys every proxied session (server shutdown). */
  closeAll(): void {
    for (const s of this.live) s.destroy();
    this.live.clear();
  }

  /**
   * Connects `client` (the upgraded socket, with `head` already read past the request) to `target`, the
   * runtime's streaming URL. Never throws; failures end the client socket with an HTTP error.
   */
  proxy(req: IncomingMessage, client: Duplex, head: Buffer, target: string): void {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return writeRawResponse(client, 500, `the runtime returned a malformed streaming URL`);
    }
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:')
      return writeRawResponse(client, 500, `unsupported streaming URL scheme ${url.protocol}`);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(url.port || (secure ? 443 : 80));
    const upstream: net.Socket = secure
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host })
      : net.connect({ host, port });
    const { logger } = this.opts;
    let connected = false;
    let done = false;
    this.live.add(client);
    this.live.add(upstream);

    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(connectTimer);
      this.live.delete(client);
      this.live.delete(upstream);
    };
    /** The streaming server cannot be reached: nothing was forwarded yet, so answer with an HTTP error. */
    const fail = (status: number, message: string): void => {
      if (done) return;
      finish();
      upstream.destroy();
      writeRawResponse(client, status, message);
    };

    const connectTimer = setTimeout(
      () => fail(504, `timed out connecting to the runtime's streaming server at ${url.host}`),
      this.opts.connectTimeoutMs ?? 10_000,
    );
    upstream.once(secure ? 'secureConnect' : 'connect', () => {
      if (done) return;
      connected = true;
      clearTimeout(connectTimer);
      upstream.write(upstreamRequestHead(req, url));
      if (head.length > 0) upstream.write(head);
      // pipe(): backpressure both ways, and the end of one side ends the other once its buffer drained.
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', (err) => {
      // Once upgraded, 'close' follows and ends the client gracefully.
      if (connected) return;
      logger.warn('node API: cannot reach the runtime streaming server', {
        url: `${url.protocol}//${url.host}`,
        error: errorMessage(err),
      });
      fail(502, `cannot reach the runtime's streaming server: ${errorMessage(err)}`);
    });
    client.on('error', () => {
      // The client is gone: nothing can be answered, and the session has no one to serve.
      finish();
      upstream.destroy();
      client.destroy();
    });
    upstream.once('close', () => {
      if (!connected) return fail(502, "the runtime's streaming server closed the connection");
      if (client.destroyed) return finish();
      // The session is over: let the client take the last bytes (the exit status), within bounds.
      client.end();
      const t = setTimeout(() => client.destroy(), this.opts.lingerMs ?? 30_000);
      t.unref();
      client.once('close', () => clearTimeout(t));
    });
    client.once('close', () => {
      finish();
      upstream.destroy();
    });
  }
}

export type SpdyUpgradeResult =
  { ok: true; socket: Duplex; head: Buffer; protocol: string } | { ok: false; status: number; body: string };

/** How much of a refusal's body is kept for the client. */
const MaxRefusalBody = 64 * 1024;

/**
 * Asks the runtime's streaming server at `target` to switch to SPDY/3.1 with one of `protocols`
 * (X-Stream-Protocol-Version), as the kubelet's SPDY round tripper does: POST, Connection: Upgrade. Resolves
 * to the upgraded socket and the protocol chosen, or to the status and text to give the client (the
 * runtime's own refusal, 502 when it cannot be reached, 504 when it does not answer in time). Never rejects.
 */
export function dialSpdyUpgrade(
  target: string,
  protocols: readonly string[],
  timeoutMs = 10_000,
): Promise<SpdyUpgradeResult> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return resolve({ ok: false, status: 500, body: 'the runtime returned a malformed streaming URL' });
    }
    const secure = url.protocol === 'https:';
    if (!secure && url.protocol !== 'http:')
      return resolve({ ok: false, status: 500, body: `unsupported streaming URL scheme ${url.protocol}` });
    let settled = false;
    const settle = (r: SpdyUpgradeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const req = (secure ? https : http).request({
      method: 'POST',
      host,
      port: Number(url.port || (secure ? 443 : 80)),
      path: `${url.pathname}${url.search}`,
      agent: false,
      ...(secure && !net.isIP(host) ? { servername: host } : {}),
      headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': [...protocols] },
    });
    const timer = setTimeout(() => {
      settle({
        ok: false,
        status: 504,
        body: `timed out upgrading to the runtime's streaming server at ${url.host}`,
      });
      req.destroy();
    }, timeoutMs);
    req.on('upgrade', (res: IncomingMessage, socket: Duplex, head: Buffer) => {
      const v = res.headers['x-stream-protocol-version'];
      const protocol = (Array.isArray(v) ? v[0] : v)?.trim() ?? '';
      if (settled || !/spdy\/3\.1/i.test(String(res.headers.upgrade ?? ''))) {
        socket.destroy();
        return settle({
          ok: false,
          status: 502,
          body: "the runtime's streaming server upgraded to another protocol",
        });
      }
      settle({ ok: true, socket, head, protocol });
    });
    req.on('response', (res: IncomingMessage) => {
      const parts: Buffer[] = [];
      let size = 0;
      res.on('data', (b: Buffer) => {
        if (size < MaxRefusalBody) parts.push(b);
        size += b.length;
      });
      const done = (): void => {
        const body = Buffer.concat(parts).subarray(0, MaxRefusalBody).toString('utf8').trim();
        settle({
          ok: false,
          status: res.statusCode ?? 502,
          body: body || `the runtime's streaming server answered ${res.statusCode}`,
        });
      };
      res.on('end', done);
      res.on('error', done);
    });
    req.on('error', (err) =>
      settle({
        ok: false,
        status: 502,
        body: `cannot reach the runtime's streaming server: ${errorMessage(err)}`,
      }),
    );
    req.end();
  });
}
