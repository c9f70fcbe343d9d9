/**
 * Pod workers (kubelet: pod_workers.go): one serialized worker per pod UID that drives the pod through
 *
 *     syncing ──► terminating ──► terminated ──► (forgotten)
 *
 * Invariants, which everything else relies on:
 * - At most one sync function runs for a UID at any moment; updates that arrive meanwhile coalesce into one
 *   pending update (the newest pod object wins; a kill request is sticky and is never lost to a later update).
 * - A UID moves only forward through the states. Once terminating, `syncPod` is never called again for it;
 *   once terminated, only `forgetPod` (via `syncKnownPods`) removes it, and a terminated UID never syncs again
 *   even if the same pod object is offered (a recreated pod has a new UID).
 * - Termination starts when the pod is deleted (deletionTimestamp), when a kill is requested, or when
 *   `syncPod` reports the pod terminal (Succeeded/Failed). A running `syncPod` is aborted (its signal fires)
 *   when a kill arrives, so termination is not delayed by a long sync.
 * - The grace period is fixed when termination starts and may only shrink afterwards (a second delete with a
 *   shorter grace period shortens it, as the kubelet allows).
 * - After each successful `syncPod` the worker schedules a resync (level-triggered: the next sync recomputes
 *   everything); after a failure it retries after a back-off; either comes sooner when `syncDue` says a sync
 *   is due earlier (an active deadline). All use the injected Clock.
 * - Every sync function gets the pod's runtime status from the PLEG's cache, newer than the end of the
 *   worker's previous sync (kubelet: podCache.GetNewerThan(uid, lastSyncTime)): a worker never reads the
 *   runtime itself, and never acts on a view older than its own last action.
 * - A pod only the runtime knows (no API object: deleted while nobody watched) is stopped by a worker too
 *   (`runningPod`, kubelet: SyncTerminatingRuntimePod), so pod workers are the only ones that stop pods.
 * - "Could it still run containers?" and "may its runtime objects go?" are answered here and nowhere else.
 */
import type { Pod, PodCondition } from '../api/core.js';
import type { Clock, TimerHandle } from '../util/clock.js';
import { errorMessage, KindError } from '../util/errors.js';
import { timerQueueFor } from '../util/timerqueue.js';
import { SyncCancel } from './util/synccancel.js';
import type { PodCache } from './container/cache.js';
import { asPodUID, type PodUID, type RuntimePodStatus } from './container/types.js';

export type UpdateType = 'create' | 'update' | 'sync' | 'kill';

export interface KillPodOptions {
  /** Overrides the pod's grace period (seconds). */
  gracePeriodSeconds?: number;
  /** Status to set once terminated, e.g. an eviction or admission failure (phase Failed + reason). */
  reason?: string;
  message?: string;
  /** A condition the terminated status carries too (an eviction's DisruptionTarget). */
  condition?: PodCondition;
  /** With `reason`: a pod that Succeeded keeps that phase instead of Failed (the node shutdown's kills). */
  keepSucceeded?: boolean;
}

/** A pod as the runtime lists it, for one that has no API object (kubelet: kubecontainer.Pod). */
export interface RunningPodRef {
  uid: PodUID;
  name: string;
  namespace: string;
}

export interface UpdatePodOptions {
  type: UpdateType;
  /** The API pod; absent only for a kill of a pod the runtime alone knows (`runningPod`). */
  pod?: Pod;
  /** A runtime pod without an API object, to be stopped (type `kill`). */
  runningPod?: RunningPodRef;
  kill?: KillPodOptions;
}

/** What a sync is given: whether it was cancelled, and a signal for what waits (see SyncCancel). */
export interface SyncContext {
  readonly aborted: boolean;
  readonly signal: AbortSignal;
}

/**
 * What the worker calls; implemented by the kubelet's sync functions (kubelet_sync.ts). `status` is the pod's
 * runtime view from the PLEG's cache, fresh as of the previous sync's end.
 */
export interface PodSyncer {
  /** Brings the pod toward its spec. Resolves `{ isTerminal: true }` when the pod has reached Succeeded/Failed. */
  syncPod(
    ctx: SyncContext,
    type: UpdateType,
    pod: Pod,
    status: RuntimePodStatus,
  ): Promise<{ isTerminal: boolean }>;
  /** Stops every container with the grace period (seconds). Must be safe to call again after a failure. */
  syncTerminatingPod(
    ctx: SyncContext,
    pod: Pod,
    status: RuntimePodStatus,
    gracePeriodSeconds: number,
    kill?: KillPodOptions,
  ): Promise<void>;
  /** Stops and removes a pod the runtime alone knows (grace periods from its containers' labels). */
  syncTerminatingRuntimePod(ctx: SyncContext, runningPod: RunningPodRef): Promise<void>;
  /** Cleans up after all containers stopped (final status, sandbox removal, deleting the API object). */
  syncTerminatedPod(ctx: SyncContext, pod: Pod, status: RuntimePodStatus): Promise<void>;
}

export type WorkerState = 'syncing' | 'terminating' | 'terminated';

export interface PodWorkersOptions {
  clock: Clock;
  /** The PLEG's cache, the only runtime view the sync functions get. */
  podCache: Pick<PodCache, 'getNewerThan'>;
  /** Resync period after a successful sync (kubelet: 1 minute with jitter). */
  resyncIntervalMs?: number;
  /** Retry delay after a failed sync (kubelet: 10 s with jitter). */
  backOffMs?: number;
  /** [0,1) source for jitter. */
  random?: () => number;
  logger?: { warn(msg: string, meta?: Record<string, unknown>): void };
  /** Called after each sync function finishes, for metrics: operation, duration, error or not. */
  onSync?: (op: 'sync' | 'terminating' | 'terminated', durationMs: number, failed: boolean) => void;
  /**
   * When a syncing pod must be synced again sooner than its resync or back-off (kubelet: the
   * PodSyncLoopHandlers, e.g. the active deadline), in ms from now; undefined = no opinion. Asked after every
   * sync, successful or not.
   */
  syncDue?: (pod: Pod) => number | undefined;
  /**
   * Where a due resync or retry goes (kubelet: the work queue that syncLoopIteration drains). The sync loop
   * passes it back through `resync(uid)` when the runtime may be used; absent, the worker resyncs itself.
   */
  onDue?: (uid: PodUID) => void;
}

interface PodSyncStatus {
  readonly uid: PodUID;
  state: WorkerState;
  /** Latest pod object seen; a runtime-only pod has none. */
  pod: Pod | undefined;
  /** Set for a pod only the runtime knows. */
  runningPod?: RunningPodRef;
  /** The pod was deleted (a deletion timestamp, gone from the API, or never in it). */
  deleted: boolean;
  /** Terminated by an eviction: its content may go even though the API object stays. */
  evicted: boolean;
  /** When the previous sync function ended: the next one waits for a runtime view newer than this. */
  lastSyncTime: number;
  /** The update waiting for the worker, if any. */
  pending?: UpdatePodOptions;
  /** A resync or retry came due and waits for `resync`. */
  due?: boolean;
  working: boolean;
  /** Aborts the running sync (a kill arrived). */
  active?: SyncCancel;
  /** Set when termination was requested; grace only ever shrinks. */
  gracePeriodSeconds?: number;
  kill?: KillPodOptions;
  timer?: TimerHandle;
  startedAt?: number;
  terminatingAt?: number;
  terminatedAt?: number;
}

const DEFAULT_GRACE_SECONDS = 30;

/** The grace period the kubelet uses: the kill override, else the deletion's, else the spec's, else 30 s. */
export function effectiveGracePeriod(pod: Pod, kill?: KillPodOptions): number {
  const candidates = [
    kill?.gracePeriodSeconds,
    pod.metadata.deletionGracePeriodSeconds,
    pod.spec.terminationGracePeriodSeconds,
  ];
  for (const c of candidates) if (typeof c === 'number' && Number.isFinite(c) && c >= 0) return c;
  return DEFAULT_GRACE_SECONDS;
}

function describe(s: PodSyncStatus): string {
  const m = s.pod?.metadata ?? s.runningPod;
  return `${m?.namespace ?? ''}/${m?.name ?? ''}`;
}

export class PodWorkers {
  private readonly pods = new Map<PodUID, PodSyncStatus>();
  private gen = 0;
  /** Set by the first syncKnownPods: from then on, a UID no worker knows has nothing running. */
  private podsSynced = false;
  private readonly resyncMs: number;
  private readonly backOffMs: number;
  private readonly random: () => number;
  private idleWaiters: (() => void)[] = [];
  constructor(
    private readonly syncer: PodSyncer,
    private readonly opts: PodWorkersOptions,
  ) {
    this.resyncMs = opts.resyncIntervalMs ?? 60_000;
    this.backOffMs = opts.backOffMs ?? 10_000;
    this.random = opts.random ?? Math.random;
  }

  /** Offers an update for a pod. Never blocks; the worker for its UID picks it up. */
  updatePod(update: UpdatePodOptions): void {
    const given = update.pod?.metadata.uid ?? update.runningPod?.uid;
    if (!given || (!update.pod && update.type !== 'kill')) {
      this.opts.logger?.warn('pod update without a UID ignored', { pod: update.pod?.metadata.name });
      return;
    }
    const uid = asPodUID(given);
    let status = this.pods.get(uid);
    if (!status) {
      // Every field a running pod's worker sets, in one literal, so all stay inside the object (fields added
      // later go to a separate property array). A runtime-only pod
      // starts out terminating: it is never synced, only stopped.
      status = {
        uid,
        state: update.pod ? 'syncing' : 'terminating',
        pod: update.pod,
        deleted: !update.pod,
        evicted: false,
        lastSyncTime: 0,
        pending: undefined,
        due: false,
        working: false,
        active: undefined,
        timer: undefined,
        startedAt: this.opts.clock.now(),
      };
      if (update.runningPod && !update.pod) status.runningPod = update.runningPod;
      this.pods.set(uid, status);
      this.gen++;
    }
    if (status.state === 'terminated') return;

    const pod = update.pod ?? status.pod;
    if (pod?.metadata.deletionTimestamp !== undefined) status.deleted = true;
    if (update.kill?.reason === 'Evicted') status.evicted = true;
    const wantsTermination = update.type === 'kill' || pod?.metadata.deletionTimestamp !== undefined;
    if (wantsTermination && pod) this.beginTermination(status, { ...update, pod });

    // Coalesce: the newest pod wins; a pending kill stays a kill.
    const pendingKill = status.pending?.type === 'kill' ? status.pending.kill : undefined;
    status.pending =
      update.type !== 'kill' && status.pending?.type === 'kill'
        ? { type: 'kill', ...(update.pod ? { pod: update.pod } : {}), kill: pendingKill }
        : update;
    if (update.pod) status.pod = update.pod;
    status.timer?.cancel();
    status.timer = undefined;
    if (wantsTermination) status.active?.abort(new Error('pod is being terminated'));
    if (!status.working) void this.work(status);
  }

  /** Lifecycle state of a UID, or undefined when unknown or forgotten. */
  state(uid: PodUID): WorkerState | undefined {
    return this.pods.get(uid)?.state;
  }

  isWorking(uid: PodUID): boolean {
    return this.pods.get(uid)?.working ?? false;
  }

  /**
   * Counts every change of which workers exist and of their states: two equal readings mean `state` and
   * `knownPods` answer as they did (housekeeping keeps what it derived from them until this moves).
   */
  get generation(): number {
    return this.gen;
  }

  private setState(status: PodSyncStatus, state: WorkerState): void {
    status.state = state;
    this.gen++;
  }

  /** UIDs whose worker still exists. */
  knownPods(): string[] {
    return [...this.pods.keys()];
  }

  /**
   * kubelet CouldHaveRunningContainers: a known pod until its worker has terminated it; an unknown one only
   * until the first syncKnownPods (before that, anything on the runtime may belong to a pod not seen yet).
   */
  couldHaveRunningContainers(uid: PodUID): boolean {
    const s = this.pods.get(uid);
    if (s) return s.state !== 'terminated';
    return !this.podsSynced;
  }

  /**
   * kubelet ShouldPodContentBeRemoved: every runtime object of the pod (exited containers, sandboxes) may go
   * once it was evicted, or deleted and terminated; a pod no worker knows may go once workers are synced.
   */
  shouldPodContentBeRemoved(uid: PodUID): boolean {
    const s = this.pods.get(uid);
    if (s) return s.evicted || (s.deleted && s.state === 'terminated');
    return this.podsSynced;
  }

  /** kubelet ShouldPodRuntimeBeRemoved: the pod's runtime resources (volumes, ...) may go once terminated. */
  shouldPodRuntimeBeRemoved(uid: PodUID): boolean {
    const s = this.pods.get(uid);
    if (s) return s.state === 'terminated';
    return this.podsSynced;
  }

  /**
   * Forgets terminated workers whose pods are no longer desired, and starts termination of workers whose
   * pods vanished from the desired set (deleted from the API without our seeing a deletion timestamp).
   */
  syncKnownPods(desired: ReadonlySet<PodUID>): void {
    this.podsSynced = true;
    for (const [uid, s] of this.pods) {
      if (desired.has(uid)) continue;
      s.deleted = true;
      if (s.state === 'terminated' && !s.working) {
        s.timer?.cancel();
        this.pods.delete(uid);
        this.gen++;
      } else if (s.state === 'syncing' && s.pod) {
        this.updatePod({ type: 'kill', pod: s.pod, kill: { gracePeriodSeconds: 1 } });
      }
    }
  }

  /** Resolves when no worker is running a sync function (tests and shutdown). */
  async waitIdle(): Promise<void> {
    while ([...this.pods.values()].some((s) => s.working)) {
      await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    }
  }

  /** Cancels timers and aborts running syncs; workers stop after their current call. */
  stop(): void {
    for (const s of this.pods.values()) {
      s.timer?.cancel();
      s.active?.abort(new Error('pod workers stopped'));
      s.pending = undefined;
    }
  }

  private beginTermination(status: PodSyncStatus, update: UpdatePodOptions & { pod: Pod }): void {
    const grace = effectiveGracePeriod(update.pod, update.kill);
    if (status.state === 'syncing') {
      this.setState(status, 'terminating');
      status.terminatingAt = this.opts.clock.now();
      status.gracePeriodSeconds = grace;
      status.kill = update.kill;
    } else if (status.gracePeriodSeconds === undefined || grace < status.gracePeriodSeconds) {
      status.gracePeriodSeconds = grace;
    }
    if (update.kill?.reason && !status.kill?.reason) status.kill = { ...status.kill, ...update.kill };
  }

  private async work(status: PodSyncStatus): Promise<void> {
    const uid = status.uid;
    status.working = true;
    try {
      while (status.pending && this.pods.get(uid) === status) {
        const update = status.pending;
        status.pending = undefined;
        const ctx = new SyncCancel();
        status.active = ctx;
        let failed = false;
        const started = this.opts.clock.now();
        let op: 'sync' | 'terminating' | 'terminated' = 'sync';
        try {
          if (status.runningPod && !status.pod) {
            op = 'terminating';
            await this.syncer.syncTerminatingRuntimePod(ctx, status.runningPod);
            this.setState(status, 'terminated');
            status.terminatedAt = this.opts.clock.now();
          } else if (status.state === 'syncing') {
            const runtime = await this.runtimeStatus(uid, status.lastSyncTime, ctx);
            const pod = update.pod ?? status.pod!;
            const { isTerminal } = await this.syncer.syncPod(ctx, update.type, pod, runtime);
            if (isTerminal && status.state === 'syncing') {
              // The pod finished on its own: stop what remains without waiting for a grace period.
              this.setState(status, 'terminating');
              status.terminatingAt = this.opts.clock.now();
              status.gracePeriodSeconds = 1;
              status.pending ??= { type: 'sync', pod: status.pod! };
            }
          } else if (status.state === 'terminating') {
            op = 'terminating';
            // The terminated step right after reads the same cache entry, or the newer one the kill wrote.
            const since = status.lastSyncTime;
            const runtime = await this.runtimeStatus(uid, since, undefined);
            await this.syncer.syncTerminatingPod(
              ctx,
              status.pod!,
              runtime,
              status.gracePeriodSeconds ?? 0,
              status.kill,
            );
            this.setState(status, 'terminated');
            status.terminatedAt = this.opts.clock.now();
            op = 'terminated';
            const stopped = await this.runtimeStatus(uid, since, undefined);
            await this.syncer.syncTerminatedPod(ctx, status.pod!, stopped);
          } else {
            op = 'terminated';
            const stopped = await this.runtimeStatus(uid, status.lastSyncTime, undefined);
            await this.syncer.syncTerminatedPod(ctx, status.pod!, stopped);
          }
        } catch (err) {
          failed = true;
          if (!ctx.aborted) {
            this.opts.logger?.warn('pod sync failed', {
              pod: describe(status),
              uid,
              state: status.state,
              error: errorMessage(err),
            });
          }
        } finally {
          status.active = undefined;
          status.lastSyncTime = this.opts.clock.now();
          this.opts.onSync?.(op, this.opts.clock.now() - started, failed);
        }
        if (!status.pending) this.scheduleNext(status, failed, ctx.aborted);
      }
    } finally {
      status.working = false;
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /**
   * The pod's runtime view from the PLEG's cache, newer than the worker's last sync (kubelet:
   * podCache.GetNewerThan). A kill arriving meanwhile (`cancel`) ends the wait: the worker goes on to
   * terminate. An inspection that failed fails the sync, which is retried.
   */
  private async runtimeStatus(
    uid: PodUID,
    minTime: number,
    cancel: SyncCancel | undefined,
  ): Promise<RuntimePodStatus> {
    const wait = this.opts.podCache.getNewerThan(uid, minTime);
    let got: { status: RuntimePodStatus; error: unknown };
    if (!cancel) {
      got = await wait;
    } else {
      if (cancel.aborted) throw new KindError('Unavailable', 'pod is being terminated');
      let off: (() => void) | undefined;
      const aborted = new Promise<never>((_, reject) => {
        off = cancel.onAbort(() => reject(new KindError('Unavailable', 'pod is being terminated')));
      });
      try {
        got = await Promise.race([wait, aborted]);
      } finally {
        off?.();
      }
    }
    if (got.error !== undefined) {
      throw new KindError('Unavailable', `error determining status: ${errorMessage(got.error)}`, {
        podUID: uid,
      });
    }
    return got.status;
  }

  /**
   * A status-only change of a pod whose worker is idle: the worker keeps this version (same spec object,
   * newer status) instead of the one it last synced. Its next resync syncs the newest pod, as the kubelet's
   * periodic sync takes the pod manager's, and the older version is not kept alive beside the informer's.
   */
  refreshIdle(pod: Pod): void {
    const status = this.pods.get(asPodUID(pod.metadata.uid ?? ''));
    if (!status || status.working || status.pending || status.state !== 'syncing') return;
    if (status.pod && status.pod !== pod && status.pod.spec === pod.spec) status.pod = pod;
  }

  /** Runs a due resync or retry of the pod's worker now, unless it is busy or has something pending. */
  resync(uid: PodUID): void {
    const status = this.pods.get(uid);
    if (!status?.due || status.working || status.pending) return;
    status.due = false;
    status.pending = { type: 'sync', ...(status.pod ? { pod: status.pod } : {}) };
    void this.work(status);
  }

  /** Level-triggered follow-up: resync, retry after back-off, or (terminating) retry termination. */
  private scheduleNext(status: PodSyncStatus, failed: boolean, aborted: boolean): void {
    if (status.state === 'terminated' && !failed) return;
    if (aborted && status.state !== 'syncing') {
      // A kill aborted the sync: continue with termination at once.
      status.pending = { type: 'kill', ...(status.pod ? { pod: status.pod } : {}) };
      return;
    }
    const base = failed ? this.backOffMs : this.resyncMs;
    let delay = base * (1 + 0.5 * this.random());
    const due = status.state === 'syncing' && status.pod ? this.opts.syncDue?.(status.pod) : undefined;
    if (due !== undefined && Number.isFinite(due)) delay = Math.min(delay, Math.max(0, due));
    // One shared callback with the status as its argument: no closure per pod (see timerQueueFor).
    status.timer = timerQueueFor(this.opts.clock).setTimer(delay, this.onTimer, status);
  }

  private readonly onTimer = (status: PodSyncStatus): void => {
    status.timer = undefined;
    if (this.pods.get(status.uid) !== status || status.working) return;
    status.due = true;
    if (this.opts.onDue) this.opts.onDue(status.uid);
    else this.resync(status.uid);
  };
}
