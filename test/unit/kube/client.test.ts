import http from 'node:http';
import { getEventListeners } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { expect } from 'chai';
import {
  KubeClient,
  MAX_RETRIES,
  pathTarget,
  requestDeadline,
  retryAfterSeconds,
} from '../../../src/kube/client.js';
import { FakeClock, RealClock } from '../../../src/util/clock.js';
import { KindError, isInvalidArgument } from '../../../src/util/errors.js';

describe('kube client: requestDeadline', () => {
  /** Records what the deadline destroyed it with. */
  const request = () => {
    const r = { destroyedWith: undefined as Error | undefined, destroy: (e: Error) => (r.destroyedWith = e) };
    return r;
  };

  it('destroys its request with a TimeoutError once the timeout passes, and says so', async () => {
    const d = requestDeadline(5);
    const r = request();
    d.attach(r);
    expect(r.destroyedWith).to.equal(undefined);
    await new Promise((res) => setTimeout(res, 30));
    expect(r.destroyedWith?.name).to.equal('TimeoutError');
    expect(d.timedOut()).to.equal(true);
    d.release();
  });

  it('follows the caller signal, already aborted or aborted later, without counting it as a timeout', () => {
    const early = new AbortController();
    early.abort(new Error('stop'));
    const a = requestDeadline(60_000, early.signal);
    const ra = request();
    a.attach(ra);
    expect(ra.destroyedWith?.name).to.equal('AbortError');
    expect(a.timedOut()).to.equal(false);
    a.release();

    const late = new AbortController();
    const b = requestDeadline(60_000, late.signal);
    const rb = request();
    b.attach(rb);
    expect(rb.destroyedWith).to.equal(undefined);
    late.abort(new Error('later'));
    expect(rb.destroyedWith?.name).to.equal('AbortError');
    expect((rb.destroyedWith?.cause as Error).message).to.equal('later');
    expect(b.timedOut()).to.equal(false);
    b.release();
  });

  it('after release neither the timer nor the caller signal can end it', async () => {
    const parent = new AbortController();
    const d = requestDeadline(5, parent.signal);
    const r = request();
    d.attach(r);
    d.release();
    await new Promise((res) => setTimeout(res, 30));
    parent.abort();
    expect(r.destroyedWith).to.equal(undefined);
    expect(d.timedOut()).to.equal(false);
  });
});

/** A kubeconfig for a plain-HTTP test server on loopback. */
/** Starts `server` on a free loopback port; resolves to its base URL. */
async function listenLocal(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes `server` and the connections it still holds. */
async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
}

function kubeConfigFor(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}

describe('kube client: withLimits siblings', () => {
  let server: http.Server;
  let connections = 0;
  const seen: { path: string; userAgent: string | undefined }[] = [];
  let base = '';

  before(async () => {
    server = http.createServer((req, res) => {
      seen.push({ path: req.url ?? '', userAgent: req.headers['user-agent'] });
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ path: req.url }));
    });
    server.on('connection', () => connections++);
    base = await listenLocal(server);
  });

  after(async () => {
    await closeServer(server);
  });

  beforeEach(() => {
    connections = 0;
    seen.length = 0;
  });

  async function clientFor(clock: FakeClock, hook: string[]): Promise<KubeClient> {
    return KubeClient.fromKubeConfig(kubeConfigFor(base), {
      qps: 1,
      burst: 1,
      clock,
      userAgent: 'test-agent/1',
      onRequest: (verb, resource, code) => hook.push(`${verb} ${resource} ${code}`),
    });
  }

  const lease = (name: string) => `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`;

  it("a sibling is not held up by the drained bucket of its parent, and its own bucket holds only itself; a sibling over another pool shares its parent's", async () => {
    const clock = new FakeClock();
    const hook: string[] = [];
    const parent = await clientFor(clock, hook);
    const heartbeat = parent.withLimits({ unlimited: true });
    const events = parent.withLimits({ qps: 1, burst: 1 });
    try {
      await parent.request({ method: 'GET', path: '/api/v1/namespaces/ns/configmaps/a' });
      // The parent's only token is gone and the fake clock does not move: its next request waits.
      let parentDone = false;
      const queued = parent
        .request({ method: 'GET', path: '/api/v1/namespaces/ns/configmaps/b' })
        .then(() => (parentDone = true));

      for (let i = 0; i < 5; i++) await heartbeat.request({ method: 'PUT', path: lease('n1'), body: {} });
      await events.request({ method: 'POST', path: '/api/v1/namespaces/ns/events', body: {} });
      expect(parentDone, 'the parent request still waits for a token').to.equal(false);

      // The event sibling's bucket is drained now too; the heartbeat sibling still goes through.
      let eventDone = false;
      const queuedEvent = events
        .request({ method: 'POST', path: '/api/v1/namespaces/ns/events', body: {} })
        .then(() => (eventDone = true));
      await heartbeat.request({ method: 'GET', path: lease('n1') });
      expect(eventDone).to.equal(false);
      expect(connections, 'one shared pool: requests one at a time reuse one socket').to.equal(1);

      clock.advance(1_000);
      await Promise.all([queued, queuedEvent]);
      expect(parentDone && eventDone).to.equal(true);

      // A sibling over another pool shares its parent's bucket, which is still empty.
      let pooledDone = false;
      const pooled = parent
        .withPool(1)
        .request({ method: 'GET', path: '/api/v1/namespaces/ns/configmaps/c' })
        .then(() => (pooledDone = true));
      // Waiting for a token is a sleep on the fake clock, which the request does before it goes out.
      for (let i = 0; i < 100 && clock.pendingTimers() === 0 && !pooledDone; i++) await Promise.resolve();
      expect(clock.pendingTimers(), 'the pooled sibling sleeps for a token').to.equal(1);
      expect(pooledDone).to.equal(false);
      clock.advance(1_000);
      await pooled;

      // Same user agent, same hook.
      expect(seen.map((s) => s.userAgent)).to.deep.equal(seen.map(() => 'test-agent/1'));
      expect(hook).to.include.members(['PUT leases 200', 'POST events 200', 'GET configmaps 200']);
      expect(hook).to.have.length(11);
    } finally {
      parent.close();
    }
  });

  it('takes its turns through yieldToLoop before a request leaves and before its answer is read; a prompt sibling does not', async () => {
    const turns: string[] = [];
    const durations: number[] = [];
    const parent = await KubeClient.fromKubeConfig(kubeConfigFor(base), {
      unlimited: true,
      onRequest: (_verb, _resource, _code, ms) => durations.push(ms),
      // The turn after an answer is a long one: the request's latency does not include it.
      yieldToLoop: async () => {
        turns.push(`turn after ${seen.length} requests`);
        if (seen.length > 0) await new Promise((r) => setTimeout(r, 300));
      },
    });
    try {
      const got = await parent.request<{ path: string }>({
        method: 'GET',
        path: '/api/v1/namespaces/ns/pods/a',
      });
      expect(got.path).to.equal('/api/v1/namespaces/ns/pods/a');
      expect(turns).to.deep.equal(['turn after 0 requests', 'turn after 1 requests']);
      expect(durations).to.have.length(1);
      expect(durations[0], 'latency without the turn').to.be.below(250);
      await parent.withLimits({ qps: 5, burst: 5 }).request({ method: 'GET', path: '/api/v1/nodes/n' });
      expect(turns, 'a sibling takes turns too').to.have.length(4);
      await parent
        .withLimits({ unlimited: true, prompt: true })
        .request({ method: 'PUT', path: lease('n'), body: {} });
      expect(turns, 'a prompt sibling takes none').to.have.length(4);
    } finally {
      parent.close();
    }
  });

  it('keeps its connections alive: requests one after another share one, and a burst reuses what it opened', async () => {
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true });
    try {
      for (let i = 0; i < 5; i++) await client.request({ method: 'GET', path: `/api/v1/seq${i}` });
      expect(connections).to.equal(1);
      // A DELETE with DeleteOptions, as the kubelet deletes a pod, keeps its connection too.
      for (let i = 0; i < 3; i++)
        await client.request({ method: 'DELETE', path: `/api/v1/del${i}`, body: { gracePeriodSeconds: 0 } });
      expect(connections, 'DELETEs with a body').to.equal(1);
      await Promise.all(
        [0, 1, 2, 3].map((i) => client.request({ method: 'GET', path: `/api/v1/burst${i}` })),
      );
      const afterBurst = connections;
      expect(afterBurst).to.be.within(1, 4);
      await Promise.all(
        [0, 1, 2, 3].map((i) => client.request({ method: 'GET', path: `/api/v1/again${i}` })),
      );
      expect(connections).to.equal(afterBurst);
    } finally {
      client.close();
    }
  });

  it('with ignoreAnswer resolves undefined without reading the answer', async () => {
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true });
    try {
      expect(await client.request({ method: 'GET', path: '/api/v1/x' })).to.deep.equal({ path: '/api/v1/x' });
      expect(await client.request({ method: 'GET', path: '/api/v1/x', ignoreAnswer: true })).to.equal(
        undefined,
      );
    } finally {
      client.close();
    }
  });

  it("sends the path and query a URL would make of them, behind the server's own path too", async () => {
    const cases: [string, Record<string, string | number | boolean | undefined> | undefined][] = [
      ['/api/v1/namespaces/ns/pods/p', undefined],
      ['/api/v1/pods', { labelSelector: 'a in (b, c),d!=e', limit: 500, watch: true, skip: undefined }],
      ['/api/v1/namespaces/ns/pods/with space', { fieldSelector: 'spec.nodeName=n1' }],
      ['/api/v1/namespaces/ns/pods/a\\b/../c', undefined],
      ['/api/v1/namespaces/ns/configmaps/x%2Fy', { q: 'é&?=#' }],
      ['/api/v1/namespaces/ns/pods/p?pretty=1', { limit: 1 }],
      ['/api/v1/x"y<z>`{}', {}],
    ];
    for (const prefix of ['', '/proxy/k8s']) {
      const client = await KubeClient.fromKubeConfig(kubeConfigFor(base + prefix), { unlimited: true });
      try {
        for (const [path, query] of cases) {
          const u = new URL(base + prefix + path);
          for (const [k, v] of Object.entries(query ?? {}))
            if (v !== undefined) u.searchParams.set(k, String(v));
          const got = (
            await client.request<{ path: string }>({ method: 'GET', path, ...(query ? { query } : {}) })
          ).path;
          expect(got, `${prefix}${path}`).to.equal(u.pathname + u.search);
        }
      } finally {
        client.close();
      }
    }
  });

  it('reaches a server named by an IPv6 literal', async () => {
    const v6 = http.createServer((req, res) =>
      res.end(JSON.stringify({ path: req.url, host: req.headers.host })),
    );
    await new Promise<void>((r) => v6.listen(0, '::1', r));
    const port = (v6.address() as AddressInfo).port;
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(`http://[::1]:${port}`), {
      unlimited: true,
    });
    try {
      const got = await client.request({ method: 'GET', path: '/api/v1/x', query: { a: 'b' } });
      expect(got).to.deep.equal({ path: '/api/v1/x?a=b', host: `[::1]:${port}` });
    } finally {
      client.close();
      await closeServer(v6);
    }
  });

  it("sends the kubeconfig user's credentials: a bearer token, or a username and password as Basic", async () => {
    const auth: (string | undefined)[] = [];
    const srv = http.createServer((req, res) => {
      auth.push(req.headers.authorization);
      res.end('{}');
    });
    const url = await listenLocal(srv);
    const configFor = (user: { name: string; token?: string; username?: string; password?: string }) => {
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
        users: [user],
        contexts: [{ name: 'ctx', cluster: 'c', user: user.name }],
        currentContext: 'ctx',
      });
      return kc;
    };
    try {
      for (const user of [
        { name: 't', token: 'abc.def' },
        { name: 'p', username: 'ann', password: 's3cret:x' },
      ]) {
        const client = await KubeClient.fromKubeConfig(configFor(user), { unlimited: true });
        try {
          await client.request({ method: 'GET', path: '/api/v1/namespaces' });
        } finally {
          client.close();
        }
      }
      expect(auth).to.deep.equal([
        'Bearer abc.def',
        `Basic ${Buffer.from('ann:s3cret:x').toString('base64')}`,
      ]);
    } finally {
      await closeServer(srv);
    }
  });

  it('rejects invalid limits with InvalidArgument', async () => {
    const parent = await clientFor(new FakeClock(), []);
    try {
      for (const bad of [
        { qps: 0, burst: 10 },
        { qps: 5, burst: 0 },
      ]) {
        let err: unknown;
        try {
          parent.withLimits(bad);
        } catch (e) {
          err = e;
        }
        expect(isInvalidArgument(err), JSON.stringify(bad)).to.equal(true);
      }
    } finally {
      parent.close();
    }
  });
});

describe('kube client: watch streams', () => {
  it('splits events at newlines wherever the chunks break, however long a line, and skips blank lines', async () => {
    const big = 'x'.repeat(300_000);
    const events = [
      { type: 'ADDED', object: { n: 1 } },
      { type: 'MODIFIED', object: { n: 2, big } },
      { type: 'DELETED', object: { n: 3, s: 'a\\nb ü' } },
    ];
    const wire = events.map((e) => JSON.stringify(e)).join('\n\n') + '\n';
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      // Odd chunk sizes, one of them splitting a two-byte character and one a newline pair.
      const bytes = Buffer.from(wire, 'utf8');
      const cuts = [1, 7, 4096, 65_537, 150_001, 299_999, bytes.length - 3, bytes.length];
      let at = 0;
      const next = (): void => {
        const cut = cuts.shift();
        if (cut === undefined) return void res.end();
        res.write(bytes.subarray(at, cut));
        at = cut;
        setTimeout(next, 1);
      };
      next();
    });
    const url = await listenLocal(server);
    try {
      const client = await KubeClient.fromKubeConfig(kubeConfigFor(url), { unlimited: true });
      const got: unknown[] = [];
      await client.watch('/api/v1/pods', {}, (e) => got.push(e), new AbortController().signal);
      client.close();
      expect(got).to.deep.equal(events);
    } finally {
      await closeServer(server);
    }
  });
});

describe('kube client: a watch over HTTP/1.1', () => {
  /** A server that sends each watch one event and holds it; `cut` ends the connection after the event. */
  let server: http.Server;
  let base = '';
  let mode: 'hold' | 'cut' | 'end' | 'garbage' = 'hold';
  const closed: string[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.on('close', () => closed.push(req.url ?? ''));
      if (mode === 'garbage') return void res.write('{not json\n');
      res.write(JSON.stringify({ type: 'ADDED', object: { n: 1 } }) + '\n');
      if (mode === 'cut') res.socket?.destroy();
      if (mode === 'end') res.end();
    });
    base = await listenLocal(server);
  });
  after(async () => {
    await closeServer(server);
  });
  beforeEach(() => {
    closed.length = 0;
  });
  const until = async (what: () => boolean): Promise<void> => {
    for (let i = 0; i < 400 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(what()).to.equal(true);
  };

  it('ends quietly when its caller aborts, and the server sees the connection go', async () => {
    mode = 'hold';
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true });
    try {
      const ac = new AbortController();
      const got: unknown[] = [];
      const done = client.watch('/api/v1/pods', {}, (e) => got.push(e), ac.signal);
      await until(() => got.length === 1);
      ac.abort();
      await done;
      await until(() => closed.length === 1);
      expect(getEventListeners(ac.signal, 'abort')).to.have.length(0);
    } finally {
      client.close();
    }
  });

  it('fails Unavailable when the server cuts it, or when an event cannot be read (then it ends the request)', async () => {
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true });
    try {
      for (const m of ['cut', 'garbage'] as const) {
        mode = m;
        const ac = new AbortController();
        let err: unknown;
        await client.watch('/api/v1/pods', {}, () => undefined, ac.signal).catch((e: unknown) => (err = e));
        expect(err, m).to.be.instanceOf(KindError);
        expect((err as KindError).kind, m).to.equal('Unavailable');
        await until(() => closed.length > 0);
        closed.length = 0;
        expect(getEventListeners(ac.signal, 'abort'), m).to.have.length(0);
      }
    } finally {
      client.close();
    }
  });

  it("lets go of the caller's signal when a watch ends, however many it sends with it", async () => {
    mode = 'end';
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true });
    try {
      const ac = new AbortController();
      for (let i = 0; i < 20; i++) {
        const got: unknown[] = [];
        await client.watch('/api/v1/pods', {}, (e) => got.push(e), ac.signal);
        expect(got).to.have.length(1);
      }
      expect(getEventListeners(ac.signal, 'abort')).to.have.length(0);
    } finally {
      client.close();
    }
  });
});

describe('kube client: managedFields cut before parsing', () => {
  it('drops them from an answer and from watch events only when asked', async () => {
    const pod = {
      metadata: { name: 'p', managedFields: [{ manager: 'm', fieldsV1: { 'f:a': {} } }] },
      spec: {},
    };
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (req.url?.includes('watch=true')) res.end(`${JSON.stringify({ type: 'ADDED', object: pod })}\n`);
      else res.end(JSON.stringify(pod));
    });
    const url = await listenLocal(server);
    try {
      const client = await KubeClient.fromKubeConfig(kubeConfigFor(url), { unlimited: true });
      const path = '/api/v1/namespaces/ns/pods/p';
      expect(await client.request({ method: 'GET', path })).to.deep.equal(pod);
      expect(await client.request({ method: 'GET', path, dropManagedFields: true })).to.deep.equal({
        metadata: { name: 'p' },
        spec: {},
      });
      const got: unknown[] = [];
      const signal = new AbortController().signal;
      await client.watch('/api/v1/pods', {}, (e) => got.push(e), signal);
      await client.watch('/api/v1/pods', {}, (e) => got.push(e), signal, { dropManagedFields: true });
      client.close();
      expect(got).to.deep.equal([
        { type: 'ADDED', object: pod },
        { type: 'ADDED', object: { metadata: { name: 'p' }, spec: {} } },
      ]);
    } finally {
      await closeServer(server);
    }
  });
});

/**
 * Sleeps no time and remembers how long it was asked to; `onSleep` runs first (a test may abort there), and a
 * sleep whose signal is aborted rejects, as the real clock's does.
 */
class SpyClock extends RealClock {
  readonly waits: number[] = [];
  onSleep?: () => void;
  override async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.waits.push(ms);
    this.onSleep?.();
    if (signal?.aborted) throw new Error('aborted');
  }
}

describe('kube client: Retry-After', () => {
  it('reads whole seconds on 429 and 5xx only', () => {
    expect(retryAfterSeconds(429, '1')).to.equal(1);
    expect(retryAfterSeconds(503, ' 7 ')).to.equal(7);
    expect(retryAfterSeconds(500, '0')).to.equal(0);
    expect(retryAfterSeconds(429, undefined)).to.equal(undefined);
    expect(retryAfterSeconds(429, 'Wed, 21 Oct 2026 07:28:00 GMT')).to.equal(undefined);
    expect(retryAfterSeconds(429, '-1')).to.equal(undefined);
    expect(retryAfterSeconds(409, '1')).to.equal(undefined);
    expect(retryAfterSeconds(404, '1')).to.equal(undefined);
  });

  it('sends a request again after the seconds a 429 or 5xx asks for, any verb, at most MAX_RETRIES times', async () => {
    const seen = new Map<string, number>();
    const server = http.createServer((req, res) => {
      req.resume();
      const n = (seen.get(req.url!) ?? 0) + 1;
      seen.set(req.url!, n);
      const reply = (code: number, headers: Record<string, string> = {}): void => {
        res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
        res.end(JSON.stringify(code < 300 ? { ok: n } : { kind: 'Status', code, message: 'busy' }));
      };
      if (req.url === '/twice' && n <= 2) return reply(429, { 'Retry-After': n === 1 ? '1' : '3' });
      if (req.url === '/always') return reply(503, { 'Retry-After': '1' });
      if (req.url === '/no-header') return reply(429);
      if (req.url === '/conflict') return reply(409, { 'Retry-After': '1' });
      if (req.url === '/long') return reply(429, { 'Retry-After': '5' });
      reply(201);
    });
    const url = await listenLocal(server);
    const clock = new SpyClock();
    const attempts: number[] = [];
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(url), {
      unlimited: true,
      clock,
      onRequest: (_verb, _resource, code) => attempts.push(code),
    });
    try {
      expect(await client.request({ method: 'POST', path: '/twice', body: {} })).to.deep.equal({ ok: 3 });
      expect(clock.waits, 'the seconds each answer asked for').to.deep.equal([1000, 3000]);
      expect(attempts, 'each attempt reported').to.deep.equal([429, 429, 201]);

      const failed = (path: string): Promise<KindError> =>
        client.request({ method: 'PATCH', path, body: {} }).then(
          () => expect.fail(`${path} resolved`),
          (e: KindError) => e,
        );
      clock.waits.length = 0;
      const always = await failed('/always');
      expect(always.kind).to.equal('Unavailable');
      expect(always.context.code).to.equal(503);
      expect(seen.get('/always'), 'the first try and MAX_RETRIES more').to.equal(1 + MAX_RETRIES);
      expect(clock.waits).to.have.length(MAX_RETRIES);

      expect((await failed('/no-header')).context.code).to.equal(429);
      expect(seen.get('/no-header'), 'no Retry-After: the answer stands').to.equal(1);
      expect((await failed('/conflict')).kind).to.equal('Conflict');
      expect(seen.get('/conflict'), 'only 429 and 5xx are sent again').to.equal(1);

      clock.waits.length = 0;
      const long = await client
        .request({ method: 'GET', path: '/long', timeoutMs: 3_000 })
        .catch((e: KindError) => e);
      expect((long as KindError).context.code, 'a wait past the timeout: the answer stands').to.equal(429);
      expect([seen.get('/long'), clock.waits]).to.deep.equal([1, []]);
      const ac = new AbortController();
      ac.abort();
      const aborted = await client
        .request({ method: 'GET', path: '/twice', signal: ac.signal })
        .catch((e: unknown) => e);
      expect(aborted).to.be.instanceOf(KindError);
    } finally {
      client.close();
      await closeServer(server);
    }
  });
});

describe('kube client: a watch answered with Retry-After', () => {
  it('watches again after the seconds a 429 or 5xx asks for; without the header, or past MAX_RETRIES, it fails', async () => {
    const seen = new Map<string, number>();
    const server = http.createServer((req, res) => {
      const path = new URL(req.url!, 'http://x').pathname;
      const n = (seen.get(path) ?? 0) + 1;
      seen.set(path, n);
      const refuse = (code: number, headers: Record<string, string> = {}): void => {
        res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
        res.end(JSON.stringify({ kind: 'Status', code, message: 'busy' }));
      };
      if (path === '/api/v1/pods' && n === 1) return refuse(429, { 'Retry-After': '2' });
      if (path === '/api/v1/pods' && n === 2) return refuse(503, { 'Retry-After': '1' });
      if (path === '/api/v1/nodes') return refuse(429);
      if (path === '/api/v1/services') return refuse(429, { 'Retry-After': '1' });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ type: 'ADDED', object: { metadata: { name: `p${n}` } } }) + '\n');
    });
    const url = await listenLocal(server);
    const clock = new SpyClock();
    const codes: number[] = [];
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(url), {
      unlimited: true,
      clock,
      onRequest: (verb, _resource, code) => verb === 'WATCH' && codes.push(code),
    });
    const watch = async (path: string, signal = new AbortController().signal): Promise<unknown[]> => {
      const events: unknown[] = [];
      await client.watch(path, {}, (e) => events.push(e), signal);
      return events;
    };
    try {
      expect(await watch('/api/v1/pods')).to.deep.equal([
        { type: 'ADDED', object: { metadata: { name: 'p3' } } },
      ]);
      expect(clock.waits, 'the seconds each answer asked for').to.deep.equal([2000, 1000]);
      expect(codes, 'each attempt reported').to.deep.equal([429, 503, 200]);

      const noHeader = await watch('/api/v1/nodes').catch((e: KindError) => e);
      expect((noHeader as KindError).context.code, 'no Retry-After: the answer stands').to.equal(429);
      expect(seen.get('/api/v1/nodes')).to.equal(1);

      clock.waits.length = 0;
      const always = await watch('/api/v1/services').catch((e: KindError) => e);
      expect((always as KindError).kind).to.equal('Unavailable');
      expect(seen.get('/api/v1/services'), 'the first try and MAX_RETRIES more').to.equal(1 + MAX_RETRIES);
      expect(clock.waits).to.have.length(MAX_RETRIES);

      // Stopped while it waits: resolves quietly, as a stopped watch does.
      const ac = new AbortController();
      clock.onSleep = () => ac.abort();
      seen.delete('/api/v1/pods');
      expect(await watch('/api/v1/pods', ac.signal)).to.deep.equal([]);
      expect(seen.get('/api/v1/pods'), 'not sent again once stopped').to.equal(1);
    } finally {
      client.close();
      await closeServer(server);
    }
  });
});

describe('kube client: a request that gets no answer', () => {
  let server: http.Server;
  let base = '';
  before(async () => {
    server = http.createServer(() => {}); // never answers
    base = await listenLocal(server);
  });
  after(async () => {
    await closeServer(server);
  });

  it('fails DeadlineExceeded after its timeout, and Unavailable when its caller aborts', async () => {
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true });
    try {
      const t0 = Date.now();
      const timedOut = await client
        .request({ method: 'GET', path: '/api/v1/pods', timeoutMs: 50 })
        .catch((e) => e);
      expect(timedOut).to.be.instanceOf(KindError);
      expect((timedOut as KindError).kind).to.equal('DeadlineExceeded');
      expect(Date.now() - t0).to.be.lessThan(5_000);

      const ac = new AbortController();
      const pending = client
        .request({ method: 'GET', path: '/api/v1/pods', signal: ac.signal })
        .catch((e) => e);
      setTimeout(() => ac.abort(new Error('caller gave up')), 20);
      const aborted = (await pending) as KindError;
      expect(aborted.kind).to.equal('Unavailable');
      expect(aborted.message).to.match(/aborted/);
    } finally {
      client.close();
    }
  });
});

describe('kube client: connection pools', () => {
  let server: http.Server;
  let base = '';
  /** Requests the server holds, by path, until the test answers them; and every connection it accepted. */
  const held = new Map<string, http.ServerResponse>();
  const sockets: Socket[] = [];
  const heldPaths = (): string[] => [...held.keys()].sort();
  const answer = (path: string): void => {
    held.get(path)!.end('{}');
    held.delete(path);
  };
  const until = async (what: () => boolean): Promise<void> => {
    for (let i = 0; i < 500 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(what()).to.equal(true);
  };

  before(async () => {
    server = http.createServer((req, res) => {
      res.setHeader('Content-Type', 'application/json');
      held.set(req.url ?? '', res);
    });
    server.on('connection', (s) => sockets.push(s));
    base = await listenLocal(server);
  });
  after(async () => {
    await closeServer(server);
  });

  it('a pool opens at most its connections and queues the rest in order; another pool is not held up by it', async () => {
    const main = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true, connections: 2 });
    const events = main.withPool(1);
    // A sibling of a pooled client shares that pool, not the first one.
    const nodeEvents = events.withLimits({ unlimited: true });
    try {
      const mainDone = ['/api/v1/a', '/api/v1/b', '/api/v1/c', '/api/v1/d'].map((path) =>
        main.request({ method: 'GET', path }),
      );
      await until(() => held.size === 2);
      expect(heldPaths(), 'two connections, the rest waits').to.deep.equal(['/api/v1/a', '/api/v1/b']);

      const ev1 = events.request({ method: 'POST', path: '/api/v1/e1', body: {} });
      const ev2 = nodeEvents.request({ method: 'POST', path: '/api/v1/e2', body: {} });
      await until(() => held.has('/api/v1/e1'));
      expect(held.size, 'the event pool has its own connection; its second request waits for it').to.equal(3);

      answer('/api/v1/e1');
      await until(() => held.has('/api/v1/e2'));
      answer('/api/v1/e2');
      await Promise.all([ev1, ev2]);
      expect(held.size, 'the full main pool did not move').to.equal(2);

      answer('/api/v1/b');
      await until(() => held.has('/api/v1/c'));
      expect(heldPaths(), 'first come, first served').to.deep.equal(['/api/v1/a', '/api/v1/c']);
      answer('/api/v1/a');
      await until(() => held.has('/api/v1/d'));
      answer('/api/v1/c');
      answer('/api/v1/d');
      await Promise.all(mainDone);
      expect(sockets, 'two connections for the main pool, one for the events').to.have.length(3);

      main.close();
      await until(() => sockets.every((s) => s.destroyed || s.readyState === 'closed'));
    } finally {
      main.close();
    }
  });

  it('closes a connection left unused for its idle timeout, never one whose answer takes longer', async () => {
    const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), {
      unlimited: true,
      idleTimeoutMs: 100,
    });
    const pooled = client.withPool(2);
    try {
      const first = sockets.length;
      const slow = client.request({ method: 'GET', path: '/api/v1/slow' });
      const other = pooled.request({ method: 'GET', path: '/api/v1/other' });
      await until(() => held.size === 2);
      answer('/api/v1/other');
      await other;
      // Held three idle timeouts: the connection carries a request, so it stays.
      await new Promise((r) => setTimeout(r, 300));
      expect(
        sockets.slice(first).filter((s) => s.destroyed),
        'the slow request keeps its connection',
      ).to.have.length(1);
      answer('/api/v1/slow');
      expect(await slow).to.deep.equal({});
      await until(() => sockets.slice(first).every((s) => s.destroyed));

      const later = client.request({ method: 'GET', path: '/api/v1/later' });
      await until(() => held.has('/api/v1/later'));
      expect(sockets.length - first, 'a later request opens a new connection').to.equal(3);
      answer('/api/v1/later');
      await later;
    } finally {
      client.close();
    }
  });

  it('rejects a pool without connections; Infinity is a pool without a bound', async () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      let err: unknown;
      try {
        await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true, connections: bad });
      } catch (e) {
        err = e;
      }
      expect(isInvalidArgument(err), `connections ${bad}`).to.equal(true);
      const client = await KubeClient.fromKubeConfig(kubeConfigFor(base), { unlimited: true });
      try {
        expect(() => client.withPool(bad), `withPool(${bad})`).to.throw(KindError, /at least one connection/);
        const unbounded = client.withPool(Infinity);
        const all = ['/api/v1/u1', '/api/v1/u2', '/api/v1/u3'].map((path) =>
          unbounded.request({ method: 'GET', path }),
        );
        await until(() => held.size === 3);
        for (const path of heldPaths()) answer(path);
        await Promise.all(all);
      } finally {
        client.close();
      }
    }
  });
});

describe('kube client: pathTarget', () => {
  it('names the resource (with its subresource) and whether the path is a collection', () => {
    const cases: [string, string, boolean][] = [
      ['/api/v1/pods', 'pods', true],
      ['/api/v1/pods?watch=true&fieldSelector=spec.nodeName%21%3D', 'pods', true],
      ['/api/v1/namespaces', 'namespaces', true],
      ['/api/v1/namespaces/ns', 'namespaces', false],
      ['/api/v1/namespaces/ns/pods', 'pods', true],
      ['/api/v1/namespaces/ns/pods/p', 'pods', false],
      ['/api/v1/namespaces/ns/pods/p/status', 'pods/status', false],
      ['/api/v1/nodes/n/status', 'nodes/status', false],
      ['/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n', 'leases', false],
      ['/apis/kubelet-operator.dev/v1alpha1/virtualnodes', 'virtualnodes', true],
      ['/apis/kubelet-operator.dev/v1alpha1/virtualnodes/v/status', 'virtualnodes/status', false],
      ['//api//v1/nodes', 'nodes', true],
    ];
    for (const [path, resource, collection] of cases) {
      expect(pathTarget(path), path).to.deep.equal({ resource, collection });
    }
  });
});
