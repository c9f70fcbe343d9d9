/**
 * exec and attach over the v5 WebSocket protocol, translated to the runtime's SPDY remotecommand (v4), as
 * the kubelet's stream translator does when the API server passes the client's WebSocket through
 * (ExtendWebSocketsToKubelet): the client's stdin and resize channels become the SPDY stdin and resize
 * streams (the v5 close signal on stdin half-closes the SPDY stream, so `cat` sees EOF), the runtime's
 * stdout, stderr and error streams become channels 1, 2 and 3.
 *
 * The runtime's error stream already holds the Status a v4/v5 client expects (Success, or Failure with
 * reason NonZeroExitCode and the exit code as a cause), so its bytes are passed on as they are, after every
 * output stream has ended; then the WebSocket closes normally. A session that ends without the runtime's
 * Status gets an InternalError Status instead.
 *
 * Contract: never throws. Backpressure both ways: a slow WebSocket client pauses the runtime's socket, a
 * runtime that does not read pauses the WebSocket. The client leaving tears the SPDY session down, which
 * the runtime takes as the end of the session.
 */
import type { WebSocket } from 'ws';
import type { Logger } from '../../util/logger.js';
import type { SpdyClientSession, SpdyStream } from './spdy.js';
import type { StreamOptions } from './streaming.js';
import {
  Channel,
  ChannelOf,
  channelMessage,
  parseClientMessage,
  readyChannel,
  spdyStreamsFor,
  statusMessage,
} from './wsstream.js';

/** Bytes queued to a WebSocket client before the runtime's socket is paused. */
export const WebSocketHighWater = 1024 * 1024;

export interface TranslateOptions {
  streams: StreamOptions;
  logger: Logger;
  /** For log lines: `exec ns/pod/container`. */
  what: string;
}

export function translateStreams(ws: WebSocket, session: SpdyClientSession, o: TranslateOptions): void {
  const runtime = session.transport;
  let finished = false;
  let errorEnded = false;
  const errorBytes: Buffer[] = [];
  let outputsOpen = 0;

  const sendToClient = (msg: Buffer): void => {
    if (ws.readyState !== ws.OPEN) return;
    ws.send(msg, { binary: true }, () => {
      if (ws.bufferedAmount < WebSocketHighWater / 2 && runtime.isPaused()) runtime.resume();
    });
    if (ws.bufferedAmount >= WebSocketHighWater) runtime.pause();
  };

  const finish = (failure?: string): void => {
    if (finished) return;
    finished = true;
    const status =
      errorBytes.length > 0
        ? Buffer.concat(errorBytes)
        : failure !== undefined
          ? statusMessage({ message: failure })
          : statusMessage();
    sendToClient(channelMessage(Channel.error, status));
    if (ws.readyState === ws.OPEN) ws.close(1000);
    session.close();
  };
  const maybeFinish = (): void => {
    if (errorEnded && outputsOpen === 0) finish();
  };

  sendToClient(channelMessage(readyChannel(o.streams)));
  const opened = new Map<number, SpdyStream>();
  for (const type of spdyStreamsFor(o.streams)) {
    const channel = ChannelOf[type];
    const output = type === 'stdout' || type === 'stderr';
    if (output) outputsOpen++;
    const stream = session.openStream(
      { streamType: type },
      {
        onData: (data) => {
          if (type === 'error') errorBytes.push(data);
          else if (output) sendToClient(channelMessage(channel, data));
        },
        onEnd: (reset) => {
          if (type === 'error') {
            if (reset && errorBytes.length === 0)
              return finish(`${o.what}: the runtime's streaming session ended without an exit status`);
            errorEnded = true;
          } else if (output) outputsOpen--;
          maybeFinish();
        },
      },
    );
    opened.set(channel, stream);
  }

  ws.on('message', (raw: Buffer | ArrayBuffer | Buffer[]) => {
    const buf = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
    const m = parseClientMessage(buf);
    switch (m.kind) {
      case 'data': {
        // Only stdin and resize are read from the client; data on its other channels is dropped.
        if (m.channel !== Channel.stdin && m.channel !== Channel.resize) return;
        const s = opened.get(m.channel);
        if (s && !s.write(m.data)) {
          ws.pause();
          runtime.once('drain', () => ws.resume());
        }
        return;
      }
      case 'close':
        opened.get(m.channel)?.end();
        return;
      case 'protocolError':
        o.logger.warn('node API: WebSocket protocol error, closing the stream', {
          stream: o.what,
          error: m.message,
        });
        if (ws.readyState === ws.OPEN) ws.close(1002, m.message.slice(0, 120));
        session.destroy();
        return;
      default:
        return;
    }
  });
  ws.on('close', () => {
    if (!finished) {
      finished = true;
      session.destroy();
    }
  });
  ws.on('error', (err) => {
    o.logger.debug('node API: WebSocket client error', { stream: o.what, error: err.message });
    finished = true;
    session.destroy();
    ws.terminate();
  });
  session.onClose((err) => {
    if (!finished)
      finish(`${o.what}: the runtime's streaming session ended: ${err?.message ?? 'connection closed'}`);
  });
}
