/**
 * port-forward with SPDY tunnelled through a WebSocket (`SPDY/3.1+portforward.k8s.io`), as the kubelet's
 * tunnelling handler serves it when the API server passes the client's WebSocket through
 * (ExtendWebSocketsToKubelet): the node has already done the SPDY upgrade to the runtime's streaming server
 * (dialSpdyUpgrade); from then on every binary message from the client is SPDY bytes for the runtime and
 * every read from the runtime goes back as one binary message. The SPDY inside (the data and error stream
 * pair per port and request) is the client's and the runtime's business and is not parsed here.
 *
 * Contract: never throws. Backpressure both ways, as in streamtranslator.ts. Either side ending ends the
 * other: the runtime closing closes the WebSocket normally (1000), the client leaving ends the runtime's
 * connection.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { Logger } from '../../util/logger.js';
import { WebSocketHighWater } from './streamtranslator.js';

export function tunnelStreams(
  ws: WebSocket,
  runtime: Duplex,
  head: Buffer,
  logger: Logger,
  what: string,
): void {
  let done = false;
  const send = (b: Buffer): void => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(b, { binary: true }, () => {
      if (ws.bufferedAmount < WebSocketHighWater / 2 && runtime.isPaused()) runtime.resume();
    });
    if (ws.bufferedAmount >= WebSocketHighWater) runtime.pause();
  };
  const end = (): void => {
    if (done) return;
    done = true;
    if (ws.readyState === ws.OPEN) ws.close(1000);
    runtime.end();
    const t = setTimeout(() => runtime.destroy(), 5_000);
    t.unref();
    runtime.once('close', () => clearTimeout(t));
  };
  if (head.length > 0) send(head);
  runtime.on('data', (b: Buffer) => send(b));
  runtime.on('end', end);
  runtime.on('close', end);
  runtime.on('error', (err: Error) => {
    logger.debug('node API: runtime streaming connection error', { stream: what, error: err.message });
    end();
  });
  ws.on('message', (raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    if (!isBinary) {
      logger.warn('node API: text message on a SPDY tunnel, closing it', { stream: what });
      if (ws.readyState === ws.OPEN) ws.close(1003, 'binary messages only');
      runtime.destroy();
      return;
    }
    const buf = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
    if (!runtime.write(buf)) {
      ws.pause();
      runtime.once('drain', () => ws.resume());
    }
  });
  ws.on('close', () => {
    done = true;
    runtime.destroy();
  });
  ws.on('error', (err) => {
    logger.debug('node API: WebSocket client error', { stream: what, error: err.message });
    done = true;
    runtime.destroy();
    ws.terminate();
  });
}
