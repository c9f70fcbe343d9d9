/**
 * A deep copy of plain data (objects, arrays, strings, numbers, booleans, null, undefined), such as API
 * objects decoded from JSON and the statuses built from them. Much faster than structuredClone (which
 * serializes), and the status manager copies a pod's status on every sync. Anything but plain data (a Date, a Map, a class instance) is
 * not what this is for: own enumerable properties are copied into a plain object.
 */
export function cloneData<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = cloneData(v[i]);
    return out as T;
  }
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) out[k] = cloneData((v as Record<string, unknown>)[k]);
  return out as T;
}
