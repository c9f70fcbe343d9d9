/**
 * What the kubelet removes from the runtime besides what pod workers stop (kubelet: the container GC and the
 * per-pod dead-container deletor): dead containers are garbage-collected, coalesced to one run at a time,
 * when a container dies the older exited instances of it go at once, and at housekeeping the log directories
 * and cgroups of removed pods that their removal left behind go. Nothing here stops a container: pods,
 * orphaned runtime pods included, are stopped by pod workers only; whether a pod's content may go is the pod
 * workers' word.
 */
import type { Clock } from '../../util/clock.js';
import { errorMessage } from '../../util/errors.js';
import { asPodUID, type RuntimePodStatus } from '../container/types.js';
import type { KubeGenericRuntimeManager } from '../kuberuntime/shell/manager.js';
import { deadContainersToRemove } from '../pod_container_deletor.js';
import type { PodWorkers } from '../podworkers.js';

export interface RuntimeCleanupDeps {
  clock: Pick<Clock, 'now'>;
  log: {
    info(msg: string, meta?: Record<string, unknown>): void;
    warn(msg: string, meta?: Record<string, unknown>): void;
  };
  runtime: Pick<
    KubeGenericRuntimeManager,
    'garbageCollect' | 'removeContainer' | 'removeOrphanedPodLeftovers'
  >;
  /** Whether all of a pod's runtime objects may go (kubelet: ShouldPodContentBeRemoved). */
  podWorkers: Pick<PodWorkers, 'shouldPodContentBeRemoved'>;
  /** False once the kubelet stops: no new work starts, work in flight ends early. */
  active: () => boolean;
  /** Registers background work (the kubelet waits for it on stop). */
  track: (p: Promise<unknown>) => void;
}

/** Removals the per-pod deletor holds at most (kubelet: its channel's buffer); beyond it the GC takes over. */
export const CONTAINER_DELETOR_BUFFER = 50;

/** Invariants: one GC run at a time; each dead container queued for the deletor once. */
export class RuntimeCleanup {
  /** Dead containers waiting for the per-pod deletor, in order; `deleting` = its loop runs. */
  private readonly toDelete: string[] = [];
  private readonly queued = new Set<string>();
  private deleting = false;
  private gcRunning = false;
  private gcAgain = false;
  private lastGC: number;

  constructor(private readonly d: RuntimeCleanupDeps) {
    this.lastGC = d.clock.now();
  }

  /**
   * kubelet cleanUpContainersInPod, after PLEG reported `exitedContainerId` of pod `uid` dead: removes the
   * older exited instances of that container (all exited containers of the pod when its content may go),
   * using the pod's cached runtime status. Removals run one at a time in the background; when
   * CONTAINER_DELETOR_BUFFER are already waiting, the rest is left to the periodic GC.
   */
  cleanUpContainersInPod(uid: string, exitedContainerId: string, status: RuntimePodStatus): void {
    if (!this.d.active()) return;
    const removeAll = this.d.podWorkers.shouldPodContentBeRemoved(asPodUID(uid));
    for (const c of deadContainersToRemove(exitedContainerId, status, removeAll)) {
      if (this.queued.has(c.id)) continue;
      if (this.queued.size >= CONTAINER_DELETOR_BUFFER) {
        this.d.log.warn('dead container deletor is full; the container GC will remove the rest', {
          podUID: uid,
          containerID: c.id,
        });
        break;
      }
      this.queued.add(c.id);
      this.toDelete.push(c.id);
    }
    if (this.deleting || this.toDelete.length === 0) return;
    this.deleting = true;
    this.d.track(this.deleteLoop());
  }

  private async deleteLoop(): Promise<void> {
    try {
      for (let id = this.toDelete.shift(); id !== undefined; id = this.toDelete.shift()) {
        try {
          if (this.d.active()) await this.d.runtime.removeContainer(id);
        } catch (err) {
          this.d.log.warn('failed to remove a dead container', { containerID: id, err: errorMessage(err) });
        } finally {
          this.queued.delete(id);
        }
      }
    } finally {
      this.deleting = false;
    }
  }

  /**
   * Housekeeping's pass over the log directories and cgroups of pods whose removal did not take them (see
   * kuberuntime/podleftovers.ts); `runtimePods` is the runtime as last listed. Failures are logged.
   */
  async removeOrphanedPodLeftovers(runtimePods: readonly { uid: string }[]): Promise<void> {
    if (!this.d.active()) return;
    let listed: Set<string> | undefined;
    const inRuntime = (uid: string): boolean => (listed ??= new Set(runtimePods.map((p) => p.uid))).has(uid);
    try {
      const errors = await this.d.runtime.removeOrphanedPodLeftovers(
        (uid) => this.d.podWorkers.shouldPodContentBeRemoved(asPodUID(uid)),
        inRuntime,
      );
      for (const e of errors) this.d.log.warn('pod cleanup', { err: e });
    } catch (err) {
      this.d.log.warn('pod cleanup failed', { err: errorMessage(err) });
    }
  }

  /** Whether the periodic GC is due. */
  gcDue(periodMs: number): boolean {
    return this.d.clock.now() - this.lastGC >= periodMs;
  }

  /** Runs the container GC now, or once more after the run in progress. */
  requestGC(): void {
    if (!this.d.active()) return;
    if (this.gcRunning) {
      this.gcAgain = true;
      return;
    }
    this.gcRunning = true;
    this.lastGC = this.d.clock.now();
    this.d.track(this.gcLoop());
  }

  private async gcLoop(): Promise<void> {
    try {
      do {
        this.gcAgain = false;
        const r = await this.d.runtime.garbageCollect({
          shouldPodContentBeRemoved: (uid) => this.d.podWorkers.shouldPodContentBeRemoved(asPodUID(uid)),
        });
        for (const e of r.errors) this.d.log.warn('container GC', { err: e });
      } while (this.gcAgain && this.d.active());
    } catch (err) {
      this.d.log.warn('container GC failed', { err: errorMessage(err) });
    } finally {
      this.gcRunning = false;
    }
  }
}
