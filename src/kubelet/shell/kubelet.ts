/**
 * Kubelet: the pod half of a kubelet for one VirtualNode (kubelet.go). It builds the parts and feeds one sync
 * loop (kubelet_syncloop.ts), as the kubelet's syncLoop does:
 *
 *   pod informer ─► PodConfig (ADD/UPDATE/DELETE/RECONCILE) ─┐
 *   PLEG relist (1 s) ─► lifecycle events ───────────────────┤
 *   probe results ───────────────────────────────────────────┼─► SyncLoop ─► pod workers ─► KubeletPodSyncer
 *   housekeeping (2 s) ──────────────────────────────────────┤        (gated on RuntimeState)     │
 *   pod worker resyncs / retries ────────────────────────────┘                                    ▼
 *   PLEG ─► pod cache ─► pod workers (the only runtime view a sync gets) ◄── relist of one pod ─ runtime manager
 *   status manager ─► on each change syncBatch(false); every 10 s syncBatch(true) ─► pods/status, final DELETE
 *
 * Lifecycle: `start()` once. The PLEG lists the runtime first, before the pods are known, as a kubelet's
 * PLEG starts before its pod sources have synced (start-up waits, retrying, for a runtime that does not
 * answer yet); `runtimeListed` then resolves, and the node's first status waits for that, never for the pod
 * list. `ready` resolves when the pod informer has synced too and the node's pods were handed to pod workers
 * (containers already on the runtime are adopted by their labels, never recreated; a runtime that lost them
 * with the process first rebuilds them from the pods' API statuses, kubelet_adopt.ts, and is listed again;
 * runtime pods unknown to the API go to pod workers to be stopped at the first housekeeping). `stop()` ends every loop and
 * parks the pod workers without touching the runtime or the API (a crash and a shutdown look the same to the
 * next Kubelet). Time comes only from the injected Clock.
 */
import { isTerminalPhase, type ContainerStatus, type Pod } from '../../api/core.js';
import type { NodeMetricSeries } from '../../metrics.js';
import type { ContainerTermination } from '../status/terminations.js';
import { errorMessage, KindError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import { memoByIdentity } from '../../util/memo.js';
import type { AdmissionNode } from '../lifecycle/admission.js';
import { activePods as activePodsOf } from '../apis/podresources/answers.js';
import { declaredFeatures, podUpdateFeaturesWarning } from '../../node/declaredfeatures.js';
import { PeriodicLoops } from '../../util/periodic.js';
import { ActiveDeadlineHandler } from '../activedeadline.js';
import { EvictionManager, type EvictionMetrics } from '../eviction/shell/loop.js';
import { NodeShutdownManager } from '../nodeshutdown/shell/loop.js';
import { periodRequestedSeconds } from '../nodeshutdown/config.js';
import { ImageGCManager } from '../images/shell/imagegc_manager.js';
import type { PressureCondition } from '../eviction/signals.js';
import { AllocationManager, ResizeRetryMs } from '../allocation/manager.js';
import { PodConfig, type PodChange } from '../config/podconfig.js';
import { PodCache } from '../container/cache.js';
import { asPodUID } from '../container/types.js';
import { podAdoptionFor, type PodAdoption } from '../kubelet_adopt.js';
import { RuntimeCleanup } from './kubelet_cleanup.js';
import {
  admissionNodeWithSettings,
  kubeletPeriods,
  validateKubeletDeps,
  type KubeletDeps,
  type KubeletPeriods,
} from './kubelet_config.js';
import { newRuntimeManager } from './kubelet_runtime.js';
import { guardSyncer, minDue, podEventRecorder, podRef } from './kubelet_adapters.js';
import { KubeletPodSyncer } from './kubelet_sync.js';
import { SyncLoop } from '../kubelet_syncloop.js';
import { newPodEnvironment } from './kubelet_volumes.js';
import type { KubeGenericRuntimeManager } from '../kuberuntime/shell/manager.js';
import { GenericPLEG } from '../pleg/generic.js';
import { KubeletPodManager, PodsByNodeIndex } from './podmanager.js';
import { PodCertificateManager, restPodCertificateAPI } from '../podcertificate/shell/manager.js';
import { PodWorkers, type KillPodOptions } from '../podworkers.js';
import { ProberManager } from '../prober/manager.js';
import { ProbeMetrics } from '../prober/metrics.js';
import { ResultsManager } from '../prober/results.js';
import { createProbeRunner } from '../prober/shell/runner.js';
import { ReasonCache } from '../reasoncache.js';
import { StatusManager } from '../status/manager.js';
import { PodResizeConditions } from '../status/resizeconditions.js';
import { restPodStatusClient } from './statusclient.js';
import type { ResourceManagers } from '../cm/resourcemanagers.js';
import type { ReconcileContainer } from '../cm/cpumanager/manager.js';
import type { VolumeManager } from '../volumemanager/volumemanager.js';

/** What health() answers while all is well, shared (the sync loop asks before every input). */
const HEALTHY: readonly string[] = Object.freeze([]);

export { meaningfulChange, type KubeletDeps, type KubeletSettings } from './kubelet_config.js';

/**
 * Invariants: every pod of this node in the API has at most one pod worker, created only after start; only
 * pod workers call mutating runtime methods for a pod (the container GC and the dead-container deletor remove
 * only exited containers); after `stop()` no loop runs again, no sync function starts (a pod worker that
 * tries parks) and nothing is written by this Kubelet beyond what was already in flight.
 */
export class Kubelet {
  readonly nodeName: string;
  /** Resolves once started (see the module comment); rejects if stopped first. */
  readonly ready: Promise<void>;
  /** Resolves at the PLEG's first successful relist, which needs no pod list; rejects if stopped first. */
  readonly runtimeListed: Promise<void>;
  /** Resolves once stopped. */
  readonly done: Promise<void>;

  readonly podManager = new KubeletPodManager();
  readonly podConfig: PodConfig;
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
  /** `/metrics/probes` of this node. */
  readonly probeMetrics = new ProbeMetrics();
  readonly volumeManager: VolumeManager;
  readonly resizeConditions: PodResizeConditions;
  readonly allocationManager: AllocationManager;
  /** podCertificate projections (KubeletDeps.podCertificates); undefined when the node has none. */
  readonly podCertificates: PodCertificateManager | undefined;

  private readonly d: KubeletDeps;
  private readonly settings: KubeletPeriods;
  private readonly log: Logger;
  /** This node's series of the per-node metrics (src/metrics.ts forNode), when there are metrics. */
  private readonly metricSeries: NodeMetricSeries | undefined;
  private readonly syncer: KubeletPodSyncer;
  private readonly loop: SyncLoop;
  private readonly loops: PeriodicLoops<'pleg' | 'housekeeping' | 'status' | 'resize' | 'cpumanager'>;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly cleanup: RuntimeCleanup;
  /** The eviction manager (KubeletDeps.eviction); undefined when the node has none. */
  private readonly evictionManager: EvictionManager | undefined;
  /** The node shutdown manager (KubeletDeps.shutdown); undefined when the node has none. */
  private readonly shutdownManager: NodeShutdownManager | undefined;
  /** A shutdown asked for before the pods were handed to their workers (started once they are). */
  private shutdownRequested = false;
  /** When that shutdown was first asked for (clock ms). */
  private shutdownRequestedAt: number | undefined;
  /** The image garbage collector (KubeletDeps.imageGC); undefined when the node has none. */
  private readonly imageGCManager: ImageGCManager | undefined;
  /** Rebuilds a runtime that lost its state with the process (kubelet_adopt.ts); undefined for the others. */
  private readonly adoption: PodAdoption | undefined;
  private phase: 'new' | 'starting' | 'running' | 'stopped' = 'new';
  private statusDraining = false;
  /** desiredPods: the informer's array it last filtered, and what that gave. */
  private desiredFrom: readonly Pod[] | undefined;
  private desired: readonly Pod[] = [];
  /** Ends the start-up's waits when the Kubelet is stopped first. */
  private readonly startAbort = new AbortController();
  private resolveReady!: () => void;
  private rejectReady!: (err: Error) => void;
  private resolveRuntimeListed!: () => void;
  private rejectRuntimeListed!: (err: Error) => void;
  private resolveDone!: () => void;

  /** Checks the deps and builds every part; nothing runs until start(). Throws KindError('InvalidArgument'). */
  constructor(deps: KubeletDeps) {
    validateKubeletDeps(deps);
    this.d = deps;
    this.nodeName = deps.nodeName;
    this.podConfig = new PodConfig(deps.nodeName);
    this.loops = new PeriodicLoops({
      clock: deps.clock,
      track: (p) => void this.track(p),
      onError: (name, err) => this.log.warn(`${name} loop failed`, { err }),
    });
    this.log = deps.logger.child({ node: deps.nodeName });
    const s = deps.settings;
    this.settings = kubeletPeriods(s);
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => undefined);
    this.runtimeListed = new Promise((resolve, reject) => {
      this.resolveRuntimeListed = resolve;
      this.rejectRuntimeListed = reject;
    });
    this.runtimeListed.catch(() => undefined);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));

    const nodeIPs = deps.nodeIPs && deps.nodeIPs.length > 0 ? [...deps.nodeIPs] : [deps.nodeIP];
    const record = podEventRecorder(deps.recorder);
    const metrics = deps.metrics;
    const node = deps.nodeName;
    const series = (this.metricSeries = metrics?.forNode(node));
    const pc = deps.podCertificates;
    this.podCertificates =
      pc &&
      new PodCertificateManager({
        api: pc.api ?? restPodCertificateAPI(deps.client),
        requests: pc.requests,
        nodeName: node,
        nodeUID: pc.nodeUID,
        pods: {
          getPodByUID: (uid) => this.podManager.getPodByUID(asPodUID(uid)),
          getPods: () => this.podManager.getPods(),
        },
        record,
        clock: deps.clock,
        logger: this.log.child({ component: 'podcertificate' }),
      });
    const podEnv = newPodEnvironment(deps, record, nodeIPs, this.log, this.podCertificates);
    this.volumeManager = podEnv.volumes;
    const onPodUnmounted = podEnv.env.onPodUnmounted;

    this.runtimeManager = newRuntimeManager(deps, {
      record,
      nodeIPs,
      podEnv,
      reasonCache: this.reasonCache,
      log: this.log,
      ...(series
        ? {
            startMetrics: {
              podStarted: () => series.startedPods.inc(),
              podStartFailed: () => series.startedPodsErrors.inc(),
              containerStarted: (type) => series.startedContainers(type).inc(),
              containerStartFailed: (type, code) => series.startedContainersErrors(type, code).inc(),
            },
          }
        : {}),
    });
    this.adoption = podAdoptionFor(deps, podEnv, this.runtimeManager, this.log);
    this.pleg = new GenericPLEG({ lister: this.runtimeManager, cache: this.podCache, clock: deps.clock });
    const sm = this.log.child({ component: 'status_manager' });
    this.statusManager = new StatusManager({
      client: restPodStatusClient(deps.client),
      podManager: this.podManager,
      // kubelet podCouldHaveRunningContainers: the pod workers' word; before start, any pod might be running.
      podDeletionSafety: {
        podCouldHaveRunningContainers: (pod) =>
          this.phase !== 'running' ||
          this.podWorkers.couldHaveRunningContainers(asPodUID(pod.metadata?.uid ?? '')),
      },
      clock: deps.clock,
      logger: { info: (m, f) => (m.startsWith('failed') ? sm.warn(m, f) : sm.debug(m, f)) },
      readFromCache: true, // the informer's pod instead of a GET before each PATCH (status/sync.ts)
      ...(series
        ? {
            onContainerTerminated: (t: ContainerTermination) =>
              series.terminatedContainers(t.containerType, String(t.exitCode), t.reason).inc(),
          }
        : {}),
      ...(deps.yieldToLoop ? { yieldToLoop: deps.yieldToLoop } : {}),
    });

    this.proberManager = new ProberManager({
      clock: deps.clock,
      getPodStatus: (uid) => this.statusManager.peekPodStatus(uid),
      runner: createProbeRunner({
        runtime: deps.runtime,
        record,
        onProbe: (probeType, result, pod, container) => {
          series?.probe(probeType, result).inc();
          this.probeMetrics.observe(probeType, result, pod, container);
        },
        logger: { info: (m, f) => this.log.debug(m, f) },
      }),
      results: this.results,
      // A restarted operator adopts running containers without flipping their readiness (kubelet 1.35+).
      keepStatusOnRestart: true,
    });

    // Once per node object (the node's own is rebuilt only when its spec changes): the kernel release it
    // may default to is a system call, and admission asks at every pod.
    const admissionNode = memoByIdentity((n: AdmissionNode) => admissionNodeWithSettings(n, s));
    this.resizeConditions = new PodResizeConditions(deps.clock);
    this.allocationManager = new AllocationManager({
      conditions: this.resizeConditions,
      node: () => admissionNode(deps.node()),
      getPodByUID: (uid) => this.podManager.getPodByUID(asPodUID(uid)),
      activePods: () => this.syncer.activePods(),
      record,
      // Not while the runtime is down: the pod's next sync after it returns shows the outcome.
      triggerPodSync: (pod) => {
        if (this.loop.gateOpen()) this.podWorkers.updatePod({ type: 'sync', pod });
      },
      logger: this.log,
    });
    this.imageGCManager = deps.imageGC && this.newImageGCManager(deps.imageGC);
    this.evictionManager = deps.eviction && this.newEvictionManager(deps.eviction);
    this.shutdownManager = deps.shutdown && this.newShutdownManager(deps.shutdown);
    const pressureNode = (n: AdmissionNode): AdmissionNode => {
      const pressure = this.evictionManager?.nodeConditions() ?? [];
      const node = pressure.length > 0 ? { ...n, pressureConditions: pressure } : n;
      return this.shutdownManager?.shuttingDown() ? { ...node, shuttingDown: true } : node;
    };
    const activeDeadline = new ActiveDeadlineHandler({
      clock: deps.clock,
      startTime: (uid) => this.statusManager.getPodStartTime(uid),
      record,
    });
    const rm = deps.resourceManagers;
    this.syncer = new KubeletPodSyncer({
      ...(rm
        ? {
            resourceAdmit: (pod: Pod) => rm.admit(pod, [...this.resourceActivePods(), pod]),
            cpuAffinity: rm.cpuManager,
          }
        : {}),
      nodeIPs,
      podNetwork: s.podNetwork,
      clock: deps.clock,
      logger: this.log,
      record,
      node: () => pressureNode(admissionNode(deps.node())),
      ...(deps.freshNode
        ? {
            freshNode: async () => {
              const n = await deps.freshNode!();
              return n && pressureNode(admissionNodeWithSettings(n, s));
            },
          }
        : {}),
      podManager: this.podManager,
      statusManager: this.statusManager,
      prober: this.proberManager,
      runtime: this.runtimeManager,
      relist: async (ref) => {
        const got = await this.pleg.updateCache(ref);
        if (got.error !== undefined) {
          throw new KindError('Unavailable', `inspecting pod: ${errorMessage(got.error)}`, {
            podUID: ref.uid,
          });
        }
        return got.status;
      },
      // PLEGOnDemandRelist: the pod's events go to the sync loop now, not at the next relist.
      relistPod: async (ref) => {
        const got = await this.pleg.relistPod(ref);
        if (got.eventsSent > 0 && this.phase === 'running') this.sendPlegEvents();
        if (got.error !== undefined) {
          throw new KindError('Unavailable', `inspecting pod: ${errorMessage(got.error)}`, {
            podUID: ref.uid,
          });
        }
        return got.status;
      },
      probes: { liveness: this.results.liveness, startup: this.results.startup },
      reasonCache: this.reasonCache,
      workerState: (uid) => this.podWorkers.state(asPodUID(uid)),
      onPodStarted: (ms) => series?.podStart.observe(ms / 1000),
      evictionHandlers: [activeDeadline],
      allocation: this.allocationManager,
      resizeConditions: this.resizeConditions,
      runtimeHandlers: () => deps.runtimeState?.runtimeHandlers?.() ?? [],
      runtimeFeatures: () => deps.runtimeState?.runtimeFeatures?.(),
      ...(deps.dynamicResources ? { dra: deps.dynamicResources } : {}),
      ...(deps.devices
        ? {
            devices: {
              admit: (pod: Pod) => deps.devices!.admit(pod),
              admissionNode: (n: AdmissionNode) => {
                const allocatable = deps.devices!.sanitizeAllocatable(n.allocatable);
                return allocatable === n.allocatable ? n : { ...n, allocatable: new Map(allocatable) };
              },
              allocatedResourcesStatus: (pod: Pod, statuses: ContainerStatus[]) =>
                deps.devices!.allocatedResourcesStatus(pod, statuses),
            },
          }
        : {}),
      volumes: {
        mountPod: (pod) => this.volumeManager.mountPod(pod),
        unmountPod: async (uid) => {
          await this.volumeManager.unmountPod(uid);
          onPodUnmounted?.(uid);
        },
      },
    });
    const guarded = guardSyncer(
      this.syncer,
      () => this.phase === 'stopped',
      (p) => this.track(p),
      deps.yieldToLoop,
    );
    this.podWorkers = new PodWorkers(guarded, {
      clock: deps.clock,
      podCache: this.podCache,
      resyncIntervalMs: this.settings.resyncIntervalMs,
      backOffMs: this.settings.podWorkerBackOffMs,
      logger: this.log.child({ component: 'pod_workers' }),
      onSync: (op, ms) => series?.worker(op).observe(ms / 1000),
      syncDue: (pod) =>
        minDue(
          minDue(activeDeadline.timeUntilSync(pod), this.syncer.resizeSyncDue(pod)),
          this.syncer.restartAllSyncDue(pod),
        ),
      onDue: (uid) => void this.loop.handle({ source: 'resync', podUID: uid }),
    });
    this.cleanup = new RuntimeCleanup({
      clock: deps.clock,
      log: this.log,
      runtime: this.runtimeManager,
      podWorkers: this.podWorkers,
      active: () => this.phase === 'running',
      track: (p) => void this.track(p),
    });
    this.loop = new SyncLoop({
      nodeName: node,
      log: this.log.child({ component: 'sync_loop' }),
      ...(metrics ? { metrics } : {}),
      podManager: this.podManager,
      podWorkers: this.podWorkers,
      statusManager: this.statusManager,
      prober: this.proberManager,
      syncer: this.syncer,
      allocation: this.allocationManager,
      // kubelet HandlePodUpdates (NodeDeclaredFeatures): an admitted pod's update that needs a feature the node
      // does not declare is synced all the same, with a warning.
      podUpdated: (pod, old) => {
        if (!this.allocationManager.hasAllocatedResources(pod.metadata.uid ?? '')) return;
        const warning = podUpdateFeaturesWarning(
          old,
          pod,
          deps.node().declaredFeatures ?? declaredFeatures(),
        );
        if (!warning) return;
        this.log.warn('pod requires node features that are not available', {
          pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
          detail: warning.message,
        });
        record(pod, warning.type, warning.reason, warning.message);
      },
      podCache: this.podCache,
      cleanup: this.cleanup,
      volumes: this.volumeManager,
      ...(this.podCertificates ? { podCertificates: this.podCertificates } : {}),
      ...(onPodUnmounted ? { onPodUnmounted } : {}),
      desiredPods: () => this.desiredPods(),
      runtimePods: () => this.pleg.listedPods(),
      listRuntimePods: () => this.runtimeManager.getPods(),
      runtimeErrors: () => (deps.runtimeState ? deps.runtimeState.runtimeErrors() : this.health()),
      statusSignal: () => this.kickStatusSync(),
      containerGCPeriodMs: this.settings.containerGCPeriodMs,
      track: (p) => void this.track(p),
    });
  }

  // ---- lifecycle ----

  /** Starts the Kubelet (once). Progress is reported through `ready`. */
  start(): void {
    if (this.phase !== 'new') return;
    this.phase = 'starting';
    // It waits for the requests' informer itself; its projections wait for their pods to be known.
    this.podCertificates?.start();
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
    this.loop.stop();
    this.startAbort.abort();
    const early = new KindError('Unavailable', 'kubelet stopped before ready', { node: this.nodeName });
    this.rejectRuntimeListed(early);
    this.rejectReady(early);
    this.loops.stop();
    void this.evictionManager?.stop();
    void this.shutdownManager?.stop();
    void this.imageGCManager?.stop();
    this.podCertificates?.stop();
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

  /**
   * The kubelet's GetActivePods: the pod manager's pods that are not inactive (terminated by their worker,
   * or terminal and not terminating), admitted or not yet.
   */
  activePods(): Pod[] {
    return activePodsOf({
      pods: () => this.podManager.getPods(),
      podByName: (namespace, name) => this.podManager.getPodByFullName(namespace, name),
      workerState: (uid) => this.podWorkers.state(asPodUID(uid)),
      statusPhase: (uid) => this.statusManager.getPodPhase(asPodUID(uid)),
    });
  }

  /**
   * The device and DRA managers' resource health updates (kubelet syncLoopIteration on ContainerManager().Updates()):
   * the pods are synced again, their statuses generated anew.
   */
  resourceHealthChanged(podUIDs: readonly string[]): void {
    if (this.phase === 'stopped') return;
    for (const uid of podUIDs) this.syncer.devicesChanged(uid);
    void this.loop.handle({ source: 'resourceHealth', podUIDs: podUIDs.map(asPodUID) });
  }

  /** The node's pressure conditions as the eviction manager last found them (none without one). */
  pressureConditions(): readonly PressureCondition[] {
    return this.evictionManager?.nodeConditions() ?? [];
  }

  /**
   * The eviction manager (kubelet: eviction.NewManager, killPodNow): evictions go to the pod's worker as a
   * kill with the eviction's grace period and status, as the kubelet's preemption and eviction kills do;
   * dead containers and unused images are the node-level reclaim (the container GC with nothing kept, the
   * image GC's DeleteUnusedImages).
   */
  private newEvictionManager(e: NonNullable<KubeletDeps['eviction']>): EvictionManager {
    return new EvictionManager({
      config: e.config,
      ...(e.filesystemLayout ? { filesystemLayout: e.filesystemLayout } : {}),
      clock: this.d.clock,
      summary: e.summary,
      activePods: () => this.syncer.activePods(),
      ...(this.metricSeries && { metrics: evictionMetrics(this.metricSeries) }),
      killPod: (ev) =>
        this.killPodNow(ev.pod, {
          gracePeriodSeconds: ev.gracePeriodSeconds,
          reason: ev.status.reason,
          message: ev.status.message,
          ...(ev.condition ? { condition: ev.condition } : {}),
        }),
      podCleanedUp: (pod) => !this.podWorkers.couldHaveRunningContainers(asPodUID(pod.metadata.uid ?? '')),
      nodeReclaim: async (kind) => {
        if (kind === 'DeleteUnusedImages') {
          if (!this.imageGCManager) return false;
          await this.imageGCManager.deleteUnusedImages();
          return true;
        }
        const r = await this.runtimeManager.garbageCollect({
          shouldPodContentBeRemoved: (uid) => this.podWorkers.shouldPodContentBeRemoved(asPodUID(uid)),
          maxPerPodContainer: 0,
          maxContainers: 0,
        });
        for (const err of r.errors) this.log.warn('eviction manager: container GC', { err });
        return true;
      },
      // AnnotatedEventf: the offending containers and the starved resource ride on the Event.
      recordPod: (pod, type, reason, message, annotations) =>
        this.d.recorder.event(podRef(pod), type, reason, message, annotations),
      recordNode: (type, reason, message) => e.recordNode?.(type, reason, message),
      ...(e.onPressureChange ? { onPressureChange: e.onPressureChange } : {}),
      logger: this.log.child({ component: 'eviction_manager' }),
    });
  }

  /**
   * The image garbage collector (kubelet: images.NewImageGCManager, StartGarbageCollection): images used by
   * any container of the runtime stay; the runtime's image volumes are read from container statuses.
   */
  private newImageGCManager(g: NonNullable<KubeletDeps['imageGC']>): ImageGCManager {
    const runtime = this.d.runtime;
    const series = this.metricSeries;
    return new ImageGCManager({
      policy: g.policy,
      runtime: {
        listImages: () => runtime.listImages(),
        listContainers: () => runtime.listContainers(),
        removeImage: (id) => runtime.removeImage(id),
        ...(runtime.capabilities.imageVolumes
          ? { containerStatus: (id: string) => runtime.containerStatus(id) }
          : {}),
      },
      imageFsStats: g.imageFsStats,
      clock: this.d.clock,
      recordNode: g.recordNode,
      logger: this.log.child({ component: 'image_gc_manager' }),
      ...(g.periodMs !== undefined ? { periodMs: g.periodMs } : {}),
      ...(series && {
        garbageCollected: (reason: 'age' | 'space') => series.imageGarbageCollected(reason).inc(),
      }),
    });
  }

  /**
   * The node shutdown manager (kubelet: nodeshutdown.NewManager with killPodNow): each pod goes to its worker
   * as a kill with its group's grace period and the shutdown's status; a group is done once its pods'
   * workers have terminated them and their volumes are unmounted.
   */
  private newShutdownManager(sd: NonNullable<KubeletDeps['shutdown']>): NodeShutdownManager {
    const record = podEventRecorder(this.d.recorder);
    const series = this.metricSeries;
    return new NodeShutdownManager({
      ...(series && {
        metrics: {
          started: (t: number) => {
            series.gracefulShutdownStartTime(t);
            series.gracefulShutdownEndTime(0);
          },
          ended: (t: number) => series.gracefulShutdownEndTime(t),
        },
      }),
      config: sd.config,
      ...(sd.stateFile ? { stateFile: sd.stateFile } : {}),
      clock: this.d.clock,
      activePods: () => this.syncer.activePods(),
      killPod: (p, status) =>
        this.killPodNow(p.pod, {
          gracePeriodSeconds: p.gracePeriodSeconds,
          reason: status.reason,
          message: status.message,
          condition: status.condition,
          keepSucceeded: status.keepSucceeded,
        }),
      podStopped: (pod) => !this.podWorkers.couldHaveRunningContainers(asPodUID(pod.metadata.uid ?? '')),
      podCleanedUp: (pod) => {
        const uid = pod.metadata.uid ?? '';
        return (
          !this.podWorkers.couldHaveRunningContainers(asPodUID(uid)) &&
          !this.podWorkers.isWorking(asPodUID(uid)) &&
          this.volumeManager.mountedVolumes(uid) === undefined
        );
      },
      recordPod: (pod, type, reason, message) => record(pod, type, reason, message),
      recordNode: (type, reason, message) => sd.recordNode?.(type, reason, message),
      syncNodeStatus: () => sd.syncNodeStatus?.(),
      logger: this.log.child({ component: 'shutdown_manager' }),
    });
  }

  /**
   * kubelet killPodNow: the pod's worker kills it with the given grace period and sets the status once it is
   * stopped (the eviction and node shutdown managers' kills). Nothing once the kubelet has stopped running.
   */
  private killPodNow(pod: Pod, kill: KillPodOptions): void {
    if (this.phase !== 'running') return;
    this.podWorkers.updatePod({ type: 'kill', pod, kill });
  }

  /**
   * The node's host is shutting down (kubelet: logind's PrepareForShutdown(true)): the shutdown manager
   * refuses new pods, reports the node not ready and terminates the active pods by priority. Asked before the
   * pods were handed to their workers, it starts once they are. Nothing happens when the feature is off.
   */
  shutdown(): void {
    if (!this.shutdownManager?.enabled() || this.phase === 'stopped') return;
    if (this.phase !== 'running') {
      this.shutdownRequested = true;
      this.shutdownRequestedAt ??= this.d.clock.now();
      return;
    }
    this.shutdownManager.shutdown();
  }

  /** The shutdown was called off (kubelet: PrepareForShutdown(false)). */
  cancelShutdown(): void {
    this.shutdownRequested = false;
    this.shutdownRequestedAt = undefined;
    this.shutdownManager?.cancel();
  }

  /**
   * Whether a shutdown asked for has been carried out; true when the node has no shutdown manager, and true
   * too when its pods never reached their workers within the shutdown's whole grace period and 30 s more (a
   * runtime that never answers: there is nothing this kubelet can stop, and its VirtualNode must still go).
   */
  shutdownCompleted(): boolean {
    if (!this.shutdownManager?.enabled()) return true;
    if (this.shutdownRequested) {
      const waited = this.d.clock.now() - (this.shutdownRequestedAt ?? this.d.clock.now());
      const bound = periodRequestedSeconds(this.shutdownManager.config) * 1000 + 30_000;
      if (waited < bound) return false;
      this.log.warn('node shutdown given up: the kubelet never started its pods', { waitedMs: waited });
      return true;
    }
    return this.shutdownManager.completed();
  }

  /** The shutdown manager's readiness errors ("node is shutting down" while it does); the node status reads them. */
  shutdownErrors(): readonly string[] {
    return this.shutdownManager?.readinessErrors() ?? HEALTHY;
  }

  /** Problems that make the node not ready (consumed by the node status loop); empty when healthy. */
  health(): readonly string[] {
    const pleg = this.pleg.healthy(this.d.clock.now());
    return pleg.healthy ? HEALTHY : [`PLEG is not healthy: ${pleg.message}`];
  }

  // ---- pod source (the operator hands the events of the node's pod informer here) ----

  /** A pod appeared in the informer. Pods of other nodes are ignored. */
  handlePodAdd(pod: Pod): void {
    this.config(this.podConfig.added(pod));
  }

  /** A pod changed (`old` is the previous object, when known); see PodConfig for what that means here. */
  handlePodUpdate(pod: Pod, old?: Pod): void {
    this.config(this.podConfig.updated(pod, old));
  }

  /** A pod left the informer (deleted from the API, or no longer bound here). */
  handlePodDelete(pod: Pod): void {
    this.config(this.podConfig.deleted(pod));
  }

  private config(changes: PodChange[]): void {
    if (this.phase === 'stopped') return;
    for (const change of changes) void this.loop.handle({ source: 'config', change });
  }

  // ---- internals: startup ----

  private async run(): Promise<void> {
    if (!(await this.listRuntime())) return;
    this.resolveRuntimeListed();
    // From now on the PLEG relists whatever the pod list does, so its health stays the runtime's; the events
    // of the relists before the pod workers start wait in its channel until they do.
    this.loops.every('pleg', this.settings.plegRelistPeriodMs, async () => {
      await this.relist(true);
    });
    await this.d.podInformer.waitForSync();
    if (this.phase !== 'starting') return;
    const pods = this.desiredPods();
    this.podManager.setPods(pods);
    // Before the pod workers start: they see the runtime only through the PLEG's cache, so a runtime that got
    // adopted containers is listed again first.
    const adoption = await this.adoption?.adoptPods(pods);
    if (this.phase !== 'starting') return;
    if (adoption && adoption.adopted.length > 0 && !(await this.listRuntime())) return;

    const probe = (u: Parameters<Parameters<ResultsManager['subscribe']>[0]>[0]): void =>
      void this.loop.handle({ source: 'probe', update: u });
    this.unsubscribe.push(
      this.results.liveness.subscribe(probe),
      this.results.readiness.subscribe(probe),
      this.results.startup.subscribe(probe),
      this.statusManager.onUpdate(() => void this.loop.handle({ source: 'status' })),
    );

    // Pods go to their workers oldest first, so admission sees them in the order they were created. Read
    // again: pods bound while the runtime was adopted are in the informer (and the pod manager) by now.
    // By time, each parsed once; not by a locale's collation of the strings, which loads ICU's collator.
    const ordered = this.desiredPods()
      .map((pod) => ({ pod, at: Date.parse(pod.metadata.creationTimestamp ?? '') || -Infinity }))
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
      .map((e) => e.pod);
    this.phase = 'running';
    this.loop.run();
    for (const p of ordered) this.loop.dispatch(p, 'create');
    this.sendPlegEvents();

    this.loops.every('housekeeping', this.settings.housekeepingPeriodMs, () =>
      this.loop.handle({ source: 'housekeeping' }),
    );
    this.loops.every('status', this.settings.statusSyncPeriodMs, async () => {
      await this.statusManager.syncBatch(true);
    });
    this.loops.every('resize', ResizeRetryMs, () =>
      this.allocationManager.retryPendingResizes('periodic_retry'),
    );
    this.kickStatusSync();
    this.evictionManager?.start();
    if (this.shutdownRequested) {
      this.shutdownRequested = false;
      this.shutdownRequestedAt = undefined;
      this.shutdownManager?.shutdown();
    }
    this.imageGCManager?.start();
    const rm = this.d.resourceManagers;
    if (rm && rm.cpuManager.policyName === 'static') {
      this.loops.every('cpumanager', rm.config.reconcilePeriodMs, () => this.reconcileCPUs(rm));
    }
    this.log.info('kubelet started', { pods: pods.length });
    this.resolveReady();
  }

  // ---- internals: loops ----

  /**
   * The pods the resource managers count as active (the kubelet's GetActivePods): every known pod of the
   * node that is not finished or rejected, admitted yet or not, so a restart keeps their CPUs.
   */
  private resourceActivePods(): Pod[] {
    return this.podManager.getPods().filter((p) => {
      const uid = p.metadata.uid ?? '';
      if (this.syncer.isRejected(uid) || isTerminalPhase(p.status?.phase)) return false;
      return !isTerminalPhase(this.statusManager.getPodPhase(asPodUID(uid)));
    });
  }

  /** The CPU manager's reconcileState: stale assignments freed, changed cpusets written to running containers. */
  private async reconcileCPUs(rm: ResourceManagers): Promise<void> {
    const active = this.resourceActivePods();
    rm.retain(active);
    const running: ReconcileContainer[] = [];
    for (const pod of active) {
      const uid = pod.metadata.uid;
      if (!uid) continue;
      const names = new Set([...(pod.spec.initContainers ?? []), ...pod.spec.containers].map((c) => c.name));
      const seen = new Set<string>();
      // Newest first: only a container name's newest record counts.
      for (const c of this.podCache.get(uid).status.containers) {
        if (seen.has(c.name) || !names.has(c.name)) continue;
        seen.add(c.name);
        if (c.state === 'running') running.push({ podUID: uid, name: c.name, id: c.id });
      }
    }
    for (const u of rm.cpuManager.reconcile(running)) {
      try {
        await this.d.runtime.updateContainerResources(u.id, { cpusetCpus: u.cpuset });
        rm.cpuManager.updated(u.id, u.cpuset);
      } catch (err) {
        this.log.warn('failed to update container cpuset', {
          containerID: u.id,
          cpuset: u.cpuset,
          err: errorMessage(err),
        });
      }
    }
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight.add(p);
    void p.finally(() => this.inflight.delete(p)).catch(() => undefined);
    return p;
  }

  /**
   * The start-up's relist: the pod workers read the runtime only through the PLEG's cache. A runtime that
   * does not answer yet (containerd restarting, socket not there) is waited for, never given up on. Resolves
   * false when the Kubelet was stopped meanwhile.
   */
  private async listRuntime(): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      const listed = await this.relist(false);
      if (this.phase !== 'starting') return false;
      if (listed) return true;
      const delayMs = Math.min(500 * 2 ** attempt, 10_000);
      this.log.warn('runtime not reachable at start; retrying', { delayMs });
      try {
        await this.d.clock.sleep(delayMs, this.startAbort.signal);
      } catch {
        return false; // stopped
      }
    }
  }

  /** One PLEG relist; its events go to the sync loop when `send`. Resolves whether the runtime was listed. */
  private async relist(send: boolean): Promise<boolean> {
    const started = this.d.clock.now();
    const r = await this.pleg.relist();
    this.metricSeries?.relist.observe((this.d.clock.now() - started) / 1000);
    if (!r.listed) this.log.warn('PLEG relist failed', { err: errorMessage(r.error) });
    if (send && this.phase === 'running') this.sendPlegEvents();
    return r.listed;
  }

  private sendPlegEvents(): void {
    for (const event of this.pleg.events.drain()) void this.loop.handle({ source: 'pleg', event });
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

  // ---- internals: pods ----

  /**
   * This node's pods in the API: the same array while the informer's is the same (housekeeping asks every
   * 2 s, and the pod manager then sees by its identity that nothing changed).
   */
  private desiredPods(): readonly Pod[] {
    const all = this.d.podInformer.byIndex(this.d.podIndexName ?? PodsByNodeIndex, this.nodeName);
    if (all !== this.desiredFrom) {
      this.desiredFrom = all;
      this.desired = all.filter((p) => this.podConfig.isMine(p));
    }
    return this.desired;
  }
}

/** The eviction manager's metrics as this node's series. */
function evictionMetrics(series: NodeMetricSeries): EvictionMetrics {
  return {
    evicted: (signal) => series.evictions(signal).inc(),
    statsAge: (signal, seconds) => series.evictionStatsAge(signal).observe(seconds),
  };
}
