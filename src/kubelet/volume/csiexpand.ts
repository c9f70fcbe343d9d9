/**
 * Node expansion of a CSI volume (kubelet: the NodeExpander of pkg/volume/util/operationexecutor with
 * RecoverVolumeExpansionFailure, and the CSI plugin's expander.go). After the external resizer has grown the
 * volume and the PersistentVolume, the claim's status says the node must grow the file system
 * (`allocatedResourceStatuses.storage: NodeResizePending`); the node marks it NodeResizeInProgress, calls
 * NodeExpandVolume with the allocated size, then records the new capacity and clears the status. A failure
 * leaves a NodeResizeError condition; one the driver calls final (InvalidArgument, OutOfRange, NotFound), or
 * any failure after an earlier final one while the user asks for another size, marks it NodeResizeInfeasible,
 * from which the user recovers by asking for a size the volume can have. Pure.
 */
import { quantityValue } from '../../util/quantity.js';

/** A failed CSI call as the expander reads it: the gRPC code's Go name, when there is one. */
export interface CSICallErrorLike {
  code?: string | undefined;
  message: string;
}

export const NodeResizePending = 'NodeResizePending';
export const NodeResizeInProgress = 'NodeResizeInProgress';
export const NodeResizeInfeasible = 'NodeResizeInfeasible';
/** Skips node expansion of a ReadWriteMany claim already at its size (volumetypes.NodeExpansionNotRequired). */
export const NodeExpansionNotRequiredAnnotation = 'volume.kubernetes.io/node-expansion-not-required';

/** The claim's condition types the resize flow owns (knownResizeConditions). */
const RESIZE_CONDITIONS = ['FileSystemResizePending', 'Resizing', 'ControllerResizeError', 'NodeResizeError'];

export interface ClaimCondition {
  type: string;
  status: string;
  lastTransitionTime?: string;
  message?: string;
  [k: string]: unknown;
}

/** core/v1 PersistentVolumeClaim, the fields node expansion reads. */
export interface ExpandableClaim {
  metadata: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  spec: { volumeName?: string; accessModes?: string[]; resources?: { requests?: Record<string, string> } };
  status?: {
    capacity?: Record<string, string>;
    allocatedResources?: Record<string, string>;
    allocatedResourceStatuses?: Record<string, string>;
    conditions?: ClaimCondition[];
  };
}

export type NodeExpansionDecision =
  /** The PV is no bigger than the claim's capacity: nothing to do. */
  | { action: 'none' }
  /** The pod mounts the claim read-only: the kubelet does not grow it (FileSystemResizeFailed). */
  | { action: 'readOnly' }
  /** The claim's status does not ask this node to expand (the resizer has not finished, or it failed). */
  | { action: 'notAllowed'; resizeStatus: string }
  /** The claim already shows the size (ReadWriteMany grown elsewhere, or an old resizer): nothing to call. */
  | { action: 'assumeDone' }
  | {
      action: 'expand';
      /** The size to ask NodeExpandVolume for, as a quantity and in bytes. */
      newSize: string;
      newSizeBytes: number;
      /** The claim is marked NodeResizeInProgress first, and finished with the new capacity after. */
      markInProgress: boolean;
      /** A failure marks the claim NodeResizeInfeasible (the user asked another size after a final error). */
      infeasibleOnFailure: boolean;
    };

function bytes(q: string | undefined): number | undefined {
  if (q === undefined) return undefined;
  try {
    return quantityValue(q);
  } catch {
    return undefined;
  }
}

/**
 * runPreCheck and expandVolumeDuringMount's size checks, in one decision. `failedFinalBefore`: this volume's
 * last expansion ended with a final error (the kubelet keeps it in its actual state of the world).
 */
export function nodeExpansionDecision(o: {
  claim: ExpandableClaim;
  pvCapacity: string | undefined;
  readOnly: boolean;
  failedFinalBefore: boolean;
}): NodeExpansionDecision {
  const status = o.claim.status ?? {};
  const statusCap = bytes(status.capacity?.storage) ?? 0;
  const pvCap = bytes(o.pvCapacity);
  if (pvCap === undefined || statusCap >= pvCap) return { action: 'none' };
  if (o.readOnly) return { action: 'readOnly' };
  const resizeStatus = status.allocatedResourceStatuses?.storage ?? '';
  const allocated = status.allocatedResources?.storage;
  // Recovery: the resizer's allocated size is what the node grows to (an old resizer sets neither).
  const newSize = allocated ?? o.pvCapacity!;
  const newSizeBytes = bytes(newSize) ?? pvCap;
  const specCap = bytes(o.claim.spec.resources?.requests?.storage);
  const infeasibleOnFailure = specCap !== newSizeBytes && o.failedFinalBefore;
  const alreadyUpdated = statusCap >= newSizeBytes && resizeStatus === '';
  const rwx = (o.claim.spec.accessModes ?? []).includes('ReadWriteMany');
  const notRequired = o.claim.metadata.annotations?.[NodeExpansionNotRequiredAnnotation] !== undefined;
  if (alreadyUpdated && rwx && !notRequired) {
    return { action: 'expand', newSize, newSizeBytes, markInProgress: false, infeasibleOnFailure };
  }
  if (resizeStatus === NodeResizePending || resizeStatus === NodeResizeInProgress) {
    return { action: 'expand', newSize, newSizeBytes, markInProgress: !alreadyUpdated, infeasibleOnFailure };
  }
  if (alreadyUpdated) return { action: 'assumeDone' };
  return { action: 'notAllowed', resizeStatus };
}

/** isInfeasibleError: the driver's codes that no retry will change. */
export function isInfeasibleCode(code: string | undefined): boolean {
  return code === 'InvalidArgument' || code === 'OutOfRange' || code === 'NotFound';
}

function mergeResizeConditions(
  old: readonly ClaimCondition[],
  add: readonly ClaimCondition[],
  keepOld: boolean,
): ClaimCondition[] {
  const out: ClaimCondition[] = [];
  const pending = new Map(add.map((c) => [c.type, c]));
  for (const c of old) {
    if (!RESIZE_CONDITIONS.includes(c.type)) {
      out.push(c);
      continue;
    }
    const n = pending.get(c.type);
    if (n) {
      out.push(n.status !== c.status ? n : c);
      pending.delete(c.type);
    } else if (keepOld) out.push(c);
  }
  return [...out, ...pending.values()];
}

/** A merge patch of the claim's status (with its resourceVersion when the kubelet checks it). */
export interface ClaimStatusPatch {
  metadata?: { resourceVersion: string };
  status: Record<string, unknown>;
}

/** MarkNodeExpansionInProgress. */
export function markInProgressPatch(claim: ExpandableClaim): ClaimStatusPatch {
  return {
    ...(claim.metadata.resourceVersion
      ? { metadata: { resourceVersion: claim.metadata.resourceVersion } }
      : {}),
    status: { allocatedResourceStatuses: { storage: NodeResizeInProgress } },
  };
}

/** MarkNodeExpansionFinishedWithRecovery: the new capacity, the storage status and resize conditions gone. */
export function markFinishedPatch(claim: ExpandableClaim, newSize: string): ClaimStatusPatch {
  return {
    ...(claim.metadata.resourceVersion
      ? { metadata: { resourceVersion: claim.metadata.resourceVersion } }
      : {}),
    status: {
      capacity: { storage: newSize },
      allocatedResourceStatuses: { storage: null },
      conditions: mergeResizeConditions(claim.status?.conditions ?? [], [], false),
    },
  };
}

/** MarkNodeExpansionFailedCondition, or MarkNodeExpansionInfeasible when `infeasible`. */
export function markFailedPatch(
  claim: ExpandableClaim,
  err: string,
  infeasible: boolean,
  nowISO: string,
): ClaimStatusPatch {
  const condition: ClaimCondition = {
    type: 'NodeResizeError',
    status: 'True',
    lastTransitionTime: nowISO,
    message: `failed to expand pvc with ${err}`,
  };
  return {
    status: {
      ...(infeasible ? { allocatedResourceStatuses: { storage: NodeResizeInfeasible } } : {}),
      conditions: mergeResizeConditions(claim.status?.conditions ?? [], [condition], true),
    },
  };
}

/** Whether a NodeExpandVolume error is final for RecoverVolumeExpansionFailure (not an in-use precondition). */
export function expansionFailure(err: CSICallErrorLike): { infeasible: boolean; inUse: boolean } {
  return { infeasible: isInfeasibleCode(err.code), inUse: err.code === 'FailedPrecondition' };
}
