/**
 * What the kubelet removes from the runtime besides what pod workers stop (kubelet: HandlePodCleanups'
 * orphan killing and the container GC): runtime pods whose UID neither the API nor a pod worker knows are
 * killed and removed in the background; dead containers are garbage-collected, coalesced to one run at a
 * time; and when a container dies, the older exited instances of it go at once (the per-pod deletor). Pods
 * with a worker are never stopped here: only pod workers act on those.
 */
import type { Pod } from '../api/core.js';
import type { Metrics } from '../metrics.js';
import type { Clock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import type { RuntimePodStatus } from './container/types.js';
import type { KubeGenericRuntimeManager } from './kuberuntime/manager.js';
import { deadContainersToRemove } from './pod_container_deletor.js';
import type { WorkerState } from './podworkers.js';

export interface RuntimeCleanupDeps {
  nodeName: string;
  clock: Pick<Clock, 'now'>;
  log: {
    info(msg: string, meta?: Record<string, unknown>): void;
    warn(msg: string, meta?: Record<string, unknown>): void;
  };
  metrics?: Metrics;
  runtime: Pick<
    KubeGenericRuntimeManager,
    'getPods' | 'getPodStatus' | 'killPod' | 'removePod' | 'garbageCollect' | 'removeContainer'
  >;
  /** The pod of this UID in the API (the pod manager), if any. */
  apiPod: (uid: string) => Pod | undefined;
  workerState: (uid: string) => WorkerState | undefined;
  /** False once the kubelet stops: no new work starts, work in flight ends early. */
  active: () => boolean;
  /** Registers background work (the kubelet waits for it on stop). */
  track: (p: Promise<unknown>) => void;
}

/**
 * Invariants: at most one cleanup per orphan UID and one GC run at a time; an orphan being cleaned up is
 * never garbage-collected under it, and counts as possibly running for the status manager.
 */
/** Removals the per-pod deletor holds at most (kubelet: its channel's buffer); beyond it the GC takes over. */
export const CONTAINER_DELETOR_BUFFER = 50;

export class RuntimeCleanup {
  private readonly orphans = new Set<string>();
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

  /** Whether the UID's runtime objects are being killed as an orphan right now. */
  isCleaningUp(uid: string): boolean {
    return this.orphans.has(uid);
  }

  /**
   * Lists the runtime's pods (and sets the running pods/containers gauges from that listing), and starts the
   * cleanup of every orphan that still runs something; orphans with nothing running are left to the GC.
   */
  async cleanupOrphans(): Promise<void> {
    const listed = await this.d.runtime.getPods();
    let runningPods = 0;
    let runningContainers = 0;
    for (const rp of listed) {
      const sandboxRunning = rp.sandboxes.some((s) => s.state === 'running');
      const running = rp.containers.filter((c) => c.state === 'running').length;
      if (sandboxRunning) runningPods++;
      runningContainers += running;
      const uid = rp.uid as string;
      if (this.d.apiPod(uid) || this.d.workerState(uid) !== undefined || this.orphans.has(uid)) continue;
      if (!sandboxRunning && running === 0) continue;
      this.orphans.add(uid);
      this.d.log.info('killing orphaned runtime pod', { podUID: uid, pod: `${rp.namespace}/${rp.name}` });
      this.d.track(this.removeOrphan(uid, rp.name, rp.namespace));
    }
    this.d.metrics?.runningPods.set({ node: this.d.nodeName }, runningPods);
    this.d.metrics?.runningContainers.set({ node: this.d.nodeName }, runningContainers);
  }

  private async removeOrphan(uid: string, name: string, namespace: string): Promise<void> {
    try {
      const status = await this.d.runtime.getPodStatus(uid, name, namespace);
      // No API object: the grace periods come from the containers' labels.
      const killed = await this.d.runtime.killPod(
        { signal: new AbortController().signal },
        undefined,
        status,
      );
      if (killed.error) throw killed.error;
      if (!this.d.active()) return;
      const removed = await this.d.runtime.removePod(status);
      if (removed.error) throw removed.error;
    } catch (err) {
      this.d.log.warn('failed to clean up an orphaned runtime pod', { podUID: uid, err: errorMessage(err) });
    } finally {
      this.orphans.delete(uid);
    }
  }

  /**
   * kubelet cleanUpContainersInPod, after PLEG reported `exitedContainerId` of pod `uid` dead: removes the
   * older exited instances of that container (all exited containers of the pod when its content may go),
   * using the pod's cached runtime status. Removals run one at a time in the background; when
   * CONTAINER_DELETOR_BUFFER are already waiting, the rest is left to the periodic GC.
   */
  cleanUpContainersInPod(uid: string, exitedContainerId: string, status: RuntimePodStatus): void {
    if (!this.d.active() || this.orphans.has(uid)) return;
    const removeAll = this.shouldPodContentBeRemoved(uid);
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
          shouldPodContentBeRemoved: (uid) => this.shouldPodContentBeRemoved(uid),
        });
        for (const e of r.errors) this.d.log.warn('container GC', { err: e });
      } while (this.gcAgain && this.d.active());
    } catch (err) {
      this.d.log.warn('container GC failed', { err: errorMessage(err) });
    } finally {
      this.gcRunning = false;
    }
  }

  /**
   * kubelet ShouldPodContentBeRemoved: all of a pod's runtime objects may go when neither the API nor a pod
   * worker knows it, or when its worker is done and the pod was deleted.
   */
  shouldPodContentBeRemoved(uid: string): boolean {
    if (this.orphans.has(uid)) return false;
    const pod = this.d.apiPod(uid);
    const state = this.d.workerState(uid);
    if (state === undefined) return !pod;
    return state === 'terminated' && (!pod || !!pod.metadata.deletionTimestamp);
  }
}
