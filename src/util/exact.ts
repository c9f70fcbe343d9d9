/**
 * Arrays that outlive the function building them, at their exact length. V8 gives an array filled by `push`
 * (or returned by `filter`) room for about seventeen elements, 136 bytes of backing store for a pod's one
 * sandbox or one IP; a copy made by `slice` holds its elements only. The PLEG keeps four such arrays per pod
 * (its listing's and its cache's sandboxes, containers and IPs), so at 10,000 pods this is 5 MB.
 */
export function exact<T>(a: T[]): T[] {
  return a.length === 0 ? [] : a.slice();
}
