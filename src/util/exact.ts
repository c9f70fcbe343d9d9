/**
 * Arrays that outlive the function building them, at their exact length. V8 gives an array filled by `push`
 * (or returned by `filter`) room for seventeen elements: 152 bytes of backing store for a pod's one sandbox
 * or one IP, where a copy made by `slice` takes 24. The PLEG kept four such arrays per pod (its listing's
 * sandboxes and containers, its cache's sandboxes and IPs): 5 MB at 10,000 pods.
 */
export function exact<T>(a: T[]): T[] {
  return a.length === 0 ? [] : a.slice();
}
