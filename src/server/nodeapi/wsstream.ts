/**
 * The WebSocket side of exec, attach and port-forward when the API server passes the client's WebSocket
 * through to the node (ExtendWebSocketsToKubelet): which requests this node translates, and the channel
 * framing of the v5 remotecommand protocol. Pure.
 *
 * - exec and attach offering `v5.channel.k8s.io`: the node accepts the WebSocket and translates to the
 *   runtime's SPDY remotecommand (v4) streams (streamtranslator.ts). Each binary message is one channel byte
 *   (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize) and the data; `[255, n]` from the client closes its
 *   channel n (stdin's EOF, which the older channel protocols cannot say).
 * - port-forward offering `SPDY/3.1+portforward.k8s.io`: SPDY tunnelled in binary messages; the node does
 *   the SPDY upgrade to the runtime itself and carries the bytes (streamtunnel.ts).
 * - anything else (SPDY, the v1-v4 channel protocols, port-forward's v4 channel protocols): proxied to the
 *   runtime's streaming server byte for byte (upgradeproxy.ts), which speaks those itself.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { StreamingKind, StreamOptions } from './streaming.js';
import { isWebSocketRequest } from './streaming.js';

export const StreamProtocolV5 = 'v5.channel.k8s.io';
/** The remotecommand protocol asked of the runtime over SPDY: its error channel carries a Status. */
export const SpdyRemoteCommandProtocol = 'v4.channel.k8s.io';
/** WebSocket subprotocols that tunnel SPDY are this prefix, then the SPDY protocol (`*.k8s.io`). */
export const TunnelingPrefix = 'SPDY/3.1+';

export const Channel = { stdin: 0, stdout: 1, stderr: 2, error: 3, resize: 4 } as const;
export const StreamCloseSignal = 255;

export type StreamingMode = 'translate' | 'tunnel' | 'proxy';

/** The subprotocols a WebSocket handshake offers, in its order. */
export function offeredProtocols(h: IncomingHttpHeaders): string[] {
  const v = h['sec-websocket-protocol'];
  const all = Array.isArray(v) ? v.join(',') : (v ?? '');
  return all
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** The SPDY protocols a tunnelling handshake offers (the prefix taken off), in its order. */
export function tunneledSpdyProtocols(offered: readonly string[]): string[] {
  return offered
    .filter((p) => p.startsWith(TunnelingPrefix) && p.endsWith('.k8s.io'))
    .map((p) => p.slice(TunnelingPrefix.length));
}

/** How the node serves a streaming request, as the v1.37 kubelet decides it. */
export function streamingModeOf(kind: StreamingKind, h: IncomingHttpHeaders): StreamingMode {
  if (!isWebSocketRequest(h)) return 'proxy';
  const offered = offeredProtocols(h);
  if (kind === 'portForward') return tunneledSpdyProtocols(offered).length > 0 ? 'tunnel' : 'proxy';
  return offered.includes(StreamProtocolV5) ? 'translate' : 'proxy';
}

export type ClientMessage =
  | { kind: 'data'; channel: number; data: Buffer }
  | { kind: 'close'; channel: number }
  | { kind: 'ignore' }
  | { kind: 'protocolError'; message: string };

/** One message from a v5 client. */
export function parseClientMessage(msg: Buffer): ClientMessage {
  if (msg.length === 0) return { kind: 'ignore' };
  const channel = msg[0]!;
  if (channel === StreamCloseSignal) {
    if (msg.length !== 2)
      return { kind: 'protocolError', message: `stream close signal with ${msg.length - 1} bytes (want 1)` };
    if (msg[1]! > Channel.resize)
      return { kind: 'protocolError', message: `stream close signal for unknown channel ${msg[1]!}` };
    return { kind: 'close', channel: msg[1]! };
  }
  if (channel > Channel.resize) return { kind: 'ignore' };
  return { kind: 'data', channel, data: msg.subarray(1) };
}

/** One message to the client on `channel`. */
export function channelMessage(channel: number, data: Buffer = Buffer.alloc(0)): Buffer {
  return Buffer.concat([Buffer.from([channel]), data]);
}

/** The channel whose empty first message tells the client the streams are open: the lowest it reads. */
export function readyChannel(s: StreamOptions): number {
  if (s.stdout) return Channel.stdout;
  if (s.stderr) return Channel.stderr;
  return Channel.error;
}

export type SpdyStreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';

/** The SPDY streams a remotecommand v4 server waits for, in the order the client opens them. */
export function spdyStreamsFor(s: StreamOptions): SpdyStreamType[] {
  const out: SpdyStreamType[] = ['error'];
  if (s.stdin) out.push('stdin');
  if (s.stdout) out.push('stdout');
  if (s.stderr) out.push('stderr');
  if (s.tty) out.push('resize');
  return out;
}

/** The WebSocket channel of each SPDY stream. */
export const ChannelOf: Readonly<Record<SpdyStreamType, number>> = {
  stdin: Channel.stdin,
  stdout: Channel.stdout,
  stderr: Channel.stderr,
  error: Channel.error,
  resize: Channel.resize,
};

/** The Status written on the error channel when the runtime's own is missing. */
export function statusMessage(failure?: { message: string; reason?: string; code?: number }): Buffer {
  const status = failure
    ? {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: failure.message,
        reason: failure.reason ?? 'InternalError',
        code: failure.code ?? 500,
      }
    : { metadata: {}, status: 'Success' };
  return Buffer.from(JSON.stringify(status), 'utf8');
}
