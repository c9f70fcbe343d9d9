import { expect } from 'chai';
import type { RequestOptions } from '../../../../src/kube/client.js';
import { ObjectCache, type ObjectGetter } from '../../../../src/kubelet/util/objectcache.js';
import { DefaultObjectTTLMs, restVolumeSources } from '../../../../src/kubelet/volume/sources.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { KindError } from '../../../../src/util/errors.js';

/** A client answering GETs from a map of path -> object; a missing path is a NotFound; `fail` rejects. */
class FakeClient {
  readonly objects = new Map<string, unknown>();
  readonly fail = new Map<string, Error>();
  readonly paths: string[] = [];
  /** When set, requests wait for `release()`. */
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;

  hold(): void {
    this.gate = new Promise((r) => (this.open = r));
  }
  release(): void {
    this.open?.();
    this.gate = undefined;
  }

  async request<T>(opts: RequestOptions): Promise<T> {
    expect(opts.method).to.equal('GET');
    this.paths.push(opts.path);
    if (this.gate) await this.gate;
    const err = this.fail.get(opts.path);
    if (err) throw err;
    if (!this.objects.has(opts.path))
      throw new KindError('NotFound', `GET ${opts.path}: 404 NotFound`, { code: 404 });
    return structuredClone(this.objects.get(opts.path)) as T;
  }
}

const CM = '/api/v1/namespaces/prod/configmaps/app';

function setup(ttlMs?: number) {
  const client = new FakeClient();
  const clock = new FakeClock();
  const sources = restVolumeSources(client, clock, ttlMs);
  return { client, clock, sources };
}

describe('volumemanager/sources (restVolumeSources)', () => {
  it('GETs each kind at its API path, names and namespaces escaped', async () => {
    const { client, sources } = setup();
    client.objects.set('/api/v1/namespaces/prod/configmaps/app', { data: { a: '1' } });
    client.objects.set('/api/v1/namespaces/prod/secrets/db', { data: { p: 'cHc=' } });
    client.objects.set('/api/v1/namespaces/prod/persistentvolumeclaims/data', {
      metadata: {},
      spec: { volumeName: 'pv1' },
    });
    client.objects.set('/api/v1/persistentvolumes/pv1', { metadata: { name: 'pv1' }, spec: {} });
    expect(await sources.getConfigMap('prod', 'app')).to.deep.equal({ data: { a: '1' } });
    expect(await sources.getSecret('prod', 'db')).to.deep.equal({ data: { p: 'cHc=' } });
    expect((await sources.getPersistentVolumeClaim('prod', 'data'))?.spec.volumeName).to.equal('pv1');
    expect((await sources.getPersistentVolume('pv1'))?.metadata.name).to.equal('pv1');
    expect(await sources.getConfigMap('a b', 'x/y')).to.equal(undefined);
    expect(client.paths.at(-1)).to.equal('/api/v1/namespaces/a%20b/configmaps/x%2Fy');
  });

  it('serves a fetched object for the TTL (10 s by default), then asks again', async () => {
    const { client, clock, sources } = setup();
    expect(DefaultObjectTTLMs).to.equal(10_000);
    client.objects.set(CM, { data: { v: '1' } });
    await sources.getConfigMap('prod', 'app');
    client.objects.set(CM, { data: { v: '2' } });
    clock.advance(DefaultObjectTTLMs);
    expect(await sources.getConfigMap('prod', 'app')).to.deep.equal({ data: { v: '1' } });
    expect(client.paths).to.have.length(1);
    clock.advance(1);
    expect(await sources.getConfigMap('prod', 'app')).to.deep.equal({ data: { v: '2' } });
    expect(client.paths).to.have.length(2);
  });

  it('caches NotFound like an object: one GET per TTL for a missing ConfigMap', async () => {
    const { client, clock, sources } = setup(1000);
    for (let i = 0; i < 5; i++) expect(await sources.getConfigMap('prod', 'app')).to.equal(undefined);
    expect(client.paths).to.have.length(1);
    client.objects.set(CM, { data: {} });
    clock.advance(1001);
    expect(await sources.getConfigMap('prod', 'app')).to.deep.equal({ data: {} });
    expect(client.paths).to.have.length(2);
  });

  it('does not cache other failures: the next get asks again', async () => {
    const { client, sources } = setup();
    client.fail.set(CM, new KindError('Forbidden', 'configmaps "app" is forbidden'));
    let err: unknown;
    try {
      await sources.getConfigMap('prod', 'app');
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(KindError);
    expect((err as Error).message).to.equal('configmaps "app" is forbidden');
    client.fail.delete(CM);
    client.objects.set(CM, { data: { ok: 'yes' } });
    expect(await sources.getConfigMap('prod', 'app')).to.deep.equal({ data: { ok: 'yes' } });
    expect(client.paths).to.have.length(2);
  });

  it('shares one request between concurrent gets of one object', async () => {
    const { client, sources } = setup();
    client.objects.set(CM, { data: { v: '1' } });
    client.hold();
    const all = Promise.all([
      sources.getConfigMap('prod', 'app'),
      sources.getConfigMap('prod', 'app'),
      sources.getConfigMap('prod', 'app'),
    ]);
    await new Promise((r) => setImmediate(r));
    client.release();
    expect(await all).to.deep.equal([{ data: { v: '1' } }, { data: { v: '1' } }, { data: { v: '1' } }]);
    expect(client.paths).to.deep.equal([CM]);
  });

  it('maxAgeMs asks for a fresher copy than the TTL, never a staler one', async () => {
    const { client, clock, sources } = setup(10_000);
    client.objects.set(CM, { data: { v: '1' } });
    await sources.getConfigMap('prod', 'app');
    clock.advance(2000);
    await sources.getConfigMap('prod', 'app', 5000);
    expect(client.paths).to.have.length(1);
    await sources.getConfigMap('prod', 'app', 1000);
    expect(client.paths).to.have.length(2);
    clock.advance(10_001);
    await sources.getConfigMap('prod', 'app', 60_000);
    expect(client.paths).to.have.length(3);
  });

  it('keeps ConfigMaps and Secrets of the same name apart', async () => {
    const { client, sources } = setup();
    client.objects.set(CM, { data: { kind: 'cm' } });
    client.objects.set('/api/v1/namespaces/prod/secrets/app', { data: { kind: 'c2VjcmV0' } });
    expect(await sources.getConfigMap('prod', 'app')).to.deep.equal({ data: { kind: 'cm' } });
    expect(await sources.getSecret('prod', 'app')).to.deep.equal({ data: { kind: 'c2VjcmV0' } });
  });

  it('prune() runs over every cache without losing fresh entries', async () => {
    const { client, sources } = setup();
    client.objects.set(CM, { data: {} });
    await sources.getConfigMap('prod', 'app');
    sources.prune();
    await sources.getConfigMap('prod', 'app');
    expect(client.paths).to.have.length(1);
  });
});

describe('util/objectcache (ObjectCache)', () => {
  class Getter implements ObjectGetter<string> {
    calls: string[] = [];
    async get(namespace: string, name: string): Promise<string | undefined> {
      this.calls.push(`${namespace}/${name}`);
      return name === 'missing' ? undefined : `${name}@${this.calls.length}`;
    }
  }

  it('stamps an entry when its fetch completes, and counts entries', async () => {
    const g = new Getter();
    const clock = new FakeClock();
    const c = new ObjectCache(g, clock, 100);
    expect(await c.get('ns', 'a')).to.equal('a@1');
    expect(await c.get('ns', 'missing')).to.equal(undefined);
    expect(c.size).to.equal(2);
  });

  it('invalidate() forgets one object', async () => {
    const g = new Getter();
    const c = new ObjectCache(g, new FakeClock(), 60_000);
    await c.get('ns', 'a');
    await c.get('ns', 'b');
    c.invalidate('ns', 'a');
    expect(await c.get('ns', 'a')).to.equal('a@3');
    expect(await c.get('ns', 'b')).to.equal('b@2');
  });

  it('prune() drops entries idle longer than maxIdleMs, and only those', async () => {
    const g = new Getter();
    const clock = new FakeClock();
    const c = new ObjectCache(g, clock, 60 * 60_000, 10 * 60_000);
    await c.get('ns', 'old');
    clock.advance(6 * 60_000);
    await c.get('ns', 'new');
    clock.advance(5 * 60_000);
    c.prune();
    expect(c.size).to.equal(1);
    expect(await c.get('ns', 'new')).to.equal('new@2');
    expect(await c.get('ns', 'old')).to.equal('old@3');
  });

  it('the default maxIdleMs is ten minutes', async () => {
    const g = new Getter();
    const clock = new FakeClock();
    const c = new ObjectCache(g, clock, 60 * 60_000);
    await c.get('ns', 'a');
    clock.advance(10 * 60_000);
    c.prune();
    expect(c.size).to.equal(1);
    clock.advance(1);
    c.prune();
    expect(c.size).to.equal(0);
  });

  it('a rejected fetch is shared by concurrent callers and leaves nothing in flight', async () => {
    let calls = 0;
    let fail = true;
    const c = new ObjectCache<string>(
      {
        get: async () => {
          calls++;
          if (fail) throw new Error('boom');
          return 'ok';
        },
      },
      new FakeClock(),
      1000,
    );
    const results = await Promise.allSettled([c.get('ns', 'x'), c.get('ns', 'x')]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    expect(calls).to.equal(1);
    fail = false;
    expect(await c.get('ns', 'x')).to.equal('ok');
    expect(calls).to.equal(2);
  });
});
