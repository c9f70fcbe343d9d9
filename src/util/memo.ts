/**
 * A function of an object, computed once per object: the result is kept beside the object's identity
 * (a WeakMap, so it goes with the object). Only for objects never changed in place, which is how pods, their
 * specs and their metadata maps are treated throughout (a new version is a new object).
 */
export function memoByIdentity<K extends object, V>(compute: (key: K) => V): (key: K) => V {
  const memo = new WeakMap<K, V>();
  return (key) => {
    if (memo.has(key)) return memo.get(key) as V;
    const value = compute(key);
    memo.set(key, value);
    return value;
  };
}
