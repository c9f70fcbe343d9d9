import { expect } from 'chai';
import { Rng } from '../../chaos/lib/rng.js';
import {
  EventCorrelator,
  type Correlation,
  type CoreEvent,
  type EventType,
  type ObjectReference,
} from '../../../src/kube/eventcorrelator.js';

/** A decision as plain data: the write's body (and patch) as built, to compare with the plain correlator's. */
type Decision =
  | { action: 'create'; event: CoreEvent }
  | { action: 'patch'; event: CoreEvent; patch: Pick<CoreEvent, 'count' | 'lastTimestamp' | 'message'> }
  | { action: 'drop' };

function decision(c: Correlation): Decision {
  if (c.action === 'drop') return { action: 'drop' };
  if (c.action === 'create') return { action: 'create', event: c.event };
  return { action: 'patch', event: c.event, patch: c.patch };
}

const src = { component: 'kubelet', host: 'node-1' };
const pod = (name: string, uid = `uid-${name}`): ObjectReference => ({
  kind: 'Pod',
  apiVersion: 'v1',
  namespace: 'ns',
  name,
  uid,
});
const iso = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/**
 * The correlator's decisions written as plainly as possible, with no bound on what it keeps: one map per
 * kind of state, keyed by joined strings. The compact EventCorrelator must decide exactly as this does while
 * it holds fewer objects than its bounds.
 */
class PlainCorrelator {
  private readonly seen = new Map<
    string,
    { name: string; ref: ObjectReference; first: string; count: number; last: number }
  >();
  private readonly similar = new Map<string, { messages: Set<string>; first: number }>();
  private readonly buckets = new Map<string, { tokens: number; last: number }>();
  private seq = 0;

  private static id(r: ObjectReference): string {
    return `${r.kind}/${r.namespace ?? ''}/${r.name}/${r.uid ?? ''}`;
  }

  correlate(ref: ObjectReference, type: EventType, reason: string, msg: string, now: number): Decision {
    const id = PlainCorrelator.id(ref);
    const b = this.buckets.get(id) ?? { tokens: 25, last: now };
    b.tokens = Math.min(25, b.tokens + (now - b.last) / 300_000);
    b.last = now;
    this.buckets.set(id, b);
    const simKey = `${id}|${type}|${reason}`;
    let sim = this.similar.get(simKey);
    if (!sim || now - sim.first > 600_000) sim = { messages: new Set(), first: now };
    sim.messages.add(msg);
    this.similar.set(simKey, sim);
    const combined = sim.messages.size > 10;
    const message = combined ? `(combined from similar events): ${msg}` : msg;
    const key = `${simKey}|${combined ? '*' : msg}`;
    const prior = this.seen.get(key);
    const event = (s: { name: string; ref: ObjectReference; first: string }, count: number) => ({
      apiVersion: 'v1' as const,
      kind: 'Event' as const,
      metadata: { name: s.name, namespace: s.ref.namespace ?? 'default' },
      involvedObject: s.ref,
      reason,
      message,
      source: { ...src },
      firstTimestamp: s.first,
      lastTimestamp: iso(now),
      count,
      type,
      reportingComponent: src.component,
      reportingInstance: src.host,
    });
    if (prior && now - prior.last <= 600_000) {
      if (b.tokens < 1) return { action: 'drop' };
      b.tokens -= 1;
      prior.count++;
      prior.last = now;
      const e = event(prior, prior.count);
      return {
        action: 'patch',
        event: e,
        patch: { count: e.count, lastTimestamp: e.lastTimestamp, message },
      };
    }
    if (b.tokens < 1) return { action: 'drop' };
    b.tokens -= 1;
    const name = `${ref.name}.${(BigInt(Math.floor(now)) * 1_000_000n + BigInt(this.seq++)).toString(16)}`;
    const s = { name, ref, first: iso(now), count: 1, last: now };
    this.seen.set(key, s);
    return { action: 'create', event: event(s, 1) };
  }

  forget(ref: ObjectReference): void {
    const id = PlainCorrelator.id(ref);
    for (const m of [this.seen, this.similar, this.buckets])
      for (const k of m.keys()) if (k === id || k.startsWith(`${id}|`)) m.delete(k);
  }
}

describe('EventCorrelator (compact state)', () => {
  it('decides exactly as the plain correlator over random event streams', () => {
    const refs: ObjectReference[] = [
      pod('a'),
      { ...pod('a'), fieldPath: 'spec.containers{app}' },
      { ...pod('a'), fieldPath: 'spec.containers{side}' },
      { ...pod('a'), apiVersion: 'v2', fieldPath: 'spec.containers{app}' },
      pod('b'),
      { ...pod('b'), fieldPath: 'spec.containers{app}' },
      pod('c', 'uid-b'), // another object with b's UID
      { kind: 'Node', name: 'node-1' }, // no namespace, no UID
      { kind: 'Node', name: 'node-1', namespace: '' }, // the same object; its Events go to namespace ''
    ];
    const messages = [...Array.from({ length: 13 }, (_, i) => `message ${i}`), '*'];
    const small = [0, 1, 999, 1000];
    const large = [0, 0, 1, 999, 1000, 60_000, 299_999.5, 300_000, 600_000, 600_001, 3_600_000];
    // Many objects and reasons; one object and reason with many messages, forgotten often so that its spam
    // bucket starts full again and similar messages are combined; the same in bursts ten minutes apart, right
    // at the end of the windows.
    const streams: {
      refs: ObjectReference[];
      types: readonly EventType[];
      reasons: string[];
      forget: number;
      steps?: number[];
    }[] = [
      {
        refs,
        types: ['Normal', 'Warning'] as const,
        reasons: ['Pulled', 'BackOff', 'Unhealthy'],
        forget: 0.01,
      },
      { refs: refs.slice(0, 2), types: ['Warning'] as const, reasons: ['BackOff'], forget: 0.02 },
      {
        refs: refs.slice(0, 2),
        types: ['Warning'] as const,
        reasons: ['BackOff'],
        forget: 0.02,
        steps: [...Array<number>(11).fill(0), 600_000],
      },
    ];
    const total = { create: 0, patch: 0, drop: 0, combined: 0 };
    for (const seed of [1, 2, 3, 4])
      for (const stream of streams) {
        const rng = new Rng(seed);
        const rnd = (): number => rng.next();
        const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
        const compact = new EventCorrelator(src);
        const plain = new PlainCorrelator();
        let now = Date.UTC(2026, 0, 1) + seed;
        for (let i = 0; i < 3000; i++) {
          now += stream.steps ? pick(stream.steps) : pick(rnd() < 0.98 ? small : large);
          const ref = pick(stream.refs);
          if (rnd() < stream.forget) {
            compact.forget(ref);
            plain.forget(ref);
            continue;
          }
          const type = pick(stream.types);
          const reason = pick(stream.reasons);
          const message = rnd() < 0.3 ? messages[0]! : pick(messages);
          const got = decision(compact.correlate({ ...ref }, type, reason, message, now));
          expect(got, `seed ${seed} step ${i}`).to.deep.equal(
            plain.correlate(ref, type, reason, message, now),
          );
          total[got.action]++;
          if (got.action !== 'drop' && got.event.message.startsWith('(combined')) total.combined++;
        }
      }
    expect(total.create).to.be.greaterThan(1000);
    expect(total.patch).to.be.greaterThan(1000);
    expect(total.drop).to.be.greaterThan(1000);
    expect(total.combined).to.be.greaterThan(100);
  });

  it('keeps at most 4096 objects, forgetting the least recently used; its next event is a create', () => {
    const c = new EventCorrelator(src);
    const t0 = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 4096; i++) c.correlate(pod(`p${i}`), 'Normal', 'Pulled', 'present', t0);
    expect(c.size().spam).to.equal(4096);
    // p0 is used again, so p1 is now the least recently used.
    expect(c.correlate(pod('p0'), 'Normal', 'Pulled', 'present', t0 + 1000).action).to.equal('patch');
    c.correlate(pod('p4096'), 'Normal', 'Pulled', 'present', t0 + 1000);
    expect(c.size()).to.deep.equal({ seen: 4096, similar: 4096, spam: 4096 });
    expect(c.correlate(pod('p1'), 'Normal', 'Pulled', 'present', t0 + 2000).action).to.equal('create');
    expect(c.correlate(pod('p0'), 'Normal', 'Pulled', 'present', t0 + 2000).action).to.equal('patch');
  });

  it('keeps at most 16384 rows over all objects, forgetting the least recently used objects', () => {
    const c = new EventCorrelator(src);
    const t0 = Date.UTC(2026, 0, 1);
    const reasons = ['Pulled', 'Created', 'Started', 'Killing', 'Unhealthy'];
    for (let i = 0; i < 3500; i++) for (const r of reasons) c.correlate(pod(`p${i}`), 'Normal', r, 'm', t0);
    const { seen, similar, spam } = c.size();
    expect(seen)
      .to.be.at.most(16_384)
      .and.to.equal(similar)
      .and.to.equal(5 * spam);
    expect(spam).to.be.greaterThan(3200);
    expect(c.correlate(pod('p0'), 'Normal', 'Pulled', 'm', t0 + 1000).action).to.equal('create');
    expect(c.correlate(pod('p3499'), 'Normal', 'Pulled', 'm', t0 + 1000).action).to.equal('patch');
  });

  it('keeps at most 64 rows per object, dropping the one written longest ago', () => {
    const c = new EventCorrelator(src);
    const p = pod('p');
    // 25 Events pass the spam filter; the other 40 reasons keep their messages only. Each is a row, and
    // the 65th drops the oldest: Reason0's Event.
    for (let i = 0; i < 65; i++) c.correlate(p, 'Warning', `Reason${i}`, 'm', i * 1000);
    expect(c.size()).to.deep.equal({ seen: 24, similar: 64, spam: 1 });
    // Ten minutes on there are two tokens. Reason0 comes back as a new Event and drops Reason1's row;
    // Reason24's Event, 576 s old, is patched.
    expect(c.correlate(p, 'Warning', 'Reason0', 'm', 600_000).action).to.equal('create');
    expect(c.size()).to.deep.equal({ seen: 24, similar: 64, spam: 1 });
    expect(c.correlate(p, 'Warning', 'Reason24', 'm', 600_000).action).to.equal('patch');
  });

  it('rebuilds each Event with the involvedObject it was created with', () => {
    const c = new EventCorrelator(src);
    const refs = [
      pod('p'),
      { ...pod('p'), fieldPath: 'spec.containers{app}' },
      { ...pod('p'), apiVersion: 'v2' },
      { ...pod('p'), resourceVersion: '7', fieldPath: 'spec.containers{app}' },
    ];
    refs.forEach((ref, i) => expect(c.correlate(ref, 'Normal', 'R', `m${i}`, 0).action).to.equal('create'));
    refs.forEach((ref, i) => {
      const patch = c.correlate({ ...pod('p') }, 'Normal', 'R', `m${i}`, 1000);
      if (patch.action !== 'patch') throw new Error(`expected a patch for ${i}`);
      expect(patch.event.involvedObject).to.deep.equal(ref);
    });
    expect(c.size()).to.deep.equal({ seen: 4, similar: 1, spam: 1 });
  });

  it('tells apart two objects that share a UID, and forgets each alone', () => {
    const c = new EventCorrelator(src);
    const a = pod('a', 'same');
    const b = pod('b', 'same');
    c.correlate(a, 'Normal', 'Pulled', 'm', 0);
    expect(c.correlate(b, 'Normal', 'Pulled', 'm', 0).action).to.equal('create');
    expect(c.size().spam).to.equal(2);
    c.forget(a);
    expect(c.correlate(b, 'Normal', 'Pulled', 'm', 1000).action).to.equal('patch');
    expect(c.correlate(a, 'Normal', 'Pulled', 'm', 1000).action).to.equal('create');
    c.forget(b);
    c.forget(a);
    expect(c.size()).to.deep.equal({ seen: 0, similar: 0, spam: 0 });
  });

  it("keeps an object whose UID reads like another's identity apart from it", () => {
    const c = new EventCorrelator(src);
    const odd = pod('odd', 'Pod/ns/x/');
    const x = { kind: 'Pod', namespace: 'ns', name: 'x' };
    c.correlate(odd, 'Normal', 'Pulled', 'm', 0);
    expect(c.correlate(x, 'Normal', 'Pulled', 'm', 0).action).to.equal('create');
    expect(c.correlate(odd, 'Normal', 'Pulled', 'm', 1000).action).to.equal('patch');
    expect(c.size().spam).to.equal(2);
  });
});
