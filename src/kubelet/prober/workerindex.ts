/**
 * The prober manager's live workers, grouped by pod UID. A pod with one probed container and one probe
 * (the common case) costs one map entry holding the worker itself; only a pod with several workers gets
 * an array. The key is the pod's own UID string, so the index allocates no key of its own.
 *
 * Invariants: at most one worker per (pod UID, container name, probe type); a group is never empty (the
 * entry goes with its last worker); workers of a pod keep their insertion order.
 */
import type { ProbeType } from './types.js';
import type { ProbeWorker } from './worker.js';

type Group = ProbeWorker | ProbeWorker[];

export class WorkerIndex {
  private readonly byPod = new Map<string, Group>();
  private count = 0;

  /** The worker for a key, if any. */
  get(uid: string, containerName: string, probeType: ProbeType): ProbeWorker | undefined {
    const g = this.byPod.get(uid);
    if (g === undefined) return undefined;
    if (!Array.isArray(g)) return matches(g, containerName, probeType) ? g : undefined;
    return g.find((w) => matches(w, containerName, probeType));
  }

  /** Adds a worker; false (and nothing added) when its key is taken. */
  add(worker: ProbeWorker): boolean {
    const uid = worker.podUID;
    const g = this.byPod.get(uid);
    if (g === undefined) this.byPod.set(uid, worker);
    else if (this.get(uid, worker.container.name, worker.probeType)) return false;
    else if (Array.isArray(g)) g.push(worker);
    else this.byPod.set(uid, [g, worker]);
    this.count++;
    return true;
  }

  /** Removes this very worker (not another one under the same key); false when it is not indexed. */
  remove(worker: ProbeWorker): boolean {
    const uid = worker.podUID;
    const g = this.byPod.get(uid);
    if (g === worker) this.byPod.delete(uid);
    else if (!Array.isArray(g)) return false;
    else {
      const i = g.indexOf(worker);
      if (i < 0) return false;
      g.splice(i, 1);
      if (g.length === 1) this.byPod.set(uid, g[0]!);
    }
    this.count--;
    return true;
  }

  /** The workers of one pod, in insertion order (a copy: callers may stop them while iterating). */
  ofPod(uid: string): ProbeWorker[] {
    const g = this.byPod.get(uid);
    if (g === undefined) return [];
    return Array.isArray(g) ? [...g] : [g];
  }

  /** The UIDs of the pods that have workers. */
  pods(): IterableIterator<string> {
    return this.byPod.keys();
  }

  get size(): number {
    return this.count;
  }
}

function matches(w: ProbeWorker, containerName: string, probeType: ProbeType): boolean {
  return w.probeType === probeType && w.container.name === containerName;
}
