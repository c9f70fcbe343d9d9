/**
 * The small step language of the backoff cases, parsed into statements:
 *
 *   script   := [("loop" | "repeat") N "x:"] stmt (";" stmt)*       the prefix repeats the whole list
 *   stmt     := "clock" "+=" duration | "clock" "=" time | ["record"] call
 *   call     := Next(key, time) | Get(key) | Reset(key) | GC() | IsInBackOffSince(key, time)
 *             | IsInBackOffSinceUpdate(key, time)
 *   time     := "now" [("+" | "-") duration] | number (seconds on the fake clock)
 *   duration := Go-style ("1s", "500ms", "1m30s", "1.5s") or a bare number of seconds
 *
 * plus the short form of `calls:`:  "Next xN" [ "without expiry" ]  = N calls of Next(id, now) at one instant.
 * Anything else is Uninterpretable.
 */
import { Uninterpretable } from '../types.js';

/** A time expression, resolved against the clock when the statement runs. */
export type TimeExpr = { kind: 'now'; offsetMs: number } | { kind: 'abs'; ms: number };

export type Call =
  | { fn: 'Next'; key: string; time: TimeExpr }
  | { fn: 'Get'; key: string }
  | { fn: 'Reset'; key: string }
  | { fn: 'GC' }
  | { fn: 'IsInBackOffSince'; key: string; time: TimeExpr }
  | { fn: 'IsInBackOffSinceUpdate'; key: string; time: TimeExpr };

export type Stmt =
  | { kind: 'advance'; ms: number }
  | { kind: 'setClock'; time: TimeExpr }
  | { kind: 'call'; call: Call; record: boolean };

const unitMs: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 1e-3,
  µs: 1e-3,
  ns: 1e-6,
};

/** "1m30s" / "500ms" / "6s" / 6 -> milliseconds. */
export function parseDuration(v: unknown, where: string): number {
  if (typeof v === 'number' && Number.isFinite(v)) return v * 1000;
  if (typeof v !== 'string') throw new Uninterpretable(`${where}: not a duration: ${JSON.stringify(v)}`);
  const s = v.trim();
  if (/^-?\d+(\.\d+)?$/.test(s)) return Number(s) * 1000;
  const re = /(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * unitMs[m[2]!]!;
    consumed = re.lastIndex;
  }
  if (consumed === 0 || consumed !== s.length) {
    throw new Uninterpretable(`${where}: not a duration: ${JSON.stringify(v)}`);
  }
  return total;
}

/** "now", "now-1s", "now + 500ms", or a number of seconds. */
export function parseTime(v: unknown, where: string): TimeExpr {
  if (typeof v === 'number' && Number.isFinite(v)) return { kind: 'abs', ms: v * 1000 };
  if (typeof v !== 'string') throw new Uninterpretable(`${where}: not a time: ${JSON.stringify(v)}`);
  const s = v.replace(/\s+/g, '');
  if (/^-?\d+(\.\d+)?$/.test(s)) return { kind: 'abs', ms: Number(s) * 1000 };
  const m = /^now(?:([+-])(.+))?$/.exec(s);
  if (!m) throw new Uninterpretable(`${where}: not a time: ${JSON.stringify(v)}`);
  const offset = m[1] ? parseDuration(m[2], where) * (m[1] === '-' ? -1 : 1) : 0;
  return { kind: 'now', offsetMs: offset };
}

export function resolveTime(t: TimeExpr, now: number): number {
  return t.kind === 'now' ? now + t.offsetMs : t.ms;
}

function parseKey(arg: string | undefined, where: string): string {
  const k = (arg ?? '').trim().replace(/^(["'])(.*)\1$/, '$2');
  if (!/^[\w.:/<>-]+$/.test(k)) throw new Uninterpretable(`${where}: not a key: ${JSON.stringify(arg)}`);
  return k;
}

function parseCall(text: string, where: string): Call {
  const m = /^([A-Za-z]+)\s*\((.*)\)$/.exec(text.trim());
  if (!m) throw new Uninterpretable(`${where}: unknown statement ${JSON.stringify(text)}`);
  const fn = m[1]!;
  const args = m[2]!.trim() === '' ? [] : m[2]!.split(',').map((a) => a.trim());
  const arity = (n: number) => {
    if (args.length !== n) throw new Uninterpretable(`${where}: ${fn} takes ${n} argument(s): ${text}`);
  };
  switch (fn) {
    case 'Next':
    case 'IsInBackOffSince':
    case 'IsInBackOffSinceUpdate':
      arity(2);
      return { fn, key: parseKey(args[0], where), time: parseTime(args[1], where) };
    case 'Get':
    case 'Reset':
      arity(1);
      return { fn, key: parseKey(args[0], where) };
    case 'GC':
      arity(0);
      return { fn };
    default:
      throw new Uninterpretable(`${where}: unknown call ${JSON.stringify(fn)}`);
  }
}

function parseStmt(text: string, where: string): Stmt {
  const s = text.trim();
  let m = /^clock\s*\+=\s*(.+)$/.exec(s);
  if (m) return { kind: 'advance', ms: parseDuration(m[1], where) };
  m = /^clock\s*=\s*(.+)$/.exec(s);
  if (m) return { kind: 'setClock', time: parseTime(m[1], where) };
  m = /^record\s+(.+)$/.exec(s);
  if (m) return { kind: 'call', call: parseCall(m[1]!, where), record: true };
  return { kind: 'call', call: parseCall(s, where), record: false };
}

/** Parses one script string into the flat statement list it stands for (loops unrolled). */
export function parseScript(text: unknown, where: string, defaultKey = 'id'): Stmt[] {
  if (typeof text !== 'string' || text.trim() === '') {
    throw new Uninterpretable(`${where}: expected a step script, got ${JSON.stringify(text)}`);
  }
  const short = /^Next\s+x\s*(\d+)(\s+without\s+expiry)?$/.exec(text.trim());
  if (short) {
    const stmt: Stmt = {
      kind: 'call',
      call: { fn: 'Next', key: defaultKey, time: { kind: 'now', offsetMs: 0 } },
      record: false,
    };
    return Array.from({ length: Number(short[1]) }, () => stmt);
  }
  let body = text.trim();
  let times = 1;
  const loop = /^(?:loop|repeat)\s+(\d+)\s*x\s*:(.*)$/s.exec(body);
  if (loop) {
    times = Number(loop[1]);
    body = loop[2]!;
  }
  const stmts = body
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map((p) => parseStmt(p, where));
  if (!stmts.length) throw new Uninterpretable(`${where}: empty script ${JSON.stringify(text)}`);
  const out: Stmt[] = [];
  for (let i = 0; i < times; i++) out.push(...stmts);
  return out;
}

/** Whether `text` looks like a script (as opposed to a named operation such as `syncPod`). */
export function isScript(text: string): boolean {
  const s = text.trim();
  return (
    /^(?:loop|repeat)\s+\d+\s*x\s*:/.test(s) ||
    /^Next\s+x\s*\d+/.test(s) ||
    /^clock\s*(\+=|=)/.test(s) ||
    /^(record\s+)?[A-Za-z]+\s*\(.*\)\s*(;|$)/.test(s)
  );
}
