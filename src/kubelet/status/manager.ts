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
  DisruptionTarget,
  isTerminalPhase,
  type ContainerStatus,
  type Pod,
  type PodStatus,
} from '../../api/core.js';
import {
  ContainersReady,
  PodInitialized,
  PodReady,
  PodReadyToStartContainers,
  PodScheduled,
} from '../../api/core.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage, isNotFound, KindError } from '../../util/errors.js';
import { asPodUID, type PodUID } from '../container/types.js';
import { isMirrorPod, isStaticPod } from '../types/podupdate.js';
import { replaceOrAppendPodCondition, updateLastTransitionTime } from './conditions.js';
import { isPodStatusByKubeletEqual } from './equality.js';
import { generateContainersReadyCondition, generatePodReadyCondition } from './generate.js';
import type {
  PodDeletionSafetyProvider,
  PodStatusClient,
  StatusManagerLogger,
  StatusPodManager,
} from './interfaces.js';
import { mergePodStatus } from './merge.js';
import { normalizeStatus } from './normalize.js';
import { createPodStatusPatch } from './patch.js';
import { terminatedPodStatus } from './terminate.js';
import { checkContainerStateTransition } from './transition.js';
import { validatePodForStatusManager, validatePodStatus } from './validate.js';

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
];

/**
 * A cached status (kubelet: versionedPodStatus). Invariants: `version` grows by one with every stored
 * change of this pod's status and never goes back; `status` is normalized; `podIsFinished`, once true for
 * a non-static pod, stays true for as long as the entry lives.
 */
export interface VersionedPodStatus {
  readonly version: number;
  readonly podName: string;
  readonly podNamespace: string;
  /** When the oldest change not yet known to be synced was detected (epoch ms); for latency metrics. */
  readonly at: number;
  /** Set by terminatePod: the pod is done and may be deleted once the server agrees it is terminal. */
  readonly podIsFinished: boolean;
  readonly status: PodStatus;
}

export interface StatusManagerConfig {
  client: PodStatusClient;
  podManager: StatusPodManager;
  podDeletionSafety: PodDeletionSafetyProvider;
  clock: Clock;
  logger?: StatusManagerLogger;
}

const silent: StatusManagerLogger = { info: () => undefined };

export class StatusManager {
  private readonly client: PodStatusClient;
  private readonly podManager: StatusPodManager;
  private readonly podDeletionSafety: PodDeletionSafetyProvider;
  private readonly clock: Clock;
  private readonly log: StatusManagerLogger;

  /** Pod UID (static pods by their own UID) -> cached status. */
  private readonly podStatuses = new Map<string, VersionedPodStatus>();
  /**
   * API pod UID (the mirror UID for static pods) -> last version synced to the server. Only the sync path
   * writes it; exposed for diagnostics and tests.
   */
  readonly apiStatusVersions = new Map<string, number>();

  /** The update channel: capacity one, so any number of changes before a sync make one signal. */
  private pending = false;
  private readonly listeners = new Set<() => void>();
  private waiters: (() => void)[] = [];
  /** syncBatch runs one at a time, as the kubelet's single sync goroutine does. */
  private syncChain: Promise<unknown> = Promise.resolve();

  /** Rejects a missing dependency with KindError('InvalidArgument') before anything runs. */
  constructor(cfg: StatusManagerConfig) {
    const missing = (['client', 'podManager', 'podDeletionSafety', 'clock'] as const).filter(
      (k) => typeof cfg?.[k] !== 'object' || cfg[k] === null,
    );
    if (missing.length > 0) {
      throw new KindError('InvalidArgument', `status manager: missing ${missing.join(', ')}`, { missing });
    }
    this.client = cfg.client;
    this.podManager = cfg.podManager;
    this.podDeletionSafety = cfg.podDeletionSafety;
    this.clock = cfg.clock;
    this.log = cfg.logger ?? silent;
  }

  // ---- reading ----

  /** The cached status for a pod UID (a mirror UID is translated to its static pod), as a copy. */
  getPodStatus(uid: PodUID): PodStatus | undefined {
    const entry = this.podStatuses.get(this.podManager.translatePodUID(uid));
    return entry ? structuredClone(entry.status) : undefined;
  }

  /** The cache entry under exactly this UID (no translation), for diagnostics and tests. */
  cachedEntry(uid: PodUID): Readonly<VersionedPodStatus> | undefined {
    const entry = this.podStatuses.get(uid);
    return entry ? { ...entry, status: structuredClone(entry.status) } : undefined;
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
    this.updateStatusInternal(pod, structuredClone(status), !!pod.metadata.deletionTimestamp, false);
  }

  /**
   * Sets the readiness of the container with this ID (as in the status's containerID, e.g.
   * `containerd://abc`) and recomputes Ready and ContainersReady. No-op when the pod is unknown to the pod
   * manager, has no cached status, has no status with that ID, or the readiness is already `ready`.
   */
  setContainerReadiness(podUID: PodUID, containerID: string, ready: boolean): void {
    const found = this.findForContainerUpdate(podUID, containerID);
    if (!found || (found.container.ready ?? false) === ready) return;
    const { pod, status } = found;
    const container = findContainerStatus(status, containerID) as ContainerStatus;
    container.ready = ready;
    const all = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
    const conditions = (status.conditions ??= []);
    replaceOrAppendPodCondition(conditions, generatePodReadyCondition(pod, conditions, all, status.phase));
    replaceOrAppendPodCondition(conditions, generateContainersReadyCondition(pod, all, status.phase));
    this.updateStatusInternal(pod, status, false, false);
  }

  /**
   * Sets `started` of the container with this ID. Same no-op rules as setContainerReadiness, except that
   * an unset `started` differs from false. No condition depends on it, so none is recomputed.
   */
  setContainerStartup(podUID: PodUID, containerID: string, started: boolean): void {
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
    const cached = this.podStatuses.get(pod.metadata.uid as string);
    const base = cached ? cached.status : (pod.status ?? {});
    validatePodStatus(base);
    this.updateStatusInternal(pod, terminatedPodStatus(pod, base), true, true);
  }

  /** Forgets every cached status whose UID is not in `podUIDs` (the pods the kubelet still knows). */
  removeOrphanedStatuses(podUIDs: ReadonlySet<string>): void {
    for (const uid of [...this.podStatuses.keys()]) {
      if (!podUIDs.has(uid)) this.podStatuses.delete(uid);
    }
  }

  // ---- the update channel ----

  /** Whether a signal is waiting (a change was stored since the last takeUpdateSignal). */
  hasPendingUpdate(): boolean {
    return this.pending;
  }

  /** Receives from the channel: clears the signal and says whether there was one. */
  takeUpdateSignal(): boolean {
    const had = this.pending;
    this.pending = false;
    return had;
  }

  /** Calls `listener` each time the channel goes from empty to signalled. Returns the unsubscribe. */
  onUpdate(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves when a signal is pending (at once if one already is). Does not consume it. */
  waitForUpdate(): Promise<void> {
    if (this.pending) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /**
   * Drains the channel as the kubelet's loop would: while a signal is pending, consume it and run
   * syncBatch(false). Resolves to the number of pod syncs attempted.
   */
  async drain(): Promise<number> {
    let synced = 0;
    while (this.takeUpdateSignal()) synced += await this.syncBatch(false);
    return synced;
  }

  private signal(): void {
    if (this.pending) return;
    this.pending = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
    for (const l of this.listeners) {
      try {
        l();
      } catch (err) {
        this.log.info('status update listener failed', { err: errorMessage(err) });
      }
    }
  }

  // ---- the cache ----

  private findForContainerUpdate(
    podUID: PodUID,
    containerID: string,
  ): { pod: Pod; status: PodStatus; container: ContainerStatus } | undefined {
    const pod = this.podManager.getPodByUID(podUID);
    if (!pod) return undefined;
    const cached = this.podStatuses.get(pod.metadata?.uid ?? '');
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
    return { pod, status: structuredClone(cached.status), container };
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
    const uid = pod.metadata.uid as string;
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
      oldStatus = this.podManager.getMirrorPodByPod(pod)?.status ?? pod.status ?? {};
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

    const normalized = normalizeStatus(pod, status);
    if (cached && !forceUpdate && isPodStatusByKubeletEqual(cached.status, normalized)) return false;

    this.podStatuses.set(uid, {
      status: normalized,
      version: (cached?.version ?? 0) + 1,
      podName: pod.metadata.name ?? '',
      podNamespace: pod.metadata.namespace ?? '',
      podIsFinished,
      at: cached?.at || now,
    });
    this.signal();
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
    return this.syncer.syncBatch(all);
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
