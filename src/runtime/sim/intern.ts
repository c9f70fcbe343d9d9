/**
 * Sharing what records keep when it is the same across pods (the kubelet gives every replica of a pod the
 * same container annotations, mounts, resources and environment), and laying out what they keep of their
 * own compactly (flat strings, exactly sized label maps). Every copy equals what `{ ...o }` or the string
 * itself would be; only the memory it takes differs.
 *
 * Shared values are never changed by anyone: records replace a shared value, they do not edit it, and
 * everything the runtime returns is a copy. A table is bounded: once it holds `limit` values it starts over
 * (the values already handed out stay valid, only later sharing with them is lost), so many distinct values
 * cost at most `limit` keys, and no count of users has to be kept.
 */

import { SharedValues } from '../../util/sharedvalues.js';

/**
 * A key for `value` that no other plain value shares (JSON, which keeps key order), or undefined when JSON
 * would blur it: anything but strings, booleans, finite numbers (not -0), null, arrays and plain objects
 * (no symbol keys), or a property or element holding undefined.
 */
export function plainKey(value: unknown): string | undefined {
  return isPlain(value, 0) ? JSON.stringify(value) : undefined;
}

const MAX_DEPTH = 4;

function isPlain(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v) && !Object.is(v, -0);
    case 'object': {
      if (v === null) return true;
      if (depth >= MAX_DEPTH) return false;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!(i in v) || !isPlain(v[i], depth + 1)) return false;
        return true;
      }
      if (Object.getPrototypeOf(v) !== Object.prototype || Object.getOwnPropertySymbols(v).length > 0) {
        return false;
      }
      for (const k in v) {
        if (!Object.hasOwn(v, k) || !isPlain((v as Record<string, unknown>)[k], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/**
 * `s` as one contiguous string: a string built by concatenation is kept as a tree of its pieces for as long
 * as it lives; a JSON round trip copies it flat.
 */
export function flatString(s: string): string {
  return s.length < 13 ? s : (JSON.parse(JSON.stringify(s)) as string);
}

/** Objects with more properties than this are laid out by a template (V8 gives a `{}` room for four). */
const IN_OBJECT = 4;

/**
 * Copies of small string maps (labels) laid out compactly. `{ ...o }` gives the copy room for four properties
 * in itself and puts the rest in a separate array with spare room; a copy of an object that JSON.parse made
 * is sized exactly, so each distinct list of keys gets such a template once, and a copy is the template spread with `o`'s values written over it, key by key, in `o`'s order.
 */
export class CompactCopies {
  private readonly templates: SharedValues<Readonly<Record<string, string>>>;

  constructor(limit: number) {
    this.templates = new SharedValues(limit);
  }

  /**
   * Equal to `{ ...o }`: the same own enumerable properties in the same order, values as read once. The
   * runtime's answers hand it out as it is (convert.ts); the Runtime's answer types make it read-only. It is
   * not frozen: a frozen copy gets a hidden class of its own, which costs memory per pod and slows the
   * property loads of every relist.
   */
  copy(o: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> {
    return this.plainCopy(o);
  }

  private plainCopy(o: Readonly<Record<string, string>> | undefined): Record<string, string> {
    if (o === undefined || o === null) return {};
    const keys = Object.keys(o);
    if (keys.length <= IN_OBJECT || Object.getOwnPropertySymbols(o).length > 0) return { ...o };
    const values = keys.map((k) => o[k]);
    if (keys.includes('__proto__') || !values.every((v) => typeof v === 'string')) return { ...o };
    const template = this.templates.get(
      JSON.stringify(keys),
      () => JSON.parse(JSON.stringify(o)) as Record<string, string>,
    );
    const out = { ...template };
    for (let i = 0; i < keys.length; i++) out[keys[i]!] = values[i]!;
    return out;
  }
}
