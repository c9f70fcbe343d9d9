/**
 * Strict readers for case data, shared by the prober and PLEG interpreters. Every reader names what it was
 * reading and throws Uninterpretable on a shape, key or token it does not know, so an unfamiliar case fails
 * by name instead of passing by accident.
 */
import { Uninterpretable } from '../types.js';
import { show } from '../compare.js';

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `v` as an object whose keys are all in `allowed`. */
export function readObj(v: unknown, what: string, allowed?: readonly string[]): Obj {
  if (!isObj(v)) throw new Uninterpretable(`${what}: expected a mapping, got ${show(v)}`);
  if (allowed) {
    const unknown = Object.keys(v).filter((k) => !allowed.includes(k));
    if (unknown.length > 0) throw new Uninterpretable(`${what}: unknown key(s) ${unknown.join(', ')}`);
  }
  return v;
}

export function readList(v: unknown, what: string): unknown[] {
  if (!Array.isArray(v)) throw new Uninterpretable(`${what}: expected a list, got ${show(v)}`);
  return v;
}

export function readString(v: unknown, what: string): string {
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') throw new Uninterpretable(`${what}: expected a string, got ${show(v)}`);
  return v;
}

export function readBool(v: unknown, what: string, dflt?: boolean): boolean {
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== 'boolean') throw new Uninterpretable(`${what}: expected true/false, got ${show(v)}`);
  return v;
}

export function readInt(v: unknown, what: string, dflt?: number): number {
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new Uninterpretable(`${what}: expected an integer, got ${show(v)}`);
  }
  return v;
}

export function readToken<T extends string>(v: unknown, tokens: readonly T[], what: string): T {
  if (typeof v !== 'string' || !(tokens as readonly string[]).includes(v)) {
    throw new Uninterpretable(`${what}: unknown token ${show(v)} (known: ${tokens.join(', ')})`);
  }
  return v as T;
}

/** The operation named by a `function:` field: the text before any parenthesised remark. */
export function functionName(v: unknown, what: string): string {
  return readString(v, what)
    .replace(/\s*\(.*\)\s*$/, '')
    .trim();
}

/**
 * Multiset comparison of two lists of plain records (events in one relist are a set). Returns a message
 * naming the missing and unexpected items, or undefined when equal.
 */
export function multisetDifference(actual: readonly Obj[], expected: readonly Obj[]): string | undefined {
  const key = (o: Obj) =>
    JSON.stringify(
      Object.keys(o)
        .sort()
        .map((k) => [k, o[k]]),
    );
  const left = actual.map(key);
  const missing: string[] = [];
  for (const e of expected.map(key)) {
    const i = left.indexOf(e);
    if (i >= 0) left.splice(i, 1);
    else missing.push(e);
  }
  if (missing.length === 0 && left.length === 0) return undefined;
  return `missing ${missing.length ? missing.join(' ') : 'none'}; unexpected ${left.length ? left.join(' ') : 'none'}`;
}
