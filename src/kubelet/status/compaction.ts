/**
 * What the status manager's cache keeps of a pod's status, kept small without a copy per status change.
 *
 * A status is stored as the manager built it. Once the pod manager's copy of the pod first carries our
 * write of it and the server's status is that status (wireequal.ts), the entry takes the copy's status
 * object instead: the two are one value, and a running pod keeps one status, the informer's, not two. The
 * kubelet's cache holds Go structs, where the server's `lastState: {}` and a member we leave out are the same
 * zero value; whatever reads the cache reads either form alike. A status still as built at a full pass (it
 * was never written, or another writer added to it) is interned then (intern.ts): its common parts shared
 * with other pods', as every cached status once was on each change, which cost a tenth of the manager's CPU
 * while pods start for statuses that mostly lived a second.
 *
 * Every replacement here keeps the entry's version and replaces the entry whole: nothing is signalled or
 * written (a sync in flight for the pod finds a new entry and looks at it again in the next batch, where its
 * version is already synced), and a status handed out before stays as it was (equal by value).
 */
import type { Interner } from '../../util/intern.js';
import type { PodUID } from '../container/types.js';
import { isStaticPod } from '../types/podupdate.js';
import type { StatusPodManager } from './interfaces.js';
import { internPodStatus } from './intern.js';
import type { VersionedPodStatus } from './versioned.js';
import { wireEqual } from './wireequal.js';

export class CacheCompaction {
  /** Pods whose entry holds its status as the manager built it (neither shared nor interned yet). */
  private readonly built = new Set<PodUID>();

  constructor(
    private readonly podStatuses: Map<PodUID, VersionedPodStatus>,
    private readonly podManager: StatusPodManager,
    private readonly interner: Interner,
  ) {}

  /** The pod's entry now holds a status as built. */
  stored(uid: PodUID): void {
    this.built.add(uid);
  }

  /**
   * The pod manager's copy of the pod first carries our last write to it: the entry takes the copy's status
   * if it is the cached one. Static pods keep theirs (the server's is the mirror pod's).
   */
  caughtUp(uid: PodUID): void {
    const entry = this.podStatuses.get(uid);
    if (!entry) return;
    const pod = this.podManager.getPodByUID(uid);
    const server = pod?.status;
    if (!pod || !server || server === entry.status || isStaticPod(pod)) return;
    if (!wireEqual(server, entry.status)) return;
    this.podStatuses.set(uid, { ...entry, status: server });
    this.built.delete(uid);
  }

  /** Interns every status still as built (a full pass). */
  internBuilt(): void {
    for (const uid of this.built) {
      const entry = this.podStatuses.get(uid);
      if (entry)
        this.podStatuses.set(uid, { ...entry, status: internPodStatus(entry.status, this.interner) });
    }
    this.built.clear();
  }
}
