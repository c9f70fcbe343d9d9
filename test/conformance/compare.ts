/**
 * Comparison helpers for interpreters: a structural diff that names the first differing path, so a failed
 * case says exactly what differed.
 */
import { fail, pass, type Verdict } from './types.js';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * First difference between `actual` and `expected`, or undefined when equal. With `subset`, keys absent
 * from `expected` are ignored at every depth (the case asserts only what it lists).
 */
export function firstDifference(
  actual: unknown,
  expected: unknown,
  opts: { subset?: boolean } = {},
  path = '$',
): string | undefined {
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${path}: expected an array, got ${show(actual)}`;
    if (actual.length !== expected.length)
      return `${path}: expected ${expected.length} items, got ${actual.length} (${show(actual)})`;
    for (let i = 0; i < expected.length; i++) {
      const d = firstDifference(actual[i], expected[i], opts, `${path}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  if (isObject(expected)) {
    if (!isObject(actual)) return `${path}: expected an object, got ${show(actual)}`;
    const keys = new Set(Object.keys(expected));
    if (!opts.subset) for (const k of Object.keys(actual)) if (actual[k] !== undefined) keys.add(k);
    for (const k of keys) {
      const d = firstDifference(actual[k], expected[k], opts, `${path}.${k}`);
      if (d) return d;
    }
    return undefined;
  }
  if (actual === expected) return undefined;
  return `${path}: expected ${show(expected)}, got ${show(actual)}`;
}

export function expectEqual(actual: unknown, expected: unknown, what = ''): Verdict {
  const d = firstDifference(actual, expected);
  return d ? fail(what ? `${what}: ${d}` : d) : pass;
}

export function expectSubset(actual: unknown, expected: unknown, what = ''): Verdict {
  const d = firstDifference(actual, expected, { subset: true });
  return d ? fail(what ? `${what}: ${d}` : d) : pass;
}

/** Runs checks in order and returns the first failure. */
export function all(...verdicts: Verdict[]): Verdict {
  for (const v of verdicts) if (!v.pass) return v;
  return pass;
}

export function show(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 200 ? `${s.slice(0, 200)}...` : s;
}
