/**
 * A fake API server for the status manager: it holds pods by namespace/name, records every call the
 * status manager makes (`get`, `patch/status`, `delete`) and applies status patches with the
 * strategic-merge rules of core/v1 PodStatus, so a later GET sees what a real server would store.
 */
import type { Pod, PodStatus } from '../../../src/api/core.js';
import type { PodStatusClient } from '../../../src/kubelet/status/interfaces.js';
import {
  podStatusMergeKeys,
  setElementOrderPrefix,
  type PodStatusPatch,
} from '../../../src/kubelet/status/patch.js';
import { KindError } from '../../../src/util/errors.js';

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function applyMap(target: Obj, patch: Obj, mergeKeys: Readonly<Record<string, string>>): Obj {
  const out: Obj = structuredClone(target);
  const orders: [string, unknown][] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith(setElementOrderPrefix)) {
      orders.push([k.slice(setElementOrderPrefix.length), v]);
    } else if (v === null) {
      delete out[k];
    } else if (mergeKeys[k] !== undefined && Array.isArray(v)) {
      out[k] = applyMergeList(Array.isArray(out[k]) ? (out[k] as Obj[]) : [], v, mergeKeys[k] as string);
    } else if (isObj(v)) {
      out[k] = applyMap(isObj(out[k]) ? (out[k] as Obj) : {}, v, {});
    } else {
      out[k] = structuredClone(v);
    }
  }
  for (const [list, order] of orders) {
    const key = mergeKeys[list];
    if (key === undefined || !Array.isArray(order) || !Array.isArray(out[list])) continue;
    const rank = new Map(order.map((e, i) => [isObj(e) ? e[key] : undefined, i]));
    const items = out[list] as Obj[];
    const ordered = items
      .filter((e) => rank.has(e[key]))
      .sort((a, b) => rank.get(a[key])! - rank.get(b[key])!);
    out[list] = [...ordered, ...items.filter((e) => !rank.has(e[key]))];
  }
  return out;
}

function applyMergeList(list: Obj[], patch: unknown[], key: string): Obj[] {
  const out = list.map((e) => structuredClone(e));
  for (const p of patch) {
    if (!isObj(p)) throw new KindError('InvalidArgument', `merge list entry is not an object`);
    const i = out.findIndex((e) => e[key] === p[key]);
    if (p.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) {
      out[i] = applyMap(out[i] as Obj, p, {});
    } else {
      out.push(applyMap({}, p, {}));
    }
  }
  return out;
}

/** What the API server does with a pod status strategic merge patch (the subset the kubelet writes). */
export function applyPodStatusPatch(status: PodStatus, patch: Obj): PodStatus {
  return applyMap(status as Obj, patch, podStatusMergeKeys) as PodStatus;
}

export type ApiVerb = 'get' | 'patch/status' | 'delete';

export interface ApiAction {
  verb: ApiVerb;
  namespace: string;
  name: string;
  patch?: PodStatusPatch;
  uid?: string;
  gracePeriodSeconds?: number;
}

export class FakeApiServer implements PodStatusClient {
  readonly actions: ApiAction[] = [];
  private readonly pods = new Map<string, Pod>();

  private static key(namespace: string, name: string): string {
    return `${namespace}/${name}`;
  }

  /** Stores (or replaces) a pod, as if created by someone else. */
  put(pod: Pod): void {
    this.pods.set(
      FakeApiServer.key(pod.metadata.namespace ?? '', pod.metadata.name ?? ''),
      structuredClone(pod),
    );
  }

  /** The stored pod with this UID (for the pod manager's informer-like view), or undefined. */
  byUID(uid: string): Pod | undefined {
    for (const p of this.pods.values()) if (p.metadata.uid === uid) return structuredClone(p);
    return undefined;
  }

  private find(namespace: string, name: string): Pod {
    const pod = this.pods.get(FakeApiServer.key(namespace, name));
    if (!pod) throw new KindError('NotFound', `pods "${name}" not found`, { namespace, name });
    return pod;
  }

  async getPod(namespace: string, name: string): Promise<Pod> {
    this.actions.push({ verb: 'get', namespace, name });
    return structuredClone(this.find(namespace, name));
  }

  async patchPodStatus(namespace: string, name: string, uid: string, patch: PodStatusPatch): Promise<Pod> {
    this.actions.push({ verb: 'patch/status', namespace, name, uid, patch: structuredClone(patch) });
    const pod = this.find(namespace, name);
    if (patch.metadata.uid !== pod.metadata.uid) {
      throw new KindError('Conflict', `precondition failed: UID in object meta: ${pod.metadata.uid}`, {
        uid,
      });
    }
    pod.status = applyPodStatusPatch(pod.status ?? {}, patch.status);
    return structuredClone(pod);
  }

  async deletePod(namespace: string, name: string, uid: string, gracePeriodSeconds: 0): Promise<void> {
    this.actions.push({ verb: 'delete', namespace, name, uid, gracePeriodSeconds });
    const pod = this.find(namespace, name);
    if (pod.metadata.uid !== uid) throw new KindError('Conflict', `precondition failed: UID ${uid}`, { uid });
    this.pods.delete(FakeApiServer.key(namespace, name));
  }
}
