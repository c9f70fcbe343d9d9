/**
 * The value grammar of the statusManager cases: how `given` values become core/v1 objects.
 *
 * Times (`parseTime`):
 *   now            the scenario's start time on the fake clock (it has a sub-second part)
 *   now(ns)        the same instant written with nanosecond digits, as Go's metav1.Now() would carry it
 *   now[+-]N<unit> an offset from now; unit ms | s | m | h            e.g. now-1s
 *   tN, N          N seconds after the fake clock's origin (t0 = the origin; now is an hour later)
 *   RFC3339 text   taken as written
 * Container states (`parseState`): none (no state at all) | waiting | waiting(Reason) | running |
 *   terminated | terminated(code) | terminated(code, Reason) | an object {waiting|running|terminated: {...}}.
 * Container statuses (`parseContainerStatus`): a state token; one of the phase area's status tokens
 *   (started, succeeded, stopped, failed, waitingLastOK, waitingLastFail); a bare state object; or an
 *   object {name?, state?, last?|lastState?, ready?, started?, containerID?, restartCount?, image?, imageID?}.
 * Status lists: a list (unnamed entries take the spec container name at the same index), a map
 *   name -> entry, or `<prefix>A..B in order` / `<prefix>A..B in random order` (entries with names only;
 *   "random" is a fixed shuffle that is never the sorted order).
 * Pod statuses (`parseStatus`): an object of PodStatus fields, with the lists and times above and
 *   conditions as a list of {type, status, ...} or a map type -> {status, ...}; `empty` / null = {}.
 * Anything else throws Uninterpretable.
 */
import type { ContainerState, ContainerStatus, PodCondition, PodStatus } from '../../../src/api/core.js';
import { Uninterpretable } from '../types.js';
import { CONDITION_KEYS } from './case-keys.js';

/** The fake clock's origin (t0) and the start of every scenario (now): an hour and 0.123 s later. */
export const ORIGIN_MS = Date.UTC(2026, 0, 1, 0, 0, 0);
export const START_MS = ORIGIN_MS + 3_600_123;

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function show(v: unknown): string {
  return JSON.stringify(v) ?? String(v);
}

/** Throws Uninterpretable unless every key of `o` is allowed. */
export function checkKeys(o: Obj, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) throw new Uninterpretable(`${where}: unknown key '${k}'`);
  }
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Epoch ms of a time token (see the module comment). */
export function parseTimeMs(v: unknown, now: number): number {
  if (typeof v === 'number' && Number.isFinite(v)) return ORIGIN_MS + v * 1000;
  if (typeof v !== 'string') throw new Uninterpretable(`time: cannot read ${show(v)}`);
  const s = v.trim();
  if (s === 'now' || s === 'now(ns)') return now;
  const rel = /^now\s*([+-])\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/.exec(s);
  if (rel) return now + (rel[1] === '-' ? -1 : 1) * Number(rel[2]) * (UNIT_MS[rel[3] as string] as number);
  const t = /^t(\d+)$/.exec(s);
  if (t) return ORIGIN_MS + Number(t[1]) * 1000;
  if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(s)) return Date.parse(s);
  throw new Uninterpretable(`time: unknown token ${show(v)}`);
}

/** A time token as the wire string the pod would carry. `now(ns)` keeps nanosecond digits. */
export function parseTime(v: unknown, now: number): string {
  if (typeof v === 'string' && /^\d{4}-/.test(v.trim())) return v.trim();
  const ms = parseTimeMs(v, now);
  const iso = new Date(ms).toISOString();
  return v === 'now(ns)' ? iso.replace(/\.(\d{3})Z$/, '.$1456789Z') : iso;
}

const STATE_TIME_KEYS = ['startedAt', 'finishedAt'];

function parseStateObject(o: Obj, now: number, where: string): ContainerState {
  checkKeys(o, ['waiting', 'running', 'terminated'], where);
  const out: ContainerState = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === null || v === undefined) continue;
    if (!isObj(v)) throw new Uninterpretable(`${where}.${k}: expected an object, got ${show(v)}`);
    const allowed =
      k === 'waiting'
        ? ['reason', 'message']
        : k === 'running'
          ? ['startedAt']
          : ['exitCode', 'signal', 'reason', 'message', 'startedAt', 'finishedAt', 'containerID'];
    checkKeys(v, allowed, `${where}.${k}`);
    const inner: Obj = {};
    for (const [ik, iv] of Object.entries(v))
      inner[ik] = STATE_TIME_KEYS.includes(ik) ? parseTime(iv, now) : iv;
    if (k === 'terminated' && typeof inner.exitCode !== 'number') inner.exitCode = 0;
    (out as Obj)[k] = inner;
  }
  return out;
}

/** A container state token or state object. */
export function parseState(v: unknown, now: number, where: string): ContainerState {
  if (isObj(v)) return parseStateObject(v, now, where);
  if (typeof v !== 'string') throw new Uninterpretable(`${where}: cannot read state ${show(v)}`);
  const s = v.trim();
  if (s === 'none') return {};
  if (s === 'running') return { running: {} };
  if (s === 'waiting') return { waiting: {} };
  const w = /^waiting\(\s*([^)]*?)\s*\)$/.exec(s);
  if (w) return { waiting: w[1] ? { reason: w[1] } : {} };
  if (s === 'terminated') return { terminated: { exitCode: 0 } };
  const t = /^terminated\(\s*(-?\d+)\s*(?:,\s*([^)]*?)\s*)?\)$/.exec(s);
  if (t) return { terminated: { exitCode: Number(t[1]), ...(t[2] ? { reason: t[2] } : {}) } };
  throw new Uninterpretable(`${where}: unknown state token ${show(v)}`);
}

/** The phase area's API status tokens, usable wherever a status entry is. */
const STATUS_TOKENS: Record<string, Partial<ContainerStatus>> = {
  started: { state: { running: {} }, started: true },
  succeeded: { state: { terminated: { exitCode: 0 } } },
  stopped: { state: { terminated: { exitCode: 0 } } },
  failed: { state: { terminated: { exitCode: -1 } } },
  waitingLastOK: { state: { waiting: {} }, lastState: { terminated: { exitCode: 0 } } },
  waitingLastFail: { state: { waiting: {} }, lastState: { terminated: { exitCode: -1 } } },
};

const STATUS_ENTRY_KEYS = [
  'name',
  'state',
  'last',
  'lastState',
  'ready',
  'started',
  'containerID',
  'restartCount',
  'image',
  'imageID',
];

function isBareState(o: Obj): boolean {
  const keys = Object.keys(o);
  return keys.length > 0 && keys.every((k) => k === 'waiting' || k === 'running' || k === 'terminated');
}

/** One container status entry (see the module comment). `name` applies unless the entry names itself. */
export function parseContainerStatus(v: unknown, name: string, now: number, where: string): ContainerStatus {
  const base: ContainerStatus = { name, ready: false, restartCount: 0 };
  if (typeof v === 'string' && Object.hasOwn(STATUS_TOKENS, v.trim())) {
    return { ...base, ...structuredClone(STATUS_TOKENS[v.trim()]) };
  }
  if (typeof v === 'string') return { ...base, state: parseState(v, now, where) };
  if (!isObj(v)) throw new Uninterpretable(`${where}: cannot read container status ${show(v)}`);
  if (isBareState(v)) return { ...base, state: parseStateObject(v, now, where) };
  checkKeys(v, STATUS_ENTRY_KEYS, where);
  if (v.last !== undefined && v.lastState !== undefined)
    throw new Uninterpretable(`${where}: both last and lastState`);
  const out: ContainerStatus = { ...base };
  for (const [k, val] of Object.entries(v)) {
    if (k === 'state') out.state = parseState(val, now, `${where}.state`);
    else if (k === 'last' || k === 'lastState') out.lastState = parseState(val, now, `${where}.${k}`);
    else (out as unknown as Obj)[k] = val;
  }
  if (typeof out.name !== 'string') throw new Uninterpretable(`${where}: name is not a string`);
  return out;
}

function rangeNames(s: string): string[] | undefined {
  const m = /^(.*?)(\d+)\s*\.\.\s*(\d+) in (random )?order$/.exec(s.trim());
  if (!m) return undefined;
  const [from, to] = [Number(m[2]), Number(m[3])];
  if (to < from || to - from > 1000) throw new Uninterpretable(`status list: bad range ${show(s)}`);
  const names = Array.from({ length: to - from + 1 }, (_, i) => `${m[1]}${from + i}`);
  if (!m[4] || names.length < 2) return names;
  // A fixed permutation (a seeded Fisher-Yates), so a failing run can be reproduced.
  let seed = 0x9e3779b9;
  const shuffled = [...names];
  for (let i = shuffled.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [shuffled[i], shuffled[j]] = [shuffled[j] as string, shuffled[i] as string];
  }
  if (shuffled.every((n, i) => n === names[i])) shuffled.reverse();
  return shuffled;
}

/** A status list in any of its three forms; `specNames` names unnamed list entries by index. */
export function parseStatusList(
  v: unknown,
  specNames: readonly string[],
  now: number,
  where: string,
): ContainerStatus[] {
  if (v === null || v === undefined) return [];
  if (typeof v === 'string') {
    const names = rangeNames(v);
    if (!names) throw new Uninterpretable(`${where}: cannot read ${show(v)}`);
    return names.map((name) => ({ name, ready: false, restartCount: 0 }));
  }
  if (Array.isArray(v)) {
    return v.map((e, i) => parseContainerStatus(e, specNames[i] ?? '', now, `${where}[${i}]`));
  }
  if (isObj(v)) {
    return Object.entries(v).map(([name, e]) => parseContainerStatus(e, name, now, `${where}.${name}`));
  }
  throw new Uninterpretable(`${where}: cannot read ${show(v)}`);
}

function parseCondition(o: Obj, now: number, where: string): PodCondition {
  checkKeys(o, CONDITION_KEYS, where);
  if (typeof o.type !== 'string') throw new Uninterpretable(`${where}: condition without a type`);
  const c: Obj = {};
  for (const [k, v] of Object.entries(o)) {
    c[k] = (k === 'lastTransitionTime' || k === 'lastProbeTime') && v !== null ? parseTime(v, now) : v;
  }
  return c as unknown as PodCondition;
}

/** Conditions as a list of objects or a map type -> {status...} (or type -> status string). */
export function parseConditions(v: unknown, now: number, where: string): PodCondition[] {
  if (v === null || v === undefined) return [];
  if (Array.isArray(v)) {
    return v.map((c, i) => {
      if (!isObj(c)) throw new Uninterpretable(`${where}[${i}]: not an object`);
      return parseCondition(c, now, `${where}[${i}]`);
    });
  }
  if (isObj(v)) {
    return Object.entries(v).map(([type, c]) =>
      parseCondition(
        typeof c === 'string' ? { type, status: c } : { type, ...(isObj(c) ? c : {}) },
        now,
        `${where}.${type}`,
      ),
    );
  }
  throw new Uninterpretable(`${where}: cannot read conditions ${show(v)}`);
}

export interface SpecNames {
  initContainers: readonly string[];
  containers: readonly string[];
  ephemeralContainers: readonly string[];
}

export const NO_SPEC: SpecNames = { initContainers: [], containers: [], ephemeralContainers: [] };

const STATUS_KEYS = [
  'phase',
  'message',
  'reason',
  'conditions',
  'initContainerStatuses',
  'containerStatuses',
  'ephemeralContainerStatuses',
  'startTime',
  'hostIP',
  'hostIPs',
  'podIP',
  'podIPs',
  'qosClass',
  'nominatedNodeName',
  'resourceClaimStatuses',
  'observedGeneration',
];

/** A pod status given as an object of PodStatus fields (see the module comment). */
export function parseStatus(v: unknown, spec: SpecNames, now: number, where: string): PodStatus {
  if (v === null || v === undefined || v === 'empty') return {};
  if (!isObj(v)) throw new Uninterpretable(`${where}: cannot read a pod status from ${show(v)}`);
  checkKeys(v, STATUS_KEYS, where);
  const out: Obj = {};
  for (const [k, val] of Object.entries(v)) {
    if (k === 'conditions') out[k] = parseConditions(val, now, `${where}.conditions`);
    else if (k === 'startTime') out[k] = val === null ? undefined : parseTime(val, now);
    else if (
      k === 'initContainerStatuses' ||
      k === 'containerStatuses' ||
      k === 'ephemeralContainerStatuses'
    ) {
      const names =
        spec[
          k === 'initContainerStatuses'
            ? 'initContainers'
            : k === 'containerStatuses'
              ? 'containers'
              : 'ephemeralContainers'
        ];
      out[k] = parseStatusList(val, names, now, `${where}.${k}`);
    } else out[k] = val;
  }
  return out as PodStatus;
}
