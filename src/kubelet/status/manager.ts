/**
 * The status manager (kubelet: pkg/kubelet/status/status_manager.go): the one writer of pod status. The
 * rest of the kubelet tells it what the status is (setPodStatus, setContainerReadiness,
 * setContainerStartup, terminatePod); it keeps a versioned cache per pod and brings the API server in
 * line, sending a PATCH only when the server's status differs from what the kubelet would write.
 *
 * Pure core: no timers and no I/O of its own. Time comes from the injected Clock; the API, the pod manager
 * and the deletion-safety check are injected (interfaces.ts). The shell runs the loop: it awaits
 * `waitForUpdate()` and calls `syncBatch(false)` per signal, and calls `syncBatch(true)` every 10 s.
 */
import {
  AllContainersRestarting,
  ContainersReady,
  DisruptionTarget,
  PodInitialized,
  PodReady,
  PodReadyToStartContainers,
  PodScheduled,
  type ContainerStatus,
  type Pod,
  type PodStatus,
} from '../../api/core.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage, KindError } from '../../util/errors.js';
import { asPodUID, type PodUID } from '../container/types.js';
import { isStaticPod } from '../types/podupdate.js';
import { UpdateChannel } from './channel.js';
import { replaceOrAppendPodCondition, updateLastTransitionTime } from './conditions.js';
import { isPodStatusByKubeletEqual } from './equality.js';
import { newlyTerminatedContainers, type ContainerTermination } from './terminations.js';
import { generateContainersReadyCondition, generatePodReadyCondition } from './generate.js';
import type {
  PodDeletionSafetyProvider,
  PodStatusClient,
  StatusManagerLogger,
  StatusPodManager,
} from './interfaces.js';
import { normalizeStatusInPlace } from './normalize.js';
import { processInterner, type Interner } from '../../util/intern.js';
import { CacheCompaction } from './compaction.js';
import { readinessGateConditions } from './readiness.js';
import { StatusSyncer } from './sync.js';
import { terminatedPodStatus } from './terminate.js';
import { checkContainerStateTransition } from './transition.js';
import { isValidPodStatus, validatePodForStatusManager, validatePodStatus } from './inputvalidation.js';
import type { VersionedPodStatus } from './versioned.js';
import { cloneData } from '../../util/clone.js';

export type { VersionedPodStatus } from './versioned.js';

/** How often the shell should call syncBatch(true) (kubelet: syncPeriod). */
export const StatusSyncPeriodMs = 10_000;

/** Conditions whose lastTransitionTime the manager maintains, in the kubelet's order. */
const TRANSITION_TIMED_CONDITIONS = [
  ContainersReady,
  PodReady,
  PodInitialized,
  PodReadyToStartContainers,
  PodScheduled,
  DisruptionTarget,
  AllContainersRestarting,
];

export interface StatusManagerConfig {
  client: PodStatusClient;
  podManager: StatusPodManager;
  podDeletionSafety: PodDeletionSafetyProvider;
  clock: Clock;
  logger?: StatusManagerLogger;
  /**
   * Read the server's pod from the pod manager (the informer's copy) instead of a GET when that copy is
   * at least as new as this manager's own last write to the pod (see StatusSyncer.cachedServerPod).
   * Off: every sync GETs the pod first, exactly as the kubelet does.
   */
  readFromCache?: boolean;
  /**
   * Awaited between pods while a full sync compares every cached status with the server's (KubeletDeps
   * .yieldToLoop): at a few thousand pods that comparison alone held the event loop for most of a second.
   */
  yieldToLoop?: () => Promise<void>;
  /** Where cached statuses are interned; default the process's one (src/util/intern.ts). */
  interner?: Interner;
  /** Told of each container a stored status shows newly terminated (kubelet_terminated_containers_total). */
  onContainerTerminated?(t: ContainerTermination): void;
}

/**
 * Told of every status the manager stores (kubelet: PodUpdateNotifier): the pod, the status as stored (read
 * only), whether it is the pod's first, and whether the pod is finished (terminatePod). Must not throw.
 */
export type PodUpdateNotifier = (
  pod: Pod,
  status: Readonly<PodStatus>,
  firstStatus: boolean,
  podIsFinished: boolean,
) => void;

const silent: StatusManagerLogger = { info: () => undefined };

/**
 * Invariants: the cache holds at most one entry per pod UID (static pods under their own UID, never the
 * mirror's); every stored change raises the entry's version and signals the channel; a status that is
 * equal by kubelet rules to the cached one is not stored (unless forced) and signals nothing.
 */
export class StatusManager {
  private readonly podManager: StatusPodManager;
  private readonly clock: Clock;
  private readonly log: StatusManagerLogger;
  private readonly onContainerTerminated: ((t: ContainerTermination) => void) | undefined;

  /** Pod UID (static pods by their own UID) -> cached status. */
  private readonly podStatuses = new Map<PodUID, VersionedPodStatus>();
  /** UIDs whose entry was written since a batch last found them synced (see StatusSyncerDeps.changed). */
  private readonly changed = new Set<PodUID>();
  private readonly notifiers: PodUpdateNotifier[] = [];
  /** Keeps the cached statuses small (compaction.ts). */
  private readonly compaction: CacheCompaction;
  private readonly channel: UpdateChannel;
  private readonly syncer: StatusSyncer;

  /** Rejects a missing dependency with KindError('InvalidArgument') before anything runs. */
  constructor(cfg: StatusManagerConfig) {
    const missing = (['client', 'podManager', 'podDeletionSafety', 'clock'] as const).filter(
      (k) => typeof cfg?.[k] !== 'object' || cfg[k] === null,
    );
    if (missing.length > 0) {
      throw new KindError('InvalidArgument', `status manager: missing ${missing.join(', ')}`, { missing });
    }
    this.podManager = cfg.podManager;
    this.clock = cfg.clock;
    this.onContainerTerminated = cfg.onContainerTerminated;
    this.compaction = new CacheCompaction(this.podStatuses, cfg.podManager, cfg.interner ?? processInterner);
    this.log = cfg.logger ?? silent;
    this.channel = new UpdateChannel((err) =>
      this.log.info('status update listener failed', { err: errorMessage(err) }),
    );
    this.syncer = new StatusSyncer({
      client: cfg.client,
      podManager: cfg.podManager,
      podDeletionSafety: cfg.podDeletionSafety,
      clock: cfg.clock,
      log: this.log,
      podStatuses: this.podStatuses,
      changed: this.changed,
      readFromCache: cfg.readFromCache ?? false,
      ...(cfg.yieldToLoop ? { yieldToLoop: cfg.yieldToLoop } : {}),
      caughtUp: (uid) => this.compaction.caughtUp(asPodUID(uid)),
    });
  }

  /**
   * API pod UID (the mirror UID for static pods) -> last version synced to the server. Written only by
   * the sync path; exposed for diagnostics and tests.
   */
  get apiStatusVersions(): Map<string, number> {
    return this.syncer.apiStatusVersions;
  }

  /** How the syncs read the server's pod so far: from the pod manager's copy, or by GET. */
  statusReads(): { cache: number; get: number } {
    return { ...this.syncer.reads };
  }

  /**
   * The pod manager now holds a new copy of the pod with this API UID (an informer update). Our last write
   * of it, kept while the copy was older, is let go once the copy has caught up (see StatusSyncer.written).
   */
  podManagerUpdated(uid: string): void {
    this.syncer.dropIfCaughtUp(uid);
  }

  /** Our writes still standing in for an older copy in the pod manager (diagnostics, tests). */
  get writesAhead(): number {
    return this.syncer.writesAhead;
  }

  // ---- reading ----

  /** The cached status for a pod UID (a mirror UID is translated to its static pod), as a copy. */
  getPodStatus(uid: PodUID): PodStatus | undefined {
    const entry = this.podStatuses.get(this.podManager.translatePodUID(uid));
    return entry ? cloneData(entry.status) : undefined;
  }

  /**
   * The cached status itself, not a copy, for readers that only read (the probe workers on every tick, the
   * status generator on every sync): a deep copy per call would be the status manager's largest CPU cost.
   * Safe because a cached entry is never mutated, only replaced (the cache
   * holds normalizeStatus's own deep copies); a caller must not modify what it gets.
   */
  peekPodStatus(uid: PodUID): Readonly<PodStatus> | undefined {
    return this.podStatuses.get(this.podManager.translatePodUID(uid))?.status;
  }

  /**
   * The cached phase alone, without copying the status: admission asks it of every other pod on the node for
   * each new pod, and a deep copy each time would make that quadratic in pods per node.
   */
  getPodPhase(uid: PodUID): PodStatus['phase'] | undefined {
    return this.podStatuses.get(this.podManager.translatePodUID(uid))?.status.phase;
  }

  /** The cached startTime alone, without copying the status (the active deadline asks it at every sync). */
  getPodStartTime(uid: PodUID): string | undefined {
    return this.podStatuses.get(this.podManager.translatePodUID(uid))?.status.startTime;
  }

  /** The cache entry under exactly this UID (no translation), for diagnostics and tests. */
  cachedEntry(uid: PodUID): Readonly<VersionedPodStatus> | undefined {
    const entry = this.podStatuses.get(uid);
    return entry ? { ...entry, status: cloneData(entry.status) } : undefined;
  }

  /** Adds a notifier of stored statuses (kubelet: AddPodUpdateNotifier). Returns its removal. */
  addPodUpdateNotifier(n: PodUpdateNotifier): () => void {
    this.notifiers.push(n);
    return () => {
      const i = this.notifiers.indexOf(n);
      if (i >= 0) this.notifiers.splice(i, 1);
    };
  }

  // ---- mutators ----

  /**
   * Caches `status` for `pod` (deep-copied) and signals a sync if it changed by kubelet rules. A pod with a
   * deletion timestamp always gets a new version, so a pod worker can drive deletion of a pod whose
   * status no longer changes. Throws KindError('InvalidArgument') on a malformed pod or status.
   */
  setPodStatus(pod: Pod, status: PodStatus): void {
    validatePodForStatusManager(pod);
    validatePodStatus(status);
    this.updateStatusInternal(pod, cloneData(status), !!pod.metadata.deletionTimestamp, false);
  }

  /**
   * Sets the readiness of the container with this ID (as in the status's containerID, e.g.
   * `containerd://abc`) and recomputes Ready and ContainersReady. No-op when the pod is unknown to the pod
   * manager, has no cached status, has no status with that ID, or the readiness is already `ready`.
   * Throws KindError('InvalidArgument') when the ID is not a string or `ready` not a boolean.
   */
  setContainerReadiness(podUID: PodUID, containerID: string, ready: boolean): void {
    checkContainerFlag(containerID, ready, 'ready');
    const found = this.findForContainerUpdate(podUID, containerID);
    if (!found || (found.container.ready ?? false) === ready) return;
    const { pod, status } = found;
    const container = findContainerStatus(status, containerID) as ContainerStatus;
    container.ready = ready;
    const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    const conditions = (status.conditions ??= []);
    // Readiness gates are read from the pod manager's newest pod: a gate another writer flipped since the
    // last sync must not be judged by the stale copy the cache carries.
    const gates = readinessGateConditions(conditions, pod.status?.conditions);
    replaceOrAppendPodCondition(conditions, generatePodReadyCondition(pod, gates, all, status.phase));
    replaceOrAppendPodCondition(conditions, generateContainersReadyCondition(pod, all, status.phase));
    this.updateStatusInternal(pod, status, false, false);
  }

  /**
   * Sets `started` of the container with this ID. Same no-op rules as setContainerReadiness, except that
   * an unset `started` differs from false. No condition depends on it, so none is recomputed.
   */
  setContainerStartup(podUID: PodUID, containerID: string, started: boolean): void {
    checkContainerFlag(containerID, started, 'started');
    const found = this.findForContainerUpdate(podUID, containerID);
    const current = found?.container.started;
    if (!found || (current !== undefined && current !== null && current === started)) return;
    (findContainerStatus(found.status, containerID) as ContainerStatus).started = started;
    this.updateStatusInternal(found.pod, found.status, false, false);
  }

  /**
   * Ends the pod's status: containers the kubelet cannot prove terminated become terminated with an
   * unknown status (terminate.ts), a non-static pod gets a terminal phase, and the entry is marked
   * finished, which lets the sync delete the pod once the server's phase is terminal. Always stores a new
   * version (unless the container-state guard rejects it). Throws KindError('InvalidArgument') on a
   * malformed pod.
   */
  terminatePod(pod: Pod): void {
    validatePodForStatusManager(pod);
    const cached = this.podStatuses.get(asPodUID(pod.metadata.uid));
    const base = cached ? cached.status : (pod.status ?? {});
    validatePodStatus(base);
    this.updateStatusInternal(pod, terminatedPodStatus(pod, base), true, true);
  }

  /** Forgets every cached status whose UID is not in `podUIDs` (the pods the kubelet still knows). */
  removeOrphanedStatuses(podUIDs: ReadonlySet<string>): void {
    // Deletes only, which a Map allows while it is walked: no copy of its keys per housekeeping.
    for (const uid of this.podStatuses.keys()) {
      if (!podUIDs.has(uid)) this.podStatuses.delete(uid);
    }
  }

  // ---- the update channel ----

  /** Whether a signal is waiting (a change was stored since the last takeUpdateSignal). */
  hasPendingUpdate(): boolean {
    return this.channel.peek();
  }

  /** Receives from the channel: clears the signal and says whether there was one. */
  takeUpdateSignal(): boolean {
    return this.channel.take();
  }

  /** Calls `listener` each time the channel goes from empty to signalled. Returns the unsubscribe. */
  onUpdate(listener: () => void): () => void {
    return this.channel.subscribe(listener);
  }

  /** Resolves when a signal is pending (at once if one already is). Does not consume it. */
  waitForUpdate(): Promise<void> {
    return this.channel.wait();
  }

  /**
   * Drains the channel as the kubelet's loop would: while a signal is pending, consume it and run
   * syncBatch(false). Resolves to the number of pod syncs attempted.
   */
  async drain(): Promise<number> {
    let synced = 0;
    while (this.channel.take()) synced += await this.syncBatch(false);
    return synced;
  }

  // ---- the cache ----

  private findForContainerUpdate(
    podUID: PodUID,
    containerID: string,
  ): { pod: Pod; status: PodStatus; container: ContainerStatus } | undefined {
    const pod = this.podManager.getPodByUID(podUID);
    if (!pod) return undefined;
    const cached = this.podStatuses.get(asPodUID(pod.metadata?.uid ?? ''));
    if (!cached) {
      this.log.info('container status changed before the pod has a status', {
        pod: podRef(pod),
        containerID,
      });
      return undefined;
    }
    const container = findContainerStatus(cached.status, containerID);
    if (!container) {
      this.log.info('container status changed for an unknown container', { pod: podRef(pod), containerID });
      return undefined;
    }
    return { pod, status: cloneData(cached.status), container };
  }

  /**
   * The one place a status enters the cache (kubelet: updateStatusInternal). `status` is the caller's
   * private copy and may be modified. Returns whether a new version was stored.
   */
  private updateStatusInternal(
    pod: Pod,
    status: PodStatus,
    forceUpdate: boolean,
    podIsFinished: boolean,
  ): boolean {
    const uid = asPodUID(pod.metadata.uid as string);
    const cached = this.podStatuses.get(uid);
    let oldStatus: PodStatus;
    if (cached) {
      oldStatus = cached.status;
      if (!isStaticPod(pod) && cached.podIsFinished && !podIsFinished) {
        this.log.info('podIsFinished=false for a finished pod, keeping true (programmer error)', {
          pod: podRef(pod),
        });
        podIsFinished = true;
      }
    } else {
      const mirrorStatus = this.podManager.getMirrorPodByPod(pod)?.status;
      oldStatus = mirrorStatus ?? pod.status ?? {};
      if (!isValidPodStatus(oldStatus)) {
        this.log.info('ignoring a malformed previous status', { pod: podRef(pod) });
        oldStatus = {};
      }
    }

    const violation = checkContainerStateTransition(oldStatus, status, pod.spec);
    if (violation) {
      this.log.info('status update on pod aborted', { pod: podRef(pod), err: violation });
      return false;
    }

    const now = this.clock.now();
    for (const type of TRANSITION_TIMED_CONDITIONS) updateLastTransitionTime(status, oldStatus, type, now);
    if (oldStatus.startTime) status.startTime = oldStatus.startTime;
    else if (!status.startTime) status.startTime = new Date(now).toISOString();

    const normalized = normalizeStatusInPlace(pod, status);
    const onTerminated = this.onContainerTerminated;
    if (onTerminated) for (const t of newlyTerminatedContainers(oldStatus, normalized)) onTerminated(t);
    if (cached && !forceUpdate && isPodStatusByKubeletEqual(cached.status, normalized)) return false;

    this.podStatuses.set(uid, {
      status: normalized,
      version: (cached?.version ?? 0) + 1,
      podName: pod.metadata.name ?? '',
      podNamespace: pod.metadata.namespace ?? '',
      podIsFinished,
      at: cached?.at || now,
    });
    this.compaction.stored(uid);
    this.changed.add(uid);
    this.channel.send();
    for (const n of this.notifiers) n(pod, normalized, !cached, podIsFinished);
    return true;
  }

  // ---- syncing ----

  /**
   * Syncs cached statuses to the API server; resolves to the number of pod syncs attempted. With `all`
   * false, only pods whose cached version is newer than the last one synced. With `all` true, first
   * forgets synced versions of pods that have neither a cached status nor a mirror mapping, then also
   * syncs pods that can be deleted now and pods whose server status (the mirror's, for static pods) no
   * longer matches the cache by kubelet rules. Static pods without a mirror pod are skipped. A sync GETs
   * the pod, drops the entry if the server's pod is another incarnation (UID), PATCHes the merged status
   * only when it differs, records the version, and DELETEs a finished pod (grace 0, UID precondition).
   * Runs one at a time; never rejects (failures are logged and retried by a later sync).
   */
  syncBatch(all: boolean): Promise<number> {
    if (all) this.compaction.internBuilt();
    return this.syncer.syncBatch(all);
  }
}

function checkContainerFlag(containerID: unknown, value: unknown, name: string): void {
  if (typeof containerID !== 'string' || typeof value !== 'boolean') {
    throw new KindError('InvalidArgument', `container ${name}: needs a container ID and a boolean`, {
      containerID,
    });
  }
}

/** The regular or init status with this containerID (regular first, as the kubelet searches). */
function findContainerStatus(status: PodStatus, containerID: string): ContainerStatus | undefined {
  if (!containerID) return undefined;
  return (
    status.containerStatuses?.find((c) => c.containerID === containerID) ??
    status.initContainerStatuses?.find((c) => c.containerID === containerID)
  );
}

function podRef(pod: Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}
