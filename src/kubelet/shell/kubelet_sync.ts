/**
 * The kubelet's pod sync functions (kubelet.go SyncPod, SyncTerminatingPod, SyncTerminatedPod, plus the
 * admission of HandlePodAdditions): what a pod worker runs for one pod. Each reads the runtime view fresh,
 * tells the status manager the pod's status, and asks the runtime manager to act; nothing here writes to the
 * API server or keeps runtime state across calls, so a restarted operator resumes where the last one stopped.
 */
import {
  AllContainersRestarting,
  isTerminalPhase,
  type ContainerStatus,
  type Pod,
  type PodStatus,
} from '../../api/core.js';
import {
  admitBeforeResourceAllocation,
  admitPod,
  type AdmissionNode,
  type AdmitResult,
} from '../lifecycle/admission.js';
import type { RuntimeFeatures, RuntimeHandler } from '../../runtime/types.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage, KindError } from '../../util/errors.js';
import { asPodUID, type RuntimePodStatus } from '../container/types.js';
import type { EventRecorderFunc } from '../container/ref.js';
import type { KubeGenericRuntimeManager, SyncPodProbes } from '../kuberuntime/shell/manager.js';
import type { PodSyncResult } from '../kuberuntime/shell/syncresult.js';
import { effectivePod } from '../kuberuntime/shell/sandboxes.js';
import type { KubeletPodManager } from './podmanager.js';
import type {
  KillPodOptions,
  PodSyncer,
  RunningPodRef,
  SyncContext,
  UpdateType,
  WorkerState,
} from '../podworkers.js';
import type { ProberManager } from '../prober/manager.js';
import { getPodQOS } from '../qos.js';
import type { ReasonCacheReader } from '../reasoncache.js';
import { generateAPIPodStatus, type PodEvictionHandler } from '../status/apistatus.js';
import type { StatusManager } from '../status/manager.js';
import type { VolumeManager } from '../volumemanager/volumemanager.js';
import { handlerSupportsRecursiveReadOnly } from '../volumemanager/makemounts.js';
import type { AllocationManager } from '../allocation/manager.js';
import { recordResizeResult, resizeProgress } from '../allocation/progress.js';
import { isPodResizeInProgress } from '../kuberuntime/resize.js';
import type { CPUAffinity } from '../kuberuntime/sandboxconfig.js';
import type { PodResizeConditions } from '../status/resizeconditions.js';
import { SettledSyncs, type SyncInputs } from '../settledsyncs.js';
import type { DynamicResources } from '../cm/dra/shell/manager.js';

export interface KubeletPodSyncerDeps {
  /**
   * The container manager's resource admission (topology and CPU managers, src/kubelet/cm/resourcemanagers.ts),
   * asked once the other checks admit the pod; it allocates what the pod gets.
   */
  resourceAdmit?: (pod: Pod) => AdmitResult;
  /** The CPU manager's cpusets and quotas, which resize progress compares against (absent: policy none). */
  cpuAffinity?: CPUAffinity;
  nodeIPs: readonly string[];
  podNetwork: 'host' | 'cni';
  clock: Pick<Clock, 'now'>;
  logger: {
    info(msg: string, meta?: Record<string, unknown>): void;
    warn(msg: string, meta?: Record<string, unknown>): void;
  };
  record: EventRecorderFunc;
  /** The node as admission sees it, read at each admission (allocatable, labels, taints). */
  node: () => AdmissionNode;
  /** The node read from the API server now (KubeletDeps.freshNode). */
  freshNode?: () => Promise<AdmissionNode | undefined>;
  podManager: Pick<KubeletPodManager, 'getPodByUID'>;
  statusManager: Pick<StatusManager, 'peekPodStatus' | 'getPodPhase' | 'setPodStatus' | 'terminatePod'>;
  prober: Pick<
    ProberManager,
    'addPod' | 'updatePod' | 'stopLivenessAndStartup' | 'removePod' | 'updatePodStatus'
  >;
  runtime: Pick<KubeGenericRuntimeManager, 'syncPod' | 'killPod' | 'removePod'> &
    Partial<Pick<KubeGenericRuntimeManager, 'isPodLevelResourcesResizeInProgress' | 'podCgroupConfig'>>;
  /**
   * Inspects one pod now into the PLEG's cache and returns what was cached (kubelet: pleg.UpdateCache): called
   * only after a sync function changed the runtime. Rejects when the inspection failed.
   */
  relist: (pod: RunningPodRef) => Promise<RuntimePodStatus>;
  /**
   * After a SyncPod that changed the runtime without an error (kubelet: the sync's postSync hook,
   * PLEGOnDemandRelist): relists the pod now, so its PLEG events reach the sync loop at once, not at the next
   * periodic relist, and returns what the relist cached, as `relist` does. Absent: `relist`.
   */
  relistPod?: (pod: RunningPodRef) => Promise<RuntimePodStatus>;
  probes: SyncPodProbes;
  reasonCache: ReasonCacheReader;
  /** The pod worker state of a UID (admission counts only pods still syncing). */
  workerState: (uid: string) => WorkerState | undefined;
  /** Called once per pod when all its containers run for the first time, with ms since it was first seen. */
  onPodStarted?: (latencyMs: number) => void;
  /** The node's volume manager: every volume a container uses is set up before the runtime is touched. */
  volumes: Pick<VolumeManager, 'mountPod' | 'unmountPod'>;
  /**
   * The kubelet's PodSyncHandlers (the active deadline): each status generation asks them, and the first that
   * evicts makes the pod Failed with its reason, which ends the pod through the pod worker's termination.
   */
  evictionHandlers?: readonly PodEvictionHandler[];
  /** What each admitted pod was allocated; pods are synced as allocated and resizes are queued there. */
  allocation: AllocationManager;
  /** PodResizePending / PodResizeInProgress, shared with the allocation manager. */
  resizeConditions: PodResizeConditions;
  /**
   * What the runtime's last Status reported (kubelet runtimeState): its handlers (recursive read-only mounts,
   * in container statuses) and its features (admission's `status.features`, as the Node reports them).
   * Default: none, as an old runtime.
   */
  runtimeHandlers?: () => readonly RuntimeHandler[];
  runtimeFeatures?: () => RuntimeFeatures | undefined;
  /**
   * The node's DRA manager: a terminating pod's claims are unprepared, and the claims' device health goes into
   * the container statuses' allocatedResourcesStatus. Absent: none prepared.
   */
  dra?: Pick<DynamicResources, 'unprepareResources'> &
    Partial<Pick<DynamicResources, 'allocatedResourcesStatus'>>;
  /**
   * The device manager (src/kubelet/cm/devicemanager/): it allocates a pod's devices at admission, after the
   * eviction and sysctl handlers and before the resource fit (the kubelet's order), and fills the container
   * statuses' allocatedResourcesStatus. Absent: no device plugins.
   */
  devices?: {
    admit(pod: Pod): Promise<AdmitResult>;
    /** The node with its device resources as the device manager holds them now (sanitizeNodeAllocatable). */
    admissionNode(node: AdmissionNode): AdmissionNode;
    allocatedResourcesStatus(pod: Pod, statuses: ContainerStatus[]): ContainerStatus[];
  };
}

type Rejection = { reason: string; message: string };

/** While a resize is in progress the pod is synced this often, to see the runtime catch up. */
export const ResizeCheckMs = 1_000;

function podUID(pod: Pod): string {
  const uid = pod.metadata?.uid;
  if (!uid) throw new KindError('InvalidArgument', 'pod without a UID', { pod: pod.metadata?.name });
  return uid;
}

function refOf(pod: Pod): RunningPodRef {
  return {
    uid: asPodUID(podUID(pod)),
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
  };
}

/** Failures of a start that happen before the runtime is asked to create anything. */
const FAILED_BEFORE_CREATE = new Set<string>([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'ErrImageNeverPull',
  'InvalidImageName',
  'RegistryUnavailable',
  'SignatureValidationFailed',
  'ImageInspectError',
  'CreateContainerConfigError',
]);

/**
 * Whether a runtime sync changed what the runtime holds: any action but the sandbox config (which the kubelet
 * always reports), and not a start that failed before a container was created (back-off, image, config).
 */
export function changedRuntime(result: PodSyncResult): boolean {
  return result.results.some(
    (r) => r.action !== 'ConfigPodSandbox' && !(r.error !== undefined && FAILED_BEFORE_CREATE.has(r.error)),
  );
}

function allContainersRunning(status: PodStatus, pod: Pod): boolean {
  const statuses = status.containerStatuses ?? [];
  return (
    statuses.length === pod.spec.containers.length && statuses.every((c) => c.state?.running !== undefined)
  );
}

/**
 * Invariants: a pod is admitted or rejected once, at its first sync, against the pods admitted before it
 * that are still active; a rejected pod never reaches the runtime, and neither does a pod the API already
 * reports finished while the runtime holds nothing of it (its status is left as it is); the runtime is read
 * only through the PLEG: the view a sync starts from comes from its cache, and a sync that changed the runtime
 * inspects the pod once more (relist) before it reports the status.
 */
export class KubeletPodSyncer implements PodSyncer {
  private readonly admitted = new Map<string, Pod>();
  private readonly rejected = new Map<string, Rejection>();
  /** Pods that never reach the runtime: rejected, or already finished with nothing left on the runtime. */
  private readonly untouched = new Set<string>();
  private readonly firstSeen = new Map<string, number>();
  private readonly startRecorded = new Set<string>();
  /** Pods whose last sync found nothing to do, with what it read (settledsyncs.ts). */
  private readonly settled = new SettledSyncs();
  /** Pods whose last sync removed every container to restart in place: synced again at once. */
  private readonly resetDone = new Set<string>();

  /** What resize progress compares containers' applied resources against beyond the pod (the CPU manager's). */
  private readonly resizeNode: { cpuAffinity?: CPUAffinity } | undefined;

  constructor(private readonly d: KubeletPodSyncerDeps) {
    this.resizeNode = d.cpuAffinity ? { cpuAffinity: d.cpuAffinity } : undefined;
  }

  /** Forgets per-pod bookkeeping of UIDs no longer known to the pod workers. */
  retain(uids: ReadonlySet<string>): void {
    this.d.allocation.retain(uids);
    this.d.resizeConditions.retain(uids);
    // Maps and sets may lose entries while they are walked: no copies of their keys per housekeeping.
    for (const m of [this.admitted, this.rejected, this.firstSeen]) {
      for (const uid of m.keys()) if (!uids.has(uid)) m.delete(uid);
    }
    for (const set of [this.startRecorded, this.untouched, this.resetDone]) {
      for (const uid of set) if (!uids.has(uid)) set.delete(uid);
    }
    this.settled.retain(uids);
  }

  /** Pods whose next sync, with the same inputs, skips status generation and the runtime (for tests). */
  get settledPods(): number {
    return this.settled.size;
  }

  /** Whether the pod was rejected by admission. */
  isRejected(uid: string): boolean {
    return this.rejected.has(uid);
  }

  // ---- PodSyncer ----

  async syncPod(
    ctx: SyncContext,
    _type: UpdateType,
    apiPod: Pod,
    viewed: RuntimePodStatus,
  ): Promise<{ isTerminal: boolean }> {
    const uid = podUID(apiPod);
    if (!this.firstSeen.has(uid)) this.firstSeen.set(uid, this.d.clock.now());
    if (this.untouched.has(uid)) return { isTerminal: true };
    if (await this.admit(apiPod)) {
      this.untouched.add(uid);
      return { isTerminal: true };
    }
    // The pod as allocated: a resize not (yet) accepted changes nothing on the runtime.
    const pod = this.d.allocation.updatePodFromAllocation(apiPod).pod;
    const inputs = this.inputsOf(apiPod, pod, viewed);
    // Nothing this pod's last sync read has changed, and it found nothing to do: neither would this sync.
    const unchanged = !this.resizing(uid) && this.settled.unchanged(uid, inputs);
    this.settled.forget(uid);
    let before = viewed;
    let status: PodStatus | undefined;
    if (!unchanged) {
      // A resize the runtime may still be applying shows only on a fresh inspection (no PLEG event says so).
      if (isPodResizeInProgress(pod, before, this.resizeNode)) before = await this.d.relist(refOf(pod));
      resizeProgress(
        pod,
        before,
        this.d.resizeConditions,
        this.eventRecorder,
        this.podLevelResizing(pod),
        this.resizeNode,
      );

      if (
        isTerminalPhase(pod.status?.phase) &&
        before.sandboxes.length === 0 &&
        before.containers.length === 0
      ) {
        // Finished before we saw it (a restart after GC, or a rejection): its API status is final as it is.
        this.untouched.add(uid);
        return { isTerminal: true };
      }
      status = this.generate(pod, before, false);
      this.d.statusManager.setPodStatus(pod, status);
      if (isTerminalPhase(status.phase)) return { isTerminal: true };
    }
    if (ctx.aborted) return { isTerminal: false };

    this.d.prober.addPod(pod);
    this.d.prober.updatePod(pod);
    // kubelet SyncPod: WaitForAttachAndMount. Nothing starts without its volumes; the pod worker retries.
    // For a settled pod this is the resync's remaining work: configMap and secret contents are refreshed.
    const mounted = await this.d.volumes.mountPod(pod);
    if (!mounted.ok && mounted.reject) {
      // kubelet SyncPod: a VolumeAttachLimitExceededError rejects the pod (rejectPod) and ends its sync.
      this.reject(pod, mounted.reject, mounted.message);
      this.untouched.add(uid);
      return { isTerminal: true };
    }
    if (!mounted.ok) {
      const message = `Unable to attach or mount volumes: ${mounted.message}`;
      if (mounted.report) this.recordEvent(pod, 'Warning', 'FailedMount', message);
      throw new KindError('Unavailable', message, { pod: `${pod.metadata.namespace}/${pod.metadata.name}` });
    }
    if (ctx.aborted) return { isTerminal: false };
    if (status === undefined) {
      this.settled.settled(uid, inputs);
      return { isTerminal: false };
    }
    // The status just generated says the pod restarts all its containers in place: this sync removes them all.
    const restartingAll = (status.conditions ?? []).some(
      (c) => c.type === AllContainersRestarting && c.status === 'True',
    );
    const result = await this.d.runtime.syncPod(ctx, pod, before, this.d.probes, undefined, restartingAll);
    // Removed without an error: the next sync, at once, starts the pod again (ContainerRemoved events bring none).
    if (
      restartingAll &&
      !result.error &&
      result.results.some((r) => r.action === 'RemoveContainer' && !r.error)
    ) {
      this.resetDone.add(uid);
    }

    // When the runtime changed, inspect the pod now (kubelet: pleg.UpdateCache), so the new containers show in
    // the status without waiting for the next relist; a sync that did nothing reuses the view it started from.
    // A sync without an error relists the pod (PLEGOnDemandRelist): its events go to the sync loop now too.
    const acted = changedRuntime(result);
    const succeeded = !result.error && result.results.every((r) => r.error === undefined);
    if (!acted && succeeded && !this.resizing(uid)) {
      // Nothing changed (the sandbox config is reported at every sync): the status generated from the same view
      // at the start of this sync stands, and generating it again would give the same one.
      this.observeStart(uid, pod, status);
      // Kept with the inputs this sync started from: one that changed meanwhile brings a sync that misses.
      if (before === viewed) this.settled.settled(uid, inputs);
      return { isTerminal: false };
    }
    const latest = acted
      ? await (succeeded ? (this.d.relistPod ?? this.d.relist) : this.d.relist)(refOf(pod))
      : before;
    recordResizeResult(pod, result, this.d.resizeConditions, this.eventRecorder);
    resizeProgress(
      pod,
      latest,
      this.d.resizeConditions,
      this.eventRecorder,
      this.podLevelResizing(pod),
      this.resizeNode,
    );
    const after = this.generate(pod, latest, false);
    this.d.statusManager.setPodStatus(pod, after);
    this.observeStart(uid, pod, after);
    if (result.error && !ctx.aborted) throw result.error;
    return { isTerminal: isTerminalPhase(after.phase) };
  }

  async syncTerminatingPod(
    ctx: SyncContext,
    apiPod: Pod,
    running: RuntimePodStatus,
    gracePeriodSeconds: number,
    kill?: KillPodOptions,
  ): Promise<void> {
    const uid = podUID(apiPod);
    if (this.untouched.has(uid)) return;
    // Its statuses until the end report what it was allocated, not a resize it never got.
    const pod = this.d.allocation.updatePodFromAllocation(apiPod).pod;
    this.d.statusManager.setPodStatus(pod, this.generate(pod, running, false));
    this.d.prober.stopLivenessAndStartup(pod);

    const result = await this.d.runtime.killPod(ctx, pod, running, gracePeriodSeconds);
    if (result.error) throw result.error;
    this.d.prober.removePod(pod);

    // Guard against a kill that left something running: termination must not be declared early. A kill that
    // stopped something is inspected afresh; one that found nothing to stop keeps the view it was given.
    const stopped = changedRuntime(result) ? await this.d.relist(refOf(pod)) : running;
    const stillRunning = stopped.containers.filter((c) => c.state === 'running').map((c) => c.name);
    if (stillRunning.length > 0) {
      throw new KindError(
        'Internal',
        `detected running containers after a successful KillPod: ${stillRunning.join(', ')}`,
        {
          pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
        },
      );
    }
    // Its claims are unprepared once nothing runs and before the terminal status is written, so the claim is
    // not handed to another pod while a driver still holds it (kubelet SyncTerminatingPod).
    if (this.d.dra) await this.d.dra.unprepareResources(pod);
    // The final status is computed here, while the exited containers (exit codes) are still there.
    const final = this.generate(pod, stopped, true);
    if (kill?.reason) {
      if (!(kill.keepSucceeded && final.phase === 'Succeeded')) final.phase = 'Failed';
      final.reason = kill.reason;
      if (kill.message) final.message = kill.message;
      if (kill.condition) {
        final.conditions = [
          ...(final.conditions ?? []).filter((c) => c.type !== kill.condition?.type),
          kill.condition,
        ];
      }
    }
    this.d.statusManager.setPodStatus(pod, final);
    // Its room is free now: a deferred resize may fit.
    this.d.allocation.removePod(uid);
    if (this.d.allocation.hasPendingResizes()) this.d.allocation.retryPendingResizes('pod_terminated');
  }

  /** What a sync of `apiPod` reads besides the clock (settledsyncs.ts). */
  private inputsOf(apiPod: Pod, pod: Pod, view: RuntimePodStatus): SyncInputs {
    return {
      apiPod,
      pod,
      latest: this.d.podManager.getPodByUID(asPodUID(podUID(apiPod))),
      view,
      liveness: this.d.probes.liveness.revision,
      startup: this.d.probes.startup.revision,
    };
  }

  /** The pod cgroup does not yet hold the pod's allocated pod-level resources (InPlacePodLevelResources...). */
  private podLevelResizing(pod: Pod): boolean {
    return this.d.runtime.isPodLevelResourcesResizeInProgress?.(pod) ?? false;
  }

  private resizing(uid: string): boolean {
    return (
      this.d.resizeConditions.pending(uid) !== undefined ||
      this.d.resizeConditions.inProgress(uid) !== undefined
    );
  }

  /**
   * 0 once after a sync that removed every container to restart the pod in place (kubelet: SyncPod's
   * UpdatePod after a RestartAllContainers reset): the next sync starts it again at once. Undefined otherwise.
   */
  restartAllSyncDue(pod: Pod): number | undefined {
    return this.resetDone.delete(pod.metadata.uid ?? '') ? 0 : undefined;
  }

  /** How soon a pod must be synced again for its resize (the runtime catching up); undefined: no hurry. */
  resizeSyncDue(pod: Pod): number | undefined {
    return this.d.resizeConditions.inProgress(pod.metadata.uid ?? '') ? ResizeCheckMs : undefined;
  }

  async syncTerminatedPod(_ctx: SyncContext, pod: Pod, stopped: RuntimePodStatus): Promise<void> {
    const uid = podUID(pod);
    this.d.prober.removePod(pod);
    if (!this.untouched.has(uid)) {
      this.d.statusManager.setPodStatus(pod, this.generate(pod, stopped, true));
      // A finished pod that stays in the API keeps its last containers (logs, exit codes) until it is deleted;
      // the container GC removes them then. A deleted or vanished pod is cleaned up now.
      const deleted = !!pod.metadata.deletionTimestamp || !this.d.podManager.getPodByUID(asPodUID(uid));
      if (deleted) {
        const removed = await this.d.runtime.removePod(stopped);
        if (removed.error) throw removed.error;
      }
      // kubelet SyncTerminatedPod: WaitForUnmount. The pod directory itself stays until the pod is gone.
      await this.d.volumes.unmountPod(uid);
    }
    // Marks the status finished: the status manager may now publish the terminal phase and, for a deleted
    // pod, delete the API object (grace 0, UID precondition).
    this.d.statusManager.terminatePod(pod);
  }

  /**
   * kubelet SyncTerminatingRuntimePod: a pod only the runtime knows (its API object went while nobody
   * watched) is stopped with the grace periods its containers' labels carry, then removed.
   */
  async syncTerminatingRuntimePod(ctx: SyncContext, runningPod: RunningPodRef): Promise<void> {
    const status = await this.d.relist(runningPod);
    this.d.logger.info('killing orphaned runtime pod', {
      podUID: runningPod.uid,
      pod: `${runningPod.namespace}/${runningPod.name}`,
    });
    const killed = await this.d.runtime.killPod(ctx, undefined, status);
    if (killed.error) throw killed.error;
    const removed = await this.d.runtime.removePod(await this.d.relist(runningPod));
    if (removed.error) throw removed.error;
  }

  // ---- helpers ----

  /**
   * Admission on first sight (kubelet: HandlePodAdditions -> canAdmitPod). Returns true when the pod is
   * rejected (now or before): then its status is Failed with the kubelet's reason and it never runs.
   */
  private async admit(pod: Pod): Promise<boolean> {
    const uid = pod.metadata.uid as string;
    if (this.rejected.has(uid)) return true;
    if (this.admitted.has(uid)) {
      this.refreshAdmitted(pod);
      return false;
    }
    // A pod the API already reports finished is not running here; it only needs terminating, and it takes
    // no room from the others.
    if (isTerminalPhase(pod.status?.phase)) return false;
    const asAllocated = this.d.allocation.podForAdmission(pod);
    let result: AdmitResult = { admit: true };
    if (this.d.devices) {
      // kubelet: the container manager's allocation handler runs after eviction and sysctls, before the fit.
      result = admitBeforeResourceAllocation(asAllocated, this.withFeatures(this.d.node()));
      if (result.admit) result = await this.d.devices.admit(asAllocated);
      if (this.rejected.has(uid)) return true;
      if (this.admitted.has(uid)) return false;
    }
    if (result.admit) result = this.admitAgainst(asAllocated, this.withFeatures(this.d.node()));
    if (!result.admit && result.reason === 'NodeAffinity' && this.d.freshNode) {
      // kubelet predicateAdmitHandler: node affinity alone refused it; read the Node itself and look again
      // (decided afresh after the read, so the pods admitted meanwhile count).
      const fresh = await this.d.freshNode();
      if (fresh) result = this.admitAgainst(asAllocated, this.withFeatures(fresh));
      if (this.rejected.has(uid)) return true;
      if (this.admitted.has(uid)) return false;
    }
    if (result.admit && this.d.resourceAdmit) result = this.d.resourceAdmit(asAllocated);
    if (result.admit) {
      this.admitted.set(uid, pod);
      this.d.allocation.setAllocated(asAllocated);
      // Admitted as it was allocated before, asking for something else now: a resize (kubelet HandlePodAdditions).
      if (this.d.allocation.queueIfResizeRequested(pod)) this.d.allocation.retryPendingResizes('pods_added');
      return false;
    }
    this.reject(pod, result.reason, result.message);
    return true;
  }

  /** kubelet rejectPod: the pod's status is Failed with the reason, and a Warning Event says why. */
  private reject(pod: Pod, reason: string, message: string): void {
    this.rejected.set(podUID(pod), { reason, message });
    this.d.logger.info('pod rejected', {
      pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
      reason,
      detail: message,
    });
    this.recordEvent(pod, 'Warning', reason, message);
    this.d.statusManager.setPodStatus(pod, {
      phase: 'Failed',
      reason,
      message: `Pod was rejected: ${message}`,
      qosClass: getPodQOS(pod),
      // The generation that was rejected (kubelet: rejectPod with PodObservedGenerationTracking).
      ...(typeof pod.metadata.generation === 'number' ? { observedGeneration: pod.metadata.generation } : {}),
    });
  }

  /**
   * The node with the runtime features its status reports (kubelet: admission reads the Node's
   * `status.features`, which the NodeFeatures setter fills from the same runtime answer).
   */
  private withFeatures(given: AdmissionNode): AdmissionNode {
    const node = this.d.devices ? this.d.devices.admissionNode(given) : given;
    const f = this.d.runtimeFeatures?.();
    return f ? { ...node, features: { supplementalGroupsPolicy: f.supplementalGroupsPolicy } } : node;
  }

  /**
   * Admission of the pod as allocated (`podForAdmission`) against `node` next to the pods admitted so far
   * (synchronous: nothing is admitted meanwhile).
   */
  private admitAgainst(asAllocated: Pod, node: AdmissionNode): AdmitResult {
    // The allocated pods' tally holds at least what the active pods do: a pod that fits it fits them, without
    // a scan of the node's pods per pod admitted. Anything else is decided against the active pods themselves.
    const uid = asAllocated.metadata.uid as string;
    const tallied = this.d.allocation.admissionPeers(uid);
    const result = tallied ? admitPod(asAllocated, node, tallied) : undefined;
    return result?.admit ? result : admitPod(asAllocated, node, this.d.allocation.allocatedPods(uid));
  }

  /** An admitted pod is kept in its newest version (the pod manager's too), not the first as a second copy. */
  refreshAdmitted(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    if (this.admitted.has(uid)) this.admitted.set(uid, pod);
  }

  /**
   * Admitted pods that still hold resources, as the API has them now (the allocation manager's view): still
   * syncing, and reported terminal neither by the status manager nor by the API. Admission reads it at every
   * pod, so each pod is looked up once.
   */
  activePods(): Pod[] {
    const out: Pod[] = [];
    for (const [uid, admitted] of this.admitted) {
      if (this.d.workerState(uid) !== 'syncing') continue;
      const podUID = asPodUID(uid);
      if (isTerminalPhase(this.d.statusManager.getPodPhase(podUID))) continue;
      const latest = this.d.podManager.getPodByUID(podUID);
      if (!isTerminalPhase(latest?.status?.phase)) out.push(latest ?? admitted);
    }
    return out;
  }

  private readonly eventRecorder = (pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string) =>
    this.recordEvent(pod, type, reason, message);

  private recordEvent(pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string): void {
    try {
      this.d.record(pod, type, reason, message);
    } catch (err) {
      this.d.logger.warn('event recorder failed', { err: errorMessage(err) });
    }
  }

  /**
   * generateAPIPodStatus with the node's view: the pod as the node runs it (host network when podNetwork is
   * `host`), node IPs as host IPs (and pod IPs for host-network pods), and the last pod IPs kept once the
   * sandbox is gone, as the API expects a finished pod to keep its IP.
   */
  private generate(pod: Pod, runtimeStatus: RuntimePodStatus, podIsTerminal: boolean): PodStatus {
    const uid = pod.metadata.uid as string;
    const cached = this.d.statusManager.peekPodStatus(asPodUID(uid));
    // The API status is the pod manager's newest (kubelet: the pod manager's pod): conditions others own,
    // readiness gates among them, must not come from the copy this pod worker was handed minutes ago.
    const latest = this.d.podManager.getPodByUID(asPodUID(uid));
    const asRun = effectivePod(latest?.status ? { ...pod, status: latest.status } : pod, this.d.podNetwork);
    let rs = runtimeStatus;
    if (asRun.spec.hostNetwork) {
      // A host-network sandbox's address is the runtime's idea of the host; the API wants the node's IPs.
      rs = { ...rs, ips: [] };
    } else if (rs.ips.length === 0 && !rs.sandboxes.some((s) => s.state === 'ready')) {
      const previous = (cached ?? asRun.status)?.podIPs?.map((p) => p.ip) ?? [];
      if (previous.length > 0) rs = { ...rs, ips: previous };
    }
    const status = generateAPIPodStatus(asRun, rs, {
      podIsTerminal,
      cachedStatus: cached ?? null,
      reasonCache: this.d.reasonCache,
      prober: this.d.prober,
      nodeIPs: this.d.nodeIPs,
      staticPod: false,
      ...(this.d.evictionHandlers ? { evictionHandlers: this.d.evictionHandlers } : {}),
      inPlaceResize: {
        conditions: this.d.resizeConditions.get(uid),
        podCgroup: this.d.runtime.podCgroupConfig?.(asRun),
      },
      supportsRecursiveReadOnly: handlerSupportsRecursiveReadOnly(this.d.runtimeHandlers?.() ?? []),
    });
    // kubelet generateAPIPodStatus: UpdateAllocatedResourcesStatus (ResourceHealthStatus).
    if (this.d.devices && status.containerStatuses)
      status.containerStatuses = this.d.devices.allocatedResourcesStatus(asRun, status.containerStatuses);
    // Then the DRA manager's, as the container manager calls the two.
    if (this.d.dra?.allocatedResourcesStatus && status.containerStatuses)
      status.containerStatuses = this.d.dra.allocatedResourcesStatus(asRun, status.containerStatuses);
    return status;
  }

  /** A pod's device health (device plugin or DRA) changed: its next sync generates its status again. */
  devicesChanged(uid: string): void {
    this.settled.forget(uid);
  }

  private observeStart(uid: string, pod: Pod, status: PodStatus): void {
    if (this.startRecorded.has(uid) || !allContainersRunning(status, pod)) return;
    this.startRecorded.add(uid);
    const first = this.firstSeen.get(uid);
    if (first !== undefined) this.d.onPodStarted?.(this.d.clock.now() - first);
  }
}
