// Watches over HTTP/2 against loopback TLS servers: a client family's watches share one connection, a new
// one past the server's stream limit; an error answer and an abort behave as over HTTP/1.1; a server whose TLS
// refuses `h2` gets the watches over HTTP/1.1, without being asked again at once; a connection that breaks
// before HTTP/2 is up fails its watch, and the next one goes over HTTP/2 again.
import http2 from 'node:http2';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import { KubeClient } from '../../../src/kube/client.js';
import { errorKind } from '../../../src/util/errors.js';
import { selfSignedCert } from '../../support/nodeapi.js';

function kubeConfigFor(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}

/** Listens on a loopback port; returns the server's https URL. */
async function listenTls(server: net.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The event types of one watch of pods, until the server ends it. */
async function watchTypes(client: KubeClient): Promise<string[]> {
  const got: string[] = [];
  await client.watch('/api/v1/pods', {}, (e) => got.push(e.type), new AbortController().signal);
  return got;
}

const bookmark = (rv: string): string =>
  JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: rv } } }) + '\n';

describe('kube client: watches over HTTP/2', function () {
  this.timeout(20_000);
  let dir: string;
  let key: Buffer;
  let cert: Buffer;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'h2watch-'));
    await selfSignedCert({
      keyOut: path.join(dir, 'key.pem'),
      certOut: path.join(dir, 'cert.pem'),
      subject: '/CN=127.0.0.1',
      days: 1,
      ext: ['subjectAltName=IP:127.0.0.1'],
    });
    key = await readFile(path.join(dir, 'key.pem'));
    cert = await readFile(path.join(dir, 'cert.pem'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** An HTTP/2 server that answers each watch with two bookmarks, then ends it when told (`finish`). */
  async function h2Server(settings: http2.Settings = {}) {
    const seen = { sessions: 0, closedSessions: 0, versions: [] as string[], auth: [] as string[] };
    const open: (() => void)[] = [];
    const server = http2.createSecureServer({ key, cert, allowHTTP1: true, settings }, (req, res) => {
      seen.versions.push(req.httpVersion);
      seen.auth.push(String(req.headers.authorization));
      if (req.url.includes('gone')) {
        res.writeHead(410, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'too old' }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(bookmark('1') + bookmark('2'));
      open.push(() => res.end());
    });
    server.on('session', (s) => {
      seen.sessions++;
      s.on('close', () => seen.closedSessions++);
    });
    const url = await listenTls(server);
    return {
      url,
      seen,
      finish: () => open.splice(0).forEach((end) => end()),
      waitOpen: async (n: number) => {
        while (open.length < n) await new Promise((r) => setTimeout(r, 5));
      },
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  }

  it('carries a client family’s watches on one connection, closed once none is left', async () => {
    const srv = await h2Server();
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(srv.url), { unlimited: true });
    const sibling = client.withPool(Infinity);
    try {
      const got: string[][] = [[], []];
      const watches = [client, sibling].map((c, i) =>
        c.watch(
          '/api/v1/pods',
          { fieldSelector: `spec.nodeName=n${i}` },
          (e) => got[i]!.push(e.type),
          new AbortController().signal,
        ),
      );
      await srv.waitOpen(2);
      srv.finish();
      await Promise.all(watches);
      expect(got).to.deep.equal([
        ['BOOKMARK', 'BOOKMARK'],
        ['BOOKMARK', 'BOOKMARK'],
      ]);
      expect(srv.seen.versions).to.deep.equal(['2.0', '2.0']);
      expect(srv.seen.auth).to.deep.equal(['Bearer secret-token', 'Bearer secret-token']);
      expect(srv.seen.sessions).to.equal(1);
      expect(client.watchStats()).to.deep.equal({ connections: 1, fallbacks: 0 });
      // Both streams done: the connection goes.
      for (let i = 0; i < 100 && srv.seen.closedSessions < 1; i++)
        await new Promise((r) => setTimeout(r, 10));
      expect(srv.seen.closedSessions).to.equal(1);

      // An error answer rejects with its kind, as over HTTP/1.1.
      const gone = await client
        .watch('/api/v1/gone', {}, () => undefined, new AbortController().signal)
        .then(
          () => 'resolved',
          (err: unknown) => errorKind(err),
        );
      expect(gone).to.equal('Gone');

      // An abort ends a watch quietly.
      const ac = new AbortController();
      const aborted = client.watch('/api/v1/pods', {}, () => undefined, ac.signal);
      await srv.waitOpen(1);
      ac.abort();
      await aborted;
    } finally {
      client.close();
      await srv.close();
    }
  });

  it('opens another connection past the server’s stream limit', async () => {
    const srv = await h2Server({ maxConcurrentStreams: 2 });
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(srv.url), { unlimited: true });
    try {
      const ac = new AbortController();
      // The first connection learns the limit before the next watches ask for room.
      const first = client.watch('/api/v1/pods', {}, () => undefined, ac.signal);
      await srv.waitOpen(1);
      const rest = [1, 2].map(() => client.watch('/api/v1/pods', {}, () => undefined, ac.signal));
      await srv.waitOpen(3);
      expect(srv.seen.sessions).to.equal(2);
      srv.finish();
      await Promise.all([first, ...rest]);
    } finally {
      client.close();
      await srv.close();
    }
  });

  it('fails a watch whose connection breaks before HTTP/2 is up, and watches over HTTP/2 again after', async () => {
    const srv = await h2Server();
    const port = Number(new URL(srv.url).port);
    let accepted = 0;
    // In front of the server: the first connection is reset before its TLS handshake, the others pass.
    const front = net.createServer((sock) => {
      if (accepted++ === 0) return sock.destroy();
      const back = net.connect(port, '127.0.0.1');
      sock.pipe(back).pipe(sock);
      sock.on('error', () => back.destroy());
      back.on('error', () => sock.destroy());
    });
    const url = await listenTls(front);
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(url), { unlimited: true });
    try {
      const err = await Promise.race([
        watchTypes(client).then(
          () => 'watched',
          (e: unknown) => e,
        ),
        new Promise((r) => setTimeout(() => r('still watching after 5 s'), 5_000)),
      ]);
      expect(errorKind(err), String(err)).to.equal('Unavailable');
      const second = watchTypes(client);
      await srv.waitOpen(1);
      srv.finish();
      expect(await second).to.deep.equal(['BOOKMARK', 'BOOKMARK']);
      expect(srv.seen.versions).to.deep.equal(['2.0']);
      expect(client.watchStats()).to.deep.equal({ connections: 2, fallbacks: 0 });
    } finally {
      srv.finish();
      client.close();
      front.close();
      await srv.close();
    }
  });

  it('watches over HTTP/1.1 a server whose TLS refuses h2, without asking it again at once', async () => {
    let refusals = 0;
    const versions: string[] = [];
    const server = https.createServer({ key, cert }, (req, res) => {
      versions.push(req.httpVersion);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(bookmark('7'));
    });
    server.on('tlsClientError', () => refusals++);
    const url = await listenTls(server);
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(url), { unlimited: true });
    try {
      for (let i = 0; i < 3; i++) expect(await watchTypes(client)).to.deep.equal(['BOOKMARK']);
      expect(versions).to.deep.equal(['1.1', '1.1', '1.1']);
      expect(refusals).to.equal(1);
      expect(client.watchStats()).to.deep.equal({ connections: 1, fallbacks: 1 });
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('watches over HTTP/1.1 a TLS server that ignores ALPN, instead of waiting for its SETTINGS', async () => {
    let handshakes = 0;
    const versions: string[] = [];
    const web = http.createServer((req, res) => {
      versions.push(req.httpVersion);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(bookmark('9'));
    });
    // HTTP/1.1 over TLS with no ALPN at all: the handshake succeeds and no protocol is chosen.
    const server = tls.createServer({ key, cert }, (sock) => {
      handshakes++;
      web.emit('connection', sock);
    });
    const url = await listenTls(server);
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(url), { unlimited: true });
    try {
      for (let i = 0; i < 2; i++) expect(await watchTypes(client)).to.deep.equal(['BOOKMARK']);
      expect(versions).to.deep.equal(['1.1', '1.1']);
      // One connection tried for HTTP/2, one kept alive for both watches.
      expect(handshakes).to.equal(2);
      expect(client.watchStats()).to.deep.equal({ connections: 1, fallbacks: 1 });
    } finally {
      client.close();
      web.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
