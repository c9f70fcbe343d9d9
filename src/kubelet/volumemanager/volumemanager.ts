/**
 * The volume manager of one node (kubelet: pkg/kubelet/volumemanager, its desired/actual state and reconciler
 * folded into one synchronous step that the pod worker runs before it touches the runtime, as SyncPod's
 * WaitForAttachAndMount does):
 *
 * - `mountPod(pod)` sets up every volume that some container of the pod mounts (volumes no container uses are
 *   ignored, as the kubelet's populator ignores them). A volume that fails records the kubelet's Warning
 *   `FailedMount` event, `MountVolume.SetUp failed for volume "<name>" : <why>`, and the pod waits; the pod
 *   worker retries with its back-off, and the volume itself is tried again only after its own exponential
 *   back-off (500 ms doubling to 2 min 2 s, as the kubelet's volume operations): a pod naming a hundred missing
 *   ConfigMaps costs a hundred GETs per back-off step, not per sync. A volume the kubelet could not even process (no plugin, an unbound claim)
 *   ends the wait at once with `Unable to attach or mount volumes: unmounted volumes=[...], unattached
 *   volumes=[], failed to process volumes=[...]: <why>`; a pod still waiting after the kubelet's 2 min 3 s
 *   gets the same event with `context deadline exceeded`, and the clock starts again.
 * - Volumes whose contents follow their sources (configMap, secret, downwardAPI, projected) are set up again at
 *   every sync; a failure then keeps the last good contents and only records the event.
 * - `unmountPod(uid)` tears down a terminated pod's volumes (emptyDir contents removed, tmpfs unmounted), keeping
 *   the pod directory (termination messages, hosts file) until the pod is gone; `cleanupOrphanedPodDirs` removes
 *   the directories of pods that are neither known nor running, after unmounting whatever is still mounted there.
 *
 * Restart safety: nothing is trusted from memory. A restarted operator calls `mountPod` again: emptyDirs with
 * their `ready` marker are kept as they are, tmpfs mounts are found in the mount table, and the atomic writer
 * rewrites nothing that is unchanged, so a running pod neither loses nor sees a remount of its volumes.
 *
 * All I/O is through the PluginContext seams (VolumeFS, Mounter, VolumeSources, token source).
 */
import type { Pod } from '../../api/core.js';
import type { Volume } from '../../api/volumes.js';
import { errorMessage } from '../../util/errors.js';
import type { EventRecorderFunc } from '../container/ref.js';
import { CSIPluginDir } from '../volume/csi.js';
import { csiVolumeStats, nodeExpandCSIVolume, tearDownCSIPodVolumes } from '../volume/csimounter.js';
import type { CSIVolumeFigures } from '../volume/csi.js';
import { datavolumePlugins, setUpVolume, tearDownVolume } from '../volume/setup.js';
import { podDir } from '../volume/podpaths.js';
import type { MountedVolume, PluginContext } from '../volume/plugin.js';
import { findPlugin, requiresRemount, type VolumeKind } from '../volume/plugins.js';

/** kubelet podAttachAndMountTimeout. */
export const PodAttachAndMountTimeoutMs = 2 * 60_000 + 3_000;

/**
 * The kubelet's exponential back-off per volume operation (nestedpendingoperations): a volume whose set-up
 * failed is not tried again for 500 ms, then 1 s, 2 s, ... up to 2 min 2 s, however often the pod syncs.
 */
export const MountBackOffInitialMs = 500;
export const MountBackOffMaxMs = 2 * 60_000 + 2_000;

/** Volumes of one pod set up at once. */
export const MountConcurrency = 4;

interface MountFailure {
  /** Not tried again before this time. */
  retryAt: number;
  delayMs: number;
  message: string;
}

export type MountPodResult =
  | { ok: true; volumes: ReadonlyMap<string, MountedVolume> }
  /**
   * `report`: the syncer records `Unable to attach or mount volumes: <message>` (the kubelet's FailedMount).
   * `reject`: the pod is rejected with that reason instead (VolumeAttachmentLimitExceeded).
   */
  | { ok: false; message: string; report: boolean; reject?: typeof VolumeAttachmentLimitExceededReason };

/** The reason of a pod rejected because a CSI driver's node is full (MutableCSINodeAllocatableCount). */
export const VolumeAttachmentLimitExceededReason = 'VolumeAttachmentLimitExceeded';

interface PodVolumesState {
  /** Made on the first mount, as `failed`: many pods mount no volume at all. */
  mounted?: Map<string, MountedVolume & { kind: VolumeKind; claimName?: string }>;
  namespace?: string;
  /** The last NodeGetVolumeStats of each CSI volume, by volume name (made on the first read). */
  csiStats?: Map<string, { atMs: number; stats: PodCSIVolumeStats }>;
  /** Node expansion of CSI claims by volume name: the last final failure and its back-off. */
  expansion?: Map<string, { failedFinal: boolean; retryAt: number; delayMs: number }>;
  /**
   * Volumes whose last set-up failed, by name, with their back-off. Made on the first failure: an empty Map is
   * 184 bytes, and most pods never have one.
   */
  failed?: Map<string, MountFailure>;
  /** When the pod started waiting for a volume (cleared once all are mounted). */
  waitingSince?: number;
}

export interface VolumeManagerDeps extends PluginContext {
  record: EventRecorderFunc;
}

/** kubelet volumeStatsAggPeriod: a CSI volume's stats are asked of its driver at most once a minute. */
export const CSIVolumeStatsPeriodMs = 60_000;

/** A CSI volume's stats for the Summary (the kubelet's volume stat calculator, its persistent volumes). */
export interface PodCSIVolumeStats extends CSIVolumeFigures {
  /** The pod's name for the volume. */
  name: string;
  timeMs: number;
  pvcRef?: { name: string; namespace: string };
}

/** The names of the volumes some container of the pod mounts (kubelet GetPodVolumeNames). */
export function podVolumeNames(pod: Pod): Set<string> {
  const names = new Set<string>();
  for (const c of [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...(pod.spec.ephemeralContainers ?? []),
  ]) {
    for (const m of c.volumeMounts ?? []) names.add(m.name);
  }
  return names;
}

/** Go's %v of a []string: `[a b]`. */
function goList(names: readonly string[]): string {
  return `[${names.join(' ')}]`;
}

/** The mounted volumes of a pod that has none. */
const NO_VOLUMES: ReadonlyMap<string, MountedVolume> = new Map();

export class VolumeManager {
  private readonly pods = new Map<string, PodVolumesState>();

  constructor(private readonly d: VolumeManagerDeps) {}

  get podsDir(): string {
    return this.d.podsDir;
  }

  /** The pod's mounted volumes by name, as the last mountPod left them. */
  mountedVolumes(uid: string): ReadonlyMap<string, MountedVolume> | undefined {
    const state = this.pods.get(uid);
    return state && (state.mounted ?? NO_VOLUMES);
  }

  /** kubelet makePodDataDirs + WaitForAttachAndMount, once (see the module comment). */
  async mountPod(pod: Pod): Promise<MountPodResult> {
    const uid = pod.metadata.uid ?? '';
    let state = this.pods.get(uid);
    if (!state) {
      state = {};
      this.pods.set(uid, state);
    }
    await this.d.fs.mkdir(podDir(this.d.podsDir, uid), 0o750);

    const used = podVolumeNames(pod);
    const volumes = (pod.spec.volumes ?? []).filter((v) => used.has(v.name));
    const unmounted: string[] = [];
    const unattached: string[] = [];
    let attachLimit: string | undefined;
    const notProcessed: string[] = [];
    const processErrors: string[] = [];
    // A few volumes at a time: each may wait for a GET of its source, and a pod with a hundred volumes must
    // not queue a hundred GETs ahead of every other pod's (the requests then take turns across pods).
    let next = 0;
    const mountNext = async (): Promise<void> => {
      while (next < volumes.length) {
        const vol = volumes[next++]!;
        const outcome = await this.mountVolume(pod, vol, state);
        if (outcome === 'mounted') continue;
        unmounted.push(vol.name);
        if (outcome.attach) unattached.push(vol.name);
        if (outcome.attach === 'limit') attachLimit ??= outcome.message;
        if (outcome.stage === 'process') {
          notProcessed.push(vol.name);
          processErrors.push(outcome.message);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(MountConcurrency, volumes.length) }, mountNext));
    // A mount of a volume the spec does not declare (API validation forbids it) can never be satisfied.
    for (const name of used) if (!volumes.some((v) => v.name === name)) unmounted.push(name);

    if (unmounted.length === 0) {
      delete state.waitingSince;
      await this.expandMounted(pod, state);
      return { ok: true, volumes: state.mounted ?? NO_VOLUMES };
    }
    unmounted.sort();
    unattached.sort();
    notProcessed.sort();
    const lists = `unmounted volumes=${goList(unmounted)}, unattached volumes=${goList(unattached)}, failed to process volumes=${goList(notProcessed)}`;
    if (attachLimit !== undefined) {
      return {
        ok: false,
        report: true,
        reject: VolumeAttachmentLimitExceededReason,
        message: `Node has reached its volume attachment limit, rejecting pod. ${lists}: ${attachLimit}`,
      };
    }
    if (processErrors.length > 0) {
      return { ok: false, report: true, message: `${lists}: ${processErrors.sort().join('; ')}` };
    }
    const now = this.d.clock.now();
    state.waitingSince ??= now;
    if (now - state.waitingSince >= PodAttachAndMountTimeoutMs) {
      state.waitingSince = now;
      return { ok: false, report: true, message: `${lists}: context deadline exceeded` };
    }
    return { ok: false, report: false, message: lists };
  }

  private async mountVolume(
    pod: Pod,
    vol: Volume,
    state: PodVolumesState,
  ): Promise<'mounted' | { stage: 'mount' | 'process'; message: string; attach?: 'unattached' | 'limit' }> {
    const match = findPlugin(vol);
    if (!match.ok) return { stage: 'process', message: match.message };
    const previous = state.mounted?.get(vol.name);
    if (previous && previous.kind === match.kind && !requiresRemount(match.kind)) return 'mounted';
    const now = this.d.clock.now();
    const failure = state.failed?.get(vol.name);
    if (failure && now < failure.retryAt) {
      // Backing off: neither tried nor reported again (the kubelet's reconciler skips it the same way).
      return previous ? 'mounted' : { stage: 'mount', message: failure.message };
    }
    let result;
    try {
      result = await setUpVolume(this.d, { pod, volume: vol, kind: match.kind });
    } catch (err) {
      result = { ok: false as const, stage: 'mount' as const, message: errorMessage(err) };
    }
    if (result.ok) {
      if (state.failed?.delete(vol.name) && state.failed.size === 0) delete state.failed;
      const claimName = vol.persistentVolumeClaim?.claimName;
      (state.mounted ??= new Map()).set(vol.name, {
        ...result.volume,
        kind: match.kind,
        ...(typeof claimName === 'string' ? { claimName } : {}),
      });
      state.namespace = pod.metadata.namespace ?? '';
      return 'mounted';
    }
    if (result.stage === 'mount') {
      // The attach limit rejects the pod: no back-off, no FailedMount of its own.
      if (result.attach === 'limit') return { stage: 'mount', message: result.message, attach: 'limit' };
      const delayMs = failure ? Math.min(failure.delayMs * 2, MountBackOffMaxMs) : MountBackOffInitialMs;
      (state.failed ??= new Map()).set(vol.name, {
        retryAt: now + delayMs,
        delayMs,
        message: result.message,
      });
      this.recordFailedMount(
        pod,
        `MountVolume.SetUp failed for volume ${JSON.stringify(vol.name)} : ${result.message}`,
      );
    }
    // A remount that fails keeps the volume (and the pod) as it was.
    if (previous) return 'mounted';
    return {
      stage: result.stage,
      message: result.message,
      ...(result.attach ? { attach: result.attach } : {}),
    };
  }

  /**
   * The stats of a pod's mounted CSI volumes (NodeGetVolumeStats), each asked at most once per
   * CSIVolumeStatsPeriodMs; volumes whose driver reports none are left out, a failed call keeps the last.
   */
  async csiVolumeStats(uid: string): Promise<PodCSIVolumeStats[]> {
    const state = this.pods.get(uid);
    if (!state?.mounted) return [];
    const out: PodCSIVolumeStats[] = [];
    const now = this.d.clock.now();
    for (const [name, v] of state.mounted) {
      if (
        v.kind !== 'csi' &&
        !(v.kind === 'persistentVolumeClaim' && v.hostPath.includes(`/${CSIPluginDir}/`))
      )
        continue;
      const cached = state.csiStats?.get(name);
      if (cached && now - cached.atMs < CSIVolumeStatsPeriodMs) {
        out.push(cached.stats);
        continue;
      }
      let figures: CSIVolumeFigures | undefined;
      try {
        figures = await csiVolumeStats(this.d, v.hostPath);
      } catch (err) {
        this.d.logger.warn('Failed to calculate volume metrics', {
          podUID: uid,
          volumeName: name,
          err: errorMessage(err),
        });
        if (cached) out.push(cached.stats);
        continue;
      }
      if (!figures) continue;
      const stats: PodCSIVolumeStats = {
        name,
        timeMs: now,
        ...figures,
        ...(v.claimName !== undefined
          ? { pvcRef: { name: v.claimName, namespace: state.namespace ?? '' } }
          : {}),
      };
      (state.csiStats ??= new Map()).set(name, { atMs: now, stats });
      out.push(stats);
    }
    return out;
  }

  /**
   * Node expansion of the pod's mounted CSI claims (the kubelet's populator checks every mounted claim's
   * size; the reconciler expands it in use). A failed expansion backs off as a failed mount does and never
   * fails the pod: it shows in the claim's status and a FileSystemResizeFailed Event.
   */
  private async expandMounted(pod: Pod, state: PodVolumesState): Promise<void> {
    if (!this.d.csi?.claims || !state.mounted) return;
    const now = this.d.clock.now();
    for (const [name, v] of state.mounted) {
      if (v.claimName === undefined || !v.hostPath.includes(`/${CSIPluginDir}/`)) continue;
      const prev = state.expansion?.get(name);
      if (prev && now < prev.retryAt) continue;
      let outcome;
      try {
        outcome = await nodeExpandCSIVolume(
          this.d,
          pod,
          name,
          v.claimName,
          v.readOnly,
          prev?.failedFinal ?? false,
        );
      } catch (err) {
        this.d.logger.warn('node expansion check failed', { volumeName: name, err: errorMessage(err) });
        continue;
      }
      for (const e of outcome.events) {
        try {
          this.d.record(pod, e.type, e.reason, e.message);
        } catch (err) {
          this.d.logger.warn('event recorder failed', { reason: e.reason, err: errorMessage(err) });
        }
      }
      if (outcome.failedFinal === true) {
        const delayMs = prev ? Math.min(prev.delayMs * 2, MountBackOffMaxMs) : MountBackOffInitialMs;
        (state.expansion ??= new Map()).set(name, { failedFinal: true, retryAt: now + delayMs, delayMs });
      } else if (outcome.failedFinal === false) {
        state.expansion?.delete(name);
      }
    }
  }

  private recordFailedMount(pod: Pod, message: string): void {
    try {
      this.d.record(pod, 'Warning', 'FailedMount', message);
    } catch (err) {
      this.d.logger.warn('event recorder failed', { reason: 'FailedMount', err: errorMessage(err) });
    }
  }

  /**
   * Tears down every volume of a terminated pod (kubelet: the reconciler's unmounts once the pod may no longer
   * run, then WaitForUnmount). Volumes are found on disk, so a pod mounted by an earlier process is torn down
   * too. Idempotent. Rejects when a CSI driver could not unpublish (the caller tries again later).
   */
  async unmountPod(uid: string): Promise<void> {
    this.pods.delete(uid);
    const volumes = `${podDir(this.d.podsDir, uid)}/volumes`;
    // Most pods have no volume directory at all: a stat says so without building an error to throw (whose
    // stack trace cost more than the whole teardown). One listing then instead of a lookup per plugin.
    if ((await this.d.fs.lstat(volumes))?.kind !== 'dir') return;
    let present: string[];
    try {
      present = await this.d.fs.readdir(volumes);
    } catch {
      return; // gone meanwhile
    }
    // CSI volumes first, and a failure rejects: the driver must unpublish before the directory may go.
    if (present.includes(CSIPluginDir)) await tearDownCSIPodVolumes(this.d, uid);
    for (const plugin of datavolumePlugins()) {
      if (!present.includes(plugin)) continue;
      let names: string[] = [];
      try {
        names = await this.d.fs.readdir(`${volumes}/${plugin}`);
      } catch {
        continue; // not a directory, or gone meanwhile
      }
      for (const name of names) await tearDownVolume(this.d, uid, plugin, name);
    }
  }

  /**
   * Removes the directories of pods for which `keep(uid)` is false (kubelet cleanupOrphanedPodDirs): their
   * volumes are torn down first, every mount under them unmounted. Returns the UIDs removed. A directory that
   * cannot be removed is logged and retried at the next housekeeping.
   */
  async cleanupOrphanedPodDirs(keep: (uid: string) => boolean): Promise<string[]> {
    let entries: string[];
    try {
      entries = await this.d.fs.readdir(this.d.podsDir);
    } catch {
      return [];
    }
    const removed: string[] = [];
    for (const uid of entries) {
      if (keep(uid)) continue;
      const dir = podDir(this.d.podsDir, uid);
      try {
        await this.unmountPod(uid);
        for (const m of await this.d.mounter.mountsUnder(dir)) await this.d.mounter.unmount(m);
        await this.d.fs.rm(dir);
        removed.push(uid);
      } catch (err) {
        this.d.logger.warn('could not remove orphaned pod directory', {
          podUID: uid,
          dir,
          err: errorMessage(err),
        });
      }
    }
    return removed;
  }

  /** Forgets in-memory state of pods no longer known (their directories are cleaned up separately). */
  retain(uids: ReadonlySet<string>): void {
    // A Map may lose entries while it is walked (never adding any): no copy of its keys per housekeeping.
    for (const uid of this.pods.keys()) if (!uids.has(uid)) this.pods.delete(uid);
  }
}
