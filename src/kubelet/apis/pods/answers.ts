/**
 * The answers of the kubelet's pods API (pkg/kubelet/apis/pods, feature gate PodsAPI, beta and on in v1.37),
 * built from the kubelet's state without I/O: the pod manager's pods, each with the status the status manager
 * holds for it. The gRPC shell (../server.ts) sends them; `encode` turns a pod into its protobuf bytes.
 *
 * As the kubelet's server: ListPods and the start of WatchPods are the pod manager's pods sorted by UID;
 * GetPod looks a pod up by UID (NotFound otherwise); every call is refused FailedPrecondition until the pod
 * source has been listed once (sourcesReady). A pod the status manager has no status for yet carries the
 * API's status, Pending when it has no phase, and never a Ready condition that is True: the kubelet has not
 * checked it.
 *
 * Watch events come from the status manager: each status it stores is MODIFIED (ADDED the first time, unless
 * the pod is being deleted), and a finished pod (terminatePod) is DELETED, carrying its name, namespace and
 * UID only. A watcher that falls `WATCH_CLIENT_BUFFER` events behind is dropped (ResourceExhausted), as the
 * kubelet drops a client whose channel is full.
 */
import type { Pod, PodCondition, PodStatus } from '../../../api/core.js';
import type { Answer } from '../podresources/answers.js';

/** The socket's directory under the node's root (kubelet: DefaultKubeletPodsAPIDirName). */
export const PODS_API_DIR = 'pods-api';
/** The socket's file name (kubelet: pods.Socket plus `.sock`). */
export const PODS_API_SOCKET = 'pods-api.sock';
/** The kubelet's rate limit on the unary calls of this server (pods.DefaultQPS, DefaultBurstTokens). */
export const PODS_API_QPS = 100;
export const PODS_API_BURST = 10;
/** How many events one watcher may have waiting before it is dropped (the kubelet's client channel). */
export const WATCH_CLIENT_BUFFER = 100;

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'INITIAL_SYNC_COMPLETE';

/** A watch event before encoding: the pod as it is to be sent (none for INITIAL_SYNC_COMPLETE). */
export interface PodWatchEvent {
  type: WatchEventType;
  pod?: Pod;
}

/** What the answers read of the kubelet. */
export interface KubeletPodsAPIView {
  /** Every pod the pod manager holds. */
  pods(): readonly Pod[];
  podByUID(uid: string): Pod | undefined;
  /** The status manager's cached status for a UID (read only). */
  cachedStatus(uid: string): Readonly<PodStatus> | undefined;
  /** Whether the pod source has been listed once (kubelet: sourcesReady.AllReady). */
  sourcesReady(): boolean;
}

const INITIALIZING: Answer<never> = {
  error: { code: 'FailedPrecondition', message: 'Kubelet is initializing' },
};

/**
 * The status to send with a pod: the status manager's, else the API's with Pending for no phase and a True
 * Ready condition turned False (ContainersNotReady), since this kubelet has not yet seen the pod ready.
 */
export function effectivePodStatus(pod: Pod, cached: Readonly<PodStatus> | undefined): PodStatus {
  if (cached) return cached as PodStatus;
  const status: PodStatus = { ...(pod.status ?? {}) };
  if (!status.phase) status.phase = 'Pending';
  const conditions = status.conditions;
  if (conditions) {
    const i = conditions.findIndex((c) => c.type === 'Ready' && c.status === 'True');
    if (i >= 0) {
      const notReady: PodCondition = {
        ...conditions[i]!,
        status: 'False',
        reason: 'ContainersNotReady',
        message: 'Kubelet is initializing pod containers',
      };
      status.conditions = conditions.map((c, j) => (j === i ? notReady : c));
    }
  }
  return status;
}

/** The pod as the API serves it: the pod manager's object with the effective status (a new object). */
export function podWithStatus(view: KubeletPodsAPIView, pod: Pod): Pod {
  return { ...pod, status: effectivePodStatus(pod, view.cachedStatus(pod.metadata.uid ?? '')) };
}

function byUID(a: Pod, b: Pod): number {
  const x = a.metadata.uid ?? '';
  const y = b.metadata.uid ?? '';
  return x < y ? -1 : x > y ? 1 : 0;
}

/** ListPods: every pod of the pod manager, sorted by UID, with its effective status. */
export function listPods(view: KubeletPodsAPIView): Answer<Pod[]> {
  if (!view.sourcesReady()) return INITIALIZING;
  return { ok: [...view.pods()].sort(byUID).map((p) => podWithStatus(view, p)) };
}

/** GetPod: one pod by UID. */
export function getPod(view: KubeletPodsAPIView, uid: string | undefined): Answer<Pod> {
  if (!view.sourcesReady()) return INITIALIZING;
  const pod = view.podByUID(uid ?? '');
  if (!pod) return { error: { code: 'NotFound', message: `pod with UID ${uid ?? ''} not found` } };
  return { ok: podWithStatus(view, pod) };
}

/** What a new watcher is sent first: every pod as ADDED, then INITIAL_SYNC_COMPLETE. */
export function initialWatchEvents(view: KubeletPodsAPIView): Answer<PodWatchEvent[]> {
  const listed = listPods(view);
  if ('error' in listed) return listed;
  return {
    ok: [
      ...listed.ok.map((pod): PodWatchEvent => ({ type: 'ADDED', pod })),
      { type: 'INITIAL_SYNC_COMPLETE' },
    ],
  };
}

/**
 * The event for a status the status manager stored (kubelet: OnPodUpdated, OnPodRemoved): DELETED with the
 * pod's identity alone when the pod is finished, else ADDED for its first status (not while being deleted)
 * and MODIFIED after.
 */
export function statusStoredEvent(
  pod: Pod,
  status: Readonly<PodStatus>,
  firstStatus: boolean,
  podIsFinished: boolean,
): PodWatchEvent {
  if (podIsFinished) {
    const { name, namespace, uid } = pod.metadata;
    return {
      type: 'DELETED',
      pod: {
        metadata: {
          ...(name !== undefined ? { name } : {}),
          ...(namespace !== undefined ? { namespace } : {}),
          ...(uid !== undefined ? { uid } : {}),
        },
      } as Pod,
    };
  }
  const added = firstStatus && !pod.metadata.deletionTimestamp;
  return { type: added ? 'ADDED' : 'MODIFIED', pod: { ...pod, status: status as PodStatus } };
}

/**
 * The watchers of one node's pods API, each with its own queue: an event goes to every queue, and a watcher
 * whose queue is full is dropped (its `onDrop` is called once) instead of holding the others back.
 */
export class PodWatchBroadcaster {
  private readonly watchers = new Map<number, Watcher>();
  private next = 0;

  constructor(private readonly buffer: number = WATCH_CLIENT_BUFFER) {}

  /** Adds a watcher; `deliver` is called as events come. Returns its unregister function. */
  register(w: Watcher): () => void {
    const id = this.next++;
    this.watchers.set(id, w);
    return () => this.watchers.delete(id);
  }

  get size(): number {
    return this.watchers.size;
  }

  /** Queues the event for every watcher; those whose queue is full are dropped. */
  broadcast(event: PodWatchEvent): void {
    for (const [id, w] of this.watchers) {
      if (w.pending() >= this.buffer) {
        this.watchers.delete(id);
        w.onDrop();
        continue;
      }
      w.deliver(event);
    }
  }

  /** Forgets every watcher (the server stops): each is told as if dropped. */
  closeAll(): void {
    for (const w of this.watchers.values()) w.onDrop();
    this.watchers.clear();
  }
}

export interface Watcher {
  /** Events handed over and not yet written out. */
  pending(): number;
  deliver(event: PodWatchEvent): void;
  onDrop(): void;
}
