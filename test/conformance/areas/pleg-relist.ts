/**
 * Interpreters for `GenericPLEG.Relist` cases, in both forms of pleg_given:
 * - `relists: [...]`: each entry sets the runtime listing (`pods`), makes the listed pods' inspection
 *   fail (`getPodStatusErrors`), sets the inspected IPs (`podStatus: {ips}`), relists `repeat` times
 *   (default 1) and checks the events sent over all repetitions (a set) and the cache afterwards;
 * - `steps: [...]`: `op: SetPodWatchCondition {pod, key, condition}` and `op: Relist {runtime?, ...}` with
 *   the same relist fields plus `expectInspected` (bool: any pod inspected; or {pod: bool}) and
 *   `expectConditionRemoved` (about the most recently set condition).
 *
 * expectEvents: a list of {pod, type, data?}, or `ignored` / `ignored (drained)`.
 * expectCache: {pod: phrase | {ips?, error?}}. Phrases: `absent`, or a status word (`status`,
 * `good status`: the cached records are the ones the runtime reports; `empty status`, `bad status`: no
 * records) with an optional `(re-inspected)` (inspected in this relist) and an optional error clause
 * (`, no error` or none: no error cached; `+ error`, `+ inspection error`: an error cached).
 */
import { PodCache } from '../../../src/kubelet/container/cache.js';
import type { PodLifecycleEvent } from '../../../src/kubelet/pleg/events.js';
import { GenericPLEG } from '../../../src/kubelet/pleg/generic.js';
import { FakeClock } from '../../../src/util/clock.js';
import { fail, pass, Uninterpretable, type ConformanceCase, type Verdict } from '../types.js';
import { firstDifference, show } from '../compare.js';
import {
  isObj,
  multisetDifference,
  readBool,
  readInt,
  readList,
  readObj,
  readString,
  readToken,
  type Obj,
} from './prober-read.js';
import { FakeRuntime } from './pleg-world.js';

export const EVENT_TYPES = [
  'ContainerStarted',
  'ContainerDied',
  'ContainerRemoved',
  'ContainerChanged',
  'PodSync',
  'ConditionMet',
] as const;

const RELIST_KEYS = [
  'pods',
  'getPodStatusErrors',
  'podStatus',
  'repeat',
  'expectEvents',
  'expectCache',
] as const;

interface Harness {
  pleg: GenericPLEG;
  cache: PodCache;
  runtime: FakeRuntime;
  clock: FakeClock;
}

function newHarness(): Harness {
  const clock = new FakeClock();
  const cache = new PodCache();
  const runtime = new FakeRuntime();
  const pleg = new GenericPLEG({ lister: runtime, cache, clock, channelCapacity: 1000 });
  return { pleg, cache, runtime, clock };
}

function readExpectedEvents(v: unknown, what: string): Obj[] | 'ignored' {
  if (typeof v === 'string') {
    if (/^ignored( \(drained\))?$/.test(v.trim())) return 'ignored';
    throw new Uninterpretable(`${what}: unknown phrase ${show(v)}`);
  }
  return readList(v, what).map((item, i) => {
    const o = readObj(item, `${what}[${i}]`, ['pod', 'type', 'data']);
    const e: Obj = {
      pod: readString(o.pod, `${what}[${i}].pod`),
      type: readToken(o.type, EVENT_TYPES, `${what}[${i}].type`),
    };
    if (o.data !== undefined) e.data = readString(o.data, `${what}[${i}].data`);
    return e;
  });
}

function eventRecord(e: PodLifecycleEvent): Obj {
  return 'data' in e ? { pod: e.podUID, type: e.type, data: e.data } : { pod: e.podUID, type: e.type };
}

function checkCacheEntry(h: Harness, uid: string, v: unknown, inspected: ReadonlySet<string>, what: string) {
  const entry = h.cache.entry(uid);
  if (isObj(v)) {
    const o = readObj(v, what, ['ips', 'error']);
    if (!entry) return `${what}: pod is not cached`;
    const actual: Obj = {};
    const expected: Obj = {};
    if (o.ips !== undefined) {
      expected.ips = readList(o.ips, `${what}.ips`).map((x, i) => readString(x, `${what}.ips[${i}]`));
      actual.ips = entry.status.ips;
    }
    if (o.error !== undefined) {
      expected.error = readBool(o.error, `${what}.error`);
      actual.error = entry.error !== undefined;
    }
    const d = firstDifference(actual, expected);
    return d && `${what}: ${d}`;
  }
  const phrase = readString(v, what).trim();
  if (phrase === 'absent') return entry ? `${what}: expected no cache entry` : undefined;
  const m =
    /^(status|good status|empty status|bad status)( \(re-inspected\))?(, no error| \+ error| \+ inspection error)?$/.exec(
      phrase,
    );
  if (!m) throw new Uninterpretable(`${what}: unknown cache phrase ${show(phrase)}`);
  if (!entry) return `${what}: pod is not cached`;
  if (m[2] && !inspected.has(uid)) return `${what}: expected the pod to be re-inspected in this relist`;
  const wantError = m[3] !== undefined && m[3] !== ', no error';
  if (wantError !== (entry.error !== undefined)) {
    return `${what}: expected ${wantError ? 'an' : 'no'} inspection error, got ${show(String(entry.error))}`;
  }
  const got = {
    containers: entry.status.containers.map((c) => c.id as string).sort(),
    sandboxes: entry.status.sandboxes.map((s) => s.id as string).sort(),
  };
  const reported = h.runtime.recordIDs(uid);
  const want =
    m[1]!.startsWith('empty') || m[1]!.startsWith('bad') || !reported
      ? { containers: [], sandboxes: [] }
      : { containers: [...reported.containers].sort(), sandboxes: [...reported.sandboxes].sort() };
  const d = firstDifference(got, want);
  return d && `${what}: cached records: ${d}`;
}

/** Runs one relist entry (relists form) or Relist step; returns a failure message or undefined. */
async function runRelist(
  h: Harness,
  o: Obj,
  what: string,
): Promise<{ failure?: string; inspected: string[] }> {
  if (o.pods !== undefined) h.runtime.setListing(o.pods, `${what}.pods`);
  h.runtime.failing = new Set(
    o.getPodStatusErrors === undefined
      ? []
      : readList(o.getPodStatusErrors, `${what}.getPodStatusErrors`).map((x, i) =>
          readString(x, `${what}.getPodStatusErrors[${i}]`),
        ),
  );
  const ps = o.podStatus === undefined ? {} : readObj(o.podStatus, `${what}.podStatus`, ['ips']);
  h.runtime.ips =
    ps.ips === undefined ? [] : readList(ps.ips, `${what}.podStatus.ips`).map((x) => readString(x, 'ip'));
  const repeat = readInt(o.repeat, `${what}.repeat`, 1);
  if (repeat < 1) throw new Uninterpretable(`${what}.repeat must be at least 1`);
  const expectedEvents =
    o.expectEvents === undefined ? undefined : readExpectedEvents(o.expectEvents, `${what}.expectEvents`);
  if (expectedEvents === undefined) throw new Uninterpretable(`${what}: expectEvents is required`);

  h.runtime.inspections = [];
  const sent: Obj[] = [];
  for (let i = 0; i < repeat; i++) {
    h.clock.advance(1000);
    const r = await h.pleg.relist();
    if (!r.listed) return { failure: `${what}: relist failed: ${String(r.error)}`, inspected: [] };
    sent.push(...h.pleg.events.drain().map(eventRecord));
  }
  const inspected = [...h.runtime.inspections];
  if (expectedEvents !== 'ignored') {
    const d = multisetDifference(sent, expectedEvents);
    if (d) return { failure: `${what}: events: ${d}`, inspected };
  }
  if (o.expectCache !== undefined) {
    const inspectedSet = new Set(inspected);
    for (const [uid, v] of Object.entries(readObj(o.expectCache, `${what}.expectCache`))) {
      const d = checkCacheEntry(h, uid, v, inspectedSet, `${what}.expectCache.${uid}`);
      if (d) return { failure: d, inspected };
    }
  }
  return { inspected };
}

export async function interpretRelists(c: ConformanceCase): Promise<Verdict> {
  const g = readObj(c.given, 'given', ['function', 'relists']);
  readObj(c.expect, 'expect', ['eventsPerRelist']);
  const relists = readList(g.relists, 'given.relists');
  if (relists.length === 0) throw new Uninterpretable('given.relists is empty');
  const h = newHarness();
  for (const [i, raw] of relists.entries()) {
    const what = `relists[${i}]`;
    const o = readObj(raw, what, RELIST_KEYS);
    if (o.pods === undefined) throw new Uninterpretable(`${what}: pods is required`);
    const r = await runRelist(h, o, what);
    if (r.failure) return fail(r.failure);
  }
  return pass;
}

export async function interpretSteps(c: ConformanceCase): Promise<Verdict> {
  const g = readObj(c.given, 'given', ['function', 'steps']);
  const ex = readObj(c.expect, 'expect', ['perStep']);
  if (ex.perStep !== true) throw new Uninterpretable('expect.perStep: expected true');
  const steps = readList(g.steps, 'given.steps');
  if (steps.length === 0) throw new Uninterpretable('given.steps is empty');
  const h = newHarness();
  let lastCondition: { pod: string; key: string } | undefined;
  for (const [i, raw] of steps.entries()) {
    const what = `steps[${i}]`;
    const op = readToken(readObj(raw, what).op, ['SetPodWatchCondition', 'Relist'] as const, `${what}.op`);
    if (op === 'SetPodWatchCondition') {
      const o = readObj(raw, what, ['op', 'pod', 'key', 'condition']);
      const pod = readString(o.pod, `${what}.pod`);
      const key = readString(o.key, `${what}.key`);
      h.runtime.ensurePod(pod);
      h.pleg.setPodWatchCondition(
        pod,
        key,
        h.runtime.compileCondition(pod, o.condition, `${what}.condition`),
      );
      lastCondition = { pod, key };
      continue;
    }
    const o = readObj(raw, what, [
      ...RELIST_KEYS,
      'op',
      'runtime',
      'expectInspected',
      'expectConditionRemoved',
    ]);
    if (o.runtime !== undefined) h.runtime.applyProse(o.runtime, `${what}.runtime`);
    const r = await runRelist(h, o, what);
    if (r.failure) return fail(r.failure);
    if (o.expectInspected !== undefined) {
      if (typeof o.expectInspected === 'boolean') {
        if (o.expectInspected !== r.inspected.length > 0) {
          return fail(
            `${what}: expected ${o.expectInspected ? 'an' : 'no'} inspection, got ${show(r.inspected)}`,
          );
        }
      } else {
        for (const [pod, b] of Object.entries(readObj(o.expectInspected, `${what}.expectInspected`))) {
          if (readBool(b, `${what}.expectInspected.${pod}`) !== r.inspected.includes(pod)) {
            return fail(`${what}: pod ${pod}: expected inspected=${String(b)}, got ${show(r.inspected)}`);
          }
        }
      }
    }
    if (o.expectConditionRemoved !== undefined) {
      const want = readBool(o.expectConditionRemoved, `${what}.expectConditionRemoved`);
      if (!lastCondition) throw new Uninterpretable(`${what}: expectConditionRemoved without a condition`);
      const removed = !h.pleg.podWatchConditions(lastCondition.pod).has(lastCondition.key);
      if (removed !== want)
        return fail(`${what}: condition ${lastCondition.key} removed=${removed}, expected ${want}`);
    }
  }
  return pass;
}
