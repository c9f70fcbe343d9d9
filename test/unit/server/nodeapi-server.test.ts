import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Pod } from '../../../src/api/core.js';
import type { Runtime } from '../../../src/runtime/types.js';
import type { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import { eventually } from '../../support/eventually.js';
import { nodeApiGet, startLocalNodeApi } from '../../support/nodeapi.js';

const LINES = 300_000;
/** Highest log line index the server has read from the runtime (how far a stream got). */
let maxLineRead = -1;

describe('NodeApiServer', function () {
  this.timeout(30_000);
  let dir: string;
  let server: NodeApiServer;
  let port: number;
  let cert: Buffer;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-srv-'));
    const big = Array.from(
      { length: LINES },
      (_, i) => `2024-01-01T00:00:00Z stdout F line ${i} ${'x'.repeat(80)}`,
    );
    const pod: Pod = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u' },
      spec: {
        containers: [
          { name: 'c', image: 'busybox' },
          { name: 'side', image: 'busybox' },
        ],
      },
      status: {
        containerStatuses: [
          { name: 'c', ready: true, restartCount: 0, containerID: 'sim://id1', state: { running: {} } },
          { name: 'side', ready: true, restartCount: 0, containerID: 'sim://id2', state: { running: {} } },
        ],
      },
    };
    // Counts how far the server reads, to show a stalled client stops it (bounded buffering).
    const counted = new Proxy(big, {
      get(target, prop, receiver) {
        if (typeof prop === 'string' && /^\d+$/.test(prop)) maxLineRead = Math.max(maxLineRead, Number(prop));
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const runtime = {
      kind: 'sim',
      capabilities: {
        hostLogDirectories: false,
        hostPodCgroups: false,
        readLogs: (id: string) => (id === 'id1' ? counted : ['2024-01-01T00:00:00Z stdout F side line']),
      },
      containerStatus: () => Promise.resolve({ state: 'exited' }),
    } as unknown as Runtime;
    ({ server, port, cert } = await startLocalNodeApi(dir, { runtime, pods: [pod] }));
  });

  after(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const get = (p: string, token = 'good'): Promise<{ status: number; body: string }> =>
    nodeApiGet({ host: '127.0.0.1', port, ca: cert }, p, token);

  it('streams a whole log, and a client that does not read never blocks another request', async () => {
    const full = await get('/containerLogs/ns/p/c');
    expect(full.status).to.equal(200);
    expect(full.body.split('\n')).to.have.length(LINES + 1);
    // A client that sends a request for ~28 MB of logs and never reads.
    const slow = tls.connect({ host: '127.0.0.1', port, ca: cert });
    slow.pause();
    await new Promise((r) => slow.once('secureConnect', r));
    maxLineRead = -1;
    slow.write(`GET /containerLogs/ns/p/c HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n\r\n`);
    // The server writes until the socket buffers are full, then waits for 'drain': its read position stops.
    const stalledAt = await eventually(
      async () => {
        const before = maxLineRead;
        await new Promise((r) => setTimeout(r, 300));
        return before > 0 && maxLineRead === before ? before : undefined;
      },
      10_000,
      'the stalled stream to stop reading',
    );
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) expect((await get('/healthz')).body).to.equal('ok\n');
    expect((await get('/containerLogs/ns/p/side')).body).to.equal('side line\n');
    expect(Date.now() - t0).to.be.lessThan(2000);
    // Still stalled: what the server read for it is what the kernel's socket buffers hold plus at most one
    // write's worth, not the whole log (300k lines of ~100 bytes).
    expect(maxLineRead).to.equal(stalledAt);
    expect(stalledAt * 100).to.be.lessThan(8 * 1024 * 1024);
    console.log(`      stalled reader: server stopped after ${stalledAt + 1} of ${LINES} lines`);
    slow.destroy();
  });

  it('answers 400 with a message for each malformed path or query', async () => {
    const cases: [string, RegExp][] = [
      ['/containerLogs/ns', /malformed path/],
      ['/containerLogs/ns/p/c/extra', /malformed path/],
      ['/containerLogs/ns/p/c?tailLines=abc', /tailLines: invalid integer "abc"/],
      ['/containerLogs/ns/p/c?sinceSeconds=-1', /sinceSeconds: must be greater than or equal to 1/],
      ['/containerLogs/ns/p/c?sinceSeconds=0', /sinceSeconds: must be greater than or equal to 1/],
      [
        '/containerLogs/ns/p/c?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z',
        /at most one of sinceTime or sinceSeconds/,
      ],
      ['/containerLogs/ns/p/c?sinceTime=yesterday', /sinceTime: invalid RFC3339 time/],
      ['/containerLogs/ns/p/c?limitBytes=0', /limitBytes: must be greater than or equal to 1/],
      ['/containerLogs/ns/p/c?follow=maybe', /follow: invalid boolean "maybe"/],
      ['/containerLogs/ns/p/c?bogus=1', /unknown query parameter "bogus"/],
      ['/containerLogs/ns/%zz/c', /bad escape/],
    ];
    for (const [p, msg] of cases) {
      const r = await get(p);
      expect(r.status, p).to.equal(400);
      expect(r.body, p).to.match(msg);
    }
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
