/**
 * A small set of distinct objects in insertion order, for the store's indexes where one member is by far the
 * common case (a pod has one sandbox, a sandbox a handful of containers): nothing (`undefined`), the member
 * itself, or an array of two or more. So the common case costs no container object at all.
 *
 * The arrays belong to the index that holds them and are never handed out. Up to SMALL members an array is
 * replaced by an exact-size copy on every change (a pushed-to array keeps room for 16 more); beyond that it
 * grows and shrinks in place. Adding and removing are O(members).
 */

export type Few<T extends object> = T | T[] | undefined;

const SMALL = 8;
const NONE: readonly never[] = Object.freeze([]);

/** `few` with `v` added last (`v` must not be a member already). */
export function fewAdd<T extends object>(few: Few<T>, v: T): Few<T> {
  if (few === undefined) return v;
  if (!Array.isArray(few)) return [few, v];
  if (few.length < SMALL) return [...few, v];
  few.push(v);
  return few;
}

/** `few` without `v` (unchanged when `v` is not a member). */
export function fewDelete<T extends object>(few: Few<T>, v: T): Few<T> {
  if (few === v) return undefined;
  if (!Array.isArray(few)) return few;
  const i = few.indexOf(v);
  if (i < 0) return few;
  if (few.length === 2) return few[1 - i];
  if (few.length <= SMALL) return few.filter((_, j) => j !== i);
  few.splice(i, 1);
  return few;
}

/** The members in insertion order; the caller must not keep or change the array across a change of `few`. */
export function fewList<T extends object>(few: Few<T>): readonly T[] {
  if (few === undefined) return NONE;
  return Array.isArray(few) ? few : [few];
}
