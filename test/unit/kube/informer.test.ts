import { expect } from 'chai';
import {
  Informer,
  stripManagedFields,
  type KObject,
  type ListResult,
  type ListWatcher,
  type WatchEvent,
} from '../../../src/kube/informer.js';
import { FakeClock } from '../../../src/util/clock.js';
import { KindError } from '../../../src/util/errors.js';

interface Obj extends KObject {
  spec?: { node?: string };
}

const obj = (name: string, rv: string, node?: string): Obj => ({
  metadata: { name, namespace: 'ns', resourceVersion: rv },
  spec: { node },
});

type WatchScript = (emit: (e: WatchEvent) => void, signal: AbortSignal) => Promise<void>;

/** Scripted transport: each list/watch call takes the next entry; when scripts run out, watches hang. */
class ScriptedLW implements ListWatcher<Obj> {
  lists: (ListResult<Obj> | Error)[] = [];
  watches: WatchScript[] = [];
  watchRVs: string[] = [];
  async list(): Promise<ListResult<Obj>> {
    const next = this.lists.shift();
    if (!next) throw new Error('no list scripted');
    if (next instanceof Error) throw next;
    return next;
  }
  async watch(rv: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    this.watchRVs.push(rv);
    const script = this.watches.shift() ?? hang;
    await script(onEvent, signal);
  }
}

const hang: WatchScript = (_emit, signal) =>
  new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

const flush = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

function recorder(inf: Informer<Obj>) {
  const events: string[] = [];
  inf.addHandlers({
    add: (o) => events.push(`add ${o.metadata!.name}@${o.metadata!.resourceVersion}`),
    update: (a, b) =>
      events.push(
        `update ${b.metadata!.name}@${a.metadata!.resourceVersion}->${b.metadata!.resourceVersion}`,
      ),
    delete: (o) => events.push(`delete ${o.metadata!.name}`),
  });
  return events;
}

describe('Informer', () => {
  it('lists, syncs, then applies watch events from the list resourceVersion', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [obj('a', '1')], resourceVersion: '10' });
    lw.watches.push(async (emit) => {
      emit({ type: 'ADDED', object: obj('b', '11') });
      emit({ type: 'MODIFIED', object: obj('a', '12') });
      emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } });
      emit({ type: 'DELETED', object: obj('b', '16') });
    });
    const inf = new Informer(lw, { clock, name: 't' });
    const events = recorder(inf);
    inf.start();
    await inf.waitForSync();
    await flush();
    expect(lw.watchRVs[0]).to.equal('10');
    expect(events).to.deep.equal(['add a@1', 'add b@11', 'update a@1->12', 'delete b']);
    expect(inf.lastSyncResourceVersion).to.equal('16');
    expect(lw.watchRVs[1]).to.equal('16', 'a normally ended watch resumes from the last resourceVersion');
    await inf.stop();
  });

  it('stores and hands out objects without managedFields when told to strip them', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    const withFields = (name: string, rv: string): Obj => {
      const o = obj(name, rv);
      (o.metadata as Record<string, unknown>).managedFields = [
        { manager: 'kubectl', fieldsV1: { 'f:spec': {} } },
      ];
      return o;
    };
    lw.lists.push({ items: [withFields('a', '1')], resourceVersion: '10' });
    lw.watches.push(async (emit) => {
      emit({ type: 'ADDED', object: withFields('b', '11') });
    });
    const inf = new Informer(lw, { clock, name: 't', transform: stripManagedFields });
    const seen: Obj[] = [];
    inf.addHandlers({ add: (o) => seen.push(o) });
    inf.start();
    await inf.waitForSync();
    await flush();
    expect(seen.map((o) => o.metadata!.name)).to.deep.equal(['a', 'b']);
    for (const o of [...seen, inf.get('ns/a')!, inf.get('ns/b')!]) {
      expect(o.metadata).to.not.have.property('managedFields');
      expect(o.metadata).to.include({ namespace: 'ns' });
    }
    await inf.stop();
  });

  it('shares what did not change between versions, on watch updates and relists', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [obj('a', '1', 'n1')], resourceVersion: '5' });
    lw.lists.push({ items: [obj('a', '7', 'n1')], resourceVersion: '9' });
    lw.watches.push(async (emit) => {
      emit({ type: 'MODIFIED', object: obj('a', '6', 'n1') });
      emit({ type: 'ERROR', object: { code: 410, message: 'too old' } });
    });
    const inf = new Informer(lw, { clock, name: 't' });
    const versions: Obj[] = [];
    inf.addHandlers({ add: (o) => versions.push(o), update: (_a, b) => versions.push(b) });
    inf.start();
    await flush(10);
    expect(versions.map((o) => o.metadata!.resourceVersion)).to.deep.equal(['1', '6', '7']);
    expect(versions[1]!.spec).to.equal(versions[0]!.spec);
    expect(versions[2]!.spec).to.equal(versions[0]!.spec);
    expect(inf.get('ns/a')).to.equal(versions[2]);
    expect(versions[2]!.metadata).to.deep.equal({ name: 'a', namespace: 'ns', resourceVersion: '7' });
    await inf.stop();
  });

  it('relists on 410 Gone and replays the difference as events', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [obj('a', '1'), obj('b', '1')], resourceVersion: '5' });
    lw.lists.push({ items: [obj('a', '7'), obj('c', '6')], resourceVersion: '9' });
    lw.watches.push(async (emit) => emit({ type: 'ERROR', object: { code: 410, message: 'too old' } }));
    const inf = new Informer(lw, { clock, name: 't' });
    const events = recorder(inf);
    inf.start();
    await flush(10);
    expect(events).to.deep.equal(['add a@1', 'add b@1', 'update a@1->7', 'add c@6', 'delete b']);
    expect(inf.stats.relistsOnGone).to.equal(1);
    expect(lw.watchRVs).to.deep.equal(['5', '9']);
    await inf.stop();
  });

  it('also relists when the watch request itself fails with Gone', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [], resourceVersion: '5' }, { items: [obj('x', '8')], resourceVersion: '8' });
    lw.watches.push(async () => {
      throw new KindError('Gone', 'expired');
    });
    const inf = new Informer(lw, { clock, name: 't' });
    const events = recorder(inf);
    inf.start();
    await flush(10);
    expect(events).to.deep.equal(['add x@8']);
    await inf.stop();
  });

  it('backs off with jitter between 0.8 s and 30 s after failures', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push(new Error('down'), new Error('down'), { items: [], resourceVersion: '1' });
    const inf = new Informer(lw, { clock, name: 't', random: () => 0 });
    inf.start();
    await flush();
    expect(inf.hasSynced()).to.equal(false);
    clock.advance(799);
    await flush();
    expect(inf.stats.lists).to.equal(1);
    clock.advance(1);
    await flush();
    expect(inf.stats.lists).to.equal(2);
    clock.advance(1600);
    await flush();
    expect(inf.hasSynced()).to.equal(true);
    await inf.stop();
  });

  it('restarts a silent watch when the watchdog fires, from the same resourceVersion', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [], resourceVersion: '3' });
    const inf = new Informer(lw, { clock, name: 't', watchdogMs: 1000 });
    inf.start();
    await flush();
    expect(lw.watchRVs).to.deep.equal(['3']);
    clock.advance(1000);
    await flush();
    expect(inf.stats.watchdogFired).to.equal(1);
    expect(lw.watchRVs).to.deep.equal(['3', '3']);
    expect(inf.stats.lists).to.equal(1, 'no relist needed');
    await inf.stop();
  });

  it('hands out the same index array until an object under it changes, then a new one', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [obj('a', '1', 'n1'), obj('b', '1', 'n2')], resourceVersion: '1' });
    const emits: ((e: WatchEvent) => void)[] = [];
    lw.watches.push((emit, signal) => {
      emits.push(emit);
      return hang(emit, signal);
    });
    const inf = new Informer(lw, { clock, name: 't' });
    inf.addIndex('node', (o) => (o.spec?.node ? [o.spec.node] : []));
    inf.start();
    await flush(10);
    const n1 = inf.byIndex('node', 'n1');
    const n2 = inf.byIndex('node', 'n2');
    expect(inf.byIndex('node', 'n1')).to.equal(n1, 'asked again, nothing changed');
    emits[0]!({ type: 'MODIFIED', object: obj('b', '2', 'n2') });
    expect(inf.byIndex('node', 'n1')).to.equal(n1, 'a change under another value');
    const n2b = inf.byIndex('node', 'n2');
    expect(n2b).to.not.equal(n2);
    expect(n2b.map((o) => o.metadata!.resourceVersion)).to.deep.equal(['2']);
    expect(n2.map((o) => o.metadata!.resourceVersion)).to.deep.equal(
      ['1'],
      'an array handed out stays as it was',
    );
    emits[0]!({ type: 'ADDED', object: obj('c', '3', 'n1') });
    expect(inf.byIndex('node', 'n1').map((o) => o.metadata!.name)).to.deep.equal(['a', 'c']);
    emits[0]!({ type: 'DELETED', object: obj('a', '4', 'n1') });
    expect(inf.byIndex('node', 'n1').map((o) => o.metadata!.name)).to.deep.equal(['c']);
    emits[0]!({ type: 'MODIFIED', object: obj('c', '5', 'n2') });
    expect(inf.byIndex('node', 'n1')).to.deep.equal([], 'moved to another value');
    expect(inf.byIndex('node', 'n2').map((o) => o.metadata!.name)).to.deep.equal(['b', 'c']);
    await inf.stop();
  });

  it('survives a throwing handler and keeps indexes current', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [obj('a', '1', 'n1'), obj('b', '1', 'n2')], resourceVersion: '1' });
    lw.watches.push(async (emit) => {
      emit({ type: 'MODIFIED', object: obj('a', '2', 'n2') });
      emit({ type: 'DELETED', object: obj('b', '3', 'n2') });
      // Same index value: the index still hands out the newest object.
      emit({ type: 'MODIFIED', object: obj('a', '4', 'n2') });
    });
    const inf = new Informer(lw, { clock, name: 't' });
    inf.addIndex('node', (o) => (o.spec?.node ? [o.spec.node] : []));
    inf.addHandlers({
      add: () => {
        throw new Error('bad handler');
      },
    });
    const events = recorder(inf);
    inf.start();
    await flush(10);
    expect(inf.stats.handlerErrors).to.equal(2);
    expect(events).to.include('update a@1->2');
    expect(inf.byIndex('node', 'n1').map((o) => o.metadata!.name)).to.deep.equal([]);
    expect(
      inf.byIndex('node', 'n2').map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`),
    ).to.deep.equal(['a@4']);
    expect(inf.size).to.equal(1);
    await inf.stop();
  });
});

describe('Informer against a server that closes watches at once', () => {
  it('backs off instead of spinning', async () => {
    const clock = new FakeClock(0);
    const lw = new ScriptedLW();
    lw.lists.push({ items: [], resourceVersion: '1' });
    for (let i = 0; i < 100; i++) lw.watches.push(async () => {});
    const inf = new Informer(lw, { clock, name: 't', random: () => 0 });
    inf.start();
    await flush(20);
    expect(lw.watchRVs.length).to.equal(1, 'second watch waits for the back-off');
    clock.advance(800);
    await flush(20);
    expect(lw.watchRVs.length).to.equal(2);
    await inf.stop();
  });
});
