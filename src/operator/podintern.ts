/**
 * What the pod informer keeps of each pod, laid out so that what pods have in common exists once. Replicas
 * of one workload carry equal labels, owner references, containers (but for the service-account volume
 * mount, whose volume name is random per pod), tolerations, security contexts and volume sources, and the
 * pods of a node equal statuses in many parts (see src/kubelet/status/intern.ts). Without a service-account
 * token (or another volume, a hostname) nothing in a replica's spec is its own, and the replicas of one node
 * share the whole spec. The informer's copies would otherwise be the largest owner of live memory.
 *
 * `internPod` runs after the informer shared the unchanged subtrees with the pod's previous version
 * (src/kube/structshare.ts), so it only looks at parts that are new: a status patch costs the interning of the
 * status, not of the spec. The shared parts are deep-frozen (src/util/intern.ts): the informer's contract
 * is that nobody mutates what it hands out, and a write to a shared part would change other pods.
 */
import type { Container, Pod } from '../api/core.js';
import { internPodStatus } from '../kubelet/status/intern.js';
import type { Interner } from '../util/intern.js';

type Loose = Record<string, unknown>;

/** Every object-valued field interned whole, every string-valued one as a string; `own` fields left alone. */
function internFields(o: Loose, i: Interner, own: ReadonlySet<string>): void {
  for (const k of Object.keys(o)) {
    if (own.has(k)) continue;
    const v = o[k];
    if (typeof v === 'string') o[k] = i.string(v);
    else if (typeof v === 'object' && v !== null) o[k] = i.value(v);
  }
}

/** A container's mounts name the pod's own service-account volume (a random suffix): kept per pod. */
const CONTAINER_OWN: ReadonlySet<string> = new Set(['volumeMounts']);
/** Lists whose elements are interned one by one (each may hold a per-pod part). */
const SPEC_LISTS: ReadonlySet<string> = new Set([
  'containers',
  'initContainers',
  'ephemeralContainers',
  'volumes',
]);
const VOLUME_OWN: ReadonlySet<string> = new Set(['name']);
const META_SHARED = ['labels', 'annotations', 'ownerReferences', 'finalizers'] as const;

/**
 * A container list with its common parts interned. A container without mounts (nothing of the pod's own)
 * is interned whole, and a list of only such containers is too (`whole`): the pods of one template then
 * share one list on every node, and the spec holding it can be shared by the pods of one node.
 */
function internContainers(list: unknown, i: Interner): { list: unknown; whole: boolean } {
  if (!Array.isArray(list)) return { list, whole: false };
  let whole = true;
  const out = list.map((c: Container) => {
    if (typeof c !== 'object' || c === null) return c;
    const copy = { ...c } as unknown as Loose;
    internFields(copy, i, CONTAINER_OWN);
    if (copy.volumeMounts !== undefined) {
      whole = false;
      return copy;
    }
    return i.value(copy);
  });
  return whole ? { list: i.value(out), whole } : { list: out, whole };
}

/**
 * Spec fields that belong to one pod: a StatefulSet pod's hostname and subdomain, the volumes (the
 * service-account volume's random name). A spec holding one is not interned whole; one that holds none
 * is, keyed with its node name, so the replicas on one node share it.
 */
const SPEC_OWN = ['hostname', 'subdomain', 'volumes'] as const;

/**
 * `pod` (modified in place: a freshly decoded object nobody else holds) with its common parts replaced by
 * the interned instances; `prev` is the version it replaces, whose parts `pod` already shares where equal.
 */
export function internPod(pod: Pod, prev: Pod | undefined, i: Interner): Pod {
  const meta = pod.metadata as unknown as Loose | undefined;
  const prevMeta = prev?.metadata as unknown as Loose | undefined;
  if (meta && meta !== prevMeta) {
    for (const k of META_SHARED) {
      if (meta[k] !== undefined && meta[k] !== prevMeta?.[k]) meta[k] = i.value(meta[k]);
    }
    if (typeof meta.namespace === 'string') meta.namespace = i.string(meta.namespace);
    if (typeof meta.generateName === 'string') meta.generateName = i.string(meta.generateName);
    // Seconds: the pods of one rollout share a few dozen values.
    if (typeof meta.creationTimestamp === 'string') meta.creationTimestamp = i.string(meta.creationTimestamp);
  }
  const spec = pod.spec as unknown as Loose | undefined;
  if (spec && spec !== (prev?.spec as unknown)) {
    internFields(spec, i, SPEC_LISTS);
    let whole = true;
    for (const k of ['containers', 'initContainers', 'ephemeralContainers'] as const) {
      if (spec[k] === undefined) continue;
      const interned = internContainers(spec[k], i);
      spec[k] = interned.list;
      whole &&= interned.whole;
    }
    if (Array.isArray(spec.volumes)) {
      spec.volumes = spec.volumes.map((v: unknown) => {
        if (typeof v !== 'object' || v === null) return v;
        const copy = { ...(v as Loose) };
        internFields(copy, i, VOLUME_OWN);
        return copy;
      });
    }
    const own = SPEC_OWN.some(
      (k) => spec[k] !== undefined && !(Array.isArray(spec[k]) && spec[k].length === 0),
    );
    if (whole && !own) pod.spec = i.value(pod.spec);
  }
  if (pod.status && pod.status !== prev?.status) pod.status = internPodStatus(pod.status, i);
  return pod;
}
