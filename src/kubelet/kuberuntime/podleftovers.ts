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
 * A removed pod stays recorded for RecheckAfterMs more, and housekeeping removes its leftovers once again
 * then: a directory made again after the removal by a hand that recorded nothing new (a start whose record
 * came before the removal, the runtime opening a container's log file) would otherwise be nobody's.
 * The record is in memory: after a restart, what a pod left with no sandbox of ours still around it is no
 * longer known to be ours, and stays. The removal itself is removeleftovers.ts.
 */

/** How long after a removal of its leftovers a pod is looked at once more (see above). */
export const RecheckAfterMs = 5_000;

interface PodRef {
  namespace: string;
  name: string;
  /** A failed removal of its cgroup was logged already (a busy cgroup is tried at every housekeeping). */
  failureLogged?: boolean;
  /** Clock time its leftovers were removed; set: it is kept only for the second look. */
  removedAt?: number;
}

/** Removed, and its second look not yet due at `now`. */
function awaitsSecondLook(ref: PodRef, now: number): boolean {
  return ref.removedAt !== undefined && now - ref.removedAt < RecheckAfterMs;
}

/** The pods this node made host-side leftovers for and has not yet cleaned up, by UID. */
export class PodLeftovers {
  private readonly pods = new Map<string, PodRef>();

  /** Called before the leftovers are made (a sandbox run, a container's log directory). */
  record(namespace: string, name: string, uid: string): void {
    if (!uid) return;
    const ref = this.pods.get(uid);
    if (!ref) this.pods.set(uid, { namespace, name });
    // Made again after a removal: the pod's again, as any recorded one.
    else delete ref.removedAt;
  }

  /**
   * The pod's leftovers were removed at `now`. The first time it stays recorded for the second look; at the
   * second look (RecheckAfterMs later, or more) it is forgotten.
   */
  removed(uid: string, now: number): void {
    const ref = this.pods.get(uid);
    if (!ref) return;
    if (ref.removedAt === undefined) ref.removedAt = now;
    else if (!awaitsSecondLook(ref, now)) this.pods.delete(uid);
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

  get size(): number {
    return this.pods.size;
  }

  /**
   * The recorded pods whose content may go and of which the runtime holds nothing: theirs to clean up. A
   * removed pod is among them once its second look is due at `now`.
   */
  orphaned(
    removable: (uid: string) => boolean,
    inRuntime: (uid: string) => boolean,
    now: number,
  ): [string, PodRef][] {
    const out: [string, PodRef][] = [];
    for (const [uid, ref] of this.pods) {
      if (!awaitsSecondLook(ref, now) && !inRuntime(uid) && removable(uid)) out.push([uid, ref]);
    }
    return out;
  }
}
