/**
 * ExtendWebSocketsToKubelet on the node API: which WebSocket requests the node serves itself, the v5 channel
 * framing, the SPDY/3.1 framing of the client end, and then the translation and the tunnel against a
 * stand-in SPDY streaming server (a TCP server that answers the SPDY upgrade and plays a remotecommand v4
 * or a port-forward server). The real thing (containerd, kubectl through kube-apiserver) is
 * test/e2e/nodeapi-streaming.test.ts.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import zlib from 'node:zlib';
import { WebSocket } from 'ws';
import type { Pod } from '../../../src/api/core.js';
import type { Runtime, StreamingRequest } from '../../../src/runtime/types.js';
import type { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import {
  encodeControlFrame,
  encodeDataFrame,
  FrameType,
  headerValueBlock,
  SpdyFrameReader,
  StoredHeaderCompressor,
  synStreamPayload,
  type SpdyFrame,
} from '../../../src/server/nodeapi/spdy.js';
import {
  channelMessage,
  offeredProtocols,
  parseClientMessage,
  readyChannel,
  spdyStreamsFor,
  statusMessage,
  streamingModeOf,
  tunneledSpdyProtocols,
} from '../../../src/server/nodeapi/wsstream.js';
import { runningContainer, startLocalNodeApi, webSocketFrames } from '../../support/nodeapi.js';

const ws = (protocol?: string) => ({
  connection: 'Upgrade',
  upgrade: 'websocket',
  ...(protocol !== undefined ? { 'sec-websocket-protocol': protocol } : {}),
});

describe('node API WebSockets: which requests the node serves itself', () => {
  const cases: [string, 'exec' | 'attach' | 'portForward', Record<string, string>, string][] = [
    [
      'kubectl exec (v5 offered first)',
      'exec',
      ws('v5.channel.k8s.io, v4.channel.k8s.io, v3.channel.k8s.io'),
      'translate',
    ],
    ['attach offering v5 among others', 'attach', ws('v4.channel.k8s.io,v5.channel.k8s.io'), 'translate'],
    ['exec over v4 only: the runtime speaks it', 'exec', ws('v4.channel.k8s.io'), 'proxy'],
    ['exec over base64 v4', 'exec', ws('v4.base64.channel.k8s.io'), 'proxy'],
    ['exec over SPDY', 'exec', { connection: 'Upgrade', upgrade: 'SPDY/3.1' }, 'proxy'],
    ['exec WebSocket without a protocol', 'exec', ws(), 'proxy'],
    ['port-forward tunnelling SPDY', 'portForward', ws('SPDY/3.1+portforward.k8s.io'), 'tunnel'],
    ['port-forward over the v4 channel protocol', 'portForward', ws('v4.channel.k8s.io'), 'proxy'],
    ['port-forward over SPDY', 'portForward', { connection: 'Upgrade', upgrade: 'SPDY/3.1' }, 'proxy'],
    ['a tunnelling protocol that is not k8s.io', 'portForward', ws('SPDY/3.1+other.example'), 'proxy'],
    ['v5 asked of port-forward', 'portForward', ws('v5.channel.k8s.io'), 'proxy'],
    ['an exec asking for a tunnel', 'exec', ws('SPDY/3.1+portforward.k8s.io'), 'proxy'],
  ];
  for (const [name, kind, headers, want] of cases)
    it(`${name}: ${want}`, () => expect(streamingModeOf(kind, headers)).to.equal(want));

  it('reads the offered subprotocols, and the SPDY ones of a tunnel', () => {
    expect(offeredProtocols({ 'sec-websocket-protocol': ' a, b ,,c' })).to.deep.equal(['a', 'b', 'c']);
    expect(offeredProtocols({})).to.deep.equal([]);
    expect(
      tunneledSpdyProtocols(['v4.channel.k8s.io', 'SPDY/3.1+portforward.k8s.io', 'SPDY/3.1+x.org']),
    ).to.deep.equal(['portforward.k8s.io']);
  });
});

describe('node API WebSockets: v5 channel framing', () => {
  const msgs: [string, number[], ReturnType<typeof parseClientMessage>][] = [
    ['stdin data', [0, 104, 105], { kind: 'data', channel: 0, data: Buffer.from('hi') }],
    ['a resize event', [4, 123, 125], { kind: 'data', channel: 4, data: Buffer.from('{}') }],
    ['an empty stdin message', [0], { kind: 'data', channel: 0, data: Buffer.alloc(0) }],
    ['an empty message', [], { kind: 'ignore' }],
    ['close stdin', [255, 0], { kind: 'close', channel: 0 }],
    ['close resize', [255, 4], { kind: 'close', channel: 4 }],
    [
      'close signal without a channel',
      [255],
      { kind: 'protocolError', message: 'stream close signal with 0 bytes (want 1)' },
    ],
    [
      'close signal with two bytes',
      [255, 0, 1],
      { kind: 'protocolError', message: 'stream close signal with 2 bytes (want 1)' },
    ],
    [
      'close of an unknown channel',
      [255, 9],
      { kind: 'protocolError', message: 'stream close signal for unknown channel 9' },
    ],
    ['an unknown channel', [7, 1], { kind: 'ignore' }],
  ];
  for (const [name, bytes, want] of msgs)
    it(`client message: ${name}`, () => expect(parseClientMessage(Buffer.from(bytes))).to.deep.equal(want));

  it('server messages, the ready channel and the SPDY streams of each option set', () => {
    expect([...channelMessage(1, Buffer.from('ok'))]).to.deep.equal([1, 111, 107]);
    expect([...channelMessage(3)]).to.deep.equal([3]);
    const o = (stdin: boolean, stdout: boolean, stderr: boolean, tty: boolean) => ({
      stdin,
      stdout,
      stderr,
      tty,
    });
    const table: [ReturnType<typeof o>, number, string[]][] = [
      [o(true, true, true, false), 1, ['error', 'stdin', 'stdout', 'stderr']],
      [o(false, false, true, false), 2, ['error', 'stderr']],
      [o(true, false, false, false), 3, ['error', 'stdin']],
      [o(true, true, false, true), 1, ['error', 'stdin', 'stdout', 'resize']],
    ];
    for (const [opts, ready, streams] of table) {
      expect(readyChannel(opts), JSON.stringify(opts)).to.equal(ready);
      expect(spdyStreamsFor(opts), JSON.stringify(opts)).to.deep.equal(streams);
    }
  });

  it('Status messages: Success, or an InternalError Failure with the message', () => {
    expect(JSON.parse(statusMessage().toString())).to.deep.equal({ metadata: {}, status: 'Success' });
    expect(JSON.parse(statusMessage({ message: 'boom' }).toString())).to.deep.equal({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'boom',
      reason: 'InternalError',
      code: 500,
    });
  });
});

/** Inflates one direction's header blocks (stored or not) and splits out each name/value block. */
class HeaderInflater {
  private compressed: Buffer[] = [];
  private taken = 0;
  next(block: Buffer): Record<string, string> {
    this.compressed.push(block);
    const all = zlib.inflateSync(Buffer.concat(this.compressed), {
      finishFlush: zlib.constants.Z_SYNC_FLUSH,
    });
    const b = all.subarray(this.taken);
    this.taken = all.length;
    const out: Record<string, string> = {};
    let p = 4;
    for (let i = 0; i < b.readUInt32BE(0); i++) {
      const nl = b.readUInt32BE(p);
      const name = b.subarray(p + 4, p + 4 + nl).toString();
      p += 4 + nl;
      const vl = b.readUInt32BE(p);
      out[name] = b.subarray(p + 4, p + 4 + vl).toString();
      p += 4 + vl;
    }
    return out;
  }
}

describe('node API WebSockets: SPDY/3.1 framing', () => {
  it('data and control frames survive being split anywhere', () => {
    const frames = Buffer.concat([
      encodeDataFrame(3, Buffer.from('hello'), false),
      encodeDataFrame(5, Buffer.alloc(0), true),
      encodeControlFrame(FrameType.Ping, 0, Buffer.from([0, 0, 0, 2])),
      encodeDataFrame(0x7fffffff, Buffer.alloc(70_000, 7), true),
    ]);
    for (const step of [1, 3, 8, 9, 1000, frames.length]) {
      const r = new SpdyFrameReader();
      const got: SpdyFrame[] = [];
      for (let i = 0; i < frames.length; i += step) got.push(...r.push(frames.subarray(i, i + step)));
      expect(
        got.map((f) =>
          f.kind === 'data' ? `d${f.streamId}:${f.data.length}:${f.fin}` : `c${f.type}:${f.payload.length}`,
        ),
        `step ${step}`,
      ).to.deep.equal(['d3:5:false', 'd5:0:true', 'c6:4', 'd2147483647:70000:true']);
    }
    expect([...encodeControlFrame(FrameType.RstStream, 0, Buffer.alloc(8)).subarray(0, 8)]).to.deep.equal([
      0x80, 3, 0, 3, 0, 0, 0, 8,
    ]);
    expect(() => new SpdyFrameReader().push(Buffer.from([0x80, 2, 0, 1, 0, 0, 0, 0]))).to.throw(/version 2/);
  });

  it('header blocks are one zlib stream across frames that any inflater reads block by block', () => {
    const c = new StoredHeaderCompressor();
    const inf = new HeaderInflater();
    expect(inf.next(c.compress(headerValueBlock({ streamType: 'error' })))).to.deep.equal({
      streamtype: 'error',
    });
    expect(inf.next(c.compress(headerValueBlock({ streamType: 'stdin', port: '80' })))).to.deep.equal({
      streamtype: 'stdin',
      port: '80',
    });
    // Each block ends with an empty stored block (a sync flush): Go's inflater hands out a block's bytes
    // only on reading the next block's head, and refuses a frame whose bytes it did not all read.
    const blk = c.compress(headerValueBlock({ streamType: 'stdout' }));
    expect([...blk.subarray(-5)]).to.deep.equal([0, 0, 0, 0xff, 0xff]);
    expect(inf.next(blk)).to.deep.equal({ streamtype: 'stdout' });
    const big = 'x'.repeat(70_000);
    expect(inf.next(c.compress(headerValueBlock({ big })))).to.deep.equal({ big });
    // SYN_STREAM: id, no associated stream, priority in the top 3 bits, then the block.
    const p = synStreamPayload(5, 7, Buffer.from([9]));
    expect([...p]).to.deep.equal([0, 0, 0, 5, 0, 0, 0, 0, 0xe0, 0, 9]);
  });
});

/** What the stand-in runtime saw of one SPDY session. */
interface SeenSession {
  head: string;
  streams: Record<string, string>[];
  stdin: string;
  resize: string;
}

/**
 * A stand-in streaming server. /exec/* plays remotecommand v4: echoes stdin to stdout and, at stdin's EOF,
 * writes "done" to stderr and a NonZeroExitCode 3 Status; /exec/NOSTATUS closes without a Status;
 * /exec/GONE refuses the upgrade with 404; /portforward/* answers 101 and echoes raw bytes.
 */
async function spdyRuntime(): Promise<{ port: number; sessions: SeenSession[]; close: () => void }> {
  const sessions: SeenSession[] = [];
  const server = net.createServer((sock) => {
    let buf = Buffer.alloc(0);
    let upgraded = false;
    const seen: SeenSession = { head: '', streams: [], stdin: '', resize: '' };
    const reader = new SpdyFrameReader();
    const inflater = new HeaderInflater();
    const compressor = new StoredHeaderCompressor();
    const ids: Record<string, number> = {};
    let echo = false;
    const finishExec = (withStatus: boolean): void => {
      if (ids.stderr) sock.write(encodeDataFrame(ids.stderr, Buffer.from('done\n'), false));
      if (ids.stdout) sock.write(encodeDataFrame(ids.stdout, Buffer.alloc(0), true));
      if (ids.stderr) sock.write(encodeDataFrame(ids.stderr, Buffer.alloc(0), true));
      if (withStatus)
        sock.write(
          encodeDataFrame(
            ids.error!,
            Buffer.from(
              JSON.stringify({
                metadata: {},
                status: 'Failure',
                reason: 'NonZeroExitCode',
                details: { causes: [{ reason: 'ExitCode', message: '3' }] },
              }),
            ),
            true,
          ),
        );
      sock.end();
    };
    sock.on('error', () => undefined);
    sock.on('data', (d: Buffer) => {
      if (echo) return void sock.write(d);
      if (upgraded) {
        for (const f of reader.push(d)) {
          if (f.kind === 'control' && f.type === FrameType.SynStream) {
            const id = f.payload.readUInt32BE(0);
            const h = inflater.next(f.payload.subarray(10));
            seen.streams.push(h);
            ids[h.streamtype!] = id;
            const reply = Buffer.alloc(4);
            reply.writeUInt32BE(id, 0);
            sock.write(
              encodeControlFrame(
                FrameType.SynReply,
                0,
                Buffer.concat([reply, compressor.compress(headerValueBlock({}))]),
              ),
            );
            if (seen.head.startsWith('POST /exec/NOSTATUS') && h.streamtype === 'stdout') sock.destroy();
          } else if (f.kind === 'data' && f.streamId === ids.stdin) {
            seen.stdin += f.data.toString();
            if (f.data.length > 0 && ids.stdout) sock.write(encodeDataFrame(ids.stdout, f.data, false));
            if (f.fin) finishExec(true);
          } else if (f.kind === 'data' && f.streamId === ids.resize) {
            seen.resize += f.data.toString();
          }
        }
        return;
      }
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      seen.head = buf.subarray(0, end).toString('latin1');
      sessions.push(seen);
      const rest = buf.subarray(end + 4);
      if (seen.head.startsWith('POST /exec/GONE')) {
        sock.end('HTTP/1.1 404 Not Found\r\nContent-Length: 15\r\nConnection: close\r\n\r\ntoken not found');
        return;
      }
      const pf = seen.head.startsWith('POST /portforward/');
      sock.write(
        'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
          `X-Stream-Protocol-Version: ${pf ? 'portforward.k8s.io' : 'v4.channel.k8s.io'}\r\n\r\n`,
      );
      upgraded = true;
      if (pf) {
        echo = true;
        sock.write('runtime-hello');
        if (rest.length > 0) sock.write(rest);
      } else if (rest.length > 0) sock.emit('data', rest);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as net.AddressInfo).port, sessions, close: () => server.close() };
}

describe('node API WebSockets: translation and tunnel against a SPDY streaming server', function () {
  this.timeout(30_000);
  let dir: string;
  let server: NodeApiServer;
  let port: number;
  let cert: Buffer;
  let rt: Awaited<ReturnType<typeof spdyRuntime>>;
  const calls: { what: string; req: StreamingRequest | { ports: number[] } }[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-ws-'));
    rt = await spdyRuntime();
    const pod: Pod = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
    };
    const running = runningContainer('ctr-1', 'sb-1', 'u1');
    const url = (p: string) => `http://127.0.0.1:${rt.port}/${p}`;
    const runtime = {
      kind: 'cri',
      listContainers: () => Promise.resolve([running]),
      listPodSandbox: () => Promise.resolve([{ id: 'sb-1', state: 'ready', createdAt: 1n }]),
      exec: (req: StreamingRequest) => {
        calls.push({ what: 'exec', req });
        const c = req.cmd?.[0];
        return Promise.resolve({
          url: url(c === 'gone' ? 'exec/GONE' : c === 'nostatus' ? 'exec/NOSTATUS' : 'exec/TOKEN'),
        });
      },
      attach: (req: StreamingRequest) => {
        calls.push({ what: 'attach', req });
        return Promise.resolve({ url: url('exec/ATTACH') });
      },
      portForward: (_sandbox: string, ports: number[]) => {
        calls.push({ what: 'portForward', req: { ports } });
        return Promise.resolve({ url: url('portforward/TOKEN') });
      },
    } as unknown as Runtime;
    ({ server, port, cert } = await startLocalNodeApi(dir, { runtime, pods: [pod] }));
  });

  after(async () => {
    await server?.close();
    rt?.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A v5 client session: what arrived per channel, in order, and the close code. */
  const v5 = async (p: string, send: (w: WebSocket) => void) => {
    const w = new WebSocket(`wss://127.0.0.1:${port}${p}`, ['v5.channel.k8s.io', 'v4.channel.k8s.io'], {
      ca: cert,
      headers: { Authorization: 'Bearer good' },
    });
    const msgs: Buffer[] = [];
    w.on('message', (d: Buffer) => msgs.push(d));
    await once(w, 'open');
    expect(w.protocol).to.equal('v5.channel.k8s.io');
    send(w);
    const [code] = (await once(w, 'close')) as [number];
    const text = (ch: number) =>
      msgs
        .filter((m) => m[0] === ch)
        .map((m) => m.subarray(1).toString())
        .join('');
    return { msgs, code, text };
  };

  it('exec: stdin to the SPDY stdin stream, its close signal as EOF, output and the exit Status back', async () => {
    const before = server.webSocketStreamingRequests.exec;
    const r = await v5('/exec/ns/p/c?command=cat&input=1&output=1&error=1', (w) => {
      w.send(Buffer.from([0, ...Buffer.from('hello ')]));
      w.send(Buffer.from([0, ...Buffer.from('world')]));
      w.send(Buffer.from([255, 0]));
    });
    expect([...r.msgs[0]!]).to.deep.equal([1]); // the ready message on stdout
    expect(r.text(1)).to.equal('hello world');
    expect(r.text(2)).to.equal('done\n');
    expect(JSON.parse(r.text(3))).to.deep.include({ status: 'Failure', reason: 'NonZeroExitCode' });
    expect(r.msgs.at(-1)![0]).to.equal(3); // the Status comes last
    expect(r.code).to.equal(1000);
    const s = rt.sessions.at(-1)!;
    expect(s.head.split('\r\n')[0]).to.equal('POST /exec/TOKEN HTTP/1.1');
    expect(s.head)
      .to.match(/Upgrade: SPDY\/3\.1/)
      .and.match(/X-Stream-Protocol-Version: v4\.channel\.k8s\.io/);
    expect(s.streams.map((h) => h.streamtype)).to.deep.equal(['error', 'stdin', 'stdout', 'stderr']);
    expect(s.stdin).to.equal('hello world');
    expect(server.webSocketStreamingRequests.exec).to.equal(before + 1);
  });

  it('exec with a 20000-character argument (a request head over 16 KiB) is served', async () => {
    const long = 'a'.repeat(20_000);
    const r = await v5(`/exec/ns/p/c?command=echo&command=${long}&input=1&output=1`, (w) =>
      w.send(Buffer.from([255, 0])),
    );
    expect(r.code).to.equal(1000);
    expect(calls.at(-1)?.req).to.deep.include({ cmd: ['echo', long] });
  });

  it('attach with a tty: the resize channel becomes the SPDY resize stream, no stderr', async () => {
    const r = await v5('/attach/ns/p/c?input=1&output=1&error=1&tty=1', (w) => {
      w.send(Buffer.from([4, ...Buffer.from('{"Width":80,"Height":24}')]));
      w.send(Buffer.from([0, ...Buffer.from('x')]));
      w.send(Buffer.from([255, 0]));
    });
    expect(r.text(1)).to.equal('x');
    expect(r.code).to.equal(1000);
    const s = rt.sessions.at(-1)!;
    expect(s.head.split('\r\n')[0]).to.equal('POST /exec/ATTACH HTTP/1.1');
    expect(s.streams.map((h) => h.streamtype)).to.deep.equal(['error', 'stdin', 'stdout', 'resize']);
    expect(s.resize).to.equal('{"Width":80,"Height":24}');
    expect(calls.at(-1)).to.deep.equal({
      what: 'attach',
      req: { containerId: 'ctr-1', stdin: true, stdout: true, stderr: false, tty: true },
    });
  });

  it('a runtime session that ends without a Status gives the client an InternalError Status', async () => {
    const r = await v5('/exec/ns/p/c?command=nostatus&output=1', () => undefined);
    const st = JSON.parse(r.text(3)) as { status: string; reason: string; message: string };
    expect(st).to.include({ status: 'Failure', reason: 'InternalError' });
    expect(st.message).to.match(/exec ns\/p\/c: the runtime's streaming session ended/);
    expect(r.code).to.equal(1000);
  });

  it('a runtime that refuses the SPDY upgrade: its status and text, before any WebSocket', async () => {
    const w = new WebSocket(
      `wss://127.0.0.1:${port}/exec/ns/p/c?command=gone&output=1`,
      ['v5.channel.k8s.io'],
      {
        ca: cert,
        headers: { Authorization: 'Bearer good' },
      },
    );
    w.on('error', () => undefined);
    const [, res] = (await once(w, 'unexpected-response')) as [unknown, IncomingMessage];
    expect(res.statusCode).to.equal(404);
    let body = '';
    for await (const c of res) body += String(c);
    expect(body).to.contain('token not found');
  });

  it('port-forward: SPDY tunnelled in binary messages both ways, ports left to the SPDY streams', async () => {
    const before = server.webSocketStreamingRequests.portforward;
    const sock = tls.connect({ host: '127.0.0.1', port, ca: cert });
    await once(sock, 'secureConnect');
    let got = Buffer.alloc(0);
    sock.on('data', (d: Buffer) => (got = Buffer.concat([got, d])));
    const closed = once(sock, 'close');
    const key = randomBytes(16).toString('base64');
    sock.write(
      [
        'GET /portForward/ns/p HTTP/1.1',
        'Host: node',
        'Authorization: Bearer good',
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        `Sec-WebSocket-Key: ${key}`,
        'Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io',
        '',
        '',
      ].join('\r\n'),
    );
    const until = async (f: () => boolean): Promise<void> => {
      for (let i = 0; i < 500 && !f(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(f(), got.toString('latin1')).to.equal(true);
    };
    const frames = () => webSocketFrames(got.subarray(got.indexOf('\r\n\r\n') + 4));
    const data = () =>
      frames()
        .filter((f) => f.opcode === 2)
        .map((f) => f.payload.toString())
        .join('');
    await until(() => data() === 'runtime-hello');
    const head = got.subarray(0, got.indexOf('\r\n\r\n')).toString('latin1');
    expect(head.split('\r\n')[0]).to.equal('HTTP/1.1 101 Switching Protocols');
    expect(head).to.match(/Sec-WebSocket-Protocol: SPDY\/3\.1\+portforward\.k8s\.io/);
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    expect(head).to.contain(`Sec-WebSocket-Accept: ${accept}`);
    // A masked binary frame from the client reaches the runtime and comes back.
    const payload = Buffer.from('spdy-bytes');
    const mask = randomBytes(4);
    sock.write(
      Buffer.concat([
        Buffer.from([0x82, 0x80 | payload.length]),
        mask,
        payload.map((b, i) => b ^ mask[i % 4]!),
      ]),
    );
    await until(() => data() === 'runtime-hellospdy-bytes');
    const s = rt.sessions.at(-1)!;
    expect(s.head.split('\r\n')[0]).to.equal('POST /portforward/TOKEN HTTP/1.1');
    expect(s.head)
      .to.match(/X-Stream-Protocol-Version: portforward\.k8s\.io/)
      .and.not.match(/Sec-WebSocket/i);
    expect(calls.at(-1)).to.deep.equal({ what: 'portForward', req: { ports: [] } });
    expect(server.webSocketStreamingRequests.portforward).to.equal(before + 1);
    sock.destroy();
    await closed;
  });
});
