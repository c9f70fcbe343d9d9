/**
 * Settled syncs: a pod whose last sync found nothing to do is not worked out again while nothing that sync
 * read has changed.
 *
 * The kubelet runs the whole SyncPod at every resync (once a minute per pod): it generates the API status,
 * computes the pod's actions and builds the sandbox config, and for a settled pod all three give what they
 * gave a minute ago. They are pure functions of what they read (spec, runtime state, clock; no I/O), so their
 * answer can be kept while their inputs stay the same objects:
 * - the pod as the worker has it, the pod as allocated (the same object unless a resize was allocated), and
 *   the pod manager's newest one (conditions other writers own, e.g. readiness gates, come from it); a pod
 *   from the API is known by its resourceVersion;
 * - the runtime's view of the pod: the PLEG cache's object, replaced whenever the pod is inspected again;
 * - the liveness and startup results (their caches' revisions), which computePodActions reads.
 * Of the clock, a sync that finds nothing to do reads only the active deadline (back-offs come with errors,
 * and a sync with errors is never kept): pods with `activeDeadlineSeconds` are never kept, nor are pods being
 * resized. Readiness reaches the status manager on its own (SetContainerReadiness), as in the
 * kubelet. What a resync still does for a kept pod: the prober's bookkeeping and the volume manager's mount
 * (configMap, secret, downward API and projected volumes are refreshed there).
 */
import type { Pod } from '../api/core.js';
import type { RuntimePodStatus } from './container/types.js';

/** What a settled sync read. */
export interface SyncInputs {
  /** The pod the worker was handed. */
  apiPod: Pod;
  /** The pod as allocated. */
  pod: Pod;
  /** The pod manager's newest object of the pod. */
  latest: Pod | undefined;
  view: RuntimePodStatus;
  /** The liveness results' revision; undefined: unknown, nothing is kept. */
  liveness: number | undefined;
  /** The startup results' revision; undefined: unknown, nothing is kept. */
  startup: number | undefined;
}

/**
 * A pod object's version: its resourceVersion when it has one (two objects of one version, e.g. the informer's
 * before and after a relist, hold the same pod), else the object itself. Keeping the version string rather
 * than the object lets an older version go once the informer has a newer one: a settled pod's own status write
 * comes back as one.
 */
type Version = string | Pod;

const versionOf = (p: Pod): Version => p.metadata.resourceVersion || p;

/** What is kept of a settled sync's inputs (`pod` is `apiPod`: see keepable). */
interface Settled {
  apiPod: Version;
  latest: Version | undefined;
  view: RuntimePodStatus;
  liveness: number | undefined;
  startup: number | undefined;
}

/** Whether a sync reads the inputs a settled one read. */
function sameInputs(a: Settled, b: SyncInputs): boolean {
  return (
    a.apiPod === versionOf(b.apiPod) &&
    a.latest === (b.latest && versionOf(b.latest)) &&
    a.view === b.view &&
    a.liveness === b.liveness &&
    a.startup === b.startup
  );
}

/** The last no-op sync's inputs, by pod UID. */
export class SettledSyncs {
  private readonly byUID = new Map<string, Settled>();

  /** Whether `pod` may be kept at all (its status would not change with the clock alone). */
  static keepable(inputs: SyncInputs): boolean {
    return (
      inputs.liveness !== undefined &&
      inputs.startup !== undefined &&
      inputs.pod === inputs.apiPod &&
      inputs.pod.spec.activeDeadlineSeconds === undefined
    );
  }

  /** Records a sync that found nothing to do, or forgets the pod when its inputs may not be kept. */
  settled(uid: string, inputs: SyncInputs): void {
    if (!SettledSyncs.keepable(inputs)) {
      this.byUID.delete(uid);
      return;
    }
    this.byUID.set(uid, {
      apiPod: versionOf(inputs.apiPod),
      latest: inputs.latest && versionOf(inputs.latest),
      view: inputs.view,
      liveness: inputs.liveness,
      startup: inputs.startup,
    });
  }

  /** Whether the last sync of `uid` found nothing to do and read exactly these inputs. */
  unchanged(uid: string, inputs: SyncInputs): boolean {
    const last = this.byUID.get(uid);
    return last !== undefined && SettledSyncs.keepable(inputs) && sameInputs(last, inputs);
  }

  /** A sync that acted, failed or was cut short: the next one works everything out. */
  forget(uid: string): void {
    this.byUID.delete(uid);
  }

  /** Forgets pods not in `uids`. */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of this.byUID.keys()) if (!uids.has(uid)) this.byUID.delete(uid);
  }

  get size(): number {
    return this.byUID.size;
  }
}
