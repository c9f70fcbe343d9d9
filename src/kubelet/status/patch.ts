/**
 * The body of the kubelet's pod status PATCH (kubelet: pkg/util/pod PatchPodStatus): a two-way strategic
 * merge patch from the server's status to the status to send, computed on the Go wire form of both
 * (semantic.ts), with the pod UID in `metadata` as a precondition so a pod recreated under the same name
 * is never patched with another pod's status.
 *
 * Strategic-merge rules of core/v1 PodStatus that apply: `conditions` merge by `type`, `podIPs` and
 * `hostIPs` by `ip`, `resourceClaimStatuses` by `name`; every other list (container statuses included) is
 * atomic and replaced whole. Changed list entries carry their merge key and only the changed fields (a
 * removed field is `null`), removed entries a `$patch: delete` directive, and the list's new order comes in
 * `$setElementOrder/<list>`, as apimachinery's CreateTwoWayMergePatch writes them.
 */
import type { PodStatus } from '../../api/core.js';
import { KindError } from '../../util/errors.js';
import { canonicalEqual, isJSONObject, wireCanonical, type JSONObject } from './semantic.js';

/** Merge keys of the PodStatus lists whose patch strategy is `merge`. */
export const podStatusMergeKeys: Readonly<Record<string, string>> = {
  conditions: 'type',
  podIPs: 'ip',
  hostIPs: 'ip',
  resourceClaimStatuses: 'name',
};

export const setElementOrderPrefix = '$setElementOrder/';

/** A status patch: always the UID precondition, and the status changes. */
export interface PodStatusPatch {
  metadata: { uid: string };
  status: JSONObject;
}

function canonicalObject(v: unknown): JSONObject {
  const c = wireCanonical(v);
  return isJSONObject(c) ? c : {};
}

function diffMaps(
  old: JSONObject,
  next: JSONObject,
  mergeKeys: Readonly<Record<string, string>>,
): JSONObject {
  const patch: JSONObject = {};
  // The old map's keys, then the new map's others: the order of a set of both, without building one.
  for (const key in old) diffKey(patch, key, old[key], next[key], mergeKeys[key]);
  for (const key in next)
    if (!Object.hasOwn(old, key)) diffKey(patch, key, undefined, next[key], mergeKeys[key]);
  return patch;
}

function diffKey(
  patch: JSONObject,
  key: string,
  o: JSONObject[string] | undefined,
  n: JSONObject[string] | undefined,
  mergeKey: string | undefined,
): void {
  if (n === undefined) {
    if (o !== undefined) patch[key] = null;
  } else if (mergeKey !== undefined && Array.isArray(n) && (o === undefined || Array.isArray(o))) {
    diffMergeList(patch, key, mergeKey, (o as unknown[] | undefined) ?? [], n);
  } else if (o === undefined) {
    patch[key] = n;
  } else if (canonicalEqual(o, n, key)) {
    return;
  } else if (isJSONObject(o) && isJSONObject(n)) {
    const sub = diffMaps(o, n, {});
    if (Object.keys(sub).length > 0) patch[key] = sub;
  } else {
    patch[key] = n;
  }
}

function keyOf(entry: unknown, list: string, mergeKey: string): string {
  const k = isJSONObject(entry) ? entry[mergeKey] : undefined;
  if (typeof k !== 'string' || k === '') {
    throw new KindError('InvalidArgument', `status.${list}: an entry has no ${mergeKey}`, { list, mergeKey });
  }
  return k;
}

/** `into` with `mergeKey: key` added (a computed key in a literal makes a dictionary-mode object). */
function keyed(mergeKey: string, key: string, into: JSONObject): JSONObject {
  into[mergeKey] = key;
  return into;
}

function diffMergeList(
  patch: JSONObject,
  list: string,
  mergeKey: string,
  old: unknown[],
  next: unknown[],
): void {
  // Loops over the short lists (conditions, IPs) rather than a map of them: no pairs, closures or sets.
  const oldKeys = old.map((e) => keyOf(e, list, mergeKey));
  const nextKeys = next.map((e) => keyOf(e, list, mergeKey));
  const entries: JSONObject[] = [];
  for (let i = 0; i < next.length; i++) {
    const k = nextKeys[i] as string;
    const at = oldKeys.lastIndexOf(k); // the last entry of a key, as a map of them would keep
    const n = next[i] as JSONObject;
    if (at < 0) {
      entries.push(n);
      continue;
    }
    const o = old[at] as JSONObject;
    if (!canonicalEqual(o, n)) {
      // The changed fields, then the merge key. Added to the diff in place: on Node 20 a literal that
      // spreads the diff and adds the key makes new hidden classes on every call (kilobytes of garbage).
      entries.push(keyed(mergeKey, k, diffMaps(o, n, {})));
    }
  }
  for (let i = 0; i < old.length; i++) {
    const k = oldKeys[i] as string;
    // The first entry of a key stands for it, as a map keyed by it would.
    if (oldKeys.indexOf(k) === i && !nextKeys.includes(k))
      entries.push(keyed(mergeKey, k, { $patch: 'delete' }));
  }
  if (entries.length === 0) return;
  patch[`${setElementOrderPrefix}${list}`] = nextKeys.map((k) => keyed(mergeKey, k, {}));
  patch[list] = entries;
}

/**
 * The PATCH body that takes the server from `serverStatus` to `status` for the pod with `uid`, or null
 * when the two are semantically equal: then no request must be made at all. Throws
 * KindError('InvalidArgument') when a merge-keyed list entry lacks its key (such a patch cannot be
 * written), or when `uid` is empty (the precondition is the point).
 */
export function createPodStatusPatch(
  uid: string,
  serverStatus: PodStatus,
  status: PodStatus,
): PodStatusPatch | null {
  if (typeof uid !== 'string' || uid === '') {
    throw new KindError('InvalidArgument', 'a status patch needs the pod UID as precondition');
  }
  const diff = diffMaps(canonicalObject(serverStatus), canonicalObject(status), podStatusMergeKeys);
  if (Object.keys(diff).length === 0) return null;
  return { metadata: { uid }, status: diff };
}
