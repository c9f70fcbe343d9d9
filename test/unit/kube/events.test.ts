import { expect } from 'chai';
import { StartupHold } from '../../../src/kube/startuphold.js';
import {
  EVENT_RETRY_SLEEP_MS,
  EVENT_WRITE_TRIES,
  EventCorrelator,
  EventRecorder,
  type CoreEvent,
  type EventSink,
} from '../../../src/kube/events.js';
import { FakeClock } from '../../../src/util/clock.js';
import { KindError } from '../../../src/util/errors.js';

const pod = { kind: 'Pod', apiVersion: 'v1', namespace: 'ns', name: 'p', uid: 'u1' };

describe('EventCorrelator', () => {
  it('creates once, then patches count and lastTimestamp for the same event', () => {
    const c = new EventCorrelator({ component: 'kubelet', host: 'node-1' });
    const t0 = Date.UTC(2026, 0, 1);
    const first = c.correlate(pod, 'Warning', 'BackOff', 'Back-off restarting failed container', t0);
    expect(first.action).to.equal('create');
    if (first.action !== 'create') return;
    expect(first.event.source).to.deep.equal({ component: 'kubelet', host: 'node-1' });
    expect(first.event.reportingComponent).to.equal('kubelet');
    expect(first.event.count).to.equal(1);
    const second = c.correlate(pod, 'Warning', 'BackOff', 'Back-off restarting failed container', t0 + 5000);
    expect(second.action).to.equal('patch');
    if (second.action !== 'patch') return;
    expect(second.event.metadata.name).to.equal(first.event.metadata.name);
    expect(second.patch.count).to.equal(2);
    expect(second.patch.lastTimestamp).to.equal('2026-01-01T00:00:05Z');
  });

  it('patches with the whole Event as created, only count, lastTimestamp and message moved on', () => {
    const c = new EventCorrelator({ component: 'kubelet', host: 'node-1' });
    const first = c.correlate(pod, 'Warning', 'Unhealthy', 'm', 1000);
    const second = c.correlate(pod, 'Warning', 'Unhealthy', 'm', 3000);
    const third = c.correlate(pod, 'Warning', 'Unhealthy', 'm', 7000);
    if (first.action !== 'create' || second.action !== 'patch' || third.action !== 'patch')
      throw new Error('expected create, patch, patch');
    expect(second.event).to.deep.equal({ ...first.event, count: 2, lastTimestamp: '1970-01-01T00:00:03Z' });
    expect(third.event).to.deep.equal({ ...first.event, count: 3, lastTimestamp: '1970-01-01T00:00:07Z' });
    expect(third.event.involvedObject).to.equal(pod);
  });

  it('starts a new Event after the 10 minute window', () => {
    const c = new EventCorrelator({ component: 'kubelet', host: 'n' });
    c.correlate(pod, 'Normal', 'Pulled', 'x', 0);
    expect(c.correlate(pod, 'Normal', 'Pulled', 'x', 10 * 60_000 + 1).action).to.equal('create');
  });

  it('combines more than ten distinct messages of one reason', () => {
    const c = new EventCorrelator({ component: 'kubelet', host: 'n' });
    const actions = Array.from({ length: 12 }, (_, i) =>
      c.correlate(pod, 'Warning', 'Unhealthy', `m${i}`, i),
    );
    expect(actions.slice(0, 10).every((a) => a.action === 'create')).to.equal(true);
    const eleventh = actions[10]!;
    expect(eleventh.action).to.equal('create');
    if (eleventh.action === 'create')
      expect(eleventh.event.message).to.match(/^\(combined from similar events\): m10/);
    expect(actions[11]!.action).to.equal('patch');
  });

  it('drops events beyond the per-object burst until tokens refill', () => {
    const c = new EventCorrelator({ component: 'kubelet', host: 'n' });
    let dropped = 0;
    for (let i = 0; i < 30; i++)
      if (c.correlate(pod, 'Normal', 'Same', 'same', 0).action === 'drop') dropped++;
    expect(dropped).to.equal(5);
    expect(c.correlate(pod, 'Normal', 'Same', 'same', 5 * 60_000).action).to.equal('patch');
  });
});

describe('EventCorrelator.forget', () => {
  it('drops every entry of a gone object and leaves the others; what it writes does not change', () => {
    const c = new EventCorrelator({ component: 'kubelet', host: 'node-1' });
    const t0 = Date.UTC(2026, 0, 1);
    const other = { ...pod, name: 'q', uid: 'u2' };
    for (const ref of [pod, other]) {
      c.correlate({ ...ref, fieldPath: 'spec.containers{app}' }, 'Normal', 'Pulled', 'already present', t0);
      c.correlate(
        { ...ref, fieldPath: 'spec.containers{app}' },
        'Normal',
        'Created',
        'Created container: app',
        t0,
      );
      c.correlate(
        { ...ref, fieldPath: 'spec.containers{app}' },
        'Normal',
        'Started',
        'Started container app',
        t0,
      );
    }
    expect(c.size()).to.deep.equal({ seen: 6, similar: 6, spam: 2 });
    c.forget(pod);
    expect(c.size()).to.deep.equal({ seen: 3, similar: 3, spam: 1 });
    // The other pod still deduplicates into its existing Event.
    expect(c.correlate(other, 'Normal', 'Pulled', 'already present', t0 + 1000).action).to.equal('patch');
    c.forget(pod); // twice: nothing left to drop
    c.forget(other);
    expect(c.size()).to.deep.equal({ seen: 0, similar: 0, spam: 0 });
  });
});

describe('EventRecorder', () => {
  it('writes in order through the sink and survives sink failures', async () => {
    const calls: string[] = [];
    let fail = true;
    const sink: EventSink = {
      async create(ns, e: CoreEvent) {
        if (fail) {
          fail = false;
          throw new Error('apiserver down');
        }
        calls.push(`create ${ns} ${e.reason}`);
      },
      async patch(ns, name, p) {
        calls.push(`patch ${ns} ${p.count}`);
      },
    };
    const clock = new FakeClock(0);
    const r = new EventRecorder(sink, clock, 'node-1');
    r.event(pod, 'Normal', 'Pulling', 'Pulling image "busybox"');
    r.event(pod, 'Normal', 'Created', 'Created container: c');
    await r.flush();
    r.event(pod, 'Normal', 'Created', 'Created container: c');
    await r.flush();
    expect(calls).to.deep.equal(['create ns Created', 'patch ns 2']);
    expect(r.stats).to.include({ created: 1, patched: 1, failed: 1 });
  });
});

describe('EventRecorder: annotated Events (AnnotatedEventf)', () => {
  it('creates the Event with its annotations; Events without any carry none', async () => {
    const created: CoreEvent[] = [];
    const sink: EventSink = {
      async create(_ns, e: CoreEvent) {
        created.push(e);
      },
      async patch() {},
    };
    const r = new EventRecorder(sink, new FakeClock(0), 'node-1');
    const annotations = {
      offending_containers: 'c',
      offending_containers_usage: '900Mi',
      starved_resource: 'memory',
    };
    r.event(pod, 'Warning', 'Evicted', 'The node was low on resource: memory. ', annotations);
    r.event(pod, 'Normal', 'Killing', 'Stopping container c');
    await r.flush();
    expect(created.map((e) => e.metadata.annotations)).to.deep.equal([annotations, undefined]);
  });
});

describe('EventRecorder: a write that gets no answer', () => {
  const unanswered = () => new KindError('Unavailable', 'POST events: connect ECONNREFUSED 127.0.0.1:6443');
  const answered = () => new KindError('Unavailable', 'POST events: 503 ServiceUnavailable', { code: 503 });
  /** A sink that throws the queued errors, in order, before it writes; records what it wrote. */
  function failingSink(errors: Error[]) {
    const calls: string[] = [];
    const sink: EventSink = {
      async create(_ns, e: CoreEvent) {
        const err = errors.shift();
        if (err) throw err;
        calls.push(`create ${e.reason}`);
      },
      async patch(_ns, _name, p) {
        const err = errors.shift();
        if (err) throw err;
        calls.push(`patch ${p.count}`);
      },
    };
    return { sink, calls };
  }
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  };

  it('is tried again after a sleep while the queue waits, then goes out in order', async () => {
    const { sink, calls } = failingSink([unanswered(), unanswered()]);
    const clock = new FakeClock(0);
    const warnings: string[] = [];
    const r = new EventRecorder(sink, clock, 'node-1', { warn: (m) => void warnings.push(m) });
    r.event(pod, 'Normal', 'Pulled', 'Pulled image');
    r.event(pod, 'Normal', 'Created', 'Created container: c');
    await settle();
    expect(calls).to.deep.equal([]);
    expect(r.pending).to.equal(1);
    clock.advance(EVENT_RETRY_SLEEP_MS); // the first sleep is a random part of it
    await settle();
    expect(calls, 'the second try failed too').to.deep.equal([]);
    clock.advance(EVENT_RETRY_SLEEP_MS);
    await r.flush();
    expect(calls).to.deep.equal(['create Pulled', 'create Created']);
    expect(r.stats).to.include({ created: 2, retried: 2, failed: 0 });
    expect(warnings, 'one line per write, not per try').to.deep.equal([
      'unable to write event, will try again after sleeping',
    ]);
  });

  it(`gives up after ${EVENT_WRITE_TRIES} tries; the server's own refusal is never tried again`, async () => {
    const { sink, calls } = failingSink([
      ...Array.from({ length: EVENT_WRITE_TRIES }, unanswered),
      answered(),
    ]);
    const clock = new FakeClock(0);
    const r = new EventRecorder(sink, clock, 'node-1');
    r.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    r.event(pod, 'Normal', 'Pulled', 'Pulled image');
    r.event(pod, 'Normal', 'Started', 'Started container c');
    for (let i = 0; i < EVENT_WRITE_TRIES; i++) {
      await settle();
      clock.advance(EVENT_RETRY_SLEEP_MS);
    }
    await r.flush();
    expect(calls).to.deep.equal(['create Started']);
    expect(r.stats).to.include({ created: 1, retried: EVENT_WRITE_TRIES - 1, failed: 2 });
  });

  it('a create whose answer was lost and that exists now counts as written', async () => {
    const { sink, calls } = failingSink([
      unanswered(),
      new KindError('AlreadyExists', 'events "p.1" already exists', { code: 409 }),
    ]);
    const clock = new FakeClock(0);
    const r = new EventRecorder(sink, clock, 'node-1');
    r.event(pod, 'Normal', 'Pulled', 'Pulled image');
    await settle();
    clock.advance(EVENT_RETRY_SLEEP_MS);
    await r.flush();
    expect(calls).to.deep.equal([]);
    expect(r.stats).to.include({ created: 1, retried: 1, failed: 0 });
  });

  it('close() ends a sleep before the next try: what waits is written once, and flush resolves', async () => {
    const { sink, calls } = failingSink([unanswered()]);
    const clock = new FakeClock(0);
    const r = new EventRecorder(sink, clock, 'node-1');
    r.event(pod, 'Warning', 'Unhealthy', 'Readiness probe failed');
    r.event(pod, 'Normal', 'Killing', 'Stopping container c');
    await settle();
    r.close();
    await r.flush();
    expect(calls).to.deep.equal(['create Killing']);
    expect(r.stats).to.include({ created: 1, retried: 0, failed: 1 });
    expect(clock.pendingTimers()).to.equal(0);
  });
});

describe('EventRecorder: an Event gone before its patch', () => {
  it('creates it again whole, with its count, when the patch finds nothing', async () => {
    const calls: string[] = [];
    const sink: EventSink = {
      async create(ns, e: CoreEvent) {
        calls.push(`create ${ns} ${e.reason} count=${e.count}`);
      },
      async patch() {
        throw new KindError('NotFound', 'events "x" not found');
      },
    };
    const r = new EventRecorder(sink, new FakeClock(0), 'node-1');
    r.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    r.event(pod, 'Warning', 'BackOff', 'Back-off restarting failed container');
    await r.flush();
    expect(calls).to.deep.equal(['create ns BackOff count=1', 'create ns BackOff count=2']);
    expect(r.stats).to.include({ created: 2, patched: 0, failed: 0 });
  });
});

describe('EventRecorder: a full queue', () => {
  /** A sink that holds every write until `release()`; records what it wrote. */
  function heldSink() {
    const written: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const sink: EventSink = {
      async create(_ns, e: CoreEvent) {
        await gate;
        written.push(`${e.type}/${e.reason}/${e.involvedObject.name}`);
      },
      async patch() {
        await gate;
      },
    };
    return { sink, written, release: () => open() };
  }
  const podN = (i: number) => ({ ...pod, name: `p${i}`, uid: `u${i}` });

  it('lets a Warning take the place of the oldest waiting Normal Event', async () => {
    const { sink, written, release } = heldSink();
    const r = new EventRecorder(sink, new FakeClock(0), 'node-1', undefined, 3);
    // The first write is in flight; three more wait.
    for (let i = 0; i < 4; i++) r.event(podN(i), 'Normal', 'Pulled', 'Pulled image');
    r.event(podN(9), 'Warning', 'FailedPostStartHook', 'hook failed');
    r.event(podN(10), 'Normal', 'Started', 'Started container');
    release();
    await r.flush();
    expect(written).to.deep.equal([
      'Normal/Pulled/p0',
      'Normal/Pulled/p2',
      'Normal/Pulled/p3',
      'Warning/FailedPostStartHook/p9',
    ]);
    expect(r.stats).to.include({ created: 4, dropped: 2, displaced: 1 });
  });

  it('drops a Warning when only Warnings wait', async () => {
    const { sink, written, release } = heldSink();
    const r = new EventRecorder(sink, new FakeClock(0), 'node-1', undefined, 2);
    for (let i = 0; i < 4; i++) r.event(podN(i), 'Warning', 'BackOff', 'Back-off');
    release();
    await r.flush();
    expect(written).to.deep.equal(['Warning/BackOff/p0', 'Warning/BackOff/p1', 'Warning/BackOff/p2']);
    expect(r.stats).to.include({ created: 3, dropped: 1, displaced: 0 });
  });

  it('merges the repeats of an Event that waits into its one write, with the count as it is by then', async () => {
    const { sink, release } = heldSink();
    const writes: string[] = [];
    const logged: EventSink = {
      async create(ns, e) {
        await sink.create(ns, e);
        const at = `${e.firstTimestamp}..${e.lastTimestamp}`;
        writes.push(`create ${e.metadata.name} ${e.reason} count=${e.count} ${at}`);
      },
      async patch(_ns, name, p) {
        await sink.patch(_ns, name, p);
        writes.push(`patch ${name} count=${p.count} ${p.lastTimestamp}`);
      },
    };
    // A clock of today's times, with a fraction: names and timestamps take the whole ms and seconds of it.
    const clock = new FakeClock(1_796_000_000_000.75);
    const r = new EventRecorder(logged, clock, 'node-1');
    r.event(podN(0), 'Warning', 'BackOff', 'Back-off'); // in flight
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      r.event(podN(1), 'Warning', 'BackOff', 'Back-off'); // a create, then four repeats merged into it
      r.event(podN(0), 'Warning', 'BackOff', 'Back-off'); // patches of p0's Event, merged into one
    }
    expect(r.pending).to.equal(2);
    release();
    await r.flush();
    const p0 = `p0.${(1_796_000_000_000n * 1_000_000n).toString(16)}`;
    const p1 = `p1.${(1_796_000_001_000n * 1_000_000n + 1n).toString(16)}`;
    expect(writes).to.deep.equal([
      `create ${p0} BackOff count=1 2026-11-30T00:53:20Z..2026-11-30T00:53:20Z`,
      `create ${p1} BackOff count=5 2026-11-30T00:53:21Z..2026-11-30T00:53:25Z`,
      `patch ${p0} count=6 2026-11-30T00:53:25Z`,
    ]);
    expect(r.stats).to.include({ created: 2, patched: 1, merged: 8, dropped: 0 });
  });

  it("gives a full queue's place to the lowest priority: patches first, then Normal creates", async () => {
    const { sink, written, release } = heldSink();
    const clock = new FakeClock(0);
    const r = new EventRecorder(sink, clock, 'node-1', undefined, 3);
    r.event(podN(0), 'Warning', 'Unhealthy', 'probe failed'); // written: in flight
    r.event(podN(1), 'Normal', 'Pulled', 'Pulled image'); // waits
    await new Promise((res) => setImmediate(res));
    // p0's Event is created (well, in flight); repeats of it are patches.
    clock.advance(1000);
    r.event(podN(0), 'Warning', 'Unhealthy', 'probe failed'); // a Warning patch, waits
    r.event(podN(2), 'Normal', 'Started', 'Started container'); // waits: the queue is full now
    r.event(podN(3), 'Warning', 'FailedPostStartHook', 'hook failed'); // displaces the patch
    r.event(podN(4), 'Warning', 'Failed', 'Error: ErrImagePull'); // displaces the oldest Normal create
    r.event(podN(5), 'Normal', 'Killing', 'Stopping container'); // nothing below it: dropped
    r.event(podN(6), 'Warning', 'BackOff', 'Back-off'); // displaces the last Normal create
    r.event(podN(7), 'Warning', 'Failed', 'Error'); // only Warning creates wait: dropped
    release();
    await r.flush();
    expect(written).to.deep.equal([
      'Warning/Unhealthy/p0',
      'Warning/FailedPostStartHook/p3',
      'Warning/Failed/p4',
      'Warning/BackOff/p6',
    ]);
    expect(r.stats).to.include({ created: 4, patched: 0, dropped: 5, displaced: 3, filtered: 0 });
  });

  it("keeps an object's first Warning over a further Warning about an object that has one", async () => {
    const { sink, written, release } = heldSink();
    const r = new EventRecorder(sink, new FakeClock(0), 'node-1', undefined, 2);
    r.event(podN(0), 'Warning', 'Unhealthy', 'probe failed'); // in flight
    r.event(podN(0), 'Warning', 'Failed', 'Error: ErrImagePull'); // p0's second Warning: waits
    r.event(podN(1), 'Warning', 'FailedMount', 'no such configmap'); // p1's first: waits, the queue is full
    r.event(podN(2), 'Warning', 'FailedPostStartHook', 'hook failed'); // p2's first: displaces p0's second
    r.event(podN(3), 'Warning', 'BackOff', 'Back-off'); // only first Warnings wait: dropped
    release();
    await r.flush();
    expect(written).to.deep.equal([
      'Warning/Unhealthy/p0',
      'Warning/FailedMount/p1',
      'Warning/FailedPostStartHook/p2',
    ]);
    expect(r.stats).to.include({ created: 3, dropped: 2, displaced: 1 });
  });

  it('says in the log that Events are lost, at most once per 10 s, with how many went', async () => {
    const { sink, release } = heldSink();
    const clock = new FakeClock(0);
    const lines: Record<string, unknown>[] = [];
    const logger = { warn: (msg: string, meta?: Record<string, unknown>) => lines.push({ msg, ...meta }) };
    const r = new EventRecorder(sink, clock, 'node-1', logger, 1);
    r.event(podN(0), 'Normal', 'Pulled', 'in flight');
    r.event(podN(1), 'Normal', 'Pulled', 'waits');
    r.event(podN(2), 'Normal', 'Started', 'dropped, logged');
    r.event(podN(3), 'Warning', 'BackOff', 'displaces p1');
    r.event(podN(4), 'Warning', 'Failed', 'dropped, not logged yet');
    clock.advance(10_000);
    r.event(podN(5), 'Warning', 'Unhealthy', 'dropped, logged with the two before');
    expect(r.pending).to.equal(1);
    release();
    await r.flush();
    expect(lines).to.deep.equal([
      {
        msg: 'unable to record event: too many queued events, dropped',
        dropped: 1,
        queued: 1,
        type: 'Normal',
        reason: 'Started',
        object: 'Pod/ns/p2',
      },
      {
        msg: 'unable to record event: too many queued events, dropped',
        dropped: 3,
        queued: 1,
        type: 'Warning',
        reason: 'Unhealthy',
        object: 'Pod/ns/p5',
      },
    ]);
    expect(r.stats).to.include({ created: 2, dropped: 4, filtered: 0, displaced: 1 });
    expect(r.pending).to.equal(0);
  });

  it('counts what the spam filter drops apart from what a full queue drops', async () => {
    const r = new EventRecorder({ async create() {}, async patch() {} }, new FakeClock(0), 'node-1');
    for (let i = 0; i < 30; i++) r.event(pod, 'Normal', 'Pulled', `message ${i}`);
    await r.flush();
    // Burst 25 per object: the rest are the spam filter's.
    expect(r.stats).to.include({ dropped: 5, filtered: 5, displaced: 0 });
  });

  it('writes an Event recorded as the last write of a busy spell finishes', async () => {
    const written: string[] = [];
    const sink: EventSink = {
      async create(_ns, e: CoreEvent) {
        written.push(e.reason ?? '');
        // Recorded from a continuation of the write itself, before the pump has looked at its queue again.
        if (e.reason === 'First') queueMicrotask(() => recorder.event(podN(2), 'Normal', 'Second', 'second'));
      },
      async patch() {},
    };
    const recorder = new EventRecorder(sink, new FakeClock(0), 'node-1');
    recorder.event(podN(1), 'Normal', 'First', 'first');
    await recorder.flush();
    await new Promise((r) => setTimeout(r, 0));
    await recorder.flush();
    expect(written).to.deep.equal(['First', 'Second']);
  });
});

describe('EventRecorder with an StartupHold', () => {
  const sinkOf = (calls: string[]): EventSink => ({
    async create(_ns, e: CoreEvent) {
      calls.push(e.reason ?? '');
    },
    async patch() {},
  });
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  };
  /** A recorder held by a fresh StartupHold (10 s at most), and what it wrote. */
  const held = () => {
    const clock = new FakeClock(0);
    const hold = new StartupHold(clock, 10_000);
    const calls: string[] = [];
    const r = new EventRecorder(sinkOf(calls), clock, 'node-1');
    r.holdWith(hold);
    return { clock, hold, calls, r };
  };

  it('writes nothing while a node starts, then everything in order once none is starting', async () => {
    const { hold, calls, r } = held();
    let startA!: () => void;
    let startB!: (e: Error) => void;
    hold.track(new Promise<void>((res) => (startA = res)));
    hold.track(new Promise<void>((_res, rej) => (startB = rej)));
    r.event(pod, 'Normal', 'Starting', 'Starting kubelet.');
    r.event(pod, 'Warning', 'BackOff', 'Back-off');
    await settle();
    expect(calls).to.deep.equal([]);
    startA();
    await settle();
    expect(calls, 'one node still starting').to.deep.equal([]);
    startB(new Error('registration failed')); // a failed start ends the hold as well
    await settle();
    expect(calls).to.deep.equal(['Starting', 'BackOff']);
    expect(hold.count).to.equal(0);
  });

  it('holds for at most maxMs: a node that never finishes starting does not keep Events back', async () => {
    const { clock, hold, calls, r } = held();
    hold.track(new Promise<void>(() => {}));
    r.event(pod, 'Normal', 'Starting', 'Starting kubelet.');
    await settle();
    clock.advance(9_999);
    await settle();
    expect(calls).to.deep.equal([]);
    clock.advance(1);
    await settle();
    expect(calls).to.deep.equal(['Starting']);
    expect(hold.count).to.equal(0);
  });

  it('writes at once when no node is starting', async () => {
    const clock = new FakeClock(0);
    const calls: string[] = [];
    const r = new EventRecorder(sinkOf(calls), clock, 'node-1');
    r.holdWith(new StartupHold(clock));
    r.event(pod, 'Normal', 'Pulled', 'Container image "busybox" already present on machine');
    await r.flush();
    expect(calls).to.deep.equal(['Pulled']);
  });
});
