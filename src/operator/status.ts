/**
 * The VirtualNode status writer (the status half of the controller, apart from the spec half as
 * controller-runtime keeps them): conditions with observedGeneration and lastTransitionTime, the observed
 * node facts, written to the status subresource only when something other than the heartbeat changed.
 * Deciding the status is pure; `VirtualNodeStatusWriter` only compares and writes.
 */
import type { VirtualNode, VirtualNodeCondition, VirtualNodeStatus } from '../api/virtualnode.js';
import { canonicalJSON } from '../util/canonical.js';
import { memoByIdentity } from '../util/memo.js';
import type { Clock } from '../util/clock.js';
import type { VirtualNodeWriter } from './api.js';
import type { ManagedNodeObservation } from './managednode.js';

export type ConditionValue = Omit<VirtualNodeCondition, 'type'>;

/** What the controller wants the status to say; everything else in the stored status is kept. */
export interface StatusUpdate {
  ready: ConditionValue;
  /** Absent: the stored RuntimeReady condition is dropped (only Ready is reported). */
  runtimeReady?: ConditionValue;
  extra?: Omit<VirtualNodeStatus, 'conditions' | 'observedGeneration'>;
}

/** A spec that cannot start a node: Ready=False with `reason`, the runtime not started. */
export function notStartedStatus(reason: string, message: string): StatusUpdate {
  return {
    ready: { status: 'False', reason, message },
    runtimeReady: { status: 'Unknown', reason, message: 'not started' },
  };
}

/** Ready=False/Draining while the pods of a deleted VirtualNode go. */
export const drainingStatus: StatusUpdate = {
  ready: { status: 'False', reason: 'Draining', message: 'deleting the pods bound to this node' },
};

/**
 * The status of a served node from its observation. A start failure wins over everything; then
 * registration; then the node's own problems.
 */
export function observedStatus(
  nodeName: string,
  o: ManagedNodeObservation,
  startError: string | undefined,
  podCIDR: string | undefined,
): StatusUpdate {
  const ready: ConditionValue =
    startError !== undefined
      ? { status: 'False', reason: 'StartFailed', message: startError }
      : !o.registered
        ? { status: 'False', reason: 'Registering', message: 'registering the Node' }
        : o.problems.length > 0
          ? { status: 'False', reason: 'NodeNotReady', message: o.problems.join(', ') }
          : { status: 'True', reason: 'NodeReady', message: 'the Node is registered and ready' };
  const runtimeReady: ConditionValue = o.runtimeReady
    ? {
        status: 'True',
        reason: 'RuntimeReady',
        message: `${o.runtime?.name ?? ''} ${o.runtime?.version ?? ''}`.trim(),
      }
    : { status: 'False', reason: 'RuntimeUnavailable', message: o.runtimeMessage ?? 'runtime not ready' };
  return {
    ready,
    runtimeReady,
    extra: {
      nodeName,
      internalIP: o.internalIP,
      lastHeartbeatTime: o.lastHeartbeatTime,
      runtime: o.runtime,
      pods: o.pods,
      ...(podCIDR ? { podCIDR } : {}),
    },
  };
}

/** RFC 3339 to the second, as the API server stores metav1.Time. */
const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * The status to store: the update over the stored status, conditions stamped with the object's
 * generation, and a condition's lastTransitionTime kept while its status stays the same.
 */
export function nextStatus(vn: VirtualNode, u: StatusUpdate, nowMs: number): VirtualNodeStatus {
  const now = rfc3339(nowMs);
  const generation = vn.metadata.generation;
  const old = vn.status?.conditions ?? [];
  const cond = (type: string, c: ConditionValue): VirtualNodeCondition => {
    const prev = old.find((x) => x.type === type);
    return {
      type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastTransitionTime: prev && prev.status === c.status ? (prev.lastTransitionTime ?? now) : now,
      observedGeneration: generation,
    };
  };
  const conditions = [cond('Ready', u.ready)];
  if (u.runtimeReady) conditions.push(cond('RuntimeReady', u.runtimeReady));
  return { ...(vn.status ?? {}), ...(u.extra ?? {}), observedGeneration: generation, conditions };
}

/**
 * Whether `next` differs from `stored` in anything but the heartbeat: heartbeat times move at every lease
 * renewal and alone do not justify a write more often than the status period.
 */
export function statusChanged(stored: VirtualNodeStatus | undefined, next: VirtualNodeStatus): boolean {
  return storedComparable(stored) !== comparable(next);
}

const comparable = (x: VirtualNodeStatus | undefined): string =>
  canonicalJSON({ ...(x ?? {}), lastHeartbeatTime: undefined });

/**
 * The stored status's comparable form, once per object: the informer keeps one object until the
 * VirtualNode changes, and each node's status round compares against it every 10 s.
 */
const storedForm = memoByIdentity((x: VirtualNodeStatus) => comparable(x));
const storedComparable = (x: VirtualNodeStatus | undefined): string => (x ? storedForm(x) : comparable(x));

/** The only writer of VirtualNode status. */
export class VirtualNodeStatusWriter {
  constructor(
    private readonly writer: VirtualNodeWriter,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  /** Writes the status when it changed; resolves whether a write was made. */
  async write(vn: VirtualNode, u: StatusUpdate): Promise<boolean> {
    const status = nextStatus(vn, u, this.clock.now());
    if (!statusChanged(vn.status, status)) return false;
    await this.writer.patchStatus(vn.metadata.name ?? '', status);
    return true;
  }
}
