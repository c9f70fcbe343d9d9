/**
 * Structural sharing between two versions of one API object. A watch event carries the whole object
 * again, freshly parsed, although a pod's status patch leaves its spec and most of its metadata as they
 * were; whoever still holds the previous version (a pod worker keeps the pod it last synced, the kubelet's
 * way) would otherwise keep a second copy of everything that did not change.
 *
 * `shareUnchanged(prev, next)` walks both JSON trees together and puts `prev`'s subtree into `next` wherever
 * the two are deeply equal, so equal parts exist once. It returns `prev` itself when nothing differs. Both
 * trees must be plain JSON (objects, arrays, strings, numbers, booleans, null) and neither is mutated
 * afterwards by anyone (the informer's contract for what it hands out); `next` is modified in place, so it
 * must be an object nobody else holds yet (a freshly decoded watch or list item).
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isRecord(v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function share(prev: Json | undefined, next: Json): Json {
  // Equal primitives (strings included: the earlier instance is kept, the new one becomes garbage).
  if (prev === next) return prev;
  if (typeof next !== 'object' || next === null || typeof prev !== 'object' || prev === null) return next;
  if (Array.isArray(next)) {
    if (!Array.isArray(prev)) return next;
    let same = prev.length === next.length;
    for (let i = 0; i < next.length; i++) {
      const v = i < prev.length ? share(prev[i], next[i]!) : next[i]!;
      if (v !== prev[i]) same = false;
      next[i] = v;
    }
    return same ? prev : next;
  }
  if (!isRecord(prev)) return next;
  let same = true;
  let keys = 0;
  for (const k of Object.keys(next)) {
    keys++;
    const before = Object.hasOwn(prev, k) ? prev[k] : undefined;
    const v = before === undefined ? next[k]! : share(before, next[k]!);
    if (v !== before) same = false;
    next[k] = v;
  }
  return same && keys === Object.keys(prev).length ? prev : next;
}

export function shareUnchanged<T>(prev: T, next: T): T {
  return share(prev as Json, next as Json) as T;
}
