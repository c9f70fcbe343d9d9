/**
 * Expectation grammar for statusManager cases: checks of a status against an expected status spec.
 * Each check returns undefined when it holds, or a message naming the first difference.
 *
 * Times: a time token (compared at the API's precision, whole seconds); `<token> truncated to whole
 * seconds` (the value must be exactly that, sub-second part dropped); `unchanged` (the same value in
 * every snapshot of the cache in which it existed); `changed` (differs from the first value the cache
 * had); `set` (any time); `none` (unset).
 * Conditions: compared by type, never by position (the API merges them by type). In `subset` mode only
 * the listed types and fields are checked; in `full` mode the type sets must match and type, status,
 * reason and message are always compared (an unlisted one must be empty).
 * Container status lists: in map form the names must match; in list form the lengths must match and
 * entries pair by index. An entry asserts exactly what it spells: a state token its state; an object its
 * keys (`last` being lastState).
 * Other fields compare as Go would: an absent field equals its zero value.
 */
import type { ContainerStatus, PodCondition, PodStatus } from '../../../src/api/core.js';
import { semanticEqual, wireCanonical } from '../../../src/kubelet/status/semantic.js';
import { firstDifference } from '../compare.js';
import { Uninterpretable } from '../types.js';
import {
  checkKeys,
  isObj,
  parseConditions,
  parseContainerStatus,
  parseStatus,
  parseTimeMs,
  show,
  type Obj,
  type SpecNames,
} from './statusManager-tokens.js';

export interface ExpectContext {
  now: number;
  spec: SpecNames;
  /** The cached status after setup and after each step, oldest first (for `unchanged`). */
  snapshots: readonly (PodStatus | undefined)[];
}

type Getter = (s: PodStatus | undefined) => unknown;

function unchanged(actual: unknown, get: Getter, ctx: ExpectContext, where: string): string | undefined {
  const seen = ctx.snapshots.map(get).filter((v) => v !== undefined && v !== null && v !== '');
  if (actual === undefined || seen.length === 0) return `${where}: expected unchanged, but it is not set`;
  const first = seen[0];
  const moved = seen.find((v) => !semanticEqual(v, first));
  if (moved !== undefined) return `${where}: changed from ${show(first)} to ${show(moved)}`;
  return semanticEqual(actual, first)
    ? undefined
    : `${where}: changed from ${show(first)} to ${show(actual)}`;
}

/** A time field against a time expectation (see the module comment). */
export function checkTime(
  actual: unknown,
  expected: unknown,
  ctx: ExpectContext,
  where: string,
  get?: Getter,
) {
  if (expected === 'unchanged') {
    if (!get) throw new Uninterpretable(`${where}: 'unchanged' has no history here`);
    return unchanged(actual, get, ctx, where);
  }
  if (expected === 'changed') {
    if (!get) throw new Uninterpretable(`${where}: 'changed' has no history here`);
    const first = ctx.snapshots.map(get).find((v) => v !== undefined && v !== null && v !== '');
    if (first === undefined || actual === undefined)
      return `${where}: expected a changed value, got ${show(actual)}`;
    return semanticEqual(actual, first) ? `${where}: expected a change from ${show(first)}` : undefined;
  }
  if (expected === 'set') {
    return typeof actual === 'string' && !Number.isNaN(Date.parse(actual))
      ? undefined
      : `${where}: expected a time, got ${show(actual)}`;
  }
  if (expected === 'none' || expected === null) {
    return actual === undefined || actual === null || actual === ''
      ? undefined
      : `${where}: expected unset, got ${show(actual)}`;
  }
  const got = typeof actual === 'string' ? Date.parse(actual) : NaN;
  if (Number.isNaN(got)) return `${where}: expected a time, got ${show(actual)}`;
  const trunc = typeof expected === 'string' ? /^(.+?)\s+truncated to whole seconds$/.exec(expected) : null;
  if (trunc) {
    const want = Math.floor(parseTimeMs(trunc[1], ctx.now) / 1000) * 1000;
    return got === want
      ? undefined
      : `${where}: expected ${new Date(want).toISOString()}, got ${show(actual)}`;
  }
  const want = parseTimeMs(expected, ctx.now);
  return Math.floor(got / 1000) === Math.floor(want / 1000)
    ? undefined
    : `${where}: expected ${new Date(want).toISOString()} (to the second), got ${show(actual)}`;
}

const TIME_FIELDS = ['lastTransitionTime', 'lastProbeTime'];
const CORE_CONDITION_FIELDS = ['type', 'status', 'reason', 'message'];

function rawConditions(expected: unknown, where: string): Obj[] {
  if (Array.isArray(expected)) {
    return expected.map((c, i) => {
      if (!isObj(c) || typeof c.type !== 'string')
        throw new Uninterpretable(`${where}[${i}]: condition without type`);
      return c;
    });
  }
  if (isObj(expected)) {
    return Object.entries(expected).map(([type, c]) =>
      typeof c === 'string' ? { type, status: c } : isObj(c) ? { type, ...c } : { type },
    );
  }
  throw new Uninterpretable(`${where}: cannot read conditions ${show(expected)}`);
}

/** Conditions by type (see the module comment). */
export function checkConditions(
  actual: readonly PodCondition[] | undefined,
  expected: unknown,
  mode: 'subset' | 'full',
  ctx: ExpectContext,
  where: string,
): string | undefined {
  const list = actual ?? [];
  const wanted = rawConditions(expected, where);
  for (const w of wanted) {
    const type = w.type as string;
    const a = list.find((c) => c.type === type);
    const at = `${where}[type=${type}]`;
    if (!a) return `${at}: missing (have ${show(list.map((c) => c.type))})`;
    const fields = new Set(Object.keys(w));
    if (mode === 'full') CORE_CONDITION_FIELDS.forEach((f) => fields.add(f));
    for (const f of fields) {
      const av = (a as unknown as Obj)[f];
      if (TIME_FIELDS.includes(f)) {
        const get: Getter = (s) => (s?.conditions?.find((c) => c.type === type) as Obj | undefined)?.[f];
        const d = checkTime(av, w[f], ctx, `${at}.${f}`, get);
        if (d) return d;
      } else if (!semanticEqual(av, w[f])) {
        return `${at}.${f}: expected ${show(w[f])}, got ${show(av)}`;
      }
    }
  }
  if (mode === 'full') {
    const extra = list.filter((c) => !wanted.some((w) => w.type === c.type)).map((c) => c.type);
    if (extra.length > 0) return `${where}: unexpected conditions ${show(extra)}`;
  }
  return undefined;
}

function assertedKeys(raw: unknown, parsed: ContainerStatus): string[] {
  if (typeof raw === 'string')
    return Object.keys(parsed).filter((k) => !['name', 'ready', 'restartCount'].includes(k));
  if (isObj(raw) && Object.keys(raw).every((k) => ['waiting', 'running', 'terminated'].includes(k)))
    return ['state'];
  if (isObj(raw)) return Object.keys(raw).map((k) => (k === 'last' ? 'lastState' : k));
  return [];
}

/** A container status list against its expected form (see the module comment). */
export function checkStatusList(
  actual: readonly ContainerStatus[] | undefined,
  expected: unknown,
  names: readonly string[],
  ctx: ExpectContext,
  where: string,
): string | undefined {
  const list = actual ?? [];
  let pairs: [ContainerStatus | undefined, unknown, ContainerStatus, string][];
  if (Array.isArray(expected)) {
    if (list.length !== expected.length)
      return `${where}: expected ${expected.length} entries, got ${show(list)}`;
    pairs = expected.map((e, i) => [
      list[i],
      e,
      parseContainerStatus(e, names[i] ?? list[i]?.name ?? '', ctx.now, `${where}[${i}]`),
      `${where}[${i}]`,
    ]);
  } else if (isObj(expected)) {
    const want = Object.keys(expected).sort();
    const have = list.map((s) => s.name).sort();
    if (show(want) !== show(have)) return `${where}: expected containers ${show(want)}, got ${show(have)}`;
    pairs = Object.entries(expected).map(([name, e]) => [
      list.find((s) => s.name === name),
      e,
      parseContainerStatus(e, name, ctx.now, `${where}.${name}`),
      `${where}.${name}`,
    ]);
  } else {
    throw new Uninterpretable(`${where}: cannot read ${show(expected)}`);
  }
  for (const [a, raw, want, at] of pairs) {
    for (const k of assertedKeys(raw, want)) {
      const av = (a as unknown as Obj | undefined)?.[k];
      const wv = (want as unknown as Obj)[k];
      if (!semanticEqual(av, wv)) return `${at}.${k}: expected ${show(wireCanonical(wv))}, got ${show(av)}`;
    }
  }
  return undefined;
}

const LIST_SPEC = {
  initContainerStatuses: 'initContainers',
  containerStatuses: 'containers',
  ephemeralContainerStatuses: 'ephemeralContainers',
} as const;

const SCALARS = [
  'phase',
  'message',
  'reason',
  'hostIP',
  'podIP',
  'qosClass',
  'nominatedNodeName',
  'observedGeneration',
];

/** `expect.cached`-style check: only the listed fields are asserted. */
export function checkStatusSubset(
  actual: PodStatus | undefined,
  expected: unknown,
  ctx: ExpectContext,
  where: string,
) {
  if (expected === 'unchanged') {
    const first = ctx.snapshots[0];
    return semanticEqual(actual, first)
      ? undefined
      : `${where}: changed: ${firstDifference(wireCanonical(actual), wireCanonical(first))}`;
  }
  if (!isObj(expected)) throw new Uninterpretable(`${where}: cannot read ${show(expected)}`);
  checkKeys(
    expected,
    [...SCALARS, 'startTime', 'startTimeSet', 'conditions', ...Object.keys(LIST_SPEC)],
    where,
  );
  if (!actual) return `${where}: no cached status`;
  for (const [k, w] of Object.entries(expected)) {
    let d: string | undefined;
    if (k === 'startTime') d = checkTime(actual.startTime, w, ctx, `${where}.startTime`, (s) => s?.startTime);
    else if (k === 'startTimeSet') {
      if (typeof w !== 'boolean') throw new Uninterpretable(`${where}.startTimeSet: ${show(w)}`);
      d =
        !!actual.startTime === w
          ? undefined
          : `${where}.startTime: expected ${w ? 'set' : 'unset'}, got ${show(actual.startTime)}`;
    } else if (k === 'conditions')
      d = checkConditions(actual.conditions, w, 'subset', ctx, `${where}.conditions`);
    else if (k in LIST_SPEC) {
      const key = k as keyof typeof LIST_SPEC;
      d = checkStatusList(actual[key], w, ctx.spec[LIST_SPEC[key]], ctx, `${where}.${k}`);
    } else if (w === 'unchanged')
      d = unchanged((actual as Obj)[k], (s) => (s as Obj | undefined)?.[k], ctx, `${where}.${k}`);
    else if (!semanticEqual((actual as Obj)[k], w))
      d = `${where}.${k}: expected ${show(w)}, got ${show((actual as Obj)[k])}`;
    if (d) return d;
  }
  return undefined;
}

/** `expect.merged`-style check: the whole status, with conditions compared by type. */
export function checkStatusFull(actual: PodStatus, expected: unknown, ctx: ExpectContext, where: string) {
  const want = parseStatus(expected, ctx.spec, ctx.now, where);
  if (isObj(expected) && expected.conditions !== undefined) {
    const d = checkConditions(actual.conditions, expected.conditions, 'full', ctx, `${where}.conditions`);
    if (d) return d;
  } else if ((actual.conditions ?? []).length > 0) {
    return `${where}.conditions: expected none, got ${show(actual.conditions)}`;
  }
  // Parse the expected conditions too, so a malformed one is reported even when the lists agree.
  if (isObj(expected)) parseConditions(expected.conditions, ctx.now, `${where}.conditions`);
  const a = wireCanonical({ ...actual, conditions: undefined }) ?? {};
  const w = wireCanonical({ ...want, conditions: undefined }) ?? {};
  const d = semanticEqual(a, w) ? undefined : firstDifference(a, w);
  return d ? `${where}: ${d}` : undefined;
}
