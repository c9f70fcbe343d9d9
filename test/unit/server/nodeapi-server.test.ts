import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Pod } from '../../../src/api/core.js';
import type { Runtime } from '../../../src/runtime/types.js';
import { WebhookAuth, type AuthApi } from '../../../src/server/nodeapi/auth.js';
import { NodeApiRegistry } from '../../../src/server/nodeapi/registry.js';
import { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import { RealClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/logger.js';
import { run } from '../../support/controlplane.js';

const LINES = 100_000;

describe('NodeApiServer', function () {
  this.timeout(30_000);
  let dir: string;
  let server: NodeApiServer;
  let port: number;
  let cert: Buffer;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-srv-'));
    const r = await run('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      path.join(dir, 'k.pem'),
      '-out',
      path.join(dir, 'c.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=node',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    expect(r.code, r.stderr).to.equal(0);
    cert = await readFile(path.join(dir, 'c.pem'));
    const big = Array.from(
      { length: LINES },
      (_, i) => `2024-01-01T00:00:00Z stdout F line ${i} ${'x'.repeat(80)}`,
    );
    const pod: Pod = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u' },
      spec: { containers: [{ name: 'c', image: 'busybox' }] },
      status: {
        containerStatuses: [
          { name: 'c', ready: true, restartCount: 0, containerID: 'sim://id1', state: { running: {} } },
        ],
      },
    };
    const runtime = {
      kind: 'sim',
      readLogs: () => big,
      containerStatus: () => Promise.resolve({ state: 'exited' }),
    } as unknown as Runtime;
    const registry = new NodeApiRegistry();
    registry.register({
      nodeName: 'n1',
      internalIP: '127.0.0.1',
      runtime,
      pods: () => [pod],
      pod: (ns, name) => (ns === 'ns' && name === 'p' ? pod : undefined),
    });
    const api: AuthApi = {
      request: <T>(req: { path: string; body: unknown }): Promise<T> =>
        Promise.resolve(
          (req.path.endsWith('tokenreviews')
            ? {
                status: {
                  authenticated: (req.body as { spec: { token: string } }).spec.token === 'good',
                  user: { username: 'u' },
                },
              }
            : { status: { allowed: true } }) as T,
        ),
    };
    server = new NodeApiServer({
      lookup: registry,
      auth: new WebhookAuth(api, new RealClock()),
      tls: { cert, key: await readFile(path.join(dir, 'k.pem')) },
      clock: new RealClock(),
      logger: silentLogger,
    });
    port = await server.listen(0, '127.0.0.1');
  });

  after(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const get = (p: string, token = 'good'): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      https
        .get(
          { host: '127.0.0.1', port, path: p, ca: cert, headers: { Authorization: `Bearer ${token}` } },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (d: string) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        )
        .on('error', reject);
    });

  it('streams a whole log, and a client that does not read never blocks another request', async () => {
    const full = await get('/containerLogs/ns/p/c');
    expect(full.status).to.equal(200);
    expect(full.body.split('\n')).to.have.length(LINES + 1);
    // A client that sends a request for ~9 MB of logs and never reads.
    const slow = tls.connect({ host: '127.0.0.1', port, ca: cert });
    slow.pause();
    await new Promise((r) => slow.once('secureConnect', r));
    slow.write(`GET /containerLogs/ns/p/c HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n`);
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) expect((await get('/healthz')).body).to.equal('ok\n');
    expect((await get('/containerLogs/ns/p/c?tailLines=1')).body).to.match(/^line 99999 x+\n$/);
    expect(Date.now() - t0).to.be.lessThan(2000);
    slow.destroy();
  });

  it('answers 401, 400 and 404 with a message', async () => {
    expect((await get('/healthz', 'bad')).status).to.equal(401);
    expect(await get('/containerLogs/ns/p')).to.deep.include({ status: 400 });
    expect((await get('/containerLogs/ns/p/c?limitBytes=-1')).status).to.equal(400);
    expect((await get('/containerLogs/ns/p/c?previous=true')).body).to.contain(
      'previous terminated container',
    );
    expect((await get('/containerLogs/ns/q/c')).body).to.equal('pod "ns/q" not found\n');
    expect((await get('/containerLogs/ns/p/d')).status).to.equal(404);
  });
});
