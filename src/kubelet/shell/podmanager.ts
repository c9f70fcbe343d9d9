/**
 * The kubelet's view of the pods bound to its node (kubelet: pkg/kubelet/pod/pod_manager.go), reduced to
 * what this operator needs: pods by UID and by namespace/name, fed from the node's pod informer.
 *
 * Static pods are not supported: pods come only from the API server, so there are no mirror pods, every
 * UID translates to itself and the static/mirror maps are empty. A mirror pod bound to this node (made by
 * some other kubelet under the same node name) is ignored.
 */
import type { Pod } from '../../api/core.js';
import type { KObject } from '../../kube/informer.js';
import type { PodUID } from '../container/types.js';
import type { StatusPodManager } from '../status/interfaces.js';
import { isMirrorPod } from '../types/podupdate.js';

/** Name of the pod informer index by `spec.nodeName` that the kubelet reads its desired pods from. */
export const PodsByNodeIndex = 'spec.nodeName';

/** Index function for PodsByNodeIndex: register it on the pod informer before starting it. */
export function podNodeNameIndexFunc(obj: KObject): string[] {
  const nodeName = (obj as Partial<Pod>).spec?.nodeName;
  return typeof nodeName === 'string' && nodeName !== '' ? [nodeName] : [];
}

const EMPTY: ReadonlyMap<string, string> = new Map();

/**
 * Invariants: at most one pod per UID and per namespace/name (a newer UID under the same name replaces the
 * older one in the by-name map only); returned pods are the informer's objects and are never mutated.
 */
export class KubeletPodManager implements StatusPodManager {
  private readonly byUID = new Map<string, Pod>();
  /**
   * Namespace -> name -> pod: keyed by the pod's own strings, where a `namespace/name` key would be a string
   * made for each pod.
   */
  private readonly byName = new Map<string, Map<string, Pod>>();
  /** How many pods `byName` holds. */
  private named = 0;
  /** The array the last setPods was given, while nothing else has changed the maps since. */
  private setFrom: readonly Pod[] | undefined;

  /** Adds or replaces a pod. Pods without a UID and mirror pods are ignored. */
  upsert(pod: Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid || isMirrorPod(pod)) return;
    this.setFrom = undefined;
    this.byUID.set(uid, pod);
    const ns = pod.metadata.namespace ?? '';
    let names = this.byName.get(ns);
    if (!names) this.byName.set(ns, (names = new Map()));
    const name = pod.metadata.name ?? '';
    if (!names.has(name)) this.named++;
    names.set(name, pod);
  }

  /** Forgets a pod (by UID; the by-name entry only if it still points at that UID). */
  remove(pod: Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid) return;
    this.setFrom = undefined;
    const known = (this.byUID.get(uid) ?? pod).metadata;
    this.byUID.delete(uid);
    const ns = known.namespace ?? '';
    const name = known.name ?? '';
    const names = this.byName.get(ns);
    if (names?.get(name)?.metadata.uid !== uid) return;
    names.delete(name);
    this.named--;
    if (names.size === 0) this.byName.delete(ns);
  }

  /**
   * Replaces the whole set (housekeeping, level-triggered from the informer). When `pods` are exactly the
   * objects held, one per UID and per name, nothing would change: the maps stay as they are. The same
   * array as last time, with no change in between, is not looked through again.
   */
  setPods(pods: readonly Pod[]): void {
    if (pods === this.setFrom) return;
    if (this.holdsExactly(pods)) {
      this.setFrom = pods;
      return;
    }
    this.byUID.clear();
    this.byName.clear();
    this.named = 0;
    for (const p of pods) this.upsert(p);
    this.setFrom = pods;
  }

  private holdsExactly(pods: readonly Pod[]): boolean {
    if (pods.length !== this.byUID.size || pods.length !== this.named) return false;
    for (const p of pods) if (this.byUID.get(p.metadata?.uid ?? '') !== p) return false;
    return true;
  }

  getPods(): Pod[] {
    return [...this.byUID.values()];
  }

  getPodByFullName(namespace: string, name: string): Pod | undefined {
    return this.byName.get(namespace)?.get(name);
  }

  // ---- StatusPodManager ----

  getPodByUID(uid: PodUID): Pod | undefined {
    return this.byUID.get(uid);
  }

  getMirrorPodByPod(): Pod | undefined {
    return undefined;
  }

  translatePodUID(uid: string): PodUID {
    return uid as PodUID;
  }

  getUIDTranslations(): {
    podToMirror: ReadonlyMap<string, string>;
    mirrorToPod: ReadonlyMap<string, string>;
  } {
    return { podToMirror: EMPTY, mirrorToPod: EMPTY };
  }
}
