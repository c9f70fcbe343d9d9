/**
 * What a volume plugin hands the atomic writer (pkg/volume/util FileProjection), and the result shape of the
 * pure payload builders (configMap, secret, downwardAPI, projected).
 *
 * Builders never throw for a problem with the pod's references: they return `{ ok: false, message }` with the
 * kubelet's own wording, which the caller puts into `MountVolume.SetUp failed for volume "<name>" : <message>`.
 */

/** One file of a volume's content. */
export interface FileProjection {
  data: Buffer;
  /** Exact permission bits of the file (0-0o777), applied with chmod so the umask cannot change them. */
  mode: number;
  /** Owner uid of the file; unset leaves it owned by whoever writes it. */
  fsUser?: number;
}

/** Relative path (as the pod spec gives it) -> content. Iteration order is the order files were added. */
export type Payload = Map<string, FileProjection>;

export type PayloadResult =
  | { ok: true; payload: Payload }
  | {
      ok: false;
      /** The kubelet's message: one error as is, several as utilerrors.NewAggregate prints them. */
      message: string;
      /** The distinct underlying errors, in the order they were met. */
      errors: string[];
    };

/** A fetch of a referenced object that failed for a reason other than NotFound (its message). */
export interface FetchError {
  error: string;
}

export function isFetchError(v: unknown): v is FetchError {
  return typeof v === 'object' && v !== null && typeof (v as { error?: unknown }).error === 'string';
}

/** The API server's default for every `defaultMode` (0644). */
export const DEFAULT_MODE = 0o644;

/**
 * utilerrors.NewAggregate(errs).Error(): nothing for no errors, a single distinct message as is, several
 * distinct ones joined with ", " inside brackets (duplicates are printed once).
 */
export function aggregateMessage(errors: readonly string[]): string {
  const distinct = [...new Set(errors)];
  if (distinct.length <= 1) return distinct[0] ?? '';
  return `[${distinct.join(', ')}]`;
}

export function failure(errors: readonly string[]): PayloadResult {
  const distinct = [...new Set(errors)];
  return { ok: false, message: aggregateMessage(distinct), errors: distinct };
}

export function success(payload: Payload): PayloadResult {
  return { ok: true, payload };
}
