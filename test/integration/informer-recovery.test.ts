/**
 * The informer against a real kube-apiserver, through a loopback TCP proxy that can reset every connection
 * and refuse new ones:
 * (a) connection resets, with objects changed, created and deleted while it reconnects: it watches again
 *     from where it was, so every write arrives as its own handler call and the cache matches the server;
 * (b) 410 Gone: while it is cut off, enough writes go by and etcd compacts past its resourceVersion (the
 *     API server compacts every 5 s here, without a watch cache); on reconnect it lists again, replays the
 *     difference (the delete included) and converges.
 */
import { expect } from 'chai';
import { readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client.js';
import { Informer, restListWatcher } from '../../src/kube/informer.js';
import { RealClock } from '../../src/util/clock.js';
import { errorKind } from '../../src/util/errors.js';
import { startControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';

interface ConfigMap {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string; resourceVersion?: string; uid?: string };
  data?: Record<string, string>;
}

interface Seen {
  kind: 'add' | 'update' | 'delete';
  name: string;
  rv: string;
  value?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A TCP proxy on loopback that can reset every connection it carries and refuse new ones. */
class ResettingProxy {
  private readonly sockets = new Set<net.Socket>();
  private refusing = false;
  connections = 0;
  refused = 0;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  static async start(targetPort: number): Promise<ResettingProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: 0 }, () => resolve());
    });
    const proxy = new ResettingProxy(server, (server.address() as net.AddressInfo).port);
    server.on('connection', (downstream) => proxy.accept(downstream, targetPort));
    return proxy;
  }

  private accept(downstream: net.Socket, targetPort: number): void {
    if (this.refusing) {
      this.refused++;
      downstream.resetAndDestroy();
      return;
    }
    this.connections++;
    const upstream = net.connect({ host: '127.0.0.1', port: targetPort });
    for (const [a, b] of [
      [downstream, upstream],
      [upstream, downstream],
    ] as const) {
      this.sockets.add(a);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        this.sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  }

  /** Resets (RST) every connection in both directions. */
  resetAll(): number {
    const n = this.sockets.size;
    for (const s of [...this.sockets]) {
      if (s.destroyed) continue;
      if (s.connecting) s.destroy();
      else s.resetAndDestroy();
    }
    return n;
  }

  refuse(on: boolean): void {
    this.refusing = on;
  }

  async close(): Promise<void> {
    this.refuse(true);
    this.resetAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** One control plane, a proxy in front of it, a direct client and a client through the proxy. */
/**
 * A control plane with namespace `ns`, an admin client straight to it and one through a ResettingProxy;
 * stop() ends the informer started with startInformer, then all of it.
 */
async function setUp(apiserverArgs: string[], name: string, ns: string) {
  const cp = await startControlPlane({ apiserverArgs });
  const proxy = await ResettingProxy.start(Number(new URL(cp.server).port));
  // The same kubeconfig pointed at the proxy; the serving cert covers 127.0.0.1 whatever the port.
  const proxiedPath = path.join(cp.dir, `${name}-proxied.kubeconfig`);
  const text = await readFile(cp.kubeconfigPath, 'utf8');
  expect(text).to.include(cp.server);
  await writeFile(proxiedPath, text.split(cp.server).join(`https://127.0.0.1:${proxy.port}`));
  const kc = new KubeConfig();
  kc.loadFromFile(proxiedPath);
  const direct = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { qps: 500, burst: 1000 });
  const proxied = await KubeClient.fromKubeConfig(kc, { qps: 500, burst: 1000 });
  await direct.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: ns } } });
  let informer: Informer<ConfigMap> | undefined;
  return {
    cp,
    proxy,
    direct,
    proxied,
    /** Five ConfigMaps cm-0..4, then a ConfigMap informer through the proxy, synced on them. */
    async startInformer() {
      const api = cmApi(direct, ns);
      for (let i = 0; i < 5; i++) await api.create(`cm-${i}`, 'v0');
      const inf = configMapInformer(proxied, ns);
      informer = inf.informer;
      informer.start();
      await informer.waitForSync();
      expect(informer.size).to.equal(5);
      return { api, ...inf };
    },
    async stop() {
      await informer?.stop();
      direct.close();
      proxied.close();
      await proxy.close();
      await cp.stop();
    },
  };
}

/** A ConfigMap informer in `ns` through `client`, recording every handler call. */
function configMapInformer(client: KubeClient, ns: string) {
  const informer = new Informer<ConfigMap>(
    restListWatcher<ConfigMap>(client, `/api/v1/namespaces/${ns}/configmaps`),
    { clock: new RealClock(), name: `configmaps/${ns}`, backoffInitialMs: 100, backoffMaxMs: 1000 },
  );
  const seen: Seen[] = [];
  const rec = (kind: Seen['kind'], cm: ConfigMap) =>
    seen.push({
      kind,
      name: cm.metadata.name ?? '',
      rv: cm.metadata.resourceVersion ?? '',
      value: cm.data?.v,
    });
  informer.addHandlers({
    add: (cm) => rec('add', cm),
    update: (_old, cm) => rec('update', cm),
    delete: (cm) => rec('delete', cm),
  });
  return { informer, seen };
}

function cmApi(client: KubeClient, ns: string) {
  const base = `/api/v1/namespaces/${ns}/configmaps`;
  return {
    create: (name: string, v: string) =>
      client.request<ConfigMap>({ method: 'POST', path: base, body: { metadata: { name }, data: { v } } }),
    update: (name: string, v: string) =>
      client.request<ConfigMap>({
        method: 'PATCH',
        path: `${base}/${name}`,
        contentType: 'application/merge-patch+json',
        body: { data: { v } },
      }),
    delete: (name: string) => client.request<ConfigMap>({ method: 'DELETE', path: `${base}/${name}` }),
    /** name -> resourceVersion, as the server has it now. */
    truth: async () => {
      const list = await client.request<{ items: ConfigMap[] }>({ method: 'GET', path: base });
      return new Map(list.items.map((c) => [c.metadata.name!, c.metadata.resourceVersion!]));
    },
  };
}

const cacheOf = (informer: Informer<ConfigMap>): Map<string, string> =>
  new Map(informer.list().map((c) => [c.metadata.name!, c.metadata.resourceVersion!]));

/** Waits until the informer's cache holds exactly what the server holds (names and resourceVersions). */
async function converged(informer: Informer<ConfigMap>, truth: () => Promise<Map<string, string>>) {
  let server = new Map<string, string>();
  await eventually(
    async () => {
      server = await truth();
      const cache = cacheOf(informer);
      return cache.size === server.size && [...server].every(([k, rv]) => cache.get(k) === rv)
        ? true
        : undefined;
    },
    60_000,
    'the informer cache to match the server',
  ).catch((err: Error) => {
    throw new Error(
      `${err.message}\nserver: ${JSON.stringify([...server])}\ncache: ${JSON.stringify([...cacheOf(informer)])}`,
    );
  });
  return server;
}

describe('informer recovery against a real API server', function () {
  this.timeout(10 * 60_000);

  describe('(a) connection resets', () => {
    const NS = 'informer-reset';
    let env: Awaited<ReturnType<typeof setUp>> | undefined;

    before(async function () {
      this.timeout(20 * 60_000); // cold binaries build
      env = await setUp([], 'reset', NS);
    });

    after(async function () {
      this.timeout(2 * 60_000);
      await env?.stop();
    });

    it('delivers every change made while it reconnects, and its cache matches the server', async () => {
      const { proxy, proxied } = env!;
      const inf = await env!.startInformer();
      const { api, informer } = inf;
      // The watch is live: a change arrives through it.
      const warm = await api.update('cm-4', 'warm');
      await eventually(
        () =>
          informer.get(`${NS}/cm-4`)?.metadata.resourceVersion === warm.metadata.resourceVersion
            ? true
            : undefined,
        10_000,
        'cm-4 warm',
      );
      const watchesBefore = informer.stats.watches;
      // The API server speaks HTTP/2: the watch is a stream on a connection of the client's watches.
      expect(proxied.watchStats()).to.deep.equal({ connections: 1, fallbacks: 0 });

      // Cut off: reset every connection and refuse new ones while the objects change.
      proxy.refuse(true);
      expect(proxy.resetAll(), 'connections reset').to.be.greaterThan(0);
      const writes: { name: string; kind: 'add' | 'update' | 'delete'; rv?: string }[] = [];
      for (const v of ['a1', 'a2', 'a3'])
        writes.push({
          name: 'cm-0',
          kind: 'update',
          rv: (await api.update('cm-0', v)).metadata.resourceVersion,
        });
      await api.delete('cm-1');
      writes.push({ name: 'cm-1', kind: 'delete' });
      writes.push({
        name: 'cm-5',
        kind: 'add',
        rv: (await api.create('cm-5', 'new')).metadata.resourceVersion,
      });
      writes.push({
        name: 'cm-6',
        kind: 'add',
        rv: (await api.create('cm-6', 'short-lived')).metadata.resourceVersion,
      });
      await api.delete('cm-6');
      writes.push({ name: 'cm-6', kind: 'delete' });
      await eventually(
        () => (proxy.refused >= 1 ? true : undefined),
        10_000,
        'a reconnect attempt to be refused',
      );
      proxy.refuse(false);

      // Resets while changes keep coming, some of them while a watch is being set up.
      for (let i = 0; i < 8; i++) {
        writes.push({
          name: 'cm-2',
          kind: 'update',
          rv: (await api.update('cm-2', `storm-${i}`)).metadata.resourceVersion,
        });
        proxy.resetAll();
        await sleep(150 + 50 * (i % 3));
      }
      await api.delete('cm-3');
      writes.push({ name: 'cm-3', kind: 'delete' });

      const server = await converged(informer, api.truth);
      expect([...server.keys()].sort()).to.deep.equal(['cm-0', 'cm-2', 'cm-4', 'cm-5']);
      expect(informer.stats.errors, 'failed list/watch attempts').to.be.greaterThan(0);
      expect(informer.stats.watches).to.be.greaterThan(watchesBefore + 1);
      expect(informer.stats.relistsOnGone, 'no relist was needed').to.equal(0);
      expect(informer.stats.lists, 'resumed by watching, never by listing again').to.equal(1);
      // Resets and refused connections are failures, not a server without HTTP/2: it watches over HTTP/2 again.
      expect(proxied.watchStats()!.fallbacks, 'watches sent over HTTP/1.1').to.equal(0);
      expect(proxied.watchStats()!.connections, 'HTTP/2 connections').to.be.greaterThan(1);

      // Every write was delivered as its own handler call, in order, and nothing else happened.
      const after = inf.seen.slice(inf.seen.findIndex((s) => s.rv === warm.metadata.resourceVersion) + 1);
      expect(after.map((s) => `${s.kind} ${s.name}${s.kind === 'delete' ? '' : ` ${s.rv}`}`)).to.deep.equal(
        writes.map((w) => `${w.kind} ${w.name}${w.kind === 'delete' ? '' : ` ${w.rv}`}`),
      );
      expect(after.filter((s) => s.name === 'cm-0').map((s) => s.value)).to.deep.equal(['a1', 'a2', 'a3']);
    });
  });

  describe('(b) 410 Gone after compaction', () => {
    const NS = 'informer-gone';
    let env: Awaited<ReturnType<typeof setUp>> | undefined;

    before(async function () {
      this.timeout(20 * 60_000);
      // Without the watch cache a watch goes to etcd, which answers 410 for a compacted revision.
      env = await setUp(['--etcd-compaction-interval=5s', '--watch-cache=false'], 'gone', NS);
    });

    after(async function () {
      this.timeout(2 * 60_000);
      await env?.stop();
    });

    it('lists again when its resourceVersion was compacted, replays the difference and converges', async () => {
      const { proxy, direct } = env!;
      const inf = await env!.startInformer();
      const { api, informer } = inf;
      const staleRV = informer.lastSyncResourceVersion;

      proxy.refuse(true);
      proxy.resetAll();
      let last: ConfigMap | undefined;
      for (let i = 0; i < 40; i++) last = await api.update('cm-0', `w${i}`);
      await api.delete('cm-1');
      const created = await api.create('cm-5', 'new');
      // Wait until the server itself refuses the informer's resourceVersion as too old.
      await eventually(
        async () => {
          await api.update('cm-2', `tick-${Date.now()}`); // keeps revisions moving past each compaction
          try {
            await direct.request({
              method: 'GET',
              path: `/api/v1/namespaces/${NS}/configmaps`,
              query: { resourceVersion: staleRV, resourceVersionMatch: 'Exact' },
            });
            return undefined;
          } catch (err) {
            return errorKind(err) === 'Gone' ? true : undefined;
          }
        },
        60_000,
        `resourceVersion ${staleRV} to be compacted`,
      );
      expect(informer.lastSyncResourceVersion, 'the informer saw nothing while cut off').to.equal(staleRV);
      const seenBefore = inf.seen.length;
      proxy.refuse(false);

      const server = await converged(informer, api.truth);
      expect(informer.stats.relistsOnGone, 'relists on 410').to.be.greaterThanOrEqual(1);
      expect(informer.stats.lists).to.be.greaterThanOrEqual(2);
      expect([...server.keys()].sort()).to.deep.equal(['cm-0', 'cm-2', 'cm-3', 'cm-4', 'cm-5']);
      // The relist replayed the difference: the delete, the new object and the last state of the changed ones.
      const replay = inf.seen.slice(seenBefore);
      expect(replay.filter((s) => s.kind === 'delete').map((s) => s.name)).to.deep.equal(['cm-1']);
      expect(replay.filter((s) => s.kind === 'add').map((s) => `${s.name} ${s.rv}`)).to.deep.equal([
        `cm-5 ${created.metadata.resourceVersion}`,
      ]);
      const cm0 = replay.filter((s) => s.name === 'cm-0');
      expect(cm0.at(-1)).to.include({ kind: 'update', rv: last!.metadata.resourceVersion, value: 'w39' });
      expect(
        replay.some((s) => s.name === 'cm-3' || s.name === 'cm-4'),
        'unchanged objects stay quiet',
      ).to.equal(false);
      // And the informer keeps watching afterwards.
      const after = await api.update('cm-4', 'after');
      await eventually(
        () =>
          informer.get(`${NS}/cm-4`)?.metadata.resourceVersion === after.metadata.resourceVersion
            ? true
            : undefined,
        10_000,
        'a change after recovery',
      );
    });
  });
});
