/**
 * The runtime view of pods, rebuilt from the runtime alone (kubelet: GetPodStatus, GetPods,
 * toKubeContainerStatus, determinePodSandboxIPs). Sandboxes and containers are found by the kubelet's labels,
 * never by memory, so a restarted operator sees exactly what the previous one left.
 *
 * Every lookup is scoped to one node by ManagedByLabel: a runtime shared by several VirtualNodes shows each
 * node only its own objects.
 */
import {
  ContainerHashAnnotation,
  ContainerNameLabel,
  ContainerRestartCountAnnotation,
  ManagedByLabel,
  PodNameLabel,
  PodNamespaceLabel,
  PodUIDLabel,
} from '../../../runtime/labels.js';
import type {
  Container as RuntimeContainer,
  ContainerStatus as RuntimeContainerStatus,
  PodSandbox,
  PodSandboxStatus,
  Runtime,
} from '../../../runtime/types.js';
import { isNotFound } from '../../../util/errors.js';
import { exact } from '../../../util/exact.js';
import { processInterner } from '../../../util/intern.js';
import {
  asContainerID,
  asPodUID,
  asSandboxID,
  type ContainerUser,
  type KubeContainerStatus,
  type RuntimePodStatus,
  type SandboxStatus,
} from '../../container/types.js';
import type { ListedContainer } from '../../pleg/events.js';
import { withTerminationMessage } from '../../podfiles/termination.js';
import { terminationMessageOf, type ContainerFileReader } from '../terminationmessage.js';
import { toKubeContainerResources } from '../containerconfig.js';
import type { RuntimePod } from '../../pleg/generic.js';

/** Epoch ms of a CRI nanosecond timestamp; undefined for the zero value (never happened). */
export function nsToMs(ns: bigint): number | undefined {
  if (ns <= 0n) return undefined;
  return Number(ns / 1_000_000n);
}

/** The pod IPs a sandbox reports: its IP, then the additional ones, empty ones dropped. */
export function sandboxIPs(status: Pick<PodSandboxStatus, 'network'>): string[] {
  if (!status.network) return [];
  return exact([status.network.ip, ...status.network.additionalIps].filter((ip) => ip !== ''));
}

export function toSandboxStatus(s: PodSandboxStatus): SandboxStatus {
  const id = asSandboxID(s.id);
  const ip = s.network ? s.network.ip : null;
  const netns = s.networkMode === 'NODE' ? 'node' : 'pod';
  const createdAt = nsToMs(s.createdAt);
  // The usual record (a creation time, one IP) as one literal, so its fields stay inside the object (the pod
  // cache holds one per pod).
  if (createdAt !== undefined && !(s.network && s.network.additionalIps.length > 0))
    return { id, state: s.state, attempt: s.metadata.attempt, ip, netns, createdAt };
  const out: SandboxStatus = { id, state: s.state, attempt: s.metadata.attempt, ip, netns };
  if (s.network && s.network.additionalIps.length > 0) out.additionalIPs = [...s.network.additionalIps];
  if (createdAt !== undefined) out.createdAt = createdAt;
  return out;
}

function restartCountOf(annotations: Record<string, string>): number {
  const n = Number.parseInt(annotations[ContainerRestartCountAnnotation] ?? '', 10);
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/** The identity the runtime reports (CRI ContainerUser), as the kubelet keeps it. */
function toKubeContainerUser(l: { uid: number; gid: number; supplementalGroups: number[] }): ContainerUser {
  return { linux: { uid: l.uid, gid: l.gid, supplementalGroups: [...l.supplementalGroups] } };
}

/** One container record of the runtime view (kubelet: toKubeContainerStatus). */
export function toContainerStatus(s: RuntimeContainerStatus, runtimeType: string): KubeContainerStatus {
  const id = asContainerID(s.id);
  const name = s.labels[ContainerNameLabel] ?? s.metadata.name;
  const { state, image, imageRef } = s;
  const restartCount = restartCountOf(s.annotations);
  const hash = s.annotations[ContainerHashAnnotation] ?? '';
  const sandboxID = asSandboxID(s.podSandboxId);
  const createdAt = nsToMs(s.createdAt);
  // A container past `created` has been started (or tried to be).
  const startedAt = state === 'created' ? undefined : nsToMs(s.startedAt);
  // Frozen and shared: the pod cache holds one per container, and most containers' are equal.
  const resources = s.resources && processInterner.value(toKubeContainerResources(s.resources));
  // Shared as well: the containers of a pod (and of its replicas) mostly run as the same user.
  const user = s.user?.linux && processInterner.value(toKubeContainerUser(s.user.linux));
  // The usual record, a running container, as one literal with no spread (see toSandboxStatus).
  if (state === 'running' && createdAt !== undefined && startedAt !== undefined && resources) {
    const running: KubeContainerStatus = {
      id,
      name,
      state,
      runtimeType,
      restartCount,
      hash,
      sandboxID,
      image,
      imageRef,
      createdAt,
      startedAt,
      resources,
    };
    // A runtime that reports the user (not containerd 1.6) gets one literal more with it.
    return user ? { ...running, user } : running;
  }
  const out: KubeContainerStatus = {
    id,
    name,
    state,
    runtimeType,
    restartCount,
    hash,
    sandboxID,
    image,
    imageRef,
  };
  if (createdAt !== undefined) out.createdAt = createdAt;
  if (startedAt !== undefined) out.startedAt = startedAt;
  if (resources) out.resources = resources;
  if (user) out.user = user;
  if (state === 'exited') {
    out.exitCode = s.exitCode;
    out.reason = s.reason;
    out.message = s.message;
    const finished = nsToMs(s.finishedAt);
    if (finished !== undefined) out.finishedAt = finished;
  }
  return out;
}

/** Newest first, by creation time (CRI nanoseconds, so ties within a millisecond still order). */
function byCreatedDesc<T extends { createdAt: bigint }>(a: T, b: T): number {
  return a.createdAt === b.createdAt ? 0 : a.createdAt > b.createdAt ? -1 : 1;
}

/**
 * `list` newest first, as a stable sort by byCreatedDesc would order it, without touching `list`. Runtimes
 * usually list in creation order (the simulated one always does), so one pass finds the list oldest first
 * and reverses it, where a sort compared every pair again at every relist.
 */
function newestFirst<T extends { createdAt: bigint }>(list: readonly T[]): T[] {
  let ascending = true;
  let descending = true;
  for (let i = 1; i < list.length && (ascending || descending); i++) {
    const a = list[i - 1]!.createdAt;
    const b = list[i]!.createdAt;
    // Strictly: equal times keep their listed order in a stable sort, which a reversal would not.
    if (a >= b) ascending = false;
    if (a < b) descending = false;
  }
  if (descending) return [...list];
  if (ascending) return [...list].reverse();
  return [...list].sort(byCreatedDesc);
}

/**
 * Everything the runtime has for one pod (kubelet: GetPodStatus). Objects removed between the listing and their
 * status call are skipped, as the kubelet does; any other runtime error rejects (the PLEG retries).
 */
export async function readPodStatus(
  runtime: Runtime,
  nodeName: string,
  runtimeType: string,
  uid: string,
  name: string,
  namespace: string,
  /** Reads termination messages of exited containers; without it, statuses carry only the runtime's message. */
  files?: ContainerFileReader,
): Promise<RuntimePodStatus> {
  const selector = { [PodUIDLabel]: uid, [ManagedByLabel]: nodeName };
  const listed = [...(await runtime.listPodSandbox({ labelSelector: selector }))].sort(byCreatedDesc);
  // Objects can go between the listing and their status call: skip those, as the kubelet does.
  const orMissing = async <T>(p: Promise<T>): Promise<T | undefined> => {
    try {
      return await p;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  const sandboxStatuses = await Promise.all(listed.map((sb) => orMissing(runtime.podSandboxStatus(sb.id))));
  const sandboxes: SandboxStatus[] = [];
  let ips: string[] = [];
  sandboxStatuses.forEach((st, idx) => {
    if (!st) return;
    sandboxes.push(toSandboxStatus(st));
    // Only the newest sandbox, and only while ready, gives the pod its IPs.
    if (idx === 0 && st.state === 'ready') ips = sandboxIPs(st);
  });

  const listedContainers = await runtime.listContainers({ labelSelector: selector });
  const statuses = await Promise.all(listedContainers.map((c) => orMissing(runtime.containerStatus(c.id))));
  const containers = await Promise.all(
    statuses
      .filter((st): st is RuntimeContainerStatus => st !== undefined)
      .sort(byCreatedDesc)
      .map(async (st) => {
        const out = toContainerStatus(st, runtimeType);
        if (files && st.state === 'exited') {
          out.message = withTerminationMessage(out.message, await terminationMessageOf(st, files));
        }
        return out;
      }),
  );
  return {
    uid: asPodUID(uid),
    name,
    namespace,
    sandboxes: exact(sandboxes),
    containers,
    ips,
  };
}

/** One pod's objects as this listing found them, newest first, before they become a RuntimePod. */
interface ListedPod {
  uid: string;
  name: string;
  namespace: string;
  sandboxes: PodSandbox[] | undefined;
  containers: RuntimeContainer[] | undefined;
}

const sandboxState = (sb: PodSandbox): ListedContainer['state'] =>
  sb.state === 'ready' ? 'running' : 'exited';

/**
 * Every pod of this node on the runtime, exited containers and sandboxes included (kubelet: GetPods(all)).
 * Pods are grouped by the pod UID label; sandboxes appear as ready = running, not ready = exited. Pods are
 * ordered by their newest sandbox, newest first.
 *
 * `memo` holds the pods of the previous call by UID: a pod listed again with the same name, sandboxes and
 * containers (ids and states, in order) is answered with that very object, and the memo is updated to this
 * listing. The PLEG lists every second while most pods stay as they were; without it each call built every
 * pod of the node anew.
 */
export async function listRuntimePods(
  runtime: Runtime,
  nodeName: string,
  memo?: Map<string, RuntimePod>,
  /** Only this pod's sandboxes and containers (kubelet: getPods with listOptions.podUID). */
  podUID?: string,
): Promise<RuntimePod[]> {
  const selector: Record<string, string> = { [ManagedByLabel]: nodeName };
  if (podUID) selector[PodUIDLabel] = podUID;
  const [sandboxes, containers] = await Promise.all([
    runtime.listPodSandbox({ labelSelector: selector }),
    runtime.listContainers({ labelSelector: selector }),
  ]);
  const pods = new Map<string, ListedPod>();
  // Already in order: a pod is added at its newest sandbox, in newest-first order, and pods with no sandbox
  // after all others, as a stable sort by their newest sandbox would place them.
  for (const sb of newestFirst(sandboxes)) {
    const uid = sb.labels[PodUIDLabel] ?? sb.metadata.uid;
    if (!uid) continue;
    const p = pods.get(uid);
    if (!p) {
      const name = sb.labels[PodNameLabel] ?? sb.metadata.name;
      const namespace = sb.labels[PodNamespaceLabel] ?? sb.metadata.namespace;
      pods.set(uid, { uid, name, namespace, sandboxes: [sb], containers: undefined });
    } else if (p.sandboxes) p.sandboxes.push(sb);
    else p.sandboxes = [sb];
  }
  for (const c of newestFirst(containers)) {
    const uid = c.labels[PodUIDLabel];
    if (!uid) continue;
    const p = pods.get(uid);
    if (!p) {
      const name = c.labels[PodNameLabel] ?? '';
      const namespace = c.labels[PodNamespaceLabel] ?? '';
      pods.set(uid, { uid, name, namespace, sandboxes: undefined, containers: [c] });
    } else if (p.containers) p.containers.push(c);
    else p.containers = [c];
  }
  const out: RuntimePod[] = [];
  for (const p of pods.values()) {
    const before = memo?.get(p.uid);
    const pod = before && listedAs(before, p) ? before : runtimePod(p);
    out.push(pod);
    if (memo && pod !== before) memo.set(p.uid, pod);
  }
  if (memo) for (const uid of memo.keys()) if (!pods.has(uid)) memo.delete(uid);
  return out;
}

function runtimePod(p: ListedPod): RuntimePod {
  return {
    uid: asPodUID(p.uid),
    name: p.name,
    namespace: p.namespace,
    containers: p.containers ? p.containers.map((c) => ({ id: c.id, state: c.state })) : [],
    sandboxes: p.sandboxes ? p.sandboxes.map((sb) => ({ id: sb.id, state: sandboxState(sb) })) : [],
  };
}

/** Whether `pod` is what `p` lists: the same name, and the same ids and states in the same order. */
function listedAs(pod: RuntimePod, p: ListedPod): boolean {
  if (pod.name !== p.name || pod.namespace !== p.namespace) return false;
  const sbs = p.sandboxes ?? [];
  const cs = p.containers ?? [];
  if (pod.sandboxes.length !== sbs.length || pod.containers.length !== cs.length) return false;
  for (let i = 0; i < sbs.length; i++) {
    const a = pod.sandboxes[i]!;
    const b = sbs[i]!;
    if (a.id !== b.id || a.state !== sandboxState(b)) return false;
  }
  for (let i = 0; i < cs.length; i++) {
    const a = pod.containers[i]!;
    const b = cs[i]!;
    if (a.id !== b.id || a.state !== b.state) return false;
  }
  return true;
}
