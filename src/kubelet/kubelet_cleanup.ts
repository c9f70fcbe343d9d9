/**
 * What the kubelet removes from the runtime besides what pod workers stop (kubelet: HandlePodCleanups'
 * orphan killing and the container GC): runtime pods whose UID neither the API nor a pod worker knows are
 * killed and removed in the background; dead containers are garbage-collected, coalesced to one run at a
 * time. Pods with a worker are never touched here: only pod workers act on those.
 */
import type { Pod } from '../api/core.js';
import type { Metrics } from '../metrics.js';
import type { Clock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import type { KubeGenericRuntimeManager } from './kuberuntime/manager.js';
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
    'getPods' | 'getPodStatus' | 'killPod' | 'removePod' | 'garbageCollect'
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
export class RuntimeCleanup {
  private readonly orphans = new Set<string>();
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
