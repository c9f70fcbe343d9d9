/**
 * exec/attach/portForward on the node API without a cluster: path and query parsing, and the upgrade proxy
 * against a stand-in streaming server (a TCP server that records the request head it receives, answers
 * 101 and echoes bytes). The real thing (containerd's streaming server, kubectl through kube-apiserver) is
 * test/e2e/nodeapi-streaming.test.ts.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Pod } from '../../../src/api/core.js';
import { PodUIDLabel } from '../../../src/runtime/labels.js';
import type { ContainerFilter, Runtime, StreamingRequest } from '../../../src/runtime/types.js';
import { HttpError } from '../../../src/server/nodeapi/httperror.js';
import type { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import {
  parsePortForwardPorts,
  parseStreamingPath,
  parseStreamingQuery,
} from '../../../src/server/nodeapi/streaming.js';
import { upstreamRequestHead } from '../../../src/server/nodeapi/upgradeproxy.js';
import { KindError } from '../../../src/util/errors.js';
import { runningContainer, startLocalNodeApi } from '../../support/nodeapi.js';

const status = (fn: () => unknown): number => {
  try {
    fn();
  } catch (err) {
    if (err instanceof HttpError) return err.status;
    throw err;
  }
  return 200;
};

describe('node API streaming: parsing', () => {
  it('splits exec/attach/portForward paths with and without the pod UID', () => {
    expect(parseStreamingPath('/exec/ns/p/c')).to.deep.equal({
      kind: 'exec',
      namespace: 'ns',
      pod: 'p',
      container: 'c',
    });
    expect(parseStreamingPath('/attach/ns/p/u-1/c')).to.deep.equal({
      kind: 'attach',
      namespace: 'ns',
      pod: 'p',
      uid: 'u-1',
      container: 'c',
    });
    expect(parseStreamingPath('/portForward/ns/p')).to.deep.equal({
      kind: 'portForward',
      namespace: 'ns',
      pod: 'p',
    });
    expect(parseStreamingPath('/portForward/ns/p/u')).to.include({ uid: 'u' });
    for (const bad of [
      '/exec',
      '/exec/ns/p',
      '/exec/ns//c',
      '/exec/a/b/c/d/e',
      '/portForward/ns',
      '/attach/%zz/p/c',
    ])
      expect(
        status(() => parseStreamingPath(bad)),
        bad,
      ).to.equal(400);
  });

  it('reads the query like the kubelet: streams, command, tty drops stderr', () => {
    const q = (s: string) => new URLSearchParams(s);
    expect(
      parseStreamingQuery('exec', q('command=sh&command=-c&command=echo hi&output=1&error=1'), false),
    ).to.deep.equal({
      kind: 'exec',
      cmd: ['sh', '-c', 'echo hi'],
      streams: { stdin: false, stdout: true, stderr: true, tty: false },
    });
    expect(parseStreamingQuery('attach', q('stdin=true&stdout=1&stderr=1&tty=1'), false)).to.deep.equal({
      kind: 'attach',
      streams: { stdin: true, stdout: true, stderr: false, tty: true },
    });
    expect(status(() => parseStreamingQuery('exec', q('output=1'), false))).to.equal(400); // no command
    expect(status(() => parseStreamingQuery('exec', q('command=ls'), false))).to.equal(400); // no stream
    expect(status(() => parseStreamingQuery('attach', q('output=yes'), false))).to.equal(400);
    try {
      parseStreamingQuery('exec', q('command=ls&output=0'), false);
      expect.fail('no stream accepted');
    } catch (err) {
      expect((err as Error).message).to.equal('you must specify at least 1 of stdin, stdout, stderr');
    }
  });

  it('port-forward ports: required over WebSocket, validated, comma lists allowed', () => {
    const q = (s: string) => new URLSearchParams(s);
    expect(parsePortForwardPorts(q(''), false)).to.deep.equal([]);
    expect(parsePortForwardPorts(q('port=80,8080&port=9'), true)).to.deep.equal([80, 8080, 9]);
    for (const bad of ['', 'port=', 'port=0', 'port=65536', 'port=http', 'port=1,'])
      expect(
        status(() => parsePortForwardPorts(q(bad), true)),
        bad,
      ).to.equal(400);
  });

  it('forwards only the upgrade headers, with the runtime URL path', () => {
    const head = upstreamRequestHead(
      {
        method: 'POST',
        rawHeaders: [
          'Connection',
          'Upgrade',
          'Upgrade',
          'SPDY/3.1',
          'X-Stream-Protocol-Version',
          'v4.channel.k8s.io',
          'X-Stream-Protocol-Version',
          'v3.channel.k8s.io',
          'Authorization',
          'Bearer secret',
          'Sec-WebSocket-Protocol',
          'v5.channel.k8s.io',
          'Content-Length',
          '0',
        ],
      },
      new URL('http://127.0.0.1:4321/exec/TOKEN'),
    );
    expect(head).to.equal(
      'POST /exec/TOKEN HTTP/1.1\r\nHost: 127.0.0.1:4321\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n' +
        'X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n' +
        'Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n',
    );
  });
});

/** A stand-in streaming server: records each request head, answers 101, then echoes what it gets. */
function echoStreamingServer(): Promise<{ server: net.Server; port: number; heads: string[] }> {
  const heads: string[] = [];
  const server = net.createServer((sock) => {
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer): void => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      sock.off('data', onData);
      heads.push(buf.subarray(0, end).toString('latin1'));
      sock.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) sock.write(rest);
      sock.pipe(sock);
    };
    sock.on('data', onData);
    sock.on('error', () => undefined);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as net.AddressInfo).port, heads }),
    ),
  );
}

describe('node API streaming: the upgrade proxy', function () {
  this.timeout(30_000);
  let dir: string;
  let server: NodeApiServer;
  let port: number;
  let cert: Buffer;
  let backend: Awaited<ReturnType<typeof echoStreamingServer>>;
  let streamingPort = 0;
  const calls: { what: string; req: StreamingRequest | { sandbox: string; ports: number[] } }[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-stream-'));
    backend = await echoStreamingServer();
    streamingPort = backend.port;
    const pod = (name: string, uid: string): Pod => ({
      metadata: { name, namespace: 'ns', uid },
      spec: {
        containers: [
          { name: 'c', image: 'busybox' },
          { name: 'stopped', image: 'busybox' },
        ],
      },
    });
    const pods = [pod('p', 'u1'), pod('sim', 'u2')];
    const running = [runningContainer('ctr-1', 'sb-1', 'u1'), runningContainer('ctr-2', 'sb-2', 'u2')];
    const url = (what: string) => `http://127.0.0.1:${streamingPort}/${what}/TOKEN`;
    const runtime = {
      kind: 'cri',
      listContainers: (f: ContainerFilter = {}) =>
        Promise.resolve(
          running.filter((c) => Object.entries(f.labelSelector ?? {}).every(([k, v]) => c.labels[k] === v)),
        ),
      listPodSandbox: (f: { labelSelector?: Record<string, string> } = {}) =>
        Promise.resolve(
          f.labelSelector?.[PodUIDLabel] === 'u1' ? [{ id: 'sb-1', state: 'ready', createdAt: 1n }] : [],
        ),
      exec: (req: StreamingRequest) => {
        calls.push({ what: 'exec', req });
        if (req.containerId === 'ctr-2')
          return Promise.reject(
            new KindError('Unimplemented', 'the simulated runtime has no streaming server (exec)'),
          );
        return Promise.resolve({ url: url('exec') });
      },
      attach: (req: StreamingRequest) => {
        calls.push({ what: 'attach', req });
        return Promise.resolve({ url: url('attach') });
      },
      portForward: (sandbox: string, ports: number[]) => {
        calls.push({ what: 'portForward', req: { sandbox, ports } });
        return Promise.resolve({ url: url('portforward') });
      },
    } as unknown as Runtime;
    ({ server, port, cert } = await startLocalNodeApi(dir, { runtime, pods: pods }));
  });

  after(async () => {
    await server?.close();
    backend?.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Sends a raw request over TLS; resolves with the socket and everything read until `until` matches. */
  const raw = async (
    head: string,
    opts: { token?: string; upgrade?: string; extra?: Buffer } = {},
  ): Promise<{ sock: tls.TLSSocket; read: () => string; closed: Promise<void> }> => {
    const sock = tls.connect({ host: '127.0.0.1', port, ca: cert });
    await once(sock, 'secureConnect');
    let got = '';
    sock.setEncoding('latin1').on('data', (d: string) => (got += d));
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.on('error', () => undefined);
    const lines = [head, 'Host: node'];
    if (opts.token !== '') lines.push(`Authorization: Bearer ${opts.token ?? 'good'}`);
    if (opts.upgrade !== '') lines.push('Connection: Upgrade', `Upgrade: ${opts.upgrade ?? 'SPDY/3.1'}`);
    else lines.push('Connection: close');
    lines.push('X-Stream-Protocol-Version: v4.channel.k8s.io');
    sock.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (opts.extra) sock.write(opts.extra);
    return { sock, read: () => got, closed };
  };
  const until = async (f: () => boolean, ms = 5000): Promise<void> => {
    const end = Date.now() + ms;
    while (!f()) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  const statusLine = (s: string): string => s.split('\r\n')[0] ?? '';

  it('proxies an exec upgrade to the runtime URL and copies bytes both ways', async () => {
    const before = backend.heads.length;
    const c = await raw('POST /exec/ns/p/c?command=sh&command=-c&command=cat&input=1&output=1 HTTP/1.1', {
      extra: Buffer.from('early'),
    });
    await until(() => c.read().includes('early'));
    expect(statusLine(c.read())).to.equal('HTTP/1.1 101 Switching Protocols');
    c.sock.write('ping');
    await until(() => c.read().endsWith('earlyping'));
    const head = backend.heads[before]!;
    expect(head.split('\r\n')[0]).to.equal('POST /exec/TOKEN HTTP/1.1');
    expect(head).to.contain('Upgrade: SPDY/3.1').and.contain('X-Stream-Protocol-Version: v4.channel.k8s.io');
    expect(head).to.not.contain('Authorization');
    expect(calls.at(-1)).to.deep.equal({
      what: 'exec',
      req: {
        containerId: 'ctr-1',
        cmd: ['sh', '-c', 'cat'],
        stdin: true,
        stdout: true,
        stderr: false,
        tty: false,
      },
    });
    c.sock.end();
    await c.closed;
  });

  it('attach and portForward (WebSocket ports from the query) reach their runtime calls', async () => {
    const a = await raw('GET /attach/ns/p/u1/c?output=1&error=1 HTTP/1.1');
    await until(() => a.read().includes('101'));
    a.sock.destroy();
    expect(calls.at(-1)).to.deep.include({ what: 'attach' });
    const pf = await raw('GET /portForward/ns/p?port=8080 HTTP/1.1', { upgrade: 'websocket' });
    await until(() => pf.read().includes('101'));
    pf.sock.destroy();
    expect(calls.at(-1)).to.deep.equal({ what: 'portForward', req: { sandbox: 'sb-1', ports: [8080] } });
  });

  it('answers bad requests with an HTTP error and a message, before any upgrade', async () => {
    const cases: [string, Parameters<typeof raw>[1], number, RegExp][] = [
      ['POST /exec/ns/p/c?command=ls&output=1 HTTP/1.1', { token: '' }, 401, /Unauthorized/],
      ['POST /exec/ns/p?command=ls&output=1 HTTP/1.1', {}, 400, /malformed path/],
      ['POST /exec/ns/p/c?output=1 HTTP/1.1', {}, 400, /command/],
      ['POST /exec/ns/p/c?command=ls HTTP/1.1', {}, 400, /at least 1 of stdin, stdout, stderr/],
      ['POST /exec/ns/p/c?command=ls&output=maybe HTTP/1.1', {}, 400, /output/],
      ['POST /exec/ns/p/nope?command=ls&output=1 HTTP/1.1', {}, 404, /container "nope" not found/],
      ['POST /exec/ns/p/stopped?command=ls&output=1 HTTP/1.1', {}, 400, /not running/],
      ['POST /exec/ns/p/other-uid/c?command=ls&output=1 HTTP/1.1', {}, 404, /UID other-uid/],
      ['POST /exec/ns/gone/c?command=ls&output=1 HTTP/1.1', {}, 404, /pod "ns\/gone" not found/],
      ['POST /exec/ns/sim/c?command=ls&output=1 HTTP/1.1', {}, 501, /no streaming server/],
      ['GET /portForward/ns/p HTTP/1.1', { upgrade: 'websocket' }, 400, /"port" is required/],
      ['GET /portForward/ns/sim?port=80 HTTP/1.1', { upgrade: 'websocket' }, 400, /no running sandbox/],
      ['GET /pods HTTP/1.1', {}, 400, /does not support protocol upgrades/],
      ['POST /exec/ns/p/c?command=ls&output=1 HTTP/1.1', { upgrade: '' }, 400, /Upgrade request required/],
    ];
    for (const [head, opts, code, msg] of cases) {
      const c = await raw(head, opts);
      await c.closed;
      expect(statusLine(c.read()), head).to.match(new RegExp(`^HTTP/1.1 ${code} `));
      // Refused upgrades carry a v1 Status, which kubectl reads whichever protocol it spoke; a request
      // without an upgrade is an ordinary (text) error.
      const [resHead, body] = c.read().split('\r\n\r\n', 2) as [string, string];
      if (opts?.upgrade === '') {
        expect(body, head).to.match(msg);
        continue;
      }
      expect(resHead, head).to.contain('Content-Type: application/json');
      const st = JSON.parse(body) as Record<string, unknown>;
      expect(st, head).to.include({ kind: 'Status', status: 'Failure', code });
      expect(st.message, head).to.match(msg);
    }
  });

  it('an unreachable streaming server is a 502', async () => {
    const saved = streamingPort;
    const dead = net.createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r));
    streamingPort = (dead.address() as net.AddressInfo).port;
    await new Promise((r) => dead.close(r));
    try {
      const c = await raw('POST /exec/ns/p/c?command=ls&output=1 HTTP/1.1');
      await c.closed;
      expect(statusLine(c.read())).to.match(/^HTTP\/1.1 502 /);
      expect(c.read()).to.contain("cannot reach the runtime's streaming server");
    } finally {
      streamingPort = saved;
    }
  });

  it('a session whose client stops reading holds bounded buffers and blocks no other request', async () => {
    const slow = await raw('POST /exec/ns/p/c?command=cat&input=1&output=1 HTTP/1.1');
    await until(() => slow.read().includes('101'));
    slow.sock.pause();
    // The echo server sends everything back to a client that reads nothing. With backpressure the whole
    // chain stalls once the socket buffers are full; without it the proxy would take all 256 MiB in.
    const chunk = Buffer.alloc(1 << 20, 120);
    let accepted = 0;
    for (let i = 0; i < 256; i++) {
      if (!slow.sock.write(chunk)) {
        const drained = await Promise.race([
          once(slow.sock, 'drain').then(() => true),
          new Promise<false>((r) => setTimeout(() => r(false), 1500)),
        ]);
        if (!drained) break;
      }
      accepted += chunk.length;
    }
    expect(accepted, 'bytes the stalled session took in').to.be.lessThan(96 << 20);
    const other = await raw('POST /exec/ns/p/c?command=ls&output=1 HTTP/1.1');
    await until(() => other.read().includes('101'), 5000);
    other.sock.destroy();
    slow.sock.destroy();
  });

  it('close() ends live sessions', async () => {
    const c = await raw('POST /exec/ns/p/c?command=cat&input=1&output=1 HTTP/1.1');
    await until(() => c.read().includes('101'));
    await server.close();
    await c.closed;
  });
});
