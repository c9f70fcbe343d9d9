/**
 * Go-semantic comparison of API objects held in their JSON wire shape.
 *
 * The kubelet compares typed Go structs with apimachinery's `Semantic.DeepEqual`, where an absent field
 * and its zero value are the same thing (a missing `ready` is `false`, a missing list is an empty one) and
 * times compare as instants. Our objects are JSON, where `undefined`, `""`, `0`, `false`, `[]` and `{}`
 * all differ. `wireCanonical` removes that difference by dropping every zero value, except where Go uses
 * a pointer: there "set to the zero value" and "unset" are different facts (`started: false` is news,
 * `state.running: {}` says the container runs). Both the kubelet-equality check and the status patch are
 * computed on this canonical form, so a server status that spells out zero values never looks changed.
 */

import { isRecord } from '../../util/record.js';

/**
 * Keys whose Go field is a pointer in the pod status types (ContainerStatus.started, ContainerState's
 * waiting / running / terminated, ContainerStatus.resources and PodStatus.resources): a present zero value is
 * kept. An empty `resources` of a running container is how the API server tells a node that resizes (it
 * refuses a resize of a pod whose running container reports none).
 */
const POINTER_KEYS: ReadonlySet<string> = new Set([
  'started',
  'waiting',
  'running',
  'terminated',
  'resources',
]);

/** Keys whose values are metav1.Time: equal when they denote the same instant, whatever the spelling. */
export const TIME_KEYS: ReadonlySet<string> = new Set([
  'startTime',
  'startedAt',
  'finishedAt',
  'lastProbeTime',
  'lastTransitionTime',
]);

export type JSONObject = Record<string, unknown>;

export const isJSONObject: (v: unknown) => v is JSONObject = isRecord;

/**
 * The canonical wire form of a JSON value: zero values dropped (unless under a pointer key), list
 * elements always kept (a zero element of a list is still an element). Returns undefined for a value that
 * is entirely zero. Never mutates its input; non-JSON values (functions, symbols) count as absent.
 */
export function wireCanonical(value: unknown): unknown {
  return canonical(value, false);
}

function canonical(value: unknown, keepZero: boolean): unknown {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return value === '' && !keepZero ? undefined : value;
  if (typeof value === 'number')
    return (value === 0 || !Number.isFinite(value)) && !keepZero ? undefined : value;
  if (typeof value === 'boolean') return value === false && !keepZero ? undefined : value;
  if (Array.isArray(value)) {
    if (value.length === 0) return keepZero ? [] : undefined;
    return value.map((e) => canonical(e, true) ?? null);
  }
  if (isJSONObject(value)) {
    // for-in over own keys and a count: no entry pairs or key list built per object (a status write
    // canonicalizes two whole statuses).
    const out: JSONObject = {};
    let kept = 0;
    for (const k in value) {
      if (!Object.hasOwn(value, k)) continue;
      const c = canonical(value[k], POINTER_KEYS.has(k));
      if (c === undefined) continue;
      out[k] = c;
      kept++;
    }
    return kept === 0 && !keepZero ? undefined : out;
  }
  return undefined;
}

function sameInstant(a: string, b: string): boolean {
  if (a === b) return true;
  const ta = Date.parse(a);
  const tb = Date.parse(b);
  return !Number.isNaN(ta) && ta === tb;
}

/** Deep equality of two canonical values; `key` is the field the values sit under (for time fields). */
export function canonicalEqual(a: unknown, b: unknown, key = ''): boolean {
  if (a === b) return true;
  if (typeof a === 'string' && typeof b === 'string') return TIME_KEYS.has(key) && sameInstant(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!canonicalEqual(a[i], b[i], key)) return false;
    return true;
  }
  if (isJSONObject(a) && isJSONObject(b)) {
    // Loops and counts over own keys: no key lists or closures (a status patch compares two statuses).
    let count = 0;
    for (const k in a) {
      if (!Object.hasOwn(a, k)) continue;
      if (!Object.hasOwn(b, k) || !canonicalEqual(a[k], b[k], k)) return false;
      count++;
    }
    for (const k in b) if (Object.hasOwn(b, k)) count--;
    return count === 0;
  }
  return false;
}

/**
 * `Semantic.DeepEqual` on wire-shaped values: zero values equal absence; times compare as instants. The same
 * answer as `canonicalEqual(wireCanonical(a), wireCanonical(b))`, found by walking both values at once
 * without building their canonical forms (the status manager asks this on every pod sync; the two canonical
 * copies were most of the garbage it made).
 */
export function semanticEqual(a: unknown, b: unknown): boolean {
  return sameCanonical(a, b, '', false);
}

/** Whether canonical(v, keepZero) is undefined. */
function isAbsent(v: unknown, keepZero: boolean): boolean {
  if (v === null || v === undefined) return true;
  switch (typeof v) {
    case 'string':
      return v === '' && !keepZero;
    case 'number':
      return (v === 0 || !Number.isFinite(v)) && !keepZero;
    case 'boolean':
      return v === false && !keepZero;
    case 'object':
      if (keepZero) return false;
      if (Array.isArray(v)) return v.length === 0;
      for (const k in v) if (!isAbsent((v as JSONObject)[k], POINTER_KEYS.has(k))) return false;
      return true;
    default:
      return true;
  }
}

/** canonicalEqual(canonical(a, keepZero), canonical(b, keepZero), key), without building either. */
function sameCanonical(a: unknown, b: unknown, key: string, keepZero: boolean): boolean {
  const absentA = isAbsent(a, keepZero);
  const absentB = isAbsent(b, keepZero);
  if (absentA || absentB) return absentA && absentB;
  if (a === b) return true;
  if (typeof a === 'string' && typeof b === 'string') return TIME_KEYS.has(key) && sameInstant(a, b);
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameCanonical(a[i], b[i], key, true)) return false;
    return true;
  }
  if (!isJSONObject(a) || !isJSONObject(b)) return false;
  // A key missing on one side is an absent value there, which sameCanonical already weighs.
  for (const k in a) if (!sameCanonical(a[k], b[k], k, POINTER_KEYS.has(k))) return false;
  for (const k in b) if (!Object.hasOwn(a, k) && !isAbsent(b[k], POINTER_KEYS.has(k))) return false;
  return true;
}
