/**
 * KubeGenericRuntimeManager (kubelet: kuberuntime_manager.go): turns computePodActions' record into runtime
 * calls, in the kubelet's order and with its events, results and errors; reads pods back from the runtime by
 * label; kills, removes and garbage-collects.
 *
 * Contract:
 * - Every piece of state that matters lives on the runtime (labels and annotations); the manager keeps none
 *   besides a cached runtime name. A new manager over the same runtime sees and does exactly what the old
 *   one would (restart safety). The back-off and reason caches are injected and shared with the kubelet.
 * - Callers serialize per pod (the pod workers do): at most one of syncPod / killPod / removePod runs for a
 *   pod at a time. Different pods may be handled concurrently.
 * - syncPod, killPod and removePod never throw for runtime failures: they resolve a PodSyncResult whose
 *   `error` is set when anything failed. They reject only on programming errors.
 * - Only objects labelled with this node (ManagedByLabel) are ever listed, changed or removed.
 */
import type { Container, Pod } from '../../../api/core.js';
import { isRestartableInitContainer } from '../../../api/core.js';
import type { ContainerConfig, PodSandboxConfig, Runtime } from '../../../runtime/types.js';
import { errorMessage, KindError } from '../../../util/errors.js';
import { doBackOff, formatPod } from '../../backoff.js';
import type { PodUID, RuntimePodStatus } from '../../container/types.js';
import type { RuntimePod } from '../../pleg/generic.js';
import type { ProbeResultsReader } from '../../prober/types.js';
import type { ReasonCache } from '../../reasoncache.js';
import { computePodActions } from '../actions.js';
import { containerSpec } from '../../container/ref.js';
import { recordContainerEvent, recordPodEvent, type ManagerContext } from './context.js';
import { adoptedContainerConfig, startContainer } from './containers.js';
import { killContainer, removeContainer } from './killcontainer.js';
import { garbageCollect, type GarbageCollectOptions, type GarbageCollectResult } from './gc.js';
import { killPodWithSyncResult } from './killpod.js';
import {
  managerContext,
  validateDeps,
  type KubeGenericRuntimeManagerDeps,
  type RuntimeStartMetrics,
} from '../managerdeps.js';
import type { ContainerMetricType } from '../../status/terminations.js';
import { listRuntimePods, readPodStatus, sandboxIPs } from './podstatus.js';
import { removeOrphanedPodLeftovers } from './removeleftovers.js';
import { removePod } from './removepod.js';
import { computePodResizeActions } from '../resize.js';
import { doPodResizeAction, type PodCgroupResize } from './resizepod.js';
import {
  computePodLevelResourcesResizeAction,
  isPodLevelResourcesResizeInProgress,
} from '../podlevelresize.js';
import { podCgroupParent } from '../sandboxconfig.js';
import { isPodLevelResourcesSet } from '../../../api/resources.js';
import { resourceConfigForPod, type PodResourceConfig } from '../../cm/resourceconfig.js';
import { hostPodCgroupAccess } from '../../cm/shell/podcgroup.js';
import { createPodSandbox, effectivePod, existingSandboxConfig, podSandboxConfig } from './sandboxes.js';
import type { ImageVolumePulls } from '../imagevolumes.js';
import { pullImageVolumes } from './images.js';
import { failResult, SyncResultBuilder, type PodSyncResult } from './syncresult.js';

export type { EventRecorderFunc } from '../../container/ref.js';
export type { EnvSource, RuntimeManagerLogger, RuntimeManagerNodeSettings } from './context.js';
export type { GarbageCollectOptions, GarbageCollectResult } from './gc.js';
export type { KubeGenericRuntimeManagerDeps } from '../managerdeps.js';
export type { HookHttpGet } from './hooks.js';
export type { PodSyncResult, SyncAction, SyncErrorReason, SyncResult } from './syncresult.js';
export { PodSyncError } from './syncresult.js';

/** Ends a sync early; the pod workers abort it when the pod must terminate. */
export interface RuntimeSyncContext {
  readonly aborted: boolean;
  /** Made on first use (SyncCancel): read it only to wait on it. */
  readonly signal: AbortSignal;
}

/** The probe result caches computePodActions reads. */
export interface SyncPodProbes {
  liveness: ProbeResultsReader;
  startup: ProbeResultsReader;
}

function asKindError(err: unknown): KindError {
  return err instanceof KindError ? err : new KindError('Unknown', errorMessage(err), {}, { cause: err });
}

export class KubeGenericRuntimeManager {
  readonly runtime: Runtime;
  private readonly ctx: ManagerContext;
  /** What getPods answered last, and the runtime's listing revision then (RuntimeCapabilities). */
  private lastListing: { revision: number; pods: readonly RuntimePod[] } | undefined;
  /** The pods getPods listed last, by UID: a pod that did not change is answered as the same object. */
  private readonly listedPods = new Map<string, RuntimePod>();
  private readonly reasonCache: ReasonCache;
  private readonly startMetrics: RuntimeStartMetrics | undefined;
  private runtimeName: string | undefined;

  /** Throws KindError('InvalidArgument') for a missing or malformed dependency. */
  constructor(deps: KubeGenericRuntimeManagerDeps) {
    validateDeps(deps);
    this.runtime = deps.runtime;
    this.reasonCache = deps.reasonCache;
    this.startMetrics = deps.startMetrics;
    this.ctx = managerContext(deps, () => this.runtimeType());
    // Where the node manages pod cgroups (cri), pod-level resizes read and write them on this host.
    if (!deps.podCgroups && this.ctx.removePodCgroups) this.ctx.podCgroups = hostPodCgroupAccess;
  }

  /**
   * The runtime's name as container IDs carry it in the API (`containerd://<id>`): the one the runtime's
   * capabilities fix (`sim`), else the name its version() reports (containerd, cri-o). Cached once known.
   */
  async runtimeType(): Promise<string> {
    const fixed = this.runtime.capabilities.runtimeType;
    if (fixed !== undefined) return fixed;
    if (this.runtimeName !== undefined) return this.runtimeName;
    try {
      const name = (await this.runtime.version()).runtimeName;
      if (name) this.runtimeName = name;
      return name || 'containerd';
    } catch {
      return 'containerd';
    }
  }

  // ------------------------------------------------------------------------------------------ reading

  /** Every pod of this node on the runtime, exited objects included (the PLEG's listing). */
  async getPods(): Promise<readonly RuntimePod[]> {
    // Read before listing: a change while the listing runs moves it past what is kept, so the next call lists.
    const revision = this.runtime.capabilities.listingRevision?.();
    const last = this.lastListing;
    if (revision !== undefined && last?.revision === revision) return last.pods;
    const pods = await listRuntimePods(this.runtime, this.ctx.node.nodeName, this.listedPods);
    this.lastListing = revision === undefined ? undefined : { revision, pods };
    return pods;
  }

  /**
   * One pod as getPods lists it, from its own sandboxes and containers only (kubelet: GetPod); undefined when
   * the runtime has nothing of it. The PLEG's relist of one pod after a sync (PLEGOnDemandRelist).
   */
  async getPod(uid: PodUID): Promise<RuntimePod | undefined> {
    const pods = await listRuntimePods(this.runtime, this.ctx.node.nodeName, undefined, uid);
    return pods.find((p) => p.uid === uid);
  }

  /**
   * The runtime view of one pod, rebuilt from labels only: sandboxes and containers newest first, hash and
   * restart count from annotations, times in ms, pod IPs from the newest sandbox when it is ready.
   */
  async getPodStatus(uid: string, name: string, namespace: string): Promise<RuntimePodStatus> {
    return readPodStatus(
      this.runtime,
      this.ctx.node.nodeName,
      await this.runtimeType(),
      uid,
      name,
      namespace,
      this.ctx.files,
    );
  }

  // ------------------------------------------------------------------------------------------ syncing

  /**
   * Brings the pod toward its spec (kubelet: SyncPod): compute the actions; kill the pod or the unwanted
   * containers; prune old init containers; create the sandbox; start ephemeral, init and regular containers,
   * each after its crash-loop back-off check. `podStatus` must be fresh (the PLEG cache); `podIPs` overrides
   * the IPs it reports. The reason cache is updated from the StartContainer results before this resolves.
   * `restartAllContainers` (the pod's status says AllContainersRestarting=True): the sync kills and removes
   * every init and regular container instead (RemoveContainer results), keeping their logs, so that the next
   * sync starts the pod again from its first init container.
   */
  async syncPod(
    ctx: RuntimeSyncContext,
    pod: Pod,
    podStatus: RuntimePodStatus,
    probes: SyncPodProbes,
    podIPs?: readonly string[],
    restartAllContainers = false,
  ): Promise<PodSyncResult> {
    const b = new SyncResultBuilder();
    await this.doSyncPod(ctx, pod, podStatus, probes, podIPs, restartAllContainers, b);
    const result = b.build({ pod: formatPod(pod) });
    this.reasonCache.update(pod.metadata.uid ?? '', result.results);
    return result;
  }

  private async doSyncPod(
    sync: RuntimeSyncContext,
    original: Pod,
    podStatus: RuntimePodStatus,
    probes: SyncPodProbes,
    podIPsIn: readonly string[] | undefined,
    restartAllContainers: boolean,
    b: SyncResultBuilder,
  ): Promise<void> {
    const ctx = this.ctx;
    const pod = effectivePod(original, ctx.node.podNetwork);
    const podDesc = formatPod(pod);

    // Step 1: what to do.
    const uid = pod.metadata.uid ?? '';
    await this.readPodCgroupIfUnknown(pod, podStatus);
    let actions;
    let resize;
    let podCgroup: PodCgroupResize | undefined;
    try {
      const computed = computePodActions(pod, podStatus, probes, { restartAllContainers });
      resize = computePodResizeActions(pod, podStatus, computed, ctx.node);
      actions = resize.actions;
      // The pod cgroup follows pod-level resources in place; a sandbox made now is made with them.
      const podLevel =
        actions.killPod || actions.createSandbox || pod.metadata.deletionTimestamp
          ? undefined
          : computePodLevelResourcesResizeAction(
              pod,
              ctx.actuatedPodCgroups.get(uid),
              ctx.node.cpuCFSQuotaPeriodUs,
            );
      if (podLevel) {
        podCgroup = {
          uid,
          cgroup: podCgroupParent(ctx.node.cgroupRoot, uid),
          resize: podLevel,
          runningContainers: podStatus.containers.filter((c) => c.state === 'running').map((c) => c.id),
        };
      }
    } catch (err) {
      b.fail(asKindError(err));
      return;
    }
    if (actions.createSandbox && actions.sandboxID !== '') {
      recordPodEvent(
        ctx,
        original,
        'Normal',
        'SandboxChanged',
        'Pod sandbox changed, it will be killed and re-created.',
      );
    }

    // Steps 2 and 3: kill the pod, or the containers that must not run.
    const hookIP = this.hookPodIP(pod, podIPsIn ?? podStatus.ips);
    if (actions.killPod) {
      const killed = await killPodWithSyncResult(this.ctx, pod, podStatus, undefined);
      b.addAll(killed);
      if (killed.error) return;
      if (actions.createSandbox) await this.purgeInitContainers(pod, podStatus);
    } else {
      /** Runs one step for a container; a failure fails its result, is logged, and ends this sync. */
      const step = async (
        r: ReturnType<typeof b.add>,
        container: string,
        what: 'killContainer' | 'removeContainer',
        run: () => Promise<unknown>,
      ): Promise<boolean> => {
        try {
          await run();
          return true;
        } catch (err) {
          failResult(
            r,
            what === 'killContainer' ? 'KillContainerError' : 'RemoveContainerError',
            errorMessage(err),
          );
          ctx.logger.warn(`${what} for pod failed`, { pod: podDesc, container, err: errorMessage(err) });
          return false;
        }
      };
      for (const [id, info] of actions.containersToKill) {
        const r = b.add('KillContainer', info.name);
        const kill = () =>
          killContainer(ctx, pod, id, info.name, info.message, info.reason, { podIP: hookIP });
        if (!(await step(r, info.name, 'killContainer', kill))) return;
      }
      // Restarting all containers in place: kill (without a grace period) and remove every one.
      for (const info of actions.containersToReset) {
        const r = b.add('RemoveContainer', info.name);
        const kill = async () => {
          if (!info.kill) return;
          await killContainer(ctx, pod, info.containerID, info.name, 'killing', 'RestartAllContainers', {
            gracePeriodOverride: 0,
            podIP: hookIP,
          });
        };
        if (!(await step(r, info.name, 'killContainer', kill))) return;
        const remove = () => removeContainer(ctx, info.containerID, { keepLogs: true });
        if (!(await step(r, info.name, 'removeContainer', remove))) return;
      }
    }

    // Keep only the last run of each init container (the kubelet's optimisation ahead of GC).
    await this.pruneInitContainersBeforeStart(pod, podStatus);

    // Step 4: the sandbox.
    let podIPs = [...(podIPsIn ?? podStatus.ips)];
    let sandboxId: string = actions.sandboxID;
    let sandboxConfig: PodSandboxConfig | undefined;
    if (actions.createSandbox) {
      const r = b.add('CreatePodSandbox', podDesc);
      // The pod's ResourceClaims are prepared before its sandbox (kubelet SyncPod: PrepareDynamicResources);
      // a failure is retried with the sync's back-off where the kubelet waits for its next resync.
      const prepared = await prepareDynamicResources(ctx, pod);
      if (!prepared.ok) {
        failResult(r, 'CreatePodSandboxError', prepared.message);
        ctx.logger.warn('Failed to prepare dynamic resources', { pod: podDesc, err: prepared.message });
        recordPodEvent(
          ctx,
          original,
          'Warning',
          'FailedPrepareDynamicResources',
          `Failed to prepare dynamic resources: ${prepared.message}`,
        );
        return;
      }
      this.startMetrics?.podStarted();
      const created = await createPodSandbox(ctx, pod, podDesc, actions.attempt);
      if (!created.ok) {
        // Failing because the pod is being deleted is not an error.
        if (sync.aborted) return;
        this.startMetrics?.podStartFailed();
        failResult(r, 'CreatePodSandboxError', created.message);
        ctx.logger.warn('CreatePodSandbox for pod failed', { pod: podDesc, err: created.error.message });
        recordPodEvent(
          ctx,
          original,
          'Warning',
          'FailedCreatePodSandBox',
          `Failed to create pod sandbox: ${created.error.message}`,
        );
        return;
      }
      sandboxId = created.id;
      sandboxConfig = created.config;
      try {
        const st = await ctx.runtime.podSandboxStatus(sandboxId);
        // Only a pod-network sandbox has IPs of its own.
        if (!pod.spec.hostNetwork) podIPs = sandboxIPs(st);
      } catch (err) {
        recordPodEvent(
          ctx,
          original,
          'Warning',
          'FailedPodSandBoxStatus',
          `Unable to get pod sandbox status: ${errorMessage(err)}`,
        );
        b.fail(asKindError(err));
        return;
      }
    }
    const podIP = podIPs[0] ?? '';

    const cr = b.add('ConfigPodSandbox', sandboxId);
    if (!sandboxConfig) {
      try {
        sandboxConfig = await existingSandboxConfig(ctx, pod, actions.attempt);
      } catch (err) {
        failResult(
          cr,
          'ConfigPodSandboxError',
          `GeneratePodSandboxConfig for pod ${JSON.stringify(podDesc)} failed: ${errorMessage(err)}`,
        );
        return;
      }
    }
    const config = sandboxConfig;
    // The pod's image volumes, pulled once per sync before the first container that starts (kubelet lazyStart:
    // getImageVolumes); each container then fails on the pulls of the volumes it mounts.
    let imageVolumes: ImageVolumePulls | undefined;

    const start = async (
      typeName: string,
      metricType: ContainerMetricType,
      containerName: string,
      ephemeral: boolean,
    ): Promise<boolean> => {
      const container = containerSpec(pod, containerName)!;
      imageVolumes ??= await pullImageVolumes(ctx, pod, config);
      const r = b.add('StartContainer', containerName);
      const bo = doBackOff(pod, container, podStatus, ctx.crashLoopBackOff, ctx.clock.now());
      if (bo.inBackOff) {
        recordContainerEvent(ctx, original, containerName, '', 'Warning', bo.event.reason, bo.event.message);
        failResult(r, bo.error, bo.message);
        return false;
      }
      this.startMetrics?.containerStarted(metricType);
      const out = await startContainer(ctx, {
        pod,
        container,
        ephemeral,
        sandboxId,
        sandboxConfig: config,
        podStatus,
        podIP,
        podIPs,
        cancel: sync,
        imageVolumes,
      });
      if (!out.ok) {
        this.startMetrics?.containerStartFailed(metricType, out.error);
        failResult(r, out.error, out.message);
        const log = out.error === 'ImagePullBackOff' ? ctx.logger.info : ctx.logger.warn;
        log.call(ctx.logger, `${typeName} start failed in pod`, {
          pod: podDesc,
          container: containerName,
          reason: out.error,
          message: out.message,
        });
        return false;
      }
      return true;
    };

    // Step 5: ephemeral containers, before init containers so that debugging works while init is stuck.
    for (const idx of actions.ephemeralContainersToStart) {
      if (sync.aborted) return;
      await start(
        'ephemeral container',
        'ephemeral_container',
        pod.spec.ephemeralContainers![idx]!.name,
        true,
      );
    }
    // Step 6: init containers, in order; a failed regular one ends the sync, a failed sidecar is skipped.
    for (const idx of actions.initContainersToStart) {
      if (sync.aborted) return;
      const c = pod.spec.initContainers![idx]!;
      if (!(await start('init container', 'init_container', c.name, false)) && !isRestartableInitContainer(c))
        return;
    }
    // Step 7: in-place resize of running containers. Step 8: regular containers.
    if (sync.aborted) return;
    await doPodResizeAction(ctx, podDesc, resize.toUpdate, b, podCgroup);
    for (const idx of actions.containersToStart) {
      if (sync.aborted) return;
      await start('container', 'container', pod.spec.containers[idx]!.name, false);
    }
  }

  /**
   * After a restart of the operator nothing is recorded of the pod cgroups it wrote: the cgroup of a running pod
   * with pod-level resources is read back (cri nodes) before its first sync decides anything.
   */
  private async readPodCgroupIfUnknown(pod: Pod, podStatus: RuntimePodStatus): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    if (this.ctx.actuatedPodCgroups.has(uid) || !isPodLevelResourcesSet(pod.spec)) return;
    if (!podStatus.sandboxes.some((s) => s.state === 'ready')) return;
    try {
      const read = await this.ctx.podCgroups.read(podCgroupParent(this.ctx.node.cgroupRoot, uid));
      if (read) this.ctx.actuatedPodCgroups.set(uid, read.config);
    } catch (err) {
      this.ctx.logger.warn('reading the pod cgroup failed', { pod: formatPod(pod), err: errorMessage(err) });
    }
  }

  /**
   * Whether the pod cgroup of `pod` (as allocated, with pod-level resources) does not yet hold what its
   * allocation asks for (kubelet: isPodLevelResourcesResizeInProgress).
   */
  isPodLevelResourcesResizeInProgress(pod: Pod): boolean {
    const uid = pod.metadata.uid ?? '';
    return isPodLevelResourcesResizeInProgress(
      pod,
      this.ctx.actuatedPodCgroups.get(uid),
      this.ctx.node.cpuCFSQuotaPeriodUs,
    );
  }

  /**
   * What the pod's cgroup holds, for its status (kubelet: GetPodCgroupConfig): for a pod with pod-level
   * resources, what this node last wrote there; for another, whose cgroup this node leaves without limits of
   * its own, the limits the kubelet would have given it for its allocation. Undefined when not known.
   */
  podCgroupConfig(pod: Pod): Partial<PodResourceConfig> | undefined {
    const recorded = this.ctx.actuatedPodCgroups.get(pod.metadata.uid ?? '');
    if (recorded) return recorded;
    if (isPodLevelResourcesSet(pod.spec)) return undefined;
    try {
      return resourceConfigForPod(pod, this.ctx.node.cpuCFSQuotaPeriodUs);
    } catch {
      return undefined;
    }
  }

  private hookPodIP(pod: Pod, ips: readonly string[]): string {
    return ips[0] ?? (pod.spec.hostNetwork ? this.ctx.node.nodeIP : '');
  }

  private async removeQuietly(pod: Pod, id: string, name: string, why: string): Promise<void> {
    try {
      await removeContainer(this.ctx, id);
    } catch (err) {
      this.ctx.logger.warn(
        `failed to remove pod init container ${JSON.stringify(name)}: ${errorMessage(err)}; Skipping pod ${JSON.stringify(formatPod(pod))}`,
        { why },
      );
    }
  }

  /** Keeps the newest exited or unknown record of each init container, removes older ones. */
  private async pruneInitContainersBeforeStart(pod: Pod, status: RuntimePodStatus): Promise<void> {
    for (const ic of pod.spec.initContainers ?? []) {
      let count = 0;
      for (const s of status.containers) {
        if (s.name !== ic.name || (s.state !== 'exited' && s.state !== 'unknown')) continue;
        if (++count === 1) continue;
        await this.removeQuietly(pod, s.id, s.name, 'prune');
      }
    }
  }

  /** Removes every init container record: a new sandbox starts initialization over. */
  private async purgeInitContainers(pod: Pod, status: RuntimePodStatus): Promise<void> {
    const names = new Set((pod.spec.initContainers ?? []).map((c) => c.name));
    for (const s of status.containers) {
      if (names.has(s.name)) await this.removeQuietly(pod, s.id, s.name, 'purge');
    }
  }

  // ----------------------------------------------------------------------------------------- adopting

  /**
   * The configs a fresh start would have used, for a runtime rebuilding records it lost (kubelet_adopt.ts):
   * the pod's `attempt`-th sandbox (hostname and DNS included), and a container at `restartCount` in that
   * sandbox with `podIPs`. No Event, pull or host directory. Rejects as creating them would.
   */
  adoptedSandboxConfig(pod: Pod, attempt: number): Promise<PodSandboxConfig> {
    return podSandboxConfig(this.ctx, effectivePod(pod, this.ctx.node.podNetwork), attempt, true);
  }

  adoptedContainerConfig(
    pod: Pod,
    container: Container,
    at: { sandboxConfig: PodSandboxConfig; podIPs: readonly string[]; restartCount: number },
  ): Promise<ContainerConfig> {
    const effective = effectivePod(pod, this.ctx.node.podNetwork);
    const podIPs = [...at.podIPs];
    const args = {
      pod: effective,
      container,
      sandboxConfig: at.sandboxConfig,
      podIP: podIPs[0] ?? '',
      podIPs,
    };
    return adoptedContainerConfig(this.ctx, args, at.restartCount);
  }

  // ------------------------------------------------------------------------------------------ killing

  /**
   * Stops every running container of the pod in parallel, then every sandbox (kubelet: KillPod). Each
   * container gets its preStop hook, a Killing event and StopContainer with its grace period: the pod's
   * (deletion grace period, else terminationGracePeriodSeconds) unless `gracePeriodSeconds` overrides it;
   * never less than 2 s. Sidecars stop after the regular containers. `pod` may be undefined (the API object is
   * gone): the specs are then restored from the containers' labels. Idempotent.
   */
  async killPod(
    _ctx: RuntimeSyncContext,
    pod: Pod | undefined,
    running: RuntimePodStatus,
    gracePeriodSeconds?: number,
  ): Promise<PodSyncResult> {
    const p = pod ? effectivePod(pod, this.ctx.node.podNetwork) : undefined;
    return killPodWithSyncResult(this.ctx, p, running, gracePeriodSeconds);
  }

  // ----------------------------------------------------------------------------------------- removing

  /**
   * Removes everything the runtime holds for a terminated pod (removepod.ts): containers (and their logs),
   * sandboxes and the host-side leftovers the runtime's capabilities make ours (log directory, cgroup).
   * Works from `running` plus a fresh listing of the pod. Idempotent.
   */
  async removePod(running: RuntimePodStatus): Promise<PodSyncResult> {
    this.ctx.actuatedPodCgroups.delete(running.uid);
    return removePod(this.ctx, running, () =>
      this.getPodStatus(running.uid, running.name, running.namespace),
    );
  }

  /** Removes one dead container and its log files (the per-pod dead-container deletor); gone = removed. */
  async removeContainer(containerId: string): Promise<void> {
    await removeContainer(this.ctx, containerId);
  }

  /** The kubelet's container GC for this node (see gc.ts). Failures are reported, never thrown. */
  async garbageCollect(opts: GarbageCollectOptions): Promise<GarbageCollectResult> {
    return garbageCollect(this.ctx, opts);
  }

  /**
   * Removes the log directories and cgroups this node made for pods whose content may go and of which the
   * runtime holds nothing, where removing the pod did not (see podleftovers.ts). Returns one line per failure.
   */
  async removeOrphanedPodLeftovers(
    removable: (uid: string) => boolean,
    inRuntime: (uid: string) => boolean,
  ): Promise<string[]> {
    if (this.ctx.leftovers.size === 0) return [];
    return removeOrphanedPodLeftovers(this.ctx, removable, inRuntime);
  }
}

/** PrepareDynamicResources through the runtime helper; without a DRA manager there is nothing to prepare. */
async function prepareDynamicResources(
  ctx: ManagerContext,
  pod: Pod,
): Promise<{ ok: true } | { ok: false; message: string }> {
  if (!ctx.runtimeHelper?.prepareDynamicResources) return { ok: true };
  try {
    await ctx.runtimeHelper.prepareDynamicResources(pod);
    return { ok: true };
  } catch (err) {
    return { ok: false, message: errorMessage(err) };
  }
}
