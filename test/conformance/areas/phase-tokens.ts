/**
 * Reading API container statuses from the case schema: the `api_status_tokens` grammar (running, started,
 * waiting, waitingLastOK, waitingLastFail, succeeded, stopped, failed, none, terminated(code[, Reason]),
 * waiting(Reason), running(startedAt)), object forms with Go field names (state, lastTerminationState,
 * restartCount, ready, started, containerID), and times (seconds on the fake clock, `now`, `now-Ns`,
 * RFC3339 strings). Anything else is Uninterpretable.
 */
import type { ContainerState, ContainerStatus } from '../../../src/api/core.js';
import { formatRFC3339 } from '../../../src/util/rfc3339.js';
import { Uninterpretable } from '../types.js';

/** The fake clock's "now" for cases that use relative times, in seconds. */
export const FAKE_NOW_SECONDS = 1_000_000;

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Rejects keys the interpreter does not know, so a new shape fails by name instead of passing silently. */
export function checkKeys(obj: Record<string, unknown>, known: readonly string[], where: string): void {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw new Uninterpretable(`${where}: unknown key '${k}'`);
  }
}

/** A case time -> epoch seconds: a number of seconds, `now`, `now±N[s|m]`, or an RFC3339 string. */
export function parseTimeSeconds(v: unknown, where: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string') {
    const rel = /^now(?:\s*([+-])\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?)?$/.exec(v.trim());
    if (rel) {
      if (!rel[1]) return FAKE_NOW_SECONDS;
      const unit = rel[3] === 'm' ? 60 : rel[3] === 'ms' ? 0.001 : 1;
      const delta = Number(rel[2]) * unit;
      return rel[1] === '-' ? FAKE_NOW_SECONDS - delta : FAKE_NOW_SECONDS + delta;
    }
    const t = Date.parse(v);
    if (!Number.isNaN(t) && /^\d{4}-\d{2}-\d{2}T/.test(v)) return t / 1000;
  }
  throw new Uninterpretable(`${where}: not a time: ${JSON.stringify(v)}`);
}

export function timeToRFC3339(v: unknown, where: string): string {
  return formatRFC3339(parseTimeSeconds(v, where) * 1000);
}

function int(v: unknown, where: string): number {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^[+-]?\d+$/.test(v.trim())) return Number(v.trim());
  throw new Uninterpretable(`${where}: not an integer: ${JSON.stringify(v)}`);
}

function str(v: unknown, where: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new Uninterpretable(`${where}: not a string: ${JSON.stringify(v)}`);
}

const TIME_FIELDS = ['startedAt', 'finishedAt'];

/** An API ContainerState in object form: {waiting?: {reason, message}, running?: {startedAt}, terminated?: {...}}. */
export function parseAPIState(v: unknown, where: string): ContainerState {
  if (v === null || v === undefined) return {};
  if (typeof v === 'string') return parseStatusToken('_', v, where).state ?? {};
  if (!isRecord(v)) throw new Uninterpretable(`${where}: not a container state: ${JSON.stringify(v)}`);
  checkKeys(v, ['waiting', 'running', 'terminated'], where);
  const out: ContainerState = {};
  if (v.waiting !== undefined) {
    const w = v.waiting ?? {};
    if (!isRecord(w)) throw new Uninterpretable(`${where}.waiting: not an object`);
    checkKeys(w, ['reason', 'message'], `${where}.waiting`);
    out.waiting = {};
    if (w.reason !== undefined) out.waiting.reason = str(w.reason, `${where}.waiting.reason`);
    if (w.message !== undefined) out.waiting.message = str(w.message, `${where}.waiting.message`);
  }
  if (v.running !== undefined) {
    const r = v.running ?? {};
    if (!isRecord(r)) throw new Uninterpretable(`${where}.running: not an object`);
    checkKeys(r, ['startedAt'], `${where}.running`);
    out.running = {};
    if (r.startedAt !== undefined && r.startedAt !== null) {
      out.running.startedAt = timeToRFC3339(r.startedAt, `${where}.running.startedAt`);
    }
  }
  if (v.terminated !== undefined) {
    const t = v.terminated ?? {};
    if (!isRecord(t)) throw new Uninterpretable(`${where}.terminated: not an object`);
    checkKeys(
      t,
      ['exitCode', 'signal', 'reason', 'message', 'containerID', ...TIME_FIELDS],
      `${where}.terminated`,
    );
    out.terminated = {
      exitCode: t.exitCode === undefined ? 0 : int(t.exitCode, `${where}.terminated.exitCode`),
    };
    if (t.signal !== undefined) out.terminated.signal = int(t.signal, `${where}.terminated.signal`);
    for (const k of ['reason', 'message', 'containerID'] as const) {
      if (t[k] !== undefined) out.terminated[k] = str(t[k], `${where}.terminated.${k}`);
    }
    for (const k of ['startedAt', 'finishedAt'] as const) {
      if (t[k] !== undefined && t[k] !== null)
        out.terminated[k] = timeToRFC3339(t[k], `${where}.terminated.${k}`);
    }
  }
  return out;
}

/** One status token (see the file comment) as a full API status for container `name`. */
export function parseStatusToken(name: string, token: string, where: string): ContainerStatus {
  const base: ContainerStatus = { name, ready: false, restartCount: 0 };
  const t = token.trim();
  switch (t) {
    case 'running':
      return { ...base, state: { running: {} } };
    case 'started':
      return { ...base, state: { running: {} }, started: true };
    case 'waiting':
      return { ...base, state: { waiting: {} } };
    case 'waitingLastOK':
      return { ...base, state: { waiting: {} }, lastState: { terminated: { exitCode: 0 } } };
    case 'waitingLastFail':
      return { ...base, state: { waiting: {} }, lastState: { terminated: { exitCode: -1 } } };
    case 'succeeded':
    case 'stopped':
      return { ...base, state: { terminated: { exitCode: 0 } } };
    case 'failed':
      return { ...base, state: { terminated: { exitCode: -1 } } };
    case 'none':
      return { ...base, state: {} };
  }
  const call = /^(terminated|waiting|running)\((.*)\)$/.exec(t);
  if (call) {
    const args = (call[2] ?? '')
      .split(',')
      .map((a) => a.trim())
      .filter((a) => a !== '');
    if (call[1] === 'terminated') {
      if (args.length < 1 || args.length > 2)
        throw new Uninterpretable(`${where}: bad token ${JSON.stringify(t)}`);
      const terminated: NonNullable<ContainerState['terminated']> = { exitCode: int(args[0], where) };
      if (args[1] !== undefined) terminated.reason = args[1];
      return { ...base, state: { terminated } };
    }
    if (call[1] === 'waiting') {
      if (args.length > 1) throw new Uninterpretable(`${where}: bad token ${JSON.stringify(t)}`);
      return { ...base, state: { waiting: args[0] !== undefined ? { reason: args[0] } : {} } };
    }
    if (args.length > 1) throw new Uninterpretable(`${where}: bad token ${JSON.stringify(t)}`);
    const running = args[0] !== undefined ? { startedAt: timeToRFC3339(numeric(args[0]), where) } : {};
    return { ...base, state: { running } };
  }
  throw new Uninterpretable(`${where}: unknown status token ${JSON.stringify(token)}`);
}

function numeric(s: string): number | string {
  return /^[+-]?\d+(\.\d+)?$/.test(s) ? Number(s) : s;
}

/** A status given either as a token or as an object with Go field names (a token may sit in `state`). */
export function parseAPIContainerStatus(name: string, v: unknown, where: string): ContainerStatus {
  if (typeof v === 'string') return parseStatusToken(name, v, where);
  if (v === null || v === undefined) return { name, ready: false, restartCount: 0, state: {} };
  if (!isRecord(v)) throw new Uninterpretable(`${where}: not a container status: ${JSON.stringify(v)}`);
  checkKeys(
    v,
    [
      'name',
      'state',
      'lastTerminationState',
      'lastState',
      'restartCount',
      'ready',
      'started',
      'containerID',
      'image',
      'imageID',
    ],
    where,
  );
  const status: ContainerStatus =
    typeof v.state === 'string'
      ? parseStatusToken(name, v.state, `${where}.state`)
      : { name, ready: false, restartCount: 0, state: parseAPIState(v.state, `${where}.state`) };
  if (v.name !== undefined && v.name !== name)
    throw new Uninterpretable(`${where}: name ${String(v.name)} != ${name}`);
  const last = v.lastTerminationState ?? v.lastState;
  if (last !== undefined) status.lastState = parseAPIState(last, `${where}.lastTerminationState`);
  if (v.restartCount !== undefined) status.restartCount = int(v.restartCount, `${where}.restartCount`);
  if (v.ready !== undefined) status.ready = bool(v.ready, `${where}.ready`);
  if (v.started !== undefined && v.started !== null) status.started = bool(v.started, `${where}.started`);
  for (const k of ['containerID', 'image', 'imageID'] as const) {
    if (v[k] !== undefined) status[k] = str(v[k], `${where}.${k}`);
  }
  return status;
}

export function bool(v: unknown, where: string): boolean {
  if (typeof v === 'boolean') return v;
  throw new Uninterpretable(`${where}: not a boolean: ${JSON.stringify(v)}`);
}

/**
 * A list of statuses: a map name -> token/object (order = map order), or a list of tokens/objects; list
 * entries without a name take the name at the same position in `names` (the spec's container order).
 */
export function parseStatusList(v: unknown, names: readonly string[], where: string): ContainerStatus[] {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) {
    return v.map((entry, i) => {
      const name = isRecord(entry) && typeof entry.name === 'string' ? entry.name : names[i];
      if (name === undefined) throw new Uninterpretable(`${where}[${i}]: no container name for this entry`);
      return parseAPIContainerStatus(name, entry, `${where}[${i}]`);
    });
  }
  if (!isRecord(v)) throw new Uninterpretable(`${where}: expected a map or a list of statuses`);
  return Object.entries(v).map(([name, entry]) => parseAPIContainerStatus(name, entry, `${where}.${name}`));
}
