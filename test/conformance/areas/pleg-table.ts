/**
 * Interpreter for `generateEvents(old, new)` cases: `given.stateMapping` (runtime state -> PLEG state;
 * `absent` = the container is not listed) is checked against convertState / getContainerState, and each
 * row of `expect.table` against generateEvents. An event written `Type (computed, never emitted)` must
 * also be one the PLEG filters out of its channel.
 */
import {
  convertState,
  generateEvents,
  getContainerState,
  isSentEvent,
  type PlegContainerState,
} from '../../../src/kubelet/pleg/events.js';
import { fail, pass, Uninterpretable, type ConformanceCase, type Verdict } from '../types.js';
import { firstDifference, show } from '../compare.js';
import { readList, readObj, readString, readToken } from './prober-read.js';
import { EVENT_TYPES } from './pleg-relist.js';

const PLEG_STATES = ['running', 'exited', 'unknown', 'non-existent'] as const;
const RUNTIME_STATES = ['created', 'running', 'exited', 'unknown', 'absent'] as const;

export function interpretEventTable(c: ConformanceCase): Verdict {
  const g = readObj(c.given, 'given', ['function', 'stateMapping']);
  const ex = readObj(c.expect, 'expect', ['table']);
  if (g.stateMapping !== undefined) {
    for (const [from, to] of Object.entries(readObj(g.stateMapping, 'given.stateMapping'))) {
      const runtime = readToken(from, RUNTIME_STATES, 'given.stateMapping (runtime state)');
      const want = readToken(to, PLEG_STATES, `given.stateMapping.${from}`);
      const got: PlegContainerState =
        runtime === 'absent'
          ? getContainerState({ containers: [], sandboxes: [] }, 'c')
          : convertState(runtime);
      if (got !== want) return fail(`stateMapping.${from}: expected ${want}, got ${got}`);
    }
  }
  const rows = readList(ex.table, 'expect.table');
  if (rows.length === 0) throw new Uninterpretable('expect.table is empty');
  for (const [i, raw] of rows.entries()) {
    const what = `table[${i}]`;
    const row = readObj(raw, what, ['old', 'new', 'events']);
    const oldState = readToken(row.old, PLEG_STATES, `${what}.old`);
    const newState = readToken(row.new, PLEG_STATES, `${what}.new`);
    const expected: string[] = [];
    for (const [j, item] of readList(row.events, `${what}.events`).entries()) {
      const m = /^(\w+)(?:\s*\((.*)\))?$/.exec(readString(item, `${what}.events[${j}]`).trim());
      if (!m) throw new Uninterpretable(`${what}.events[${j}]: unreadable ${show(item)}`);
      const type = readToken(m[1], EVENT_TYPES, `${what}.events[${j}]`);
      if (m[2] !== undefined) {
        if (m[2].trim() !== 'computed, never emitted') {
          throw new Uninterpretable(`${what}.events[${j}]: unknown remark ${show(m[2])}`);
        }
        if (isSentEvent(type)) return fail(`${what}: ${type} is sent, but the case says it is never emitted`);
      }
      expected.push(type);
    }
    const actual = generateEvents('pod', 'c', oldState, newState).map((e) => {
      if ('data' in e && e.data !== 'c') throw new Error(`event carries ${e.data}, not the container ID`);
      return e.type;
    });
    const d = firstDifference(actual, expected);
    if (d) return fail(`${what} (${oldState} -> ${newState}): ${d}`);
  }
  return pass;
}
