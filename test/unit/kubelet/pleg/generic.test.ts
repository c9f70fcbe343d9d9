import { expect } from 'chai';
import { PodCache } from '../../../../src/kubelet/container/cache.js';
import type { PodUID, RuntimePodStatus } from '../../../../src/kubelet/container/types.js';
import { computePodEvents } from '../../../../src/kubelet/pleg/events.js';
import { GenericPLEG, type PodLister, type RuntimePod } from '../../../../src/kubelet/pleg/generic.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';

type Records = { id: string; state: 'running' | 'exited' | 'created' | 'unknown' }[];

class Lister implements PodLister {
  pods: RuntimePod[] = [];
  listError: Error | undefined;
  inspected: string[] = [];
  /** Called during an inspection, before it resolves. */
  duringInspect: (() => void) | undefined;
  status: (uid: string) => Partial<RuntimePodStatus> = () => ({});

  set(uid: string, containers: Records, sandboxes: Records = []): void {
    this.pods = this.pods.filter((p) => p.uid !== uid);
    this.pods.push({ uid: uid as PodUID, name: uid, namespace: 'ns', containers, sandboxes });
  }
  getPods(): Promise<readonly RuntimePod[]> {
    return this.listError ? Promise.reject(this.listError) : Promise.resolve(this.pods);
  }
  async getPodStatus(uid: PodUID): Promise<RuntimePodStatus> {
    this.inspected.push(uid);
    this.duringInspect?.();
    return { uid, name: uid, namespace: 'ns', sandboxes: [], containers: [], ips: [], ...this.status(uid) };
  }
}

function setup(capacity = 100) {
  const clock = new FakeClock(1_000_000);
  const lister = new Lister();
  const cache = new PodCache();
  const pleg = new GenericPLEG({ lister, cache, clock, channelCapacity: capacity });
  return { clock, lister, cache, pleg };
}

describe('GenericPLEG', () => {
  it('diffs container IDs across containers and sandboxes once each', () => {
    const events = computePodEvents(
      'p',
      { containers: [{ id: 'a', state: 'running' }], sandboxes: [{ id: 'a', state: 'exited' }] },
      { containers: [], sandboxes: [{ id: 's', state: 'running' }] },
    );
    expect(events.map((e) => e.type)).to.deep.equal([
      'ContainerDied',
      'ContainerRemoved',
      'ContainerStarted',
    ]);
  });

  it('is unhealthy before the first relist, healthy after, unhealthy past the threshold', async () => {
    const { clock, pleg, lister } = setup();
    expect(pleg.healthy(clock.now()).healthy).to.equal(false);
    await pleg.relist();
    const t = clock.now();
    expect(pleg.lastRelistTime).to.equal(t);
    expect(pleg.healthy(t + 3 * 60_000).healthy).to.equal(true);
    expect(pleg.healthy(t + 3 * 60_000 + 1).healthy).to.equal(false);
    lister.listError = new Error('runtime down');
    clock.advance(5_000);
    const r = await pleg.relist();
    expect(r.listed).to.equal(false);
    expect(pleg.lastRelistTime).to.equal(t);
  });

  it('drops and counts events when the channel is full', async () => {
    const { pleg, lister } = setup(2);
    lister.set('p', [
      { id: 'a', state: 'running' },
      { id: 'b', state: 'running' },
      { id: 'c', state: 'running' },
    ]);
    const r = await pleg.relist();
    expect(r).to.deep.include({ listed: true, eventsSent: 2, eventsDropped: 1 });
    expect(pleg.discardedEvents).to.equal(1);
    expect(pleg.events.drain()).to.have.length(2);
  });

  it('deletes the cache entry and the record of a pod that disappeared, without inspecting it', async () => {
    const { pleg, lister, cache } = setup();
    lister.set('p', [{ id: 'a', state: 'exited' }]);
    await pleg.relist();
    expect(cache.entry('p')).to.not.equal(undefined);
    lister.pods = [];
    lister.inspected = [];
    await pleg.relist();
    expect(cache.entry('p')).to.equal(undefined);
    expect(lister.inspected).to.deep.equal([]);
    expect(pleg.events.drain().map((e) => e.type)).to.deep.equal(['ContainerDied', 'ContainerRemoved']);
    await pleg.relist();
    expect(pleg.events.drain()).to.deep.equal([]);
  });

  describe('relistPod (PLEGOnDemandRelist)', () => {
    const ref = { uid: 'p' as PodUID, name: 'p', namespace: 'ns' };

    it("sends the pod's events at once, before the next relist, which does not send them again", async () => {
      const { pleg, lister, cache, clock } = setup();
      lister.set('p', [{ id: 'a', state: 'running' }]);
      await pleg.relist();
      pleg.events.drain();
      const relisted = clock.now();
      // A sync started container b, 100 ms into the 1 s relist period.
      clock.advance(100);
      lister.set('p', [
        { id: 'a', state: 'running' },
        { id: 'b', state: 'running' },
      ]);
      lister.status = () => ({ ips: ['10.0.0.1'] });
      const r = await pleg.relistPod(ref);
      expect(r).to.deep.include({ error: undefined, eventsSent: 1 });
      expect(r.status.ips).to.deep.equal(['10.0.0.1']);
      expect(pleg.events.drain()).to.deep.equal([{ podUID: 'p', type: 'ContainerStarted', data: 'b' }]);
      expect(cache.entry('p')).to.deep.include({ modified: clock.now(), error: undefined });
      expect(pleg.lastRelistTime, 'no relist ran').to.equal(relisted);
      clock.advance(900);
      const next = await pleg.relist();
      expect(next).to.deep.include({ eventsSent: 0 });
      expect(pleg.events.drain()).to.deep.equal([]);
    });

    it('inspects a pod whose listing did not change, and sends nothing', async () => {
      const { pleg, lister } = setup();
      lister.set('p', [{ id: 'a', state: 'running' }]);
      await pleg.relist();
      pleg.events.drain();
      lister.inspected = [];
      const r = await pleg.relistPod(ref);
      expect(r).to.deep.include({ error: undefined, eventsSent: 0 });
      expect(lister.inspected).to.deep.equal(['p']);
      expect(pleg.events.drain()).to.deep.equal([]);
    });

    it('a failed inspection sends nothing and leaves the change to the next relist', async () => {
      const { pleg, lister } = setup();
      lister.set('p', [{ id: 'a', state: 'running' }]);
      await pleg.relist();
      pleg.events.drain();
      lister.set('p', [{ id: 'a', state: 'exited' }]);
      const getPodStatus = lister.getPodStatus.bind(lister);
      lister.getPodStatus = () => Promise.reject(new Error('runtime down'));
      const r = await pleg.relistPod(ref);
      expect(r.error).to.be.instanceOf(Error);
      expect(r.eventsSent).to.equal(0);
      expect([...pleg.reinspectionSet]).to.deep.equal(['p']);
      expect(pleg.events.drain()).to.deep.equal([]);
      lister.getPodStatus = getPodStatus;
      await pleg.relist();
      expect(pleg.events.drain()).to.deep.equal([{ podUID: 'p', type: 'ContainerDied', data: 'a' }]);
    });

    it('a pod the runtime no longer lists is only inspected; its events wait for the relist', async () => {
      const { pleg, lister, cache } = setup();
      lister.set('p', [{ id: 'a', state: 'exited' }]);
      await pleg.relist();
      pleg.events.drain();
      lister.pods = [];
      const r = await pleg.relistPod(ref);
      expect(r).to.deep.include({ error: undefined, eventsSent: 0 });
      expect(cache.entry('p')).to.not.equal(undefined);
      expect(pleg.events.drain()).to.deep.equal([]);
      await pleg.relist();
      expect(pleg.events.drain().map((e) => e.type)).to.deep.equal(['ContainerRemoved']);
    });
  });

  it('sets the cache global timestamp to the relist start', async () => {
    const { pleg, cache, clock } = setup();
    await pleg.relist();
    expect(cache.globalTimestamp).to.equal(clock.now());
  });

  it('keeps a condition that was re-registered while its check was in flight', async () => {
    const { pleg, lister } = setup();
    lister.set('p', []);
    pleg.setPodWatchCondition('p', 'k', () => true);
    lister.duringInspect = () => pleg.setPodWatchCondition('p', 'k', () => true);
    await pleg.relist();
    expect(pleg.events.drain().map((e) => e.type)).to.deep.equal(['ConditionMet']);
    expect(pleg.podWatchConditions('p').get('k')).to.equal(1);
    lister.duringInspect = undefined;
    await pleg.relist();
    expect(pleg.podWatchConditions('p').size).to.equal(0);
  });

  it('emits one ConditionMet however many conditions hold; drops conditions of vanished pods', async () => {
    const { pleg, lister } = setup();
    lister.set('p', []);
    pleg.setPodWatchCondition('p', 'a', () => true);
    pleg.setPodWatchCondition('p', 'b', () => true);
    pleg.setPodWatchCondition('p', 'c', () => {
      throw new Error('bad condition');
    });
    await pleg.relist();
    expect(pleg.events.drain()).to.deep.equal([{ podUID: 'p', type: 'ConditionMet' }]);
    expect([...pleg.podWatchConditions('p').keys()]).to.deep.equal(['c']);
    pleg.setPodWatchCondition('gone', 'x', () => true);
    await pleg.relist();
    expect(pleg.podWatchConditions('gone').size).to.equal(0);
  });

  it('keeps cached IPs only while no sandbox is ready', async () => {
    const { pleg, lister, cache } = setup();
    lister.set('p', [{ id: 'a', state: 'running' }]);
    lister.status = () => ({ ips: ['10.0.0.1'] });
    await pleg.relist();
    lister.set('p', [{ id: 'a', state: 'exited' }]);
    lister.status = (uid) => ({
      ips: [],
      sandboxes: [{ id: 's' as never, state: 'ready', attempt: 0, ip: null, netns: 'pod' }],
      uid: uid as PodUID,
    });
    await pleg.relist();
    expect(cache.get('p').status.ips).to.deep.equal([]);
  });

  it('serializes overlapping relists', async () => {
    const { pleg, lister } = setup();
    lister.set('p', [{ id: 'a', state: 'running' }]);
    const [r1, r2] = await Promise.all([pleg.relist(), pleg.relist()]);
    expect(r1).to.deep.include({ eventsSent: 1 });
    expect(r2).to.deep.include({ eventsSent: 0 });
  });

  it('treats a malformed listing as a failed relist and rejects bad configuration', async () => {
    const { pleg, lister } = setup();
    lister.pods = [{ uid: 'p' } as unknown as RuntimePod];
    const r = await pleg.relist();
    expect(r.listed).to.equal(false);
    expect(() => new GenericPLEG({} as never))
      .to.throw()
      .satisfy(isInvalidArgument);
  });
});

describe('GenericPLEG updateCache after a runtime outage', () => {
  it('re-inspects a pod whose updateCache failed at the next relist, though its containers did not change', async () => {
    const { clock, lister, cache, pleg } = setup();
    lister.set('p', [{ id: 'a', state: 'running' }]);
    await pleg.relist();
    pleg.events.drain();
    const working = lister.getPodStatus.bind(lister);
    lister.getPodStatus = () => Promise.reject(new Error('runtime unavailable'));
    clock.advance(1000);
    const got = await pleg.updateCache({ uid: 'p' as PodUID, name: 'p', namespace: 'ns' });
    expect(String(got.error)).to.contain('runtime unavailable');
    expect(String(cache.get('p').error)).to.contain('runtime unavailable');
    lister.getPodStatus = working;
    clock.advance(1000);
    lister.inspected = [];
    const r = await pleg.relist();
    expect(r).to.deep.include({ listed: true, eventsSent: 0 });
    expect(lister.inspected).to.deep.equal(['p']);
    expect(cache.get('p').error).to.equal(undefined);
    // Once current, the pod is left alone again.
    lister.inspected = [];
    await pleg.relist();
    expect(lister.inspected).to.deep.equal([]);
  });

  it('forgets a failed updateCache of a pod the runtime no longer lists', async () => {
    const { clock, lister, cache, pleg } = setup();
    lister.getPodStatus = () => Promise.reject(new Error('runtime unavailable'));
    await pleg.updateCache({ uid: 'gone' as PodUID, name: 'gone', namespace: 'ns' });
    expect(cache.get('gone').error).to.not.equal(undefined);
    clock.advance(1000);
    await pleg.relist();
    expect(cache.get('gone').error).to.equal(undefined);
  });

  describe('a lister that answers with the very listing of the last relist', () => {
    it('diffs and inspects nothing; the relist time and the cache time still move', async () => {
      const { clock, pleg, lister, cache } = setup();
      lister.set('p', [{ id: 'a', state: 'running' }]);
      let reads = 0;
      lister.pods = new Proxy(lister.pods, {
        get: (target, key, receiver) => {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
      expect(await pleg.relist()).to.deep.include({ listed: true, eventsSent: 1, inspected: ['p'] });
      pleg.events.drain();
      lister.inspected = [];
      clock.advance(1000);
      reads = 0;
      const r = await pleg.relist();
      expect(reads, 'not a pod of the listing looked at').to.equal(0);
      expect(r).to.deep.equal({
        listed: true,
        eventsSent: 0,
        eventsDropped: 0,
        inspected: [],
        inspectionFailed: [],
      });
      expect(lister.inspected).to.deep.equal([]);
      expect(pleg.lastRelistTime).to.equal(clock.now());
      // A worker waiting for a status newer than now - 1 is answered: the cache is current as of this relist.
      let answered = false;
      void cache.getNewerThan('p', clock.now() - 1).then(() => (answered = true));
      await new Promise((res) => setImmediate(res));
      expect(answered).to.equal(true);
      // A new array with a change is diffed as ever.
      lister.set('p', [{ id: 'a', state: 'exited' }]);
      await pleg.relist();
      expect(pleg.events.drain().map((e) => e.type)).to.deep.equal(['ContainerDied']);
    });

    it('still inspects a pod whose last inspection failed, or that a watch condition waits on', async () => {
      const { clock, pleg, lister } = setup();
      lister.set('p', [{ id: 'a', state: 'running' }]);
      let fail = true;
      lister.duringInspect = () => {
        if (fail) {
          fail = false;
          throw new Error('runtime busy');
        }
      };
      expect(await pleg.relist()).to.deep.include({ inspectionFailed: ['p'] });
      clock.advance(1000);
      expect(await pleg.relist(), 'same listing, reinspected').to.deep.include({
        inspected: ['p'],
        inspectionFailed: [],
      });
      clock.advance(1000);
      expect(await pleg.relist()).to.deep.include({ inspected: [] });
      pleg.setPodWatchCondition('p', 'resize', () => false);
      clock.advance(1000);
      expect(await pleg.relist(), 'watched').to.deep.include({ inspected: ['p'] });
    });
  });
});
