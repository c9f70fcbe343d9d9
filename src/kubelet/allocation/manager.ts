/**
 * The allocation manager (kubelet: pkg/kubelet/allocation allocation_manager.go): what each admitted pod was
 * allocated (its containers and its pod-level resources), and the queue of resizes waiting for room.
 *
 * - Admission allocates a pod its spec (or, after an operator restart, what its status says it had: see
 *   allocationFromStatus).
 * - A spec change that differs from the allocation is a resize request: it is queued and the queue is retried
 *   (pod updated, pods added, a pod terminated, and every 3 minutes). A resize that fits is allocated at once
 *   (ResizeStarted, PodResizeInProgress until the runtime has caught up); one that fits the node but not the room
 *   left is Deferred and stays queued; one that can never fit is Infeasible and leaves the queue until the spec
 *   changes again. The queue is ordered as the kubelet orders it: resizes that do not grow requests first, then
 *   by priority, Guaranteed before others, then the longest pending.
 *
 * No I/O: the node view, the pods, the Event recorder and the pod-sync trigger come in as functions.
 */
import { isTerminalPhase, type Pod, type ResourceRequirements } from '../../api/core.js';
import type { AdmissionNode, AdmissionPeers } from '../lifecycle/admission.js';
import { errorMessage } from '../../util/errors.js';
import { SharedValues } from '../../util/sharedvalues.js';
import { getPodQOS } from '../qos.js';
import type { PodResizeConditions } from '../status/resizeconditions.js';
import {
  allocationFromPod,
  allocationFromStatus,
  podGeneration,
  resizeIncreasesRequests,
  updatePodFromAllocation,
  type PodAllocation,
} from './allocation.js';
import {
  podResizePendingMsg,
  podResizeStartedMsg,
  ResizeDeferred,
  ResizeInfeasible,
  ResizeStarted,
} from './messages.js';
import { admitResize, Infeasible } from './resizeadmission.js';
import { AdmittedTally } from './tally.js';

/** Why the pending resizes are retried (kubelet: TriggerReason*), for logs. */
export type ResizeTrigger = 'pod_updated' | 'pods_added' | 'pod_terminated' | 'periodic_retry';

/** kubelet: retryDelay of the periodic retry. */
export const ResizeRetryMs = 180_000;

export interface AllocationManagerDeps {
  conditions: PodResizeConditions;
  /** The node as admission sees it (allocatable, labels, taints). */
  node: () => AdmissionNode;
  /** The newest API object of a pod, if the node still has it. */
  getPodByUID: (uid: string) => Pod | undefined;
  /** Admitted pods that still hold resources (newest API objects). */
  activePods: () => Pod[];
  record: (pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** Asks the pod's worker for a sync (its status shows the new conditions, its runtime the new allocation). */
  triggerPodSync: (pod: Pod) => void;
  logger: { info(msg: string, meta?: Record<string, unknown>): void };
}

/** Distinct allocations kept for sharing (see AllocationManager.alike). */
const ALIKE_LIMIT = 256;

function podRef(pod: Pod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
}

export class AllocationManager {
  private readonly allocated = new Map<string, PodAllocation>();
  /**
   * One allocation object for this node's pods that are allocated alike, by its JSON text (the replicas of a
   * template: a Map of one container is 220 bytes). Allocations are replaced, never changed, so sharing one
   * changes no pod's; bounded, it starts over when full.
   */
  private readonly alike = new SharedValues<PodAllocation>(ALIKE_LIMIT);
  /** What the allocated pods hold, summed as they come and go (admission's peers without a scan). */
  private readonly tally = new AdmittedTally();
  private pendingResizes: string[] = [];

  constructor(private readonly d: AllocationManagerDeps) {}

  /** The allocated requirements of one container, if it is resizable and its pod allocated. */
  getContainerAllocation(uid: string, container: string): ResourceRequirements | undefined {
    return this.allocated.get(uid)?.containers.get(container);
  }

  /** The pod as allocated (kubelet: UpdatePodFromAllocation): what pod workers sync. */
  updatePodFromAllocation(pod: Pod): { pod: Pod; updated: boolean } {
    return updatePodFromAllocation(pod, this.allocated.get(pod.metadata.uid ?? ''));
  }

  /**
   * The pod to admit: as already allocated, or, met for the first time with an allocation in its status (a
   * previous process ran it), as that status says; otherwise its spec.
   */
  podForAdmission(pod: Pod): Pod {
    const uid = pod.metadata.uid ?? '';
    const known = this.allocated.get(uid);
    if (known) return updatePodFromAllocation(pod, known).pod;
    const fromStatus = allocationFromStatus(pod);
    return fromStatus ? updatePodFromAllocation(pod, fromStatus).pod : pod;
  }

  /** Records an admitted pod's allocation (kubelet: SetAllocatedResources). */
  setAllocated(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    const allocation = allocationFromPod(pod);
    this.allocated.set(
      uid,
      this.alike.get(
        JSON.stringify([[...allocation.containers], allocation.podLevel ?? null]),
        () => allocation,
      ),
    );
    this.tally.set(uid, pod.spec);
  }

  /**
   * Every allocated pod not yet removed, `except` left out, summed for admission: never less than the active
   * pods hold (see AdmittedTally); undefined when only allocatedPods can answer.
   */
  admissionPeers(except: string): AdmissionPeers | undefined {
    return this.tally.peers(except);
  }

  /**
   * After admission of `admitted` (the pod as allocated): when the API pod asks for something else, its resize
   * is queued (kubelet HandlePodAdditions). Returns whether one was.
   */
  queueIfResizeRequested(pod: Pod): boolean {
    if (!this.updatePodFromAllocation(pod).updated) return false;
    this.pushPendingResize(pod.metadata.uid ?? '');
    return true;
  }

  /**
   * A spec update of an admitted pod (kubelet HandlePodUpdates): a resize request is queued; a spec back at its
   * allocation clears PodResizePending. Then the queue is retried.
   */
  handlePodUpdate(pod: Pod): void {
    const uid = pod.metadata.uid ?? '';
    if (!this.allocated.has(uid) || isTerminalPhase(pod.status?.phase)) return;
    if (this.updatePodFromAllocation(pod).updated) this.pushPendingResize(uid);
    else if (this.d.conditions.clearPending(uid)) this.d.triggerPodSync(pod);
    if (this.pendingResizes.length > 0) this.retryPendingResizes('pod_updated');
  }

  private removeAllocation(uid: string): void {
    this.allocated.delete(uid);
    this.tally.delete(uid);
  }

  removePod(uid: string): void {
    this.removeAllocation(uid);
    this.pendingResizes = this.pendingResizes.filter((u) => u !== uid);
  }

  /** Forgets pods not in `uids` (kubelet: RemoveOrphanedPods). */
  retain(uids: ReadonlySet<string>): void {
    // removeAllocation only deletes, which a Map allows while it is walked: no copy of its keys.
    for (const uid of this.allocated.keys()) if (!uids.has(uid)) this.removeAllocation(uid);
    this.pendingResizes = this.pendingResizes.filter((u) => uids.has(u));
  }

  /** Whether the pod was admitted and holds an allocation (kubelet: HasPodAllocatedResources). */
  hasAllocatedResources(uid: string): boolean {
    return this.allocated.has(uid);
  }

  hasPendingResizes(): boolean {
    return this.pendingResizes.length > 0;
  }

  pendingResizeUIDs(): readonly string[] {
    return [...this.pendingResizes];
  }

  pushPendingResize(uid: string): void {
    if (this.pendingResizes.includes(uid)) return;
    this.pendingResizes.push(uid);
    this.sortPendingResizes();
  }

  /** Evaluates every queued resize in order; the deferred ones stay queued (kubelet: RetryPendingResizes). */
  retryPendingResizes(trigger: ResizeTrigger): void {
    const still: string[] = [];
    for (const uid of this.pendingResizes) {
      const pod = this.d.getPodByUID(uid);
      if (!pod || !this.allocated.has(uid) || isTerminalPhase(pod.status?.phase)) continue;
      const before = JSON.stringify(this.d.conditions.get(uid));
      let allocated = false;
      try {
        allocated = this.handlePodResourcesResize(pod);
      } catch (err) {
        this.d.logger.info('resize evaluation failed; retried later', {
          pod: podRef(pod),
          err: errorMessage(err),
        });
        still.push(uid);
        continue;
      }
      if (!allocated && this.d.conditions.isDeferred(uid)) still.push(uid);
      else if (allocated) this.d.logger.info('resize allocated', { pod: podRef(pod), trigger });
      if (allocated || JSON.stringify(this.d.conditions.get(uid)) !== before) this.d.triggerPodSync(pod);
    }
    this.pendingResizes = still;
  }

  /** Other active pods as allocated: what a resize or an admission is measured against. */
  allocatedPods(except: string): Pod[] {
    const out: Pod[] = [];
    for (const p of this.d.activePods()) {
      const uid = p.metadata.uid ?? '';
      if (uid !== except) out.push(updatePodFromAllocation(p, this.allocated.get(uid)).pod);
    }
    return out;
  }

  /** kubelet handlePodResourcesResize: true when the desired resources were allocated. */
  private handlePodResourcesResize(pod: Pod): boolean {
    const uid = pod.metadata.uid ?? '';
    if (!this.updatePodFromAllocation(pod).updated) {
      this.d.conditions.clearPending(uid);
      return false;
    }
    const verdict = admitResize(pod, this.allocatedPods(uid), this.d.node());
    const generation = podGeneration(pod);
    if (verdict.fit) {
      this.setAllocated(pod);
      this.d.conditions.clearPending(uid);
      // A fresh in-progress condition: errors of an earlier resize go, the generation is this one's.
      this.d.conditions.clearInProgress(uid);
      this.d.conditions.setInProgress(uid, '', '', generation);
      this.d.record(pod, 'Normal', ResizeStarted, podResizeStartedMsg(pod, generation));
      return true;
    }
    if (this.d.conditions.setPending(uid, verdict.reason, verdict.message, generation)) {
      const reason = verdict.reason === Infeasible ? ResizeInfeasible : ResizeDeferred;
      this.d.record(
        pod,
        'Warning',
        reason,
        podResizePendingMsg(pod, verdict.reason, verdict.message, generation),
      );
    }
    return false;
  }

  /** kubelet sortPendingResizes. Pods no longer known leave the queue. */
  private sortPendingResizes(): void {
    const pods = this.pendingResizes
      .map((uid) => this.d.getPodByUID(uid))
      .filter((p): p is Pod => p !== undefined);
    const increasing = new Map<Pod, boolean>();
    for (const p of pods) {
      const allocated = this.updatePodFromAllocation(p);
      let grows = false;
      try {
        grows = allocated.updated && resizeIncreasesRequests(p, allocated.pod);
      } catch {
        grows = true;
      }
      increasing.set(p, grows);
    }
    const pendingSince = (p: Pod) => this.d.conditions.pending(p.metadata.uid ?? '')?.lastTransitionTime;
    pods.sort((a, b) => {
      const ia = increasing.get(a)!;
      const ib = increasing.get(b)!;
      if (ia !== ib) return ia ? 1 : -1;
      const pa = a.spec.priority ?? 0;
      const pb = b.spec.priority ?? 0;
      if (pa !== pb) return pb - pa;
      const ga = getPodQOS(a) === 'Guaranteed';
      const gb = getPodQOS(b) === 'Guaranteed';
      if (ga !== gb) return ga ? -1 : 1;
      const ta = pendingSince(a);
      const tb = pendingSince(b);
      if (ta === undefined && tb === undefined) return 0;
      if (ta === undefined) return 1;
      if (tb === undefined) return -1;
      return ta < tb ? -1 : ta > tb ? 1 : 0;
    });
    this.pendingResizes = pods.map((p) => p.metadata.uid ?? '');
  }
}
