/**
 * The sync half of the status manager (kubelet: status_manager.go syncBatch, syncPod, needsUpdate,
 * needsReconcile, canBeDeleted): from the versioned cache to the API server. It reads the cache the
 * manager writes and owns `apiStatusVersions`; the manager owns everything else.
 */
import { isTerminalPhase, type Pod } from '../../api/core.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage, isNotFound } from '../../util/errors.js';
import { forEachConcurrently } from '../../util/pool.js';
import { asPodUID, type PodUID } from '../container/types.js';
import { isMirrorPod, isStaticPod } from '../types/podupdate.js';
import { isPodStatusByKubeletEqual } from './equality.js';
import type {
  PodDeletionSafetyProvider,
  PodStatusClient,
  StatusManagerLogger,
  StatusPodManager,
} from './interfaces.js';
import { mergePodStatus } from './merge.js';
import { normalizeStatus } from './normalize.js';
import { createPodStatusPatch } from './patch.js';
import type { VersionedPodStatus } from './versioned.js';

export interface StatusSyncerDeps {
  client: PodStatusClient;
  podManager: StatusPodManager;
  podDeletionSafety: PodDeletionSafetyProvider;
  clock: Clock;
  log: StatusManagerLogger;
  /** The manager's cache, keyed by pod UID (static pods by their own UID). Entries are replaced, never mutated. */
  podStatuses: Map<PodUID, VersionedPodStatus>;
  /**
   * The UIDs the manager wrote an entry for; a batch takes them and puts back the ones it could not bring
   * to the server (so: every UID whose entry may be newer than its synced version is in here). A batch
   * that is not a full pass looks at these alone, where the kubelet walks its whole cache (one node's
   * hundred pods for each status change).
   */
  changed: Set<PodUID>;
  /** See StatusManagerConfig.readFromCache. */
  readFromCache: boolean;
  /** See StatusManagerConfig.yieldToLoop. */
  yieldToLoop?: () => Promise<void>;
  /** Called with a pod's API UID when the pod manager's copy first carries our last write to it. */
  caughtUp?: (uid: string) => void;
}

/** Pods whose status one batch writes at the same time. */
export const SYNC_CONCURRENCY = 4;

/** A resourceVersion as a number, or undefined when it is not one (the API server's are etcd revisions). */
function revision(rv: string | undefined): number | undefined {
  if (rv === undefined || !/^[0-9]{1,15}$/.test(rv)) return undefined;
  return Number(rv);
}

/**
 * A pod can be deleted from the API once deletion was requested, it is not a mirror pod (the kubelet
 * does not gracefully delete those), the server's phase is terminal and terminatePod has finished it.
 */
export function canBeDeleted(pod: Pod, podIsFinished: boolean): boolean {
  if (!pod.metadata?.deletionTimestamp || isMirrorPod(pod)) return false;
  if (!isTerminalPhase(pod.status?.phase)) return false;
  return podIsFinished;
}

/**
 * Invariant: `apiStatusVersions[uid]` is only raised by a sync that reached the server (patched, or found
 * nothing to patch); a failed GET or PATCH leaves it, so the next syncBatch retries.
 */
export class StatusSyncer {
  /** API pod UID (the mirror UID for static pods) -> last version synced. */
  readonly apiStatusVersions = new Map<string, number>();
  /**
   * API pod UID -> our last PATCH: the resourceVersion (as a number) it returned and, with readFromCache, the
   * pod as that write left it. Kept only until the pod manager's copy is as new (see cachedServerPod and
   * dropIfCaughtUp).
   */
  private readonly written = new Map<string, { revision: number; pod?: Pod }>();
  /** A cache entry -> the pod manager's copy last found to agree with it (see needsReconcile). */
  private readonly agreed = new WeakMap<VersionedPodStatus, Pod>();
  /** GETs saved by readFromCache, and GETs made (diagnostics, tests, bench). */
  readonly reads = { cache: 0, get: 0 };
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly d: StatusSyncerDeps) {}

  /** See StatusManager.syncBatch. Calls run one at a time, in call order. */
  syncBatch(all: boolean): Promise<number> {
    const run = this.chain.then(() => this.syncBatchNow(all));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Drops our last write of the pod with API UID `uid` once the pod manager's copy is as new: it no longer
   * needs to stand in for it. Called for every copy the pod manager takes (StatusManager.podManagerUpdated),
   * so through a burst a pod is not held twice, ours and the informer's, until its next sync or full pass.
   */
  dropIfCaughtUp(uid: string): void {
    const w = this.written.get(uid);
    if (w === undefined) return;
    const have = revision(this.d.podManager.getPodByUID(asPodUID(uid))?.metadata.resourceVersion);
    if (have !== undefined && have >= w.revision) this.dropWritten(uid);
  }

  /** Lets our last write of the pod go: the pod manager's copy carries it (see StatusSyncerDeps.caughtUp). */
  private dropWritten(uid: string): void {
    this.written.delete(uid);
    this.d.caughtUp?.(uid);
  }

  /** Writes still standing in for the pod manager's copy (diagnostics, tests). */
  get writesAhead(): number {
    return this.written.size;
  }

  private async syncBatchNow(all: boolean): Promise<number> {
    const { podToMirror, mirrorToPod } = this.d.podManager.getUIDTranslations();
    if (all) {
      for (const byUID of [this.apiStatusVersions, this.written]) {
        for (const uid of byUID.keys()) {
          if (!this.d.podStatuses.has(asPodUID(uid)) && !mirrorToPod.has(uid)) byUID.delete(uid);
        }
      }
      // A write the pod manager's copy has caught up with is no longer needed to stand in for it.
      for (const uid of this.written.keys()) this.dropIfCaughtUp(uid);
    }
    const updates: { podUID: PodUID; status: VersionedPodStatus }[] = [];
    const changed = [...this.d.changed];
    this.d.changed.clear();
    // A full pass takes turns with other work, so it walks a copy; the others walk what changed, in one go.
    const candidates: Iterable<[PodUID, VersionedPodStatus | undefined]> = all
      ? [...this.d.podStatuses]
      : changed.map((uid) => [uid, this.d.podStatuses.get(uid)]);
    for (const [uid, status] of candidates) {
      if (!status) continue; // forgotten since it changed
      if (all) await this.d.yieldToLoop?.();
      // Static pods are synced through their mirror pod; without one there is nothing to write to.
      let uidOfStatus: string = uid;
      const mirrorUID = podToMirror.get(uid);
      if (mirrorUID !== undefined) {
        if (mirrorUID === '') {
          this.d.changed.add(uid); // no mirror pod to write to yet
          continue;
        }
        uidOfStatus = mirrorUID;
      }
      if (!all) {
        if ((this.apiStatusVersions.get(uidOfStatus) ?? 0) >= status.version) continue;
        updates.push({ podUID: uid, status });
      } else if (this.needsUpdate(uidOfStatus, status)) {
        updates.push({ podUID: uid, status });
      } else if (this.needsReconcile(uid, status)) {
        // Forget the synced version so the sync below records the one it writes.
        this.apiStatusVersions.delete(uidOfStatus);
        updates.push({ podUID: uid, status });
      }
    }
    const sync = async (u: (typeof updates)[number]): Promise<void> => {
      try {
        await this.syncPod(u.podUID, u.status);
      } catch (err) {
        this.d.log.info('status sync failed', { podUID: u.podUID, err: errorMessage(err) });
      }
    };
    // Different pods at once (each pod still one sync at a time: batches run in turn). The kubelet writes them
    // one after the other; a node starting a hundred pods then waits on a hundred round trips in a row.
    await forEachConcurrently(updates, SYNC_CONCURRENCY, sync);
    // What a sync could not bring to the server (a failed GET or PATCH) is looked at again by the next batch.
    for (const u of updates) if (!this.synced(u.podUID, u.status, podToMirror)) this.d.changed.add(u.podUID);
    return updates.length;
  }

  /** The entry's version reached the server, or the entry is gone (nothing left to write). */
  private synced(uid: PodUID, status: VersionedPodStatus, podToMirror: ReadonlyMap<string, string>): boolean {
    const current = this.d.podStatuses.get(uid);
    if (current !== status) return current === undefined;
    const mirrorUID = podToMirror.get(uid);
    return (this.apiStatusVersions.get(mirrorUID || uid) ?? 0) >= status.version;
  }

  private needsUpdate(uidOfStatus: string, status: VersionedPodStatus): boolean {
    const latest = this.apiStatusVersions.get(uidOfStatus);
    if (latest === undefined || latest < status.version) return true;
    const pod = this.d.podManager.getPodByUID(asPodUID(uidOfStatus));
    return pod ? canBeDeleted(pod, status.podIsFinished) : false;
  }

  /**
   * The server's status, as the pod manager last saw it, disagrees with the cache by kubelet rules. Both
   * inputs are replaced, never mutated, on every change, so a pair found in agreement is remembered and not
   * compared again at every full pass (most pods of a steady node).
   */
  private needsReconcile(uid: PodUID, status: VersionedPodStatus): boolean {
    let pod = this.d.podManager.getPodByUID(uid);
    if (!pod) return false;
    if (isStaticPod(pod)) {
      pod = this.d.podManager.getMirrorPodByPod(pod);
      if (!pod) return false;
    }
    if (this.agreed.get(status) === pod) return false;
    if (!isPodStatusByKubeletEqual(normalizeStatus(pod, pod.status ?? {}), status.status)) return true;
    this.agreed.set(status, pod);
    return false;
  }

  /**
   * The pod manager's copy of the pod (the informer's latest object) stands in for the kubelet's GET when
   * it is at least as new as the pod our own last PATCH returned. Why that is enough: the patch is a
   * two-way strategic merge patch from that copy's status to the merged one, so it names only what the
   * kubelet changes. A condition another writer added after the copy (a readiness gate, DisruptionTarget)
   * is absent from both sides, so the patch leaves it alone (conditions merge by type; a missing entry in
   * `$setElementOrder` is kept by the server); one another writer changed or removed is equal on both
   * sides and not touched either.
   *
   * A copy older than our own last write would get that write wrong: a field we set and have since dropped
   * would be missing from both sides and survive. While the informer has not delivered our write, the pod
   * as our write left it stands in instead (its status the merged one the patch made, its metadata the
   * server's answer): it is the newest state of the pod we know, and the same reasoning holds for whatever
   * other writers did after it.
   *
   * Undefined (so: GET) when the option is off, or the copy is missing or names another pod.
   */
  private cachedServerPod(uid: PodUID, status: VersionedPodStatus): Pod | undefined {
    if (!this.d.readFromCache) return undefined;
    const pod = this.d.podManager.getPodByUID(uid);
    if (!pod || isStaticPod(pod)) return undefined;
    if (pod.metadata.name !== status.podName || (pod.metadata.namespace ?? '') !== status.podNamespace)
      return undefined;
    const have = revision(pod.metadata.resourceVersion);
    if (have === undefined) return undefined;
    const written = this.written.get(uid);
    if (written === undefined) return pod;
    if (have < written.revision) return written.pod;
    this.dropWritten(uid); // the copy has caught up for good: revisions of one pod only grow
    return pod;
  }

  private async syncPod(uid: PodUID, status: VersionedPodStatus): Promise<void> {
    const { client, log } = this.d;
    const ref = `${status.podNamespace}/${status.podName}`;
    let pod: Pod;
    try {
      const cached = this.cachedServerPod(uid, status);
      if (cached) {
        pod = cached;
        this.reads.cache++;
      } else {
        this.reads.get++;
        pod = await client.getPod(status.podNamespace, status.podName);
      }
    } catch (err) {
      // NotFound: the pod is gone; RemoveOrphanedStatuses will drop the entry.
      const message = isNotFound(err) ? 'pod does not exist on the server' : 'failed to get pod';
      log.info(message, { pod: ref, podUID: uid, err: errorMessage(err) });
      return;
    }
    const serverUID = pod.metadata?.uid ?? '';
    const translated = this.d.podManager.translatePodUID(serverUID);
    if (translated !== '' && translated !== uid) {
      log.info('pod was deleted and recreated, dropping its status', { pod: ref, podUID: uid, serverUID });
      this.d.podStatuses.delete(uid);
      return;
    }

    const serverStatus = pod.status ?? {};
    const couldRun = this.d.podDeletionSafety.podCouldHaveRunningContainers(pod);
    const merged = mergePodStatus(serverStatus, status.status, couldRun, this.d.clock.now());
    const patch = createPodStatusPatch(serverUID, serverStatus, merged);
    if (patch) {
      try {
        const stored = await client.patchPodStatus(
          pod.metadata.namespace ?? '',
          pod.metadata.name ?? '',
          serverUID,
          patch,
        );
        // The server answers with the stored pod's metadata; its status is the merged one the patch made.
        // The field managers are left out: nothing here reads them, and the pod may be kept (see `written`).
        const { managedFields: _managers, ...metadata } = stored.metadata as Pod['metadata'] & {
          managedFields?: unknown;
        };
        pod = { ...pod, metadata, status: merged };
      } catch (err) {
        log.info('failed to update status for pod', { pod: ref, podUID: uid, err: errorMessage(err) });
        return;
      }
    }
    this.apiStatusVersions.set(pod.metadata?.uid || serverUID, status.version);
    const written = patch ? revision(pod.metadata?.resourceVersion) : undefined;
    if (written !== undefined) {
      const apiUID = pod.metadata?.uid || serverUID;
      this.written.set(apiUID, {
        revision: written,
        ...(this.d.readFromCache && !isStaticPod(pod) ? { pod } : {}),
      });
      // The watch may have delivered the write before its answer was read: the copy may carry it already.
      this.dropIfCaughtUp(apiUID);
    }

    if (canBeDeleted(pod, status.podIsFinished)) {
      try {
        await client.deletePod(pod.metadata.namespace ?? '', pod.metadata.name ?? '', serverUID, 0);
      } catch (err) {
        log.info('failed to delete pod', { pod: ref, podUID: uid, err: errorMessage(err) });
        return;
      }
      this.d.podStatuses.delete(uid);
    }
  }
}
