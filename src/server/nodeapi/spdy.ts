/**
 * The client end of SPDY/3.1, as much of it as remotecommand (exec, attach) over a runtime's streaming server
 * needs: the node API opens the streams (error, stdin, stdout, stderr, resize), writes stdin and resize
 * events, half-closes stdin, and reads what the runtime writes back.
 *
 * Framing (pure): a control frame is 8 bytes (0x8003, type, flags, 24-bit length) then its payload; a data
 * frame is the 31-bit stream id, flags and a 24-bit length. Header blocks are zlib streams shared by every
 * frame of one direction of a session; ours are written as uncompressed (stored) deflate blocks, which any
 * zlib reader takes, with or without the SPDY dictionary. Header blocks the runtime sends (SYN_REPLY) are
 * never read: nothing in them is needed here, so they are skipped without inflating.
 *
 * Flow control: the runtimes' SPDY (moby/spdystream, used by containerd and the kubelet) neither sends nor
 * honours WINDOW_UPDATE, so this end does not either; backpressure is the TCP socket's.
 *
 * Contract: the session never throws on what the peer sends; a malformed frame ends the session with an
 * error (onClose). Writing to an ended stream or a closed session is a no-op.
 */
import type { Duplex } from 'node:stream';

export const SpdyVersion = 3;

export const FrameType = {
  SynStream: 1,
  SynReply: 2,
  RstStream: 3,
  Settings: 4,
  Ping: 6,
  GoAway: 7,
  Headers: 8,
  WindowUpdate: 9,
} as const;

export const FlagFin = 0x01;

/** The largest frame payload accepted from the peer (the format allows 16 MiB - 1). */
const MaxFrameLength = 0xffffff;
/** Data frames written here carry at most this much. */
const MaxDataChunk = 32 * 1024;

export type SpdyFrame =
  | { kind: 'data'; streamId: number; fin: boolean; data: Buffer }
  | { kind: 'control'; type: number; flags: number; payload: Buffer };

/** One DATA frame. */
export function encodeDataFrame(streamId: number, data: Buffer, fin: boolean): Buffer {
  if (data.length > MaxFrameLength) throw new RangeError(`data frame of ${data.length} bytes`);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(((fin ? FlagFin : 0) << 24) | data.length, 4);
  return Buffer.concat([head, data]);
}

/** One control frame. */
export function encodeControlFrame(type: number, flags: number, payload: Buffer): Buffer {
  if (payload.length > MaxFrameLength) throw new RangeError(`control frame of ${payload.length} bytes`);
  const head = Buffer.alloc(8);
  head.writeUInt16BE(0x8000 | SpdyVersion, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt32BE(((flags & 0xff) << 24) | payload.length, 4);
  return Buffer.concat([head, payload]);
}

/** The uncompressed name/value block: count, then length-prefixed names (lower case) and values. */
export function headerValueBlock(headers: Readonly<Record<string, string>>): Buffer {
  const entries = Object.entries(headers);
  const parts: Buffer[] = [u32(entries.length)];
  for (const [name, value] of entries) {
    const n = Buffer.from(name.toLowerCase(), 'utf8');
    const v = Buffer.from(value, 'utf8');
    parts.push(u32(n.length), n, u32(v.length), v);
  }
  return Buffer.concat(parts);
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0, 0);
  return b;
}

/**
 * Writes one direction's header compression stream: the zlib header once (deflate, 32 KiB window, no
 * preset dictionary flag), then each block as stored deflate blocks and an empty one (a sync flush), so the
 * peer's inflater decodes every frame's block completely without the next frame.
 */
export class StoredHeaderCompressor {
  private started = false;

  compress(block: Buffer): Buffer {
    const parts: Buffer[] = [];
    if (!this.started) {
      // CMF 0x78 (deflate, 32 KiB window), FLG 0x01: (0x78 * 256 + 0x01) % 31 === 0, FDICT clear.
      parts.push(Buffer.from([0x78, 0x01]));
      this.started = true;
    }
    for (let off = 0; off < block.length; off += 0xffff)
      parts.push(storedBlock(block.subarray(off, off + 0xffff)));
    // An empty stored block after the data, as zlib's sync flush writes: an inflater hands out a stored
    // block's bytes only when it reads the next block's head, which must be in this frame (Go's does).
    parts.push(storedBlock(Buffer.alloc(0)));
    return Buffer.concat(parts);
  }
}

/** One non-final stored deflate block (BFINAL 0, BTYPE 00, byte-aligned LEN and its complement). */
function storedBlock(data: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt16LE(data.length, 1);
  head.writeUInt16LE(~data.length & 0xffff, 3);
  return Buffer.concat([head, data]);
}

/** SYN_STREAM payload: stream id, no associated stream, the given priority (0-7), the header block. */
export function synStreamPayload(streamId: number, priority: number, compressedHeaders: Buffer): Buffer {
  const head = Buffer.alloc(10);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE(0, 4);
  head[8] = (priority & 0x07) << 5;
  head[9] = 0;
  return Buffer.concat([head, compressedHeaders]);
}

/** Splits a byte stream into SPDY frames; keeps a partial frame until the rest arrives. */
export class SpdyFrameReader {
  private buf: Buffer = Buffer.alloc(0);
  /** Chunks after `buf` not yet joined: a large frame arriving in small pieces is joined once. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  /** The frames completed by `chunk`. Throws on a frame of another SPDY version. */
  push(chunk: Buffer): SpdyFrame[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const have = this.buf.length + this.pendingBytes;
    if (have < 8) return [];
    // Join once the next frame's head is known, then again only when the whole frame is here.
    if (this.buf.length >= 8 && have < 8 + (this.buf.readUInt32BE(4) & 0xffffff)) return [];
    this.buf = Buffer.concat([this.buf, ...this.pending]);
    this.pending = [];
    this.pendingBytes = 0;
    const out: SpdyFrame[] = [];
    while (this.buf.length >= 8) {
      const len = this.buf.readUInt32BE(4) & 0xffffff;
      if (this.buf.length < 8 + len) break;
      const flags = this.buf[4]!;
      const payload = this.buf.subarray(8, 8 + len);
      if (this.buf[0]! & 0x80) {
        const version = this.buf.readUInt16BE(0) & 0x7fff;
        if (version !== SpdyVersion) throw new Error(`SPDY version ${version} frame (want ${SpdyVersion})`);
        out.push({ kind: 'control', type: this.buf.readUInt16BE(2), flags, payload });
      } else {
        out.push({
          kind: 'data',
          streamId: this.buf.readUInt32BE(0) & 0x7fffffff,
          fin: !!(flags & FlagFin),
          data: payload,
        });
      }
      this.buf = this.buf.subarray(8 + len);
    }
    return out;
  }
}

export interface SpdyStreamHandlers {
  onData(data: Buffer): void;
  /** The runtime half-closed the stream (FIN) or reset it; no more data follows. */
  onEnd(reset: boolean): void;
}

export interface SpdyStream {
  readonly id: number;
  write(data: Buffer): boolean;
  /** Half-closes this end (an empty DATA frame with FIN). */
  end(): void;
}

/**
 * A client session on an upgraded connection: odd stream ids from 1, PINGs from the peer echoed, GOAWAY
 * and the socket's end close it. Streams are opened by `openStream` in the order called.
 */
export class SpdyClientSession {
  private nextId = 1;
  private readonly streams = new Map<number, { handlers: SpdyStreamHandlers; remoteEnded: boolean }>();
  private readonly localEnded = new Set<number>();
  private readonly reader = new SpdyFrameReader();
  private readonly compressor = new StoredHeaderCompressor();
  private closed = false;
  private closeHandlers: ((err?: Error) => void)[] = [];

  constructor(
    private readonly socket: Duplex,
    head: Buffer = Buffer.alloc(0),
  ) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', (err: Error) => this.finish(err));
    socket.on('end', () => this.finish());
    socket.on('close', () => this.finish());
    if (head.length > 0) queueMicrotask(() => this.receive(head));
  }

  /** Called once, when the session is over (the error, if any, says why). */
  onClose(fn: (err?: Error) => void): void {
    if (this.closed) fn();
    else this.closeHandlers.push(fn);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** The session's socket, for backpressure (`drain`, pause/resume). */
  get transport(): Duplex {
    return this.socket;
  }

  openStream(headers: Readonly<Record<string, string>>, handlers: SpdyStreamHandlers): SpdyStream {
    const id = this.nextId;
    this.nextId += 2;
    this.streams.set(id, { handlers, remoteEnded: false });
    const block = this.compressor.compress(headerValueBlock(headers));
    this.send(encodeControlFrame(FrameType.SynStream, 0, synStreamPayload(id, 0, block)));
    return {
      id,
      write: (data) => {
        if (this.closed || this.localEnded.has(id)) return true;
        let ok = true;
        for (let off = 0; off < data.length; off += MaxDataChunk)
          ok = this.send(encodeDataFrame(id, data.subarray(off, off + MaxDataChunk), false));
        return ok;
      },
      end: () => {
        if (this.closed || this.localEnded.has(id)) return;
        this.localEnded.add(id);
        this.send(encodeDataFrame(id, Buffer.alloc(0), true));
      },
    };
  }

  /** Ends the session: a GOAWAY, then the socket. */
  close(): void {
    if (this.closed) return;
    const p = Buffer.alloc(8);
    p.writeUInt32BE(0, 0);
    p.writeUInt32BE(0, 4);
    this.send(encodeControlFrame(FrameType.GoAway, 0, p));
    this.socket.end();
    this.finish();
  }

  /** Tears the session down at once. */
  destroy(err?: Error): void {
    this.socket.destroy();
    this.finish(err);
  }

  private send(frame: Buffer): boolean {
    if (this.closed || this.socket.destroyed || this.socket.writableEnded) return true;
    return this.socket.write(frame);
  }

  private receive(chunk: Buffer): void {
    if (this.closed) return;
    let frames: SpdyFrame[];
    try {
      frames = this.reader.push(chunk);
    } catch (err) {
      return this.destroy(err instanceof Error ? err : new Error(String(err)));
    }
    for (const f of frames) {
      if (this.closed) return;
      if (f.kind === 'data') this.dataFrame(f.streamId, f.data, f.fin);
      else this.controlFrame(f.type, f.flags, f.payload);
    }
  }

  private dataFrame(id: number, data: Buffer, fin: boolean): void {
    const s = this.streams.get(id);
    if (!s || s.remoteEnded) return;
    if (data.length > 0) s.handlers.onData(data);
    if (fin) this.remoteEnd(id, false);
  }

  private remoteEnd(id: number, reset: boolean): void {
    const s = this.streams.get(id);
    if (!s || s.remoteEnded) return;
    s.remoteEnded = true;
    s.handlers.onEnd(reset);
  }

  private controlFrame(type: number, flags: number, payload: Buffer): void {
    switch (type) {
      case FrameType.SynReply:
      case FrameType.Headers:
        // The header block is not needed; FIN on either still ends the peer's side of the stream.
        if (payload.length >= 4 && flags & FlagFin)
          this.remoteEnd(payload.readUInt32BE(0) & 0x7fffffff, false);
        return;
      case FrameType.RstStream:
        if (payload.length >= 4) {
          const id = payload.readUInt32BE(0) & 0x7fffffff;
          this.localEnded.add(id);
          this.remoteEnd(id, true);
        }
        return;
      case FrameType.Ping:
        // Pings with even ids come from the server and are echoed; odd ones would answer ours (none sent).
        if (payload.length === 4 && payload.readUInt32BE(0) % 2 === 0)
          this.send(encodeControlFrame(FrameType.Ping, 0, payload));
        return;
      case FrameType.GoAway:
        // No new streams; the runtime closes the connection when its streams are done.
        return;
      case FrameType.SynStream: {
        // remotecommand servers open no streams: refuse (RST_STREAM, REFUSED_STREAM = 3).
        if (payload.length < 4) return;
        const p = Buffer.alloc(8);
        p.writeUInt32BE(payload.readUInt32BE(0) & 0x7fffffff, 0);
        p.writeUInt32BE(3, 4);
        this.send(encodeControlFrame(FrameType.RstStream, 0, p));
        return;
      }
      default:
        // SETTINGS, WINDOW_UPDATE and unknown types carry nothing this end uses.
        return;
    }
  }

  private finish(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    // Streams the runtime never finished end as reset: their data may be cut short.
    for (const id of [...this.streams.keys()]) this.remoteEnd(id, true);
    const hs = this.closeHandlers;
    this.closeHandlers = [];
    for (const fn of hs) fn(err);
  }
}
