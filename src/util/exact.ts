/**
 * Arrays that outlive the function building them, at their exact length: an array filled by `push` (or
 * returned by `filter`) keeps spare room, a `slice` copy does not, and the PLEG keeps several per pod.
 */
export function exact<T>(a: T[]): T[] {
  return a.length === 0 ? [] : a.slice();
}
