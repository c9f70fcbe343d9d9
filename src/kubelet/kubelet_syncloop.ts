/**
 * The kubelet's sync loop (kubelet.go syncLoopIteration, and HandlePodCleanups for housekeeping): every reason
 * to act on a pod arrives as one typed SyncLoopInput and is handled by one exhaustive switch.
 *
 *   config        ADD / UPDATE / DELETE / RECONCILE of a pod bound here (config/podconfig.ts)
 *   pleg          a container or sandbox changed on the runtime: sync the pod (not for ContainerRemoved);
 *                 ContainerDied also removes the older dead instances of that container
 *   probe         liveness failure: sync; readiness / startup: the status manager first, then sync
 *   housekeeping  level-triggered cleanup: workers for pods without one, terminations for pods that vanished,
 *                 orphaned statuses, probe workers and pod directories, runtime pods nobody knows, container GC
 *   resync        a pod worker's resync or retry came due (kubelet: the work queue behind syncCh)
 *   status        the status manager has changes to write (not gated: it talks to the API, not the runtime)
 *
 * While the runtime is not healthy (RuntimeState's errors: down, not ready, PLEG stale) nothing reaches the pod
 * workers: the pod manager still follows the API, and the inputs wait (kubelet: syncLoop skips iterations while
 * runtimeErrors() is non-empty). Pod changes wait coalesced per UID; PLEG and probe inputs are dropped, because
 * the first housekeeping after the runtime returns, and the relists after it, regenerate them.
 *
 * Pure wiring: no I/O of its own; the pod workers, the runtime cleanup and the volume manager act.
 */
import type { Pod } from '../api/core.js';
import type { Metrics } from '../metrics.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import type { PodChange } from './config/podconfig.js';
import type { PodCache } from './container/cache.js';
import { asPodUID, type PodUID } from './container/types.js';
import type { AllocationManager } from './allocation/manager.js';
import type { RuntimeCleanup } from './shell/kubelet_cleanup.js';
import type { KubeletPodSyncer } from './shell/kubelet_sync.js';
import type { PodLifecycleEvent } from './pleg/events.js';
import type { RuntimePod } from './pleg/generic.js';
import type { KubeletPodManager } from './shell/podmanager.js';
import type { PodCertificateManager } from './podcertificate/shell/manager.js';
import type { PodWorkers } from './podworkers.js';
import type { ProberManager } from './prober/manager.js';
import type { ProbeResultUpdate } from './prober/results.js';
import type { StatusManager } from './status/manager.js';
import { needToReconcilePodReadiness } from './status/readiness.js';
import type { VolumeManager } from './volumemanager/volumemanager.js';

export type SyncLoopInput =
  | { source: 'config'; change: PodChange }
  | { source: 'pleg'; event: PodLifecycleEvent }
  | { source: 'probe'; update: ProbeResultUpdate }
  | { source: 'housekeeping' }
  | { source: 'resync'; podUID: PodUID }
  /** The device manager's resource health updates (kubelet: ContainerManager().Updates(), HandlePodSyncs). */
  | { source: 'resourceHealth'; podUIDs: readonly PodUID[] }
  | { source: 'status' };

export interface SyncLoopDeps {
  nodeName: string;
  log: Logger;
  metrics?: Metrics;
  podManager: KubeletPodManager;
  podWorkers: PodWorkers;
  statusManager: Pick<
    StatusManager,
    | 'setContainerReadiness'
    | 'setContainerStartup'
    | 'removeOrphanedStatuses'
    | 'syncBatch'
    | 'podManagerUpdated'
  >;
  prober: Pick<ProberManager, 'updatePod' | 'cleanupPods'>;
  syncer: Pick<KubeletPodSyncer, 'retain' | 'refreshAdmitted'>;
  /** Spec updates that ask for other resources become resize requests there (kubelet HandlePodUpdates). */
  allocation?: Pick<AllocationManager, 'handlePodUpdate'>;
  /**
   * Told of each pod update with the version the pod manager held before it (kubelet HandlePodUpdates: the
   * NodeDeclaredFeatures check of the update), before the update reaches the pod's worker.
   */
  podUpdated?: (pod: Pod, old: Pod) => void;
  podCache: Pick<PodCache, 'get'>;
  cleanup: Pick<
    RuntimeCleanup,
    'cleanUpContainersInPod' | 'gcDue' | 'requestGC' | 'removeOrphanedPodLeftovers'
  >;
  volumes: Pick<VolumeManager, 'retain' | 'cleanupOrphanedPodDirs'>;
  /** Told of every pod added and removed (kubelet HandlePodAdditions / Removes: TrackPod, ForgetPod). */
  podCertificates?: Pick<PodCertificateManager, 'trackPod' | 'forgetPod'>;
  onPodUnmounted?: (uid: string) => void;
  /** This node's pods in the API (the informer's index). */
  desiredPods: () => readonly Pod[];
  /** The runtime as the last successful relist listed it. */
  runtimePods: () => readonly RuntimePod[];
  /**
   * A fresh listing (kubelet: runtimeCache.ForceUpdateIfOlder in HandlePodCleanups). Asked only when the last
   * relist shows a candidate orphan, since that listing may predate a kill a pod worker just finished.
   */
  listRuntimePods?: () => Promise<readonly RuntimePod[]>;
  /** Why the runtime cannot take pod work now; empty when it can. */
  runtimeErrors: () => readonly string[];
  /** Wakes the status manager's writer. */
  statusSignal: () => void;
  containerGCPeriodMs: number;
  /** Registers background work (the kubelet waits for it on stop). */
  track: (p: Promise<unknown>) => void;
}

/**
 * Invariants: inputs reach the pod workers only while the loop runs and the runtime is healthy; a pod change
 * always reaches the pod manager at once; the deferred pod changes hold at most one entry per UID.
 */
export class SyncLoop {
  private running = false;
  private readonly deferred = new Map<PodUID, PodChange>();
  /** For deferred updates: the pod as the pod manager held it before the first of them. */
  private readonly deferredOld = new Map<PodUID, Pod>();
  private readonly deferredResyncs = new Set<PodUID>();
  private deferredHousekeeping = false;
  private lastGateError = '';
  /**
   * What housekeeping derived from the desired pods and the pod workers (its desired, kept and syncing UIDs),
   * for as long as both are as they were: the informer's same array and the workers' same generation.
   */
  private derived:
    | {
        pods: readonly Pod[];
        generation: number;
        desired: ReadonlySet<PodUID>;
        kept: ReadonlySet<PodUID>;
        syncing: ReadonlySet<PodUID>;
      }
    | undefined;
  /** countListing's last listing and the pods of it that run. */
  private counted: CountedListing | undefined;

  constructor(private readonly d: SyncLoopDeps) {}

  /** From now on inputs reach the pod workers (the start-up handed every pod over first). */
  run(): void {
    this.running = true;
  }

  stop(): void {
    this.running = false;
    this.deferred.clear();
    this.deferredOld.clear();
    this.deferredResyncs.clear();
  }

  /**
   * Handles one input (kubelet syncLoopIteration). Never rejects; resolves when the input's own work is done
   * (housekeeping), not when the pod workers it woke are.
   */
  async handle(input: SyncLoopInput): Promise<void> {
    let old: Pod | undefined;
    if (input.source === 'config') {
      if (input.change.op === 'UPDATE' && this.d.podUpdated) {
        old = this.d.podManager.getPodByUID(asPodUID(input.change.pod.metadata.uid ?? ''));
      }
      this.applyToPodManager(input.change);
    }
    if (input.source === 'status') return this.d.statusSignal();
    if (!this.running) return;
    if (!this.gateOpen()) return this.defer(input, old);
    try {
      await this.drainDeferred();
      await this.dispatchInput(input, old);
    } catch (err) {
      this.d.log.error('sync loop input failed', { source: input.source, err: errorMessage(err) });
    }
  }

  /** Hands a pod to its worker as the start-up or housekeeping found it (create, or its deletion). */
  dispatch(pod: Pod, type: 'create' | 'update'): void {
    const uid = asPodUID(pod.metadata.uid ?? '');
    if (this.d.podWorkers.state(uid) === 'terminated') {
      // A finished pod that is now deleted: the status manager's full sync deletes the API object and the
      // container GC its leftovers; nudge both instead of waiting for their periods.
      if (pod.metadata.deletionTimestamp) {
        this.d.track(this.d.statusManager.syncBatch(true));
        this.d.cleanup.requestGC();
      }
      return;
    }
    this.d.podWorkers.updatePod({ type, pod });
  }

  private async dispatchInput(input: SyncLoopInput, old?: Pod): Promise<void> {
    switch (input.source) {
      case 'config':
        return this.handleConfig(input.change, old);
      case 'pleg':
        return this.handlePleg(input.event);
      case 'probe':
        return this.handleProbe(input.update);
      case 'housekeeping':
        return this.housekeeping();
      case 'resync':
        return this.d.podWorkers.resync(input.podUID);
      case 'resourceHealth':
        for (const uid of input.podUIDs) this.syncByUID(uid);
        return;
      case 'status':
        return this.d.statusSignal();
      default: {
        const never: never = input;
        throw new Error(`unknown sync loop input ${JSON.stringify(never)}`);
      }
    }
  }

  /** Keeps what must not be lost while the runtime is unhealthy; PLEG and probe inputs are regenerated. */
  private defer(input: SyncLoopInput, old?: Pod): void {
    if (input.source === 'config') {
      const uid = asPodUID(input.change.pod.metadata.uid ?? '');
      this.deferred.set(uid, input.change);
      // The version before the first deferred update: the coalesced update is checked against it.
      if (old && !this.deferredOld.has(uid)) this.deferredOld.set(uid, old);
    } else if (input.source === 'resync') this.deferredResyncs.add(input.podUID);
    else if (input.source === 'housekeeping') this.deferredHousekeeping = true;
  }

  /** Whether the runtime may take pod work now (logs when that changes). */
  gateOpen(): boolean {
    const errors = this.d.runtimeErrors();
    if (errors.length === 0 && this.lastGateError === '') return true;
    const message = errors.join(', ');
    if (message !== this.lastGateError) {
      if (message) this.d.log.warn('runtime not healthy; pod syncs wait', { errors: message });
      else this.d.log.info('runtime healthy again; pod syncs resume');
      this.lastGateError = message;
    }
    return errors.length === 0;
  }

  private async drainDeferred(): Promise<void> {
    if (this.deferred.size === 0 && this.deferredResyncs.size === 0 && !this.deferredHousekeeping) return;
    const changes = [...this.deferred.values()];
    const olds = new Map(this.deferredOld);
    const resyncs = [...this.deferredResyncs];
    this.deferred.clear();
    this.deferredOld.clear();
    this.deferredResyncs.clear();
    for (const c of changes) this.handleConfig(c, olds.get(asPodUID(c.pod.metadata.uid ?? '')));
    for (const uid of resyncs) this.d.podWorkers.resync(uid);
    if (this.deferredHousekeeping) {
      this.deferredHousekeeping = false;
      await this.housekeeping();
    }
  }

  private applyToPodManager(change: PodChange): void {
    if (change.op === 'DELETE') {
      this.d.podCertificates?.forgetPod(change.pod);
      this.d.podManager.remove(change.pod);
    } else {
      this.d.podManager.upsert(change.pod);
      this.d.statusManager.podManagerUpdated(change.pod.metadata.uid ?? '');
      if (change.op === 'ADD') this.d.podCertificates?.trackPod(change.pod);
    }
    if (change.op === 'UPDATE' || change.op === 'RECONCILE') this.d.prober.updatePod(change.pod);
  }

  /**
   * kubelet HandlePodAdditions / Updates / Removes / Reconcile. A status-only change (RECONCILE) syncs only
   * when a readiness gate's condition, written by someone else, no longer agrees with Ready.
   */
  private handleConfig(change: PodChange, old?: Pod): void {
    const pod = change.pod;
    switch (change.op) {
      case 'ADD':
        return this.dispatch(pod, 'create');
      case 'UPDATE':
        this.d.allocation?.handlePodUpdate(pod);
        if (old) this.d.podUpdated?.(pod, old);
        return this.dispatch(pod, 'update');
      case 'RECONCILE':
        if (needToReconcilePodReadiness(pod)) this.syncByUID(asPodUID(pod.metadata.uid ?? ''));
        else {
          // Whoever keeps the pod keeps this version: the older one is not held beside the informer's.
          this.d.podWorkers.refreshIdle(pod);
          this.d.syncer.refreshAdmitted(pod);
        }
        return;
      case 'DELETE': {
        const state = this.d.podWorkers.state(asPodUID(pod.metadata.uid ?? ''));
        if (state === 'syncing' || state === 'terminating')
          this.d.podWorkers.updatePod({ type: 'kill', pod });
        return;
      }
    }
  }

  /** isSyncPodWorthy: every event but ContainerRemoved; ContainerDied also runs the per-pod deletor. */
  private handlePleg(e: PodLifecycleEvent): void {
    if (e.type === 'ContainerRemoved') return;
    this.syncByUID(asPodUID(e.podUID));
    if (e.type === 'ContainerDied' && typeof e.data === 'string') {
      const cached = this.d.podCache.get(e.podUID);
      if (!cached.error) this.d.cleanup.cleanUpContainersInPod(e.podUID, e.data, cached.status);
    }
  }

  private handleProbe(u: ProbeResultUpdate): void {
    switch (u.probeType) {
      case 'liveness':
        if (u.result === 'failure') this.syncByUID(u.podUID);
        return;
      case 'readiness':
        this.d.statusManager.setContainerReadiness(u.podUID, u.containerID, u.result === 'success');
        return this.syncByUID(u.podUID);
      case 'startup':
        this.d.statusManager.setContainerStartup(u.podUID, u.containerID, u.result === 'success');
        return this.syncByUID(u.podUID);
    }
  }

  private syncByUID(uid: PodUID): void {
    const pod = this.d.podManager.getPodByUID(uid);
    if (pod) this.d.podWorkers.updatePod({ type: 'sync', pod });
  }

  /** kubelet HandlePodCleanups. */
  private async housekeeping(): Promise<void> {
    const pods = this.d.desiredPods();
    this.d.podManager.setPods(pods);
    const workers = this.d.podWorkers;
    // The same desired pods (the informer's array) and workers in the same states as last time: every pod has
    // its worker and every deleted one is terminating already, so the loop would hand nothing over.
    let derived = this.derived;
    let desired: ReadonlySet<PodUID>;
    if (derived?.pods === pods && derived.generation === workers.generation) desired = derived.desired;
    else {
      derived = undefined;
      const uids = new Set<PodUID>();
      for (const p of pods) {
        const uid = asPodUID(p.metadata.uid ?? '');
        uids.add(uid);
        const state = workers.state(uid);
        if (state === undefined) this.dispatch(p, 'create');
        else if (state === 'syncing' && p.metadata.deletionTimestamp) this.dispatch(p, 'update');
      }
      desired = uids;
    }
    workers.syncKnownPods(desired);
    if (derived?.generation !== workers.generation) {
      const kept = new Set<PodUID>(desired);
      const syncing = new Set<PodUID>();
      for (const uid of workers.knownPods()) kept.add(asPodUID(uid));
      for (const uid of desired) if (workers.state(uid) === 'syncing') syncing.add(uid);
      derived = { pods, generation: workers.generation, desired, kept, syncing };
      this.derived = derived;
    }
    const { kept, syncing } = derived!;
    this.d.syncer.retain(kept);
    this.d.statusManager.removeOrphanedStatuses(desired);
    this.d.prober.cleanupPods(syncing);
    await this.killOrphanedRuntimePods(desired);
    await this.d.cleanup.removeOrphanedPodLeftovers(this.d.runtimePods());

    // kubelet cleanupOrphanedPodDirs: directories of pods neither in the API, nor known to a worker, nor running.
    this.d.volumes.retain(kept);
    const removed = await this.d.volumes.cleanupOrphanedPodDirs((dir) => {
      const uid = asPodUID(dir);
      return kept.has(uid) || !workers.shouldPodRuntimeBeRemoved(uid);
    });
    for (const uid of removed) this.d.onPodUnmounted?.(uid);
    if (this.d.cleanup.gcDue(this.d.containerGCPeriodMs)) this.d.cleanup.requestGC();
  }

  /**
   * The runtime pods of a listing that still run something, counted once per listing (the relist hands out
   * the same array while nothing changed) rather than at every housekeeping; the running pods / containers
   * gauges are set when the listing is new.
   */
  private countListing(listed: readonly RuntimePod[]): CountedListing {
    if (this.counted?.listed === listed) return this.counted;
    // Counted in loops: no closure per pod.
    let runningPods = 0;
    let runningContainers = 0;
    const running: RuntimePod[] = [];
    for (const rp of listed) {
      const sandboxRuns = countRunning(rp.sandboxes) > 0;
      const containersRunning = countRunning(rp.containers);
      if (sandboxRuns) runningPods++;
      runningContainers += containersRunning;
      if (sandboxRuns || containersRunning > 0) running.push(rp);
    }
    this.d.metrics?.runningPods.set({ node: this.d.nodeName }, runningPods);
    this.d.metrics?.runningContainers.set({ node: this.d.nodeName }, runningContainers);
    this.counted = { listed, running, clearFor: undefined, clearAt: -1 };
    return this.counted;
  }

  /**
   * Runtime pods that still run something and that neither the API nor a pod worker knows (their API object
   * went while nobody watched) go to a pod worker to be stopped, confirmed on a fresh listing first. Sets the
   * running pods / containers gauges from the last relist's listing.
   */
  private async killOrphanedRuntimePods(desired: ReadonlySet<PodUID>): Promise<void> {
    const orphaned = (rp: RuntimePod): boolean =>
      !desired.has(rp.uid) && this.d.podWorkers.state(rp.uid) === undefined;
    const counted = this.countListing(this.d.runtimePods());
    const generation = this.d.podWorkers.generation;
    // Found none in this listing for these desired pods and workers in these states: none now either.
    if (counted.clearFor === desired && counted.clearAt === generation) return;
    const running = counted.running;
    let anyOrphan = false;
    for (const rp of running) if ((anyOrphan = orphaned(rp))) break;
    if (!anyOrphan) {
      counted.clearFor = desired;
      counted.clearAt = generation;
      return;
    }

    let orphans = running.filter(orphaned);
    if (this.d.listRuntimePods) {
      try {
        orphans = (await this.d.listRuntimePods()).filter((rp) => runs(rp) && orphaned(rp));
      } catch (err) {
        this.d.log.warn('listing the runtime for orphaned pods failed', { err: errorMessage(err) });
        return;
      }
    }
    for (const rp of orphans) {
      this.d.podWorkers.updatePod({
        type: 'kill',
        runningPod: { uid: rp.uid, name: rp.name, namespace: rp.namespace },
      });
    }
  }
}

/** A relist's listing as housekeeping counted it (SyncLoop.countListing). */
interface CountedListing {
  listed: readonly RuntimePod[];
  /** The runtime pods that run a sandbox or a container. */
  running: readonly RuntimePod[];
  /** The desired UIDs and the pod workers' generation with which none of them was an orphan. */
  clearFor: ReadonlySet<PodUID> | undefined;
  clearAt: number;
}

/** How many of the sandboxes or containers are running. */
function countRunning(objs: readonly { state: string }[]): number {
  let n = 0;
  for (const o of objs) if (o.state === 'running') n++;
  return n;
}

/** Whether the runtime pod still runs a sandbox or a container. */
function runs(rp: RuntimePod): boolean {
  return countRunning(rp.sandboxes) > 0 || countRunning(rp.containers) > 0;
}
