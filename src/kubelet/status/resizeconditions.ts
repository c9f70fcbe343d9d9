/**
 * The pod resize conditions the kubelet keeps beside pod statuses (kubelet: status manager podResizeConditions):
 * PodResizePending (reason Deferred or Infeasible) and PodResizeInProgress (no reason, or Error). The allocation
 * manager and the pod sync set and clear them; status generation appends them to the pod's conditions.
 *
 * A condition's lastTransitionTime moves when its reason changes; unlike the kubelet, lastProbeTime moves only
 * when the condition changes at all, so a pod whose resize stays pending is not rewritten on every sync.
 */
import type { PodCondition } from '../../api/core.js';
import type { Clock } from '../../util/clock.js';
import { formatRFC3339 } from '../../util/rfc3339.js';
import { PodResizeInProgress, PodResizePending } from './generate.js';

interface Entry {
  pending?: PodCondition;
  inProgress?: PodCondition;
}

export class PodResizeConditions {
  private readonly byUID = new Map<string, Entry>();

  constructor(private readonly clock: Pick<Clock, 'now'>) {}

  /** The pod's resize conditions (in progress first), copies. */
  get(uid: string): PodCondition[] {
    const e = this.byUID.get(uid);
    const out: PodCondition[] = [];
    if (e?.inProgress) out.push({ ...e.inProgress });
    if (e?.pending) out.push({ ...e.pending });
    return out;
  }

  pending(uid: string): PodCondition | undefined {
    return this.byUID.get(uid)?.pending;
  }

  inProgress(uid: string): PodCondition | undefined {
    return this.byUID.get(uid)?.inProgress;
  }

  isDeferred(uid: string): boolean {
    return this.byUID.get(uid)?.pending?.reason === 'Deferred';
  }

  /** Sets PodResizePending; returns whether it changed (a new reason, message or generation). */
  setPending(uid: string, reason: string, message: string, generation: number | undefined): boolean {
    const e = this.entry(uid);
    const next = this.updated(PodResizePending, e.pending, reason, message, generation);
    const changed = next !== e.pending;
    e.pending = next;
    return changed;
  }

  clearPending(uid: string): boolean {
    const e = this.byUID.get(uid);
    if (!e?.pending) return false;
    delete e.pending;
    this.dropIfEmpty(uid, e);
    return true;
  }

  setInProgress(uid: string, reason: string, message: string, generation: number | undefined): boolean {
    const e = this.entry(uid);
    const next = this.updated(PodResizeInProgress, e.inProgress, reason, message, generation);
    const changed = next !== e.inProgress;
    e.inProgress = next;
    return changed;
  }

  /** Clears PodResizeInProgress; returns the generation it carried when there was one. */
  clearInProgress(uid: string): { cleared: boolean; generation: number } {
    const e = this.byUID.get(uid);
    if (!e?.inProgress) return { cleared: false, generation: 0 };
    const generation = e.inProgress.observedGeneration ?? 0;
    delete e.inProgress;
    this.dropIfEmpty(uid, e);
    return { cleared: true, generation };
  }

  /** Forgets pods not in `uids`. */
  retain(uids: ReadonlySet<string>): void {
    for (const uid of this.byUID.keys()) if (!uids.has(uid)) this.byUID.delete(uid); // deletes only: no copy
  }

  private entry(uid: string): Entry {
    let e = this.byUID.get(uid);
    if (!e) this.byUID.set(uid, (e = {}));
    return e;
  }

  private dropIfEmpty(uid: string, e: Entry): void {
    if (!e.pending && !e.inProgress) this.byUID.delete(uid);
  }

  private updated(
    type: string,
    old: PodCondition | undefined,
    reason: string,
    message: string,
    generation: number | undefined,
  ): PodCondition {
    if (
      old &&
      (old.reason ?? '') === reason &&
      (old.message ?? '') === message &&
      old.observedGeneration === generation
    ) {
      return old;
    }
    const now = formatRFC3339(this.clock.now());
    const c: PodCondition = {
      type,
      status: 'True',
      lastProbeTime: now,
      lastTransitionTime: old && (old.reason ?? '') === reason ? (old.lastTransitionTime ?? now) : now,
    };
    if (reason) c.reason = reason;
    if (message) c.message = message;
    if (generation !== undefined) c.observedGeneration = generation;
    return c;
  }
}
