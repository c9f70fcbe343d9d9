/**
 * statusManager cases that call one pure function (`given.function`).
 *
 * `given.function` is an expression: `name` or `name(arg, ...)`, where an argument is an expression or
 * the name of a `given` key holding a status. Functions and what they take and give:
 *   normalizeStatus(s)                 -> status      bare: s = given.status        expect.status
 *   isPodStatusByKubeletEqual(a, b)    -> boolean     (statuses)                    expect.equal
 *   mergePodStatus(old, new)           -> status      bare: given.old, given.new    expect.merged
 *                                                     (+ given.couldHaveRunningContainers, default false)
 *   updateLastTransitionTime           -> time        given.conditionType, given.new / given.old as the
 *                                                     condition (absent = none)     expect.lastTransitionTime
 * expect.status may be a status spec or the phrase `every ... truncated to whole seconds`, which asserts
 * that each time field of the input comes out truncated to its second.
 */
import type { Pod, PodStatus } from '../../../src/api/core.js';
import { updateLastTransitionTime } from '../../../src/kubelet/status/conditions.js';
import { isPodStatusByKubeletEqual } from '../../../src/kubelet/status/equality.js';
import { mergePodStatus } from '../../../src/kubelet/status/merge.js';
import { normalizeStatus } from '../../../src/kubelet/status/normalize.js';
import { TIME_KEYS } from '../../../src/kubelet/status/semantic.js';
import { fail, pass, Uninterpretable, type CaseFile, type ConformanceCase, type Verdict } from '../types.js';
import { checkStatusFull, checkTime, type ExpectContext } from './statusManager-expect.js';
import {
  checkKeys,
  isObj,
  NO_SPEC,
  parseStatus,
  parseTime,
  show,
  START_MS,
  type Obj,
} from './statusManager-tokens.js';
import { buildPod, specNames } from './statusManager-world.js';

interface Call {
  name: string;
  args: Call[] | undefined;
}

function parseExpression(src: string): Call {
  let i = 0;
  const ws = () => {
    while (/\s/.test(src[i] ?? '')) i++;
  };
  const expr = (): Call => {
    ws();
    const m = /^[A-Za-z_][\w.]*/.exec(src.slice(i));
    if (!m) throw new Uninterpretable(`function: cannot parse ${show(src)} at ${i}`);
    i += m[0].length;
    ws();
    if (src[i] !== '(') return { name: m[0], args: undefined };
    i++;
    const args: Call[] = [];
    ws();
    if (src[i] === ')') i++;
    else {
      for (;;) {
        args.push(expr());
        ws();
        if (src[i] === ',') i++;
        else if (src[i] === ')') {
          i++;
          break;
        } else throw new Uninterpretable(`function: cannot parse ${show(src)} at ${i}`);
      }
    }
    return { name: m[0], args };
  };
  const e = expr();
  ws();
  if (i !== src.length) throw new Uninterpretable(`function: trailing text in ${show(src)}`);
  return e;
}

type Value =
  | { kind: 'status'; status: PodStatus; from: string }
  | { kind: 'bool'; value: boolean }
  | { kind: 'time'; value: unknown };

const GIVEN_KEYS = [
  'function',
  'a',
  'b',
  'status',
  'old',
  'new',
  'couldHaveRunningContainers',
  'conditionType',
  'pod',
];

export function interpretFunctionCase(c: ConformanceCase, file: CaseFile): Verdict {
  const g = c.given;
  checkKeys(g, GIVEN_KEYS, 'given');
  if (typeof g.function !== 'string') throw new Uninterpretable(`given.function: ${show(g.function)}`);
  const now = START_MS;
  const pod: Pod =
    g.pod !== undefined
      ? buildPod(g.pod, file, now, 'given.pod')
      : { metadata: {}, spec: { containers: [] } };
  const spec = g.pod !== undefined ? specNames(pod.spec) : NO_SPEC;
  const ctx: ExpectContext = { now, spec, snapshots: [] };
  const statusOf = (key: string): PodStatus => {
    if (!Object.hasOwn(g, key) || key === 'function')
      throw new Uninterpretable(`function: no given '${key}'`);
    return parseStatus(g[key], spec, now, `given.${key}`);
  };
  const arity = (call: Call, n: number, bare: string[]): Call[] => {
    const args = call.args ?? bare.map((name) => ({ name, args: undefined }));
    if (args.length !== n) throw new Uninterpretable(`${call.name}: expected ${n} arguments`);
    return args;
  };
  const asStatus = (v: Value, where: string): PodStatus => {
    if (v.kind !== 'status') throw new Uninterpretable(`${where}: not a status`);
    return v.status;
  };

  const evaluate = (call: Call): Value => {
    switch (call.name) {
      case 'normalizeStatus': {
        const [s] = arity(call, 1, ['status']);
        return {
          kind: 'status',
          status: normalizeStatus(pod, asStatus(evaluate(s as Call), call.name)),
          from: call.name,
        };
      }
      case 'isPodStatusByKubeletEqual': {
        const [a, b] = arity(call, 2, ['a', 'b']).map((x) => asStatus(evaluate(x), call.name));
        return { kind: 'bool', value: isPodStatusByKubeletEqual(a as PodStatus, b as PodStatus) };
      }
      case 'mergePodStatus': {
        const [o, n] = arity(call, 2, ['old', 'new']).map((x) => asStatus(evaluate(x), call.name));
        const couldRun = g.couldHaveRunningContainers ?? false;
        if (typeof couldRun !== 'boolean')
          throw new Uninterpretable(`couldHaveRunningContainers: ${show(couldRun)}`);
        return {
          kind: 'status',
          status: mergePodStatus(o as PodStatus, n as PodStatus, couldRun, now),
          from: call.name,
        };
      }
      case 'updateLastTransitionTime': {
        if (call.args) throw new Uninterpretable('updateLastTransitionTime takes its inputs from given');
        const type = g.conditionType;
        if (typeof type !== 'string') throw new Uninterpretable(`given.conditionType: ${show(type)}`);
        const cond = (key: 'new' | 'old'): PodStatus => {
          const v = g[key];
          if (v === undefined || v === null) return {};
          if (!isObj(v)) throw new Uninterpretable(`given.${key}: ${show(v)}`);
          return parseStatus({ conditions: [{ type, ...v }] }, spec, now, `given.${key}`);
        };
        const status = cond('new');
        updateLastTransitionTime(status, cond('old'), type, now);
        return { kind: 'time', value: status.conditions?.[0]?.lastTransitionTime };
      }
      default:
        if (call.args) throw new Uninterpretable(`unknown function '${call.name}'`);
        return { kind: 'status', status: statusOf(call.name), from: 'given' };
    }
  };

  const expr = parseExpression(g.function);
  const result = evaluate(expr);
  const e = c.expect;
  const expectKey =
    result.kind === 'bool'
      ? 'equal'
      : result.kind === 'time'
        ? 'lastTransitionTime'
        : result.from === 'mergePodStatus'
          ? 'merged'
          : 'status';
  checkKeys(e, [expectKey, 'note'], 'expect');
  if (!Object.hasOwn(e, expectKey)) throw new Uninterpretable(`expect: '${expectKey}' missing`);
  const want = e[expectKey];

  let d: string | undefined;
  if (result.kind === 'bool') {
    if (typeof want !== 'boolean') throw new Uninterpretable(`expect.equal: ${show(want)}`);
    d = result.value === want ? undefined : `expected ${want}, got ${result.value}`;
  } else if (result.kind === 'time') {
    const old = g.old;
    const oldTime =
      isObj(old) && old.lastTransitionTime !== undefined ? parseTime(old.lastTransitionTime, now) : undefined;
    d =
      want === 'unchanged'
        ? result.value === oldTime
          ? undefined
          : `lastTransitionTime: expected the old ${show(oldTime)}, got ${show(result.value)}`
        : checkTime(result.value, want, ctx, 'lastTransitionTime');
  } else if (typeof want === 'string' && /^every .* truncated to whole seconds$/.test(want)) {
    const input = expr.args ? evaluate(expr.args[0] as Call) : evaluate({ name: 'status', args: undefined });
    d = checkAllTimesTruncated(asStatus(input, 'input'), result.status);
  } else {
    d = checkStatusFull(result.status, want, ctx, `expect.${expectKey}`);
  }
  return d ? fail(d) : pass;
}

/** Every time field in `input` appears in `output` at the same place, cut to its whole second. */
function checkAllTimesTruncated(input: PodStatus, output: PodStatus): string | undefined {
  let checked = 0;
  const walk = (a: unknown, b: unknown, path: string): string | undefined => {
    if (Array.isArray(a)) {
      // normalizeStatus sorts container statuses, so entries pair by name when names tell them apart.
      const names = a.map((x) => (isObj(x) ? x.name : undefined));
      const byName = names.every((n) => typeof n === 'string') && new Set(names).size === names.length;
      for (let i = 0; i < a.length; i++) {
        const other = Array.isArray(b)
          ? byName
            ? b.find((x) => isObj(x) && x.name === names[i])
            : b[i]
          : undefined;
        const d = walk(a[i], other, `${path}[${i}]`);
        if (d) return d;
      }
      return undefined;
    }
    if (!isObj(a)) return undefined;
    for (const [k, v] of Object.entries(a as Obj)) {
      const out = isObj(b) ? b[k] : undefined;
      if (TIME_KEYS.has(k) && typeof v === 'string') {
        checked++;
        const want = new Date(Math.floor(Date.parse(v) / 1000) * 1000).toISOString().replace('.000Z', 'Z');
        if (out !== want) return `${path}.${k}: expected ${want}, got ${show(out)}`;
      } else {
        const d = walk(v, out, `${path}.${k}`);
        if (d) return d;
      }
    }
    return undefined;
  };
  const d = walk(input, output, 'status');
  if (d) return d;
  return checked > 0 ? undefined : 'status: the input has no time to check';
}
