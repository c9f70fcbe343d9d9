/**
 * Comparing generated statuses with a case's `expect`, honouring `expect.compareFields`.
 *
 * compareFields grammar: `field` (a whole field), `list[f1,f2]` and `list[*].field` / `list[*].{f1,f2}`
 * (each item of a list on those fields). Conditions are compared in order (their order is part of the
 * contract); container statuses are matched by name. Without compareFields, every field `expect` lists is asserted; a field the case
 * names but leaves out is asserted to be the zero value, as in the upstream Go literals.
 *
 * Conventions: `lastTerminationState` (Go) is our `lastState`; container states must have the same kind
 * (waiting/running/terminated) and agree on the fields the case lists inside it; container statuses are
 * matched by name (the kubelet sorts them by name, the cases list them in spec order).
 */
import type { ContainerState, ContainerStatus, PodCondition, PodStatus } from '../../../src/api/core.js';
import { show } from '../compare.js';
import { Uninterpretable } from '../types.js';
import { isRecord, parseAPIContainerStatus } from './phase-tokens.js';
import { CONDITION_KEYS } from './case-keys.js';

export type Selector =
  | { field: string; kind: 'whole' }
  | { field: string; kind: 'ordered'; fields: string[] }
  | { field: string; kind: 'byName'; fields: string[] };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function splitFields(s: string, where: string): string[] {
  const fields = s.split(',').map((f) => f.trim());
  if (fields.some((f) => !IDENT.test(f))) throw new Uninterpretable(`${where}: bad field list '${s}'`);
  return fields;
}

/** Parses `expect.compareFields`; undefined when the case has none. */
export function parseCompareFields(v: unknown): Selector[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new Uninterpretable('compareFields: expected a list');
  return v.map((entry) => {
    if (typeof entry !== 'string') throw new Uninterpretable(`compareFields: ${show(entry)}`);
    const e = entry.trim();
    if (IDENT.test(e)) return { field: e, kind: 'whole' as const };
    let m = /^([A-Za-z_]\w*)\[([^\]*]+)\]$/.exec(e);
    if (m) return { field: m[1] ?? '', kind: 'ordered' as const, fields: splitFields(m[2] ?? '', entry) };
    m = /^([A-Za-z_]\w*)\[\*\]\.(?:\{([^}]+)\}|([A-Za-z_]\w*))$/.exec(e);
    if (m)
      return { field: m[1] ?? '', kind: 'byName' as const, fields: splitFields(m[2] ?? m[3] ?? '', entry) };
    throw new Uninterpretable(`compareFields: unknown selector '${entry}'`);
  });
}

/** Equality with Go's zero values: absent equals '', 0, false and an empty list. */
export function zeroEqual(actual: unknown, expected: unknown): boolean {
  const zero = (v: unknown) =>
    v === undefined ||
    v === null ||
    v === '' ||
    v === 0 ||
    v === false ||
    (Array.isArray(v) && v.length === 0);
  if (zero(actual) && zero(expected)) return true;
  return JSON.stringify(actual) === JSON.stringify(expected);
}

const STATE_KINDS = ['waiting', 'running', 'terminated'] as const;

function kinds(s: ContainerState | undefined): (typeof STATE_KINDS)[number][] {
  return STATE_KINDS.filter((k) => s?.[k] !== undefined && s?.[k] !== null);
}

/** Same kind; then every field the expected state lists inside that kind. */
export function diffState(
  actual: ContainerState | undefined,
  expected: ContainerState | undefined,
  where: string,
): string | undefined {
  const a = kinds(actual);
  const e = kinds(expected);
  if (a.join() !== e.join())
    return `${where}: expected state ${show(expected ?? {})}, got ${show(actual ?? {})}`;
  for (const k of e) {
    const exp = (expected?.[k] ?? {}) as Record<string, unknown>;
    const act = (actual?.[k] ?? {}) as Record<string, unknown>;
    for (const f of Object.keys(exp)) {
      if (!zeroEqual(act[f], exp[f]))
        return `${where}.${k}.${f}: expected ${show(exp[f])}, got ${show(act[f])}`;
    }
  }
  return undefined;
}

const STATUS_FIELDS: Record<string, keyof ContainerStatus> = {
  state: 'state',
  lastTerminationState: 'lastState',
  lastState: 'lastState',
  restartCount: 'restartCount',
  ready: 'ready',
  started: 'started',
  containerID: 'containerID',
  image: 'image',
  imageID: 'imageID',
  name: 'name',
};

/** An expected container status entry: the parsed status and the fields the case lists. */
export interface ExpectedStatus {
  name: string;
  status: ContainerStatus;
  listed: string[];
}

function expectedEntry(name: string, raw: unknown, where: string): ExpectedStatus {
  const status = parseAPIContainerStatus(name, raw, where);
  let listed: string[];
  if (typeof raw === 'string') {
    listed = ['state', 'lastState', ...(status.started !== undefined ? ['started'] : [])];
  } else {
    listed = Object.keys(isRecord(raw) ? raw : {})
      .filter((k) => k !== 'name')
      .map((k) => STATUS_FIELDS[k] ?? k);
  }
  return { name, status, listed };
}

/** Expected container statuses given as a list (entries carry their name) or as a map name -> entry. */
export function parseExpectedStatuses(v: unknown, where: string): ExpectedStatus[] {
  if (Array.isArray(v)) {
    return v.map((raw, i) => {
      if (!isRecord(raw) || typeof raw.name !== 'string')
        throw new Uninterpretable(`${where}[${i}]: entry without a name`);
      return expectedEntry(raw.name, raw, `${where}[${i}]`);
    });
  }
  if (isRecord(v))
    return Object.entries(v).map(([name, raw]) => expectedEntry(name, raw, `${where}.${name}`));
  throw new Uninterpretable(`${where}: expected a list or a map of container statuses`);
}

function diffStatus(
  actual: ContainerStatus,
  expected: ExpectedStatus,
  fields: string[],
  where: string,
): string | undefined {
  for (const f of fields) {
    const key = STATUS_FIELDS[f];
    if (!key) throw new Uninterpretable(`${where}: unknown container status field '${f}'`);
    if (key === 'state' || key === 'lastState') {
      const d = diffState(actual[key], expected.status[key], `${where}.${f}`);
      if (d) return d;
    } else if (!zeroEqual(actual[key], expected.status[key])) {
      return `${where}.${f}: expected ${show(expected.status[key])}, got ${show(actual[key])}`;
    }
  }
  return undefined;
}

/** Matches statuses by name; both sides must name the same containers. */
export function diffStatusesByName(
  actual: readonly ContainerStatus[] | undefined,
  expected: readonly ExpectedStatus[],
  fields: string[] | undefined,
  where: string,
): string | undefined {
  const act = actual ?? [];
  const names = (xs: readonly { name: string }[]) =>
    xs
      .map((x) => x.name)
      .sort()
      .join(',');
  if (names(act) !== names(expected)) {
    return `${where}: expected containers [${names(expected)}], got [${names(act)}]`;
  }
  for (const e of expected) {
    const a = act.find((s) => s.name === e.name);
    if (!a) return `${where}: no status for ${e.name}`;
    const d = diffStatus(
      a,
      e,
      (fields ?? e.listed).map((f) => (f === 'lastTerminationState' ? 'lastState' : f)),
      `${where}[${e.name}]`,
    );
    if (d) return d;
  }
  return undefined;
}

const CONDITION_FIELDS = CONDITION_KEYS;
/** Informative keys on expected conditions (e.g. which feature gate the condition depends on). */
const CONDITION_ANNOTATIONS = ['featureGated'];

/** One condition: on `fields`, else on type/status/reason/message plus whatever the case lists. */
export function diffCondition(
  actual: PodCondition | undefined,
  expected: unknown,
  fields: string[] | undefined,
  where: string,
): string | undefined {
  if (!isRecord(expected)) throw new Uninterpretable(`${where}: not a condition`);
  for (const k of Object.keys(expected)) {
    if (!CONDITION_FIELDS.includes(k) && !CONDITION_ANNOTATIONS.includes(k)) {
      throw new Uninterpretable(`${where}: unknown condition key '${k}'`);
    }
  }
  if (!actual) return `${where}: expected ${show(expected)}, got nothing`;
  const listed = Object.keys(expected).filter((k) => CONDITION_FIELDS.includes(k));
  const check = fields ?? [...new Set(['type', 'status', 'reason', 'message', ...listed])];
  for (const f of check) {
    if (!CONDITION_FIELDS.includes(f)) throw new Uninterpretable(`${where}: unknown condition field '${f}'`);
    const a = (actual as unknown as Record<string, unknown>)[f];
    if (!zeroEqual(a, expected[f]))
      return `${where}.${f}: expected ${show(expected[f])}, got ${show(a)} (${show(actual)})`;
  }
  return undefined;
}

function diffConditions(
  actual: PodCondition[] | undefined,
  expected: unknown,
  fields: string[] | undefined,
  where: string,
): string | undefined {
  if (!Array.isArray(expected)) throw new Uninterpretable(`${where}: expected a list of conditions`);
  const act = actual ?? [];
  if (act.length !== expected.length) {
    return `${where}: expected ${expected.length} conditions, got ${act.length} (${act.map((c) => c.type).join(',')})`;
  }
  for (let i = 0; i < expected.length; i++) {
    const d = diffCondition(act[i], expected[i], fields, `${where}[${i}]`);
    if (d) return d;
  }
  return undefined;
}

const STATUS_LISTS = ['containerStatuses', 'initContainerStatuses', 'ephemeralContainerStatuses'] as const;
const STATUS_SCALARS = ['phase', 'reason', 'message', 'podIP', 'hostIP', 'qosClass', 'startTime'] as const;

/** Compares one top-level pod-status field. `fields` restricts list items (from compareFields). */
function diffField(
  actual: PodStatus,
  expect: Record<string, unknown>,
  field: string,
  fields: string[] | undefined,
): string | undefined {
  const where = `$.${field}`;
  if ((STATUS_SCALARS as readonly string[]).includes(field)) {
    const a = (actual as Record<string, unknown>)[field];
    return zeroEqual(a, expect[field])
      ? undefined
      : `${where}: expected ${show(expect[field])}, got ${show(a)}`;
  }
  if (field === 'conditions') return diffConditions(actual.conditions, expect[field] ?? [], fields, where);
  if ((STATUS_LISTS as readonly string[]).includes(field)) {
    const exp = expect[field] === undefined ? [] : parseExpectedStatuses(expect[field], where);
    return diffStatusesByName(actual[field as (typeof STATUS_LISTS)[number]], exp, fields, where);
  }
  if (field === 'podIPs' || field === 'hostIPs') {
    const a = (actual[field] ?? []).map((x) => x.ip);
    const e = Array.isArray(expect[field])
      ? (expect[field] as unknown[]).map((x) => (isRecord(x) ? x.ip : x))
      : [];
    return zeroEqual(a, e) ? undefined : `${where}: expected ${show(e)}, got ${show(a)}`;
  }
  throw new Uninterpretable(`expect: unknown pod status field '${field}'`);
}

/**
 * Compares a generated pod status with the case's expectation: the compareFields selectors when given,
 * otherwise every key of `expect` except those in `ignore` (keys handled by the caller).
 */
export function diffPodStatus(
  actual: PodStatus,
  expect: Record<string, unknown>,
  ignore: readonly string[] = [],
): string | undefined {
  const selectors = parseCompareFields(expect.compareFields);
  if (selectors) {
    for (const s of selectors) {
      const fields = s.kind === 'whole' ? undefined : s.fields;
      const d = diffField(actual, expect, s.field, fields);
      if (d) return d;
    }
    return undefined;
  }
  for (const field of Object.keys(expect)) {
    if (field === 'compareFields' || ignore.includes(field)) continue;
    const d = diffField(actual, expect, field, undefined);
    if (d) return d;
  }
  return undefined;
}
