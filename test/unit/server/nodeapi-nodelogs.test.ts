// /logs/ (NodeLogQuery with enableSystemLogQuery off): the decisions, checked against what Go's
// http.StripPrefix("/logs/", http.FileServer(http.Dir(root))) answered for the same tree (go1.26), and the
// node API serving a node's log directory.
import { expect } from 'chai';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';

import {
  dirListingHtml,
  nodeLogAnswer,
  nodeLogContentType,
  parseNodeLogPath,
  type NodeLogEntry,
} from '../../../src/server/nodeapi/nodelogs.js';
import { WebhookAuth } from '../../../src/server/nodeapi/auth.js';
import { NodeApiRegistry } from '../../../src/server/nodeapi/registry.js';
import { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import type { Runtime } from '../../../src/runtime/types.js';
import { RealClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';
import { goodTokenAuthApi, nodeServingCert } from '../../support/nodeapi.js';

describe('node API /logs/ (NodeLogQuery)', function () {
  this.timeout(20_000);

  it('reads the path as StripPrefix and FileServer do', () => {
    const cases: [string, ReturnType<typeof parseNodeLogPath>][] = [
      ['/logs/', { kind: 'path', urlPath: '/', name: '' }],
      ['/logs/sub', { kind: 'path', urlPath: '/sub', name: 'sub' }],
      ['/logs/sub/', { kind: 'path', urlPath: '/sub/', name: 'sub' }],
      ['/logs/a%26b%3Cc%3E.txt', { kind: 'path', urlPath: '/a&b<c>.txt', name: 'a&b<c>.txt' }],
      ['/logs/..%2F..%2Fetc', { kind: 'path', urlPath: '/../../etc', name: 'etc' }],
      ['/logs/%E0%A4%A', { kind: 'error', status: 400, text: 'invalid URL escape' }],
      ['/logs', { kind: 'error', status: 404, text: '404 page not found' }],
    ];
    for (const [raw, want] of cases) expect(parseNodeLogPath(raw), raw).to.deep.equal(want);
  });

  it('answers as Go: redirects, listings, index.html, files, errors', () => {
    const dir = (hasIndex = false): NodeLogEntry => ({ type: 'dir', hasIndex });
    const file: NodeLogEntry = { type: 'file' };
    const cases: [string, string, NodeLogEntry, ReturnType<typeof nodeLogAnswer>][] = [
      ['/', '', dir(), { kind: 'list' }],
      ['/', 'query=kubelet', dir(), { kind: 'list' }],
      ['/sub', '', dir(), { kind: 'redirect', location: 'sub/' }],
      ['/sub', 'query=x', dir(), { kind: 'redirect', location: 'sub/?query=x' }],
      ['/sub/', '', dir(), { kind: 'list' }],
      ['/withindex/', '', dir(true), { kind: 'file', index: true }],
      ['/withindex/index.html', '', file, { kind: 'redirect', location: './' }],
      ['/kubelet.log', '', file, { kind: 'file', index: false }],
      ['/kubelet.log/', '', file, { kind: 'redirect', location: '../kubelet.log' }],
      ['/missing', '', { type: 'missing' }, { kind: 'error', status: 404, text: '404 page not found' }],
      ['/secret', '', { type: 'forbidden' }, { kind: 'error', status: 403, text: '403 Forbidden' }],
    ];
    for (const [p, q, entry, want] of cases)
      expect(nodeLogAnswer(p, q, entry), `${p}?${q}`).to.deep.equal(want);
  });

  it("lists a directory in Go's HTML, byte for byte", () => {
    const html = dirListingHtml([
      { name: 'withindex', dir: true },
      { name: 'sub', dir: true },
      { name: 'kubelet.log', dir: false },
      { name: 'we?ird#dir', dir: true },
      { name: 'a&b<c>.txt', dir: false },
      { name: 'c:olon', dir: false },
      { name: "x!y*(z)'q", dir: false },
      { name: 'data.bin', dir: false },
    ]);
    expect(html).to.equal(
      [
        '<!doctype html>',
        '<meta name="viewport" content="width=device-width">',
        '<pre>',
        '<a href="a&b%3Cc%3E.txt">a&amp;b&lt;c&gt;.txt</a>',
        '<a href="./c:olon">c:olon</a>',
        '<a href="data.bin">data.bin</a>',
        '<a href="kubelet.log">kubelet.log</a>',
        '<a href="sub/">sub/</a>',
        '<a href="we%3Fird%23dir/">we?ird#dir/</a>',
        '<a href="withindex/">withindex/</a>',
        '<a href="x%21y%2A%28z%29%27q">x!y*(z)&#39;q</a>',
        '</pre>',
        '',
      ].join('\n'),
    );
  });

  it('types content by extension, else by its first bytes', () => {
    expect(nodeLogContentType('kubelet.log', Buffer.from('hello\n'))).to.equal('text/x-log; charset=utf-8');
    expect(nodeLogContentType('index.html', Buffer.from('<b>'))).to.equal('text/html; charset=utf-8');
    expect(nodeLogContentType('messages', Buffer.from('Dec  6 kernel: x\n'))).to.equal(
      'text/plain; charset=utf-8',
    );
    expect(nodeLogContentType('data.bin', Buffer.from([0, 1, 0x62]))).to.equal('application/octet-stream');
    expect(nodeLogContentType('syslog.1', Buffer.from([0x1f, 0x8b, 8]))).to.equal('application/x-gzip');
  });

  describe('served from the node whose address was dialled', () => {
    let dir: string;
    let server: NodeApiServer;
    let port: number;
    let ca: Buffer;
    const get = (
      p: string,
      method = 'GET',
    ): Promise<{ status: number; headers: Record<string, unknown>; body: string }> =>
      new Promise((resolve, reject) => {
        https
          .request(
            { host: '127.0.0.1', port, path: p, method, ca, headers: { Authorization: 'Bearer good' } },
            (res) => {
              let body = '';
              res.setEncoding('utf8').on('data', (d: string) => (body += d));
              res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
            },
          )
          .on('error', reject)
          .end();
      });

    before(async () => {
      dir = await mkdtemp(path.join(os.tmpdir(), 'nodelogs-'));
      const logs = path.join(dir, 'logs');
      await mkdir(path.join(logs, 'sub'), { recursive: true });
      await writeFile(path.join(logs, 'kubelet.log'), 'hello\n');
      await writeFile(path.join(logs, 'sub', 's.log'), 's\n');
      await writeFile(path.join(dir, 'outside'), 'secret\n');
      await symlink(path.join(dir, 'outside'), path.join(logs, 'escape'));
      const tls = await nodeServingCert(dir);
      ca = tls.cert;
      const registry = new NodeApiRegistry();
      registry.register({
        nodeName: 'n1',
        internalIP: '127.0.0.1',
        runtime: {} as Runtime,
        pods: () => [],
        pod: () => undefined,
        logDir: logs,
      });
      server = new NodeApiServer({
        lookup: registry,
        auth: new WebhookAuth(goodTokenAuthApi, new RealClock()),
        tls,
        clock: new RealClock(),
        logger: silentLogger,
      });
      port = await server.listen(0, '127.0.0.1');
    });
    after(async () => {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    });

    it('lists, redirects, sends files, refuses escapes and other methods', async () => {
      const root = await get('/logs/?query=kubelet');
      expect(root.status).to.equal(200);
      expect(root.headers['content-type']).to.equal('text/html; charset=utf-8');
      expect(root.body).to.contain('<a href="kubelet.log">kubelet.log</a>\n<a href="sub/">sub/</a>\n');
      const sub = await get('/logs/sub');
      expect([sub.status, sub.headers.location]).to.deep.equal([301, 'sub/']);
      const file = await get('/logs/kubelet.log');
      expect([file.status, file.body, file.headers['content-length']]).to.deep.equal([200, 'hello\n', '6']);
      expect((await get('/logs/sub/s.log')).body).to.equal('s\n');
      expect((await get('/logs/escape')).status).to.equal(404);
      expect((await get('/logs/missing')).body).to.equal('404 page not found\n');
      expect((await get('/logs')).status).to.equal(404);
      const post = await get('/logs/', 'POST');
      expect([post.status, post.headers.allow]).to.deep.equal([405, 'GET']);
    });
  });
});
