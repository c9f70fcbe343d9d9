/**
 * What a pod leaves on the host besides its runtime objects: its log directory
 * (`<podLogsRoot>/<ns>_<name>_<uid>`) and the cgroup the runtime made for its sandbox (`<cgroupRoot>/pod<uid>`).
 * The kubelet removes them with the pod (kubelet: removal of a terminated pod, the container GC's
 * evictPodLogsDirectories, HandlePodCleanups' cleanupOrphanedPodCgroups).
 *
 * The kubelet's GC scans its whole log root and removes the directory of every pod whose content may go. A
 * log root here is often shared by several VirtualNodes on one host (each node's default is `/var/log/pods`),
 * and to one node another node's pods are unknown, which reads as "may go". So a node records the pods it
 * made leftovers for (`PodLeftovers`) and removes only those: with the pod, or, when that removal did not
 * happen or did not finish (a failed removal, a directory made again by a container start that was still
 * on its way), at the next housekeeping once the pod's content may go and the runtime holds nothing of it.
 * The record is in memory: after a restart, what a pod left with no sandbox of ours still around it is no
 * longer known to be ours, and stays. The removal itself is removeleftovers.ts.
 */
interface PodRef {
  namespace: string;
  name: string;
  /** A failed removal of its cgroup was logged already (a busy cgroup is tried at every housekeeping). */
  failureLogged?: boolean;
}

/** The pods this node made host-side leftovers for and has not yet cleaned up, by UID. */
export class PodLeftovers {
  private readonly pods = new Map<string, PodRef>();

  /** Called before the leftovers are made (a sandbox run, a container's log directory). */
  record(namespace: string, name: string, uid: string): void {
    if (uid && !this.pods.has(uid)) this.pods.set(uid, { namespace, name });
  }

  /**
   * Whether a failed removal of the pod's leftovers is to be logged: the first time only, so a cgroup that
   * stays busy is not reported again at every housekeeping (every 2 s) until it goes.
   */
  logFailure(uid: string): boolean {
    const ref = this.pods.get(uid);
    if (!ref) return true;
    if (ref.failureLogged) return false;
    ref.failureLogged = true;
    return true;
  }

  forget(uid: string): void {
    this.pods.delete(uid);
  }

  get size(): number {
    return this.pods.size;
  }

  /** The recorded pods whose content may go and of which the runtime holds nothing: theirs to clean up. */
  orphaned(removable: (uid: string) => boolean, inRuntime: (uid: string) => boolean): [string, PodRef][] {
    const out: [string, PodRef][] = [];
    for (const [uid, ref] of this.pods) if (!inRuntime(uid) && removable(uid)) out.push([uid, ref]);
    return out;
  }
}
