/**
 * What a chaos scenario remembers of every pod and Node it watched, to judge afterwards what happened
 * between two looks at the API: every container ID a pod ever showed, every restart count, every Ready
 * change, every status change with its time, and every Ready condition of every Node. Fed by ResumingWatch.
 */
import type { ContainerStatus, Pod } from '../../../src/api/core.js';
import type { Node } from '../../../src/api/node.js';
import {
  ContainerReasonStatusUnknown,
  MessageContainerUnknown,
} from '../../../src/kubelet/status/convert.js';
import type { WatchEventType } from './watch.js';

/** One pod's history, keyed by UID (a name may be reused). */
export interface PodHistory {
  name: string;
  uid: string;
  node: string;
  firstSeenAt: number;
  /** Container name -> every ID seen in a status while that container's restart count was 0. */
  idsAtZero: Map<string, Set<string>>;
  /** Container name -> when a status first showed it with an ID. */
  firstIdAt: Map<string, number>;
  /** Container name -> the highest restart count seen. */
  restarts: Map<string, number>;
  /**
   * Container name -> how many of its count's rises were the runtime's own loss, not a restart: the pod was
   * being deleted and the rise came with the state the kubelet gives a container its runtime reports UNKNOWN
   * after it ran (terminated, ContainerStatusUnknown, no container ID). containerd 1.6 reports that for a
   * container whose SIGKILL lands while containerd itself goes down.
   */
  lostByRuntime: Map<string, number>;
  readyAt?: number;
  /** Ready went from True to anything else while the pod was not being deleted. */
  readyDrops: number;
  deletingAt?: number;
  goneAt?: number;
  statusChanges: number;
  lastStatusChangeAt: number;
  last: Pod;
  lastStatusJSON: string;
}

export const podIsReady = (p: Pod | undefined): boolean =>
  p?.status?.phase === 'Running' &&
  (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

const allStatuses = (p: Pod): ContainerStatus[] => [
  ...(p.status?.initContainerStatuses ?? []),
  ...(p.status?.containerStatuses ?? []),
];

/** The status the kubelet gives a container that ran and that its runtime now reports UNKNOWN. */
const isLostByRuntime = (c: ContainerStatus): boolean => {
  const t = c.state?.terminated;
  return (
    t?.reason === ContainerReasonStatusUnknown && t.message === MessageContainerUnknown && !t.containerID
  );
};

/** Strips the runtime prefix: `sim://abc` -> `abc`. */
export const bareID = (id: string): string => id.replace(/^[a-z]+:\/\//, '');

export class PodLedger {
  readonly pods = new Map<string, PodHistory>();
  /** Every status change (not the first sight of a pod), in arrival order. */
  readonly changes: { at: number; name: string }[] = [];

  /** A ResumingWatch handler. */
  readonly observe = (type: WatchEventType, pod: Pod, at: number): void => {
    const uid = pod.metadata.uid ?? pod.metadata.name ?? '';
    let h = this.pods.get(uid);
    const statusJSON = JSON.stringify(pod.status ?? {});
    if (!h) {
      h = {
        name: pod.metadata.name ?? '',
        uid,
        node: pod.spec?.nodeName ?? '',
        firstSeenAt: at,
        idsAtZero: new Map(),
        firstIdAt: new Map(),
        restarts: new Map(),
        lostByRuntime: new Map(),
        readyDrops: 0,
        statusChanges: 0,
        lastStatusChangeAt: at,
        last: pod,
        lastStatusJSON: statusJSON,
      };
      this.pods.set(uid, h);
    } else if (statusJSON !== h.lastStatusJSON) {
      h.statusChanges++;
      h.lastStatusChangeAt = at;
      this.changes.push({ at, name: h.name });
    }
    const wasReady = podIsReady(h.last);
    if (type === 'DELETED') {
      h.goneAt ??= at;
      return;
    }
    if (pod.metadata.deletionTimestamp) h.deletingAt ??= at;
    if (podIsReady(pod)) h.readyAt ??= at;
    else if (wasReady && h.deletingAt === undefined) h.readyDrops++;
    for (const c of allStatuses(pod)) {
      const before = h.restarts.get(c.name) ?? 0;
      const count = c.restartCount ?? 0;
      if (count === before + 1 && h.deletingAt !== undefined && isLostByRuntime(c))
        h.lostByRuntime.set(c.name, (h.lostByRuntime.get(c.name) ?? 0) + 1);
      h.restarts.set(c.name, Math.max(before, count));
      if (c.containerID && !h.firstIdAt.has(c.name)) h.firstIdAt.set(c.name, at);
      if (c.containerID && (c.restartCount ?? 0) === 0) {
        let ids = h.idsAtZero.get(c.name);
        if (!ids) h.idsAtZero.set(c.name, (ids = new Set()));
        ids.add(bareID(c.containerID));
      }
    }
    h.last = pod;
    h.lastStatusJSON = statusJSON;
  };

  /** `pod/container: id, id` for every container that showed two IDs while never restarted. */
  createdTwice(): string[] {
    const out: string[] = [];
    for (const h of this.pods.values())
      for (const [c, ids] of h.idsAtZero)
        if (ids.size > 1) out.push(`${h.name}/${c}: ${[...ids].map((i) => i.slice(0, 12)).join(', ')}`);
    return out;
  }

  /**
   * `pod/container: n` for every container whose restart count rose above 0 for more than the runtime's own
   * losses (`lostByRuntime`): n counts the rises left.
   */
  restarted(): string[] {
    const out: string[] = [];
    for (const h of this.pods.values())
      for (const [c, n] of h.restarts) {
        const left = n - (h.lostByRuntime.get(c) ?? 0);
        if (left > 0) out.push(`${h.name}/${c}: ${left}`);
      }
    return out;
  }

  /** `pod/container: n` for every container of a deleted pod whose count rose because its runtime lost it. */
  lostByRuntime(): string[] {
    const out: string[] = [];
    for (const h of this.pods.values())
      for (const [c, n] of h.lostByRuntime) out.push(`${h.name}/${c}: ${n}`);
    return out;
  }

  readyDropped(): string[] {
    return [...this.pods.values()].filter((h) => h.readyDrops > 0).map((h) => `${h.name}: ${h.readyDrops}`);
  }

  lastChangeAt(): number {
    return this.changes.length ? this.changes[this.changes.length - 1]!.at : 0;
  }

  changesBetween(from: number, to: number): { at: number; name: string }[] {
    return this.changes.filter((c) => c.at >= from && c.at < to);
  }

  byName(name: string): PodHistory | undefined {
    let found: PodHistory | undefined;
    for (const h of this.pods.values())
      if (h.name === name && (!found || h.firstSeenAt > found.firstSeenAt)) found = h;
    return found;
  }
}

export interface ReadySample {
  at: number;
  status: string;
  reason?: string;
}

/** Every Ready condition each Node showed, in order (a repeat of the same status is not recorded). */
export class NodeLedger {
  readonly nodes = new Map<string, ReadySample[]>();

  readonly observe = (type: WatchEventType, node: Node, at: number): void => {
    if (type === 'DELETED') return;
    const name = node.metadata.name ?? '';
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    if (!ready) return;
    let samples = this.nodes.get(name);
    if (!samples) this.nodes.set(name, (samples = []));
    if (samples[samples.length - 1]?.status !== ready.status)
      samples.push({ at, status: ready.status, reason: ready.reason });
  };

  /** `node: status (reason) at +ms` for every time a Node that had been Ready was seen not Ready. */
  notReadyAfterReady(names: readonly string[], since = 0): string[] {
    const out: string[] = [];
    for (const name of names) {
      let wasReady = false;
      for (const s of this.nodes.get(name) ?? []) {
        if (s.status === 'True') wasReady = true;
        else if (wasReady && s.at >= since) out.push(`${name}: ${s.status} (${s.reason ?? ''})`);
      }
    }
    return out;
  }

  samples(name: string): ReadySample[] {
    return this.nodes.get(name) ?? [];
  }
}
