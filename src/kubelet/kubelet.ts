/**
 * Kubelet: the pod half of a kubelet for one VirtualNode (kubelet.go). It wires the pieces the way the
 * kubelet's sync loop does:
 *
 *   pod informer ─► pod manager ─► pod workers ─► KubeletPodSyncer ─► runtime manager ─► Runtime
 *   PLEG relist (1 s) ─► events ─► pod workers (every event but ContainerRemoved; ContainerDied → per-pod
 *                                   deletor of older dead instances)
 *   probe results ─► liveness failure: sync; readiness/startup: status manager, then sync
 *   active deadline ─► a pod worker sync at the deadline; the status generation then fails the pod
 *   status manager ─► on each change syncBatch(false); every 10 s syncBatch(true) ─► pods/status, final DELETE
 *   housekeeping (2 s) ─► desired pods, orphaned statuses, probe workers, orphaned runtime pods, container GC
 *
 * Lifecycle: `start()` once; `ready` resolves when the pod informer has synced, the node's pods were handed
 * to pod workers (containers already on the runtime are adopted by their labels, never recreated), runtime
 * pods unknown to the API were sent off to be killed and removed (start-up waits, retrying, for a runtime
 * that does not answer yet), and the PLEG relisted once. `stop()` ends every loop and parks the pod workers
 * without touching the runtime or the API (a crash and a shutdown look the same to the next Kubelet). Time
 * comes only from the injected Clock.
 */
import type { Pod } from '../api/core.js';
import type { TimerHandle } from '../util/clock.js';
import { errorMessage, KindError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { ActiveDeadlineHandler } from './activedeadline.js';
import { newCrashLoopBackOff } from './backoff.js';
import { PodCache } from './container/cache.js';
import { asPodUID } from './container/types.js';
import { ImagePullBackOff } from './images/pullbackoff.js';
import { RuntimeCleanup } from './kubelet_cleanup.js';
import {
  admissionNodeWithSettings,
  allocatableForEnv,
  kubeletPeriods,
  meaningfulChange,
  validateKubeletDeps,
  type KubeletDeps,
  type KubeletPeriods,
} from './kubelet_config.js';
import { nodeHookHttpGet, podEventRecorder, restEnvSource } from './kubelet_shell.js';
import { KubeletPodSyncer } from './kubelet_sync.js';
import { KubeGenericRuntimeManager } from './kuberuntime/manager.js';
import type { PodLifecycleEvent } from './pleg/events.js';
import { GenericPLEG } from './pleg/generic.js';
import { KubeletPodManager, PodsByNodeIndex } from './podmanager.js';
import { PodWorkers, type PodSyncer } from './podworkers.js';
import { ProberManager } from './prober/manager.js';
import { ResultsManager } from './prober/results.js';
import { createProbeRunner, type PortProber } from './prober/runners.js';
import { ReasonCache } from './reasoncache.js';
import { StatusManager } from './status/manager.js';
import { needToReconcilePodReadiness } from './status/readiness.js';
import { restPodStatusClient } from './statusclient.js';
import { newPodEnvironment } from './kubelet_volumes.js';
import type { VolumeManager } from './volumemanager/volumemanager.js';

export { meaningfulChange, type KubeletDeps, type KubeletSettings } from './kubelet_config.js';

type LoopName = 'pleg' | 'housekeeping' | 'status';

/**
 * Invariants: every pod of this node in the API has at most one pod worker, created only after start;
 * only the pod workers and the orphan cleanup call mutating runtime methods, never for the same UID; after
 * `stop()` no loop runs again, no sync function starts (a pod worker that tries parks) and nothing is
 * written by this Kubelet beyond what was already in flight.
 */
export class Kubelet {
  readonly nodeName: string;
  /** Resolves once started (see the module comment); rejects if stopped first. */
  readonly ready: Promise<void>;
  /** Resolves once stopped. */
  readonly done: Promise<void>;

  readonly podManager = new KubeletPodManager();
  readonly statusManager: StatusManager;
  readonly proberManager: ProberManager;
  readonly runtimeManager: KubeGenericRuntimeManager;
  readonly podWorkers: PodWorkers;
  readonly pleg: GenericPLEG;
  readonly podCache = new PodCache();
  readonly results = {
    liveness: new ResultsManager('liveness'),
    readiness: new ResultsManager('readiness'),
    startup: new ResultsManager('startup'),
  };
  readonly reasonCache = new ReasonCache();
  readonly volumeManager: VolumeManager;

  private readonly d: KubeletDeps;
  private readonly settings: KubeletPeriods;
  private readonly log: Logger;
  private readonly syncer: KubeletPodSyncer;
  private readonly timers = new Map<LoopName, TimerHandle>();
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly cleanup: RuntimeCleanup;
  private readonly onPodUnmounted: ((uid: string) => void) | undefined;
  private phase: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  private statusDraining = false;
  /** Ends the start-up's waits when the Kubelet is stopped first. */
  private readonly startAbort = new AbortController();
  private resolveReady!: () => void;
  private rejectReady!: (err: Error) => void;
  private resolveDone!: () => void;

  /** Checks the deps and builds every part; nothing runs until start(). Throws KindError('InvalidArgument'). */
  constructor(deps: KubeletDeps) {
    validateKubeletDeps(deps);
    this.d = deps;
    this.nodeName = deps.nodeName;
    this.log = deps.logger.child({ node: deps.nodeName });
    const s = deps.settings;
    this.settings = kubeletPeriods(s);
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => undefined);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));

    const nodeIPs = deps.nodeIPs && deps.nodeIPs.length > 0 ? [...deps.nodeIPs] : [deps.nodeIP];
    const record = podEventRecorder(deps.recorder);
    const metrics = deps.metrics;
    const node = deps.nodeName;
    const podEnv = newPodEnvironment(deps, record, nodeIPs, this.log);
    this.volumeManager = podEnv.volumes;
    this.onPodUnmounted = podEnv.env.onPodUnmounted;

    this.runtimeManager = new KubeGenericRuntimeManager({
      runtime: deps.runtime,
      clock: deps.clock,
      nodeSettings: {
        nodeName: deps.nodeName,
        podLogsRoot: s.podLogsRoot,
        cgroupRoot: s.cgroupRoot,
        ...(s.memoryCapacityBytes !== undefined ? { memoryCapacityBytes: s.memoryCapacityBytes } : {}),
        ...(s.dnsConfig ? { dnsConfig: s.dnsConfig } : {}),
        podNetwork: s.podNetwork,
        nodeIP: deps.nodeIP,
        nodeIPs,
        allocatable: allocatableForEnv(deps.node()),
      },
      recorder: record,
      envSource: deps.envSource ?? restEnvSource(deps.client),
      httpGet: deps.hookHttpGet ?? nodeHookHttpGet,
      crashLoopBackOff: newCrashLoopBackOff(s.crashLoopBackOff),
      imagePullBackOff: new ImagePullBackOff(),
      reasonCache: this.reasonCache,
      logger: this.log.child({ component: 'kuberuntime' }),
      runtimeHelper: podEnv.helper,
      files: podEnv.files,
    });

    const sm = this.log.child({ component: 'status_manager' });
    this.statusManager = new StatusManager({
      client: restPodStatusClient(deps.client),
      podManager: this.podManager,
      podDeletionSafety: { podCouldHaveRunningContainers: (pod) => this.podCouldHaveRunningContainers(pod) },
      clock: deps.clock,
      logger: { info: (m, f) => (m.startsWith('failed') ? sm.warn(m, f) : sm.debug(m, f)) },
    });

    const sim = deps.runtime as Partial<{ probePort: PortProber }>;
    const portProber: PortProber | undefined =
      deps.runtime.kind === 'sim' && typeof sim.probePort === 'function'
        ? (id, port, kind) => (sim.probePort as PortProber).call(deps.runtime, id, port, kind)
        : undefined;
    this.proberManager = new ProberManager({
      clock: deps.clock,
      getPodStatus: (uid) => this.statusManager.getPodStatus(uid),
      runner: createProbeRunner({
        runtime: deps.runtime,
        record,
        ...(portProber ? { portProber } : {}),
        onProbe: (probeType, result) =>
          metrics?.proberProbeTotal.inc({ node, probe_type: probeType, result }),
        logger: { info: (m, f) => this.log.debug(m, f) },
      }),
      results: this.results,
      // A restarted operator adopts running containers without flipping their readiness (kubelet 1.35+).
      keepStatusOnRestart: true,
    });

    const activeDeadline = new ActiveDeadlineHandler({
      clock: deps.clock,
      startTime: (uid) => this.statusManager.getPodStartTime(uid),
      record,
    });
    this.syncer = new KubeletPodSyncer({
      nodeIPs,
      podNetwork: s.podNetwork,
      clock: deps.clock,
      logger: this.log,
      record,
      node: () => admissionNodeWithSettings(deps.node(), s),
      podManager: this.podManager,
      statusManager: this.statusManager,
      prober: this.proberManager,
      runtime: this.runtimeManager,
      probes: { liveness: this.results.liveness, startup: this.results.startup },
      reasonCache: this.reasonCache,
      workerState: (uid) => this.podWorkers.state(uid),
      onPodStarted: (ms) => metrics?.podStartDuration.observe({ node }, ms / 1000),
      evictionHandlers: [activeDeadline],
      volumes: {
        mountPod: (pod) => this.volumeManager.mountPod(pod),
        unmountPod: async (uid) => {
          await this.volumeManager.unmountPod(uid);
          this.onPodUnmounted?.(uid);
        },
      },
    });
    this.podWorkers = new PodWorkers(this.guardedSyncer(), {
      clock: deps.clock,
      resyncIntervalMs: this.settings.resyncIntervalMs,
      backOffMs: this.settings.podWorkerBackOffMs,
      logger: this.log.child({ component: 'pod_workers' }),
      onSync: (op, ms) => metrics?.podWorkerDuration.observe({ node, operation: op }, ms / 1000),
      syncDue: (pod) => activeDeadline.timeUntilSync(pod),
    });
    this.cleanup = new RuntimeCleanup({
      nodeName: node,
      clock: deps.clock,
      log: this.log,
      ...(metrics ? { metrics } : {}),
      runtime: this.runtimeManager,
      apiPod: (uid) => this.podManager.getPodByUID(asPodUID(uid)),
      workerState: (uid) => this.podWorkers.state(uid),
      active: () => this.phase === 'running',
      track: (p) => void this.track(p),
    });
    this.pleg = new GenericPLEG({ lister: this.runtimeManager, cache: this.podCache, clock: deps.clock });
  }

  // ---- lifecycle ----

  /** Starts the Kubelet (once). Progress is reported through `ready`. */
  start(): void {
    if (this.phase !== 'new') return;
    this.phase = 'starting';
    // Not tracked: startup may wait on the informer forever; stop() must not wait for it.
    void this.run().catch((err: unknown) => {
      this.log.error('kubelet failed to start', { err: errorMessage(err) });
      this.rejectReady(err instanceof Error ? err : new Error(String(err)));
    });
  }

  /**
   * Stops every loop, probe worker and pod worker, and waits (up to `waitMs` of the clock; 0 = not at all)
   * for syncs in flight to end. Never kills containers, never writes to the API: the runtime keeps running
   * and the next Kubelet adopts it.
   */
  async stop(waitMs = 5_000): Promise<void> {
    if (this.phase === 'stopped') return this.done;
    this.phase = 'stopped';
    this.startAbort.abort();
    this.rejectReady(
      new KindError('Unavailable', 'kubelet stopped before it was ready', { node: this.nodeName }),
    );
    for (const t of this.timers.values()) t.cancel();
    this.timers.clear();
    for (const u of this.unsubscribe.splice(0)) u();
    this.podWorkers.stop();
    this.proberManager.cleanupPods(new Set());
    // Syncs in flight are tracked; a worker that would start another one after this point parks instead.
    if (waitMs > 0 && this.inflight.size > 0) {
      const settled = Promise.allSettled([...this.inflight]);
      const abort = new AbortController();
      await Promise.race([settled, this.d.clock.sleep(waitMs, abort.signal).catch(() => undefined)]);
      abort.abort();
    }
    this.log.info('kubelet stopped');
    this.resolveDone();
  }

  /** Problems that make the node not ready (consumed by the node status loop); empty when healthy. */
  health(): string[] {
    const out: string[] = [];
    const pleg = this.pleg.healthy(this.d.clock.now());
    if (!pleg.healthy) out.push(`PLEG is not healthy: ${pleg.message}`);
    return out;
  }

  // ---- pod source (the operator calls these from the shared informer's handlers) ----

  /** A pod appeared in the informer. Pods of other nodes are ignored. */
  handlePodAdd(pod: Pod): void {
    if (!this.isMine(pod) || this.phase === 'stopped') return;
    this.podManager.upsert(pod);
    if (this.phase === 'running') this.dispatch(pod, 'create');
  }

  /**
   * A pod changed (`old` is the previous object, when known). Only a change the kubelet acts on (spec,
   * labels, annotations, deletion) reaches the pod worker; a status-only change, such as our own status
   * writes coming back, just refreshes the pod manager (kubelet: config's checkAndUpdatePod / reconcile),
   * unless a readiness gate's condition, written by someone else, no longer agrees with Ready: then the pod
   * is synced so Ready follows it (kubelet: HandlePodReconcile, NeedToReconcilePodReadiness).
   */
  handlePodUpdate(pod: Pod, old?: Pod): void {
    if (this.phase === 'stopped') return;
    if (!this.isMine(pod)) {
      if (old && this.isMine(old)) this.handlePodDelete(old);
      return;
    }
    this.podManager.upsert(pod);
    this.proberManager.updatePod(pod);
    if (this.phase !== 'running') return;
    if (!old || meaningfulChange(old, pod)) this.dispatch(pod, 'update');
    else if (needToReconcilePodReadiness(pod)) this.syncByUID(pod.metadata.uid as string);
  }

  /** A pod left the informer (deleted from the API, or no longer bound here). */
  handlePodDelete(pod: Pod): void {
    if (this.phase === 'stopped' || !pod?.metadata?.uid) return;
    this.podManager.remove(pod);
    if (this.phase !== 'running') return;
    const state = this.podWorkers.state(pod.metadata.uid);
    if (state === 'syncing' || state === 'terminating') this.podWorkers.updatePod({ type: 'kill', pod });
  }

  // ---- internals: startup ----

  private async run(): Promise<void> {
    await this.d.podInformer.waitForSync();
    if (this.phase !== 'starting') return;
    const pods = this.desiredPods();
    this.podManager.setPods(pods);

    // Runtime pods the API does not know (deleted while we were away) are killed and removed in the background.
    // The runtime may not answer yet (containerd restarting, socket not there): wait for it, never give up.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.cleanup.cleanupOrphans();
        break;
      } catch (err) {
        if (this.phase !== 'starting') return;
        const delayMs = Math.min(500 * 2 ** attempt, 10_000);
        this.log.warn('runtime not reachable at start; retrying', { err: errorMessage(err), delayMs });
        try {
          await this.d.clock.sleep(delayMs, this.startAbort.signal);
        } catch {
          return; // stopped
        }
      }
    }
    if (this.phase !== 'starting') return;

    this.unsubscribe.push(
      this.results.liveness.subscribe((u) => {
        if (u.result === 'failure') this.syncByUID(u.podUID);
      }),
      this.results.readiness.subscribe((u) => {
        this.statusManager.setContainerReadiness(u.podUID, u.containerID, u.result === 'success');
        this.syncByUID(u.podUID);
      }),
      this.results.startup.subscribe((u) => {
        this.statusManager.setContainerStartup(u.podUID, u.containerID, u.result === 'success');
        this.syncByUID(u.podUID);
      }),
      this.statusManager.onUpdate(() => this.kickStatusSync()),
    );

    // Pods go to their workers oldest first, so admission sees them in the order they were created.
    const ordered = [...pods].sort((a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
    );
    this.phase = 'running';
    for (const p of ordered) this.dispatch(p, 'create');

    await this.relist();
    if (this.phase !== 'running') return;
    this.every('pleg', this.settings.plegRelistPeriodMs, () => this.relist());
    this.every('housekeeping', this.settings.housekeepingPeriodMs, () => this.housekeeping());
    this.every('status', this.settings.statusSyncPeriodMs, async () => {
      await this.statusManager.syncBatch(true);
    });
    this.kickStatusSync();
    this.log.info('kubelet started', { pods: pods.length });
    this.resolveReady();
  }

  // ---- internals: loops ----

  /** Runs `fn` every `periodMs` after the previous run ended (never overlapping), until stopped. */
  private every(name: LoopName, periodMs: number, fn: () => Promise<void> | void): void {
    const arm = (): void => {
      if (this.phase === 'stopped') return;
      this.timers.set(
        name,
        this.d.clock.setTimer(periodMs, () => {
          this.timers.delete(name);
          if (this.phase === 'stopped') return;
          this.track(
            Promise.resolve()
              .then(fn)
              .catch((err: unknown) => this.log.warn(`${name} loop failed`, { err: errorMessage(err) }))
              .finally(arm),
          );
        }),
      );
    };
    arm();
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => undefined);
    return p;
  }

  private async relist(): Promise<void> {
    const started = this.d.clock.now();
    const r = await this.pleg.relist();
    this.d.metrics?.plegRelistDuration.observe(
      { node: this.nodeName },
      (this.d.clock.now() - started) / 1000,
    );
    if (!r.listed) this.log.warn('PLEG relist failed', { err: errorMessage(r.error) });
    if (this.phase === 'stopped') return;
    for (const e of this.pleg.events.drain()) this.handlePlegEvent(e);
  }

  /**
   * kubelet syncLoopIteration for a PLEG event: every event but ContainerRemoved syncs a known pod
   * (isSyncPodWorthy); ContainerDied also removes the older dead instances of that container
   * (cleanUpContainersInPod), from the status the relist just cached.
   */
  private handlePlegEvent(e: PodLifecycleEvent): void {
    if (e.type === 'ContainerRemoved') return;
    this.syncByUID(e.podUID);
    if (e.type === 'ContainerDied' && typeof e.data === 'string') {
      const cached = this.podCache.get(e.podUID);
      if (!cached.error) this.cleanup.cleanUpContainersInPod(e.podUID, e.data, cached.status);
    }
  }

  private syncByUID(uid: string): void {
    if (this.phase !== 'running') return;
    const pod = this.podManager.getPodByUID(asPodUID(uid));
    if (pod) this.podWorkers.updatePod({ type: 'sync', pod });
  }

  /** Drains the status manager's update channel (kubelet: the status manager's sync loop). */
  private kickStatusSync(): void {
    if (this.phase !== 'running' || this.statusDraining) return;
    this.statusDraining = true;
    this.track(
      (async () => {
        try {
          while (this.phase === 'running' && this.statusManager.takeUpdateSignal()) {
            await this.statusManager.syncBatch(false);
          }
        } finally {
          this.statusDraining = false;
        }
      })(),
    );
  }

  /**
   * Level-triggered cleanup (kubelet: HandlePodCleanups): the desired pods from the informer, workers for
   * pods without one, termination of workers whose pods vanished, orphaned statuses and probe workers,
   * runtime pods the API does not know, and container GC when due.
   */
  private async housekeeping(): Promise<void> {
    const pods = this.desiredPods();
    this.podManager.setPods(pods);
    const desired = new Set<string>();
    for (const p of pods) {
      const uid = p.metadata.uid as string;
      desired.add(uid);
      const state = this.podWorkers.state(uid);
      if (state === undefined) this.dispatch(p, 'create');
      else if (state === 'syncing' && p.metadata.deletionTimestamp) this.dispatch(p, 'update');
    }
    this.podWorkers.syncKnownPods(desired);
    const known = new Set(this.podWorkers.knownPods());
    this.syncer.retain(new Set([...known, ...desired]));
    this.statusManager.removeOrphanedStatuses(desired);
    const probed = new Set([...desired].filter((uid) => this.podWorkers.state(uid) === 'syncing'));
    this.proberManager.cleanupPods(probed);
    await this.cleanup.cleanupOrphans();
    // kubelet cleanupOrphanedPodDirs: directories of pods neither in the API, nor known to a worker, nor running.
    this.volumeManager.retain(new Set([...known, ...desired]));
    const removed = await this.volumeManager.cleanupOrphanedPodDirs(
      (uid) => known.has(uid) || desired.has(uid) || this.cleanup.isCleaningUp(uid),
    );
    for (const uid of removed) this.onPodUnmounted?.(uid);
    if (this.cleanup.gcDue(this.settings.containerGCPeriodMs)) this.cleanup.requestGC();
  }

  // ---- internals: pods ----

  private isMine(pod: Pod): boolean {
    return pod?.spec?.nodeName === this.nodeName && !!pod.metadata?.uid;
  }

  private desiredPods(): Pod[] {
    return this.d.podInformer
      .byIndex(this.d.podIndexName ?? PodsByNodeIndex, this.nodeName)
      .filter((p) => this.isMine(p));
  }

  private dispatch(pod: Pod, type: 'create' | 'update'): void {
    const uid = pod.metadata.uid as string;
    if (this.podWorkers.state(uid) === 'terminated') {
      // A finished pod that is now deleted: the status manager's full sync deletes the API object and the
      // container GC its leftovers; nudge both instead of waiting for their periods.
      if (pod.metadata.deletionTimestamp) {
        this.track(this.statusManager.syncBatch(true));
        this.cleanup.requestGC();
      }
      return;
    }
    this.podWorkers.updatePod({ type, pod });
  }

  /** kubelet podCouldHaveRunningContainers: a pod worker's word; before start, any pod might be running. */
  private podCouldHaveRunningContainers(pod: Pod): boolean {
    const uid = pod.metadata?.uid ?? '';
    const state = this.podWorkers.state(uid);
    if (state !== undefined) return state !== 'terminated';
    return this.phase !== 'running' || this.cleanup.isCleaningUp(uid);
  }

  /**
   * The syncer as the pod workers see it: once stopped, a sync function that is called anyway (a worker that
   * was mid-sync and schedules its next step) parks forever instead of acting, so a stopped Kubelet never
   * touches the runtime again.
   */
  private guardedSyncer(): PodSyncer {
    const guard = <T>(call: () => Promise<T>): Promise<T> =>
      this.phase === 'stopped' ? new Promise<T>(() => undefined) : this.track(call());
    return {
      syncPod: (ctx, type, pod) => guard(() => this.syncer.syncPod(ctx, type, pod)),
      syncTerminatingPod: (ctx, pod, grace, kill) =>
        guard(() => this.syncer.syncTerminatingPod(ctx, pod, grace, kill)),
      syncTerminatedPod: (ctx, pod) => guard(() => this.syncer.syncTerminatedPod(ctx, pod)),
    };
  }
}
