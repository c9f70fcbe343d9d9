/**
 * What a SyncPod / KillPod did, action by action (kubelet: kubecontainer.SyncResult and PodSyncResult).
 * The StartContainer entries feed the reason cache; the aggregate error tells the pod worker to back off.
 */
import { KindError, type ErrorKind } from '../../../util/errors.js';
import type { ContainerSyncResult } from '../../reasoncache.js';

export type SyncAction =
  | 'StartContainer'
  | 'KillContainer'
  | 'RemoveContainer'
  | 'InitContainer'
  | 'CreatePodSandbox'
  | 'ConfigPodSandbox'
  | 'KillPodSandbox'
  | 'RemovePodSandbox'
  | 'ResizePodInPlace';

/** kubecontainer's error names, as they appear in waiting reasons and sync results. */
export type SyncErrorReason =
  | 'CrashLoopBackOff'
  | 'ImagePullBackOff'
  | 'ErrImagePull'
  | 'ErrImageNeverPull'
  | 'RegistryUnavailable'
  | 'SignatureValidationFailed'
  | 'InvalidImageName'
  | 'ImageInspectError'
  | 'CreateContainerConfigError'
  | 'CreateContainerError'
  | 'RunContainerError'
  | 'PostStartHookError'
  | 'KillContainerError'
  | 'RemoveContainerError'
  | 'CreatePodSandboxError'
  | 'ConfigPodSandboxError'
  | 'KillPodSandboxError'
  | 'RemovePodSandboxError'
  | 'ResizePodInPlaceError';

export interface SyncResult extends ContainerSyncResult {
  action: SyncAction;
  /** A container name; the pod (`name_ns(uid)`) for CreatePodSandbox; a pod UID / sandbox ID otherwise. */
  target: string;
  /** The failure's reason; absent on success. */
  error?: SyncErrorReason;
  message?: string;
}

export interface PodSyncResult {
  results: SyncResult[];
  /** Set when any action failed, or the sync stopped on an error of its own (e.g. an invalid pod). */
  error?: KindError;
}

/** The aggregate failure of a sync; `results` are the failed entries. */
export class PodSyncError extends KindError {
  readonly failures: readonly SyncResult[];
  constructor(
    kind: ErrorKind,
    message: string,
    failures: readonly SyncResult[],
    context: Record<string, unknown> = {},
  ) {
    super(kind, message, context);
    this.failures = failures;
  }
}

/** Collects results as SyncPod goes, then sums them up. */
export class SyncResultBuilder {
  readonly results: SyncResult[] = [];
  private syncError: KindError | undefined;

  add(action: SyncAction, target: string): SyncResult {
    const r: SyncResult = { action, target };
    this.results.push(r);
    return r;
  }

  /** An error of the sync itself, not tied to one action (kubelet: PodSyncResult.Fail). */
  fail(err: KindError): void {
    this.syncError ??= err;
  }

  addAll(other: PodSyncResult): void {
    this.results.push(...other.results);
    if (other.error && !(other.error instanceof PodSyncError)) this.fail(other.error);
  }

  /** The kubelet's aggregate: one `failed to "<action>" for "<target>" with <reason>: "<message>"` per failure. */
  build(context: Record<string, unknown> = {}): PodSyncResult {
    const failures = this.results.filter((r) => r.error);
    const parts = failures.map(
      (r) =>
        `failed to ${JSON.stringify(r.action)} for ${JSON.stringify(r.target)} with ${r.error}: ${JSON.stringify(r.message ?? '')}`,
    );
    if (this.syncError) parts.push(this.syncError.message);
    if (parts.length === 0) return { results: this.results };
    const message = parts.length === 1 ? parts[0]! : `[${parts.join(', ')}]`;
    const kind = this.syncError?.kind ?? 'Unknown';
    return { results: this.results, error: new PodSyncError(kind, message, failures, context) };
  }
}

export function failResult(r: SyncResult, error: SyncErrorReason, message: string): void {
  r.error = error;
  r.message = message;
}
