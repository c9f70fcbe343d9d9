/**
 * Errors carry a kind so callers branch on it, never on message text (as virtual-kubelet's errdefs).
 */
export type ErrorKind =
  | 'NotFound'
  | 'AlreadyExists'
  | 'InvalidArgument'
  | 'Unavailable'
  | 'DeadlineExceeded'
  | 'Conflict'
  | 'Gone'
  | 'Forbidden'
  | 'Unimplemented'
  | 'Internal'
  | 'Unknown';

export class KindError extends Error {
  readonly kind: ErrorKind;
  readonly context: Record<string, unknown>;

  constructor(
    kind: ErrorKind,
    message: string,
    context: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = `${kind}Error`;
    this.kind = kind;
    this.context = context;
  }
}

export function errorKind(err: unknown): ErrorKind {
  return err instanceof KindError ? err.kind : 'Unknown';
}

export const isNotFound = (err: unknown): boolean => errorKind(err) === 'NotFound';
export const isUnavailable = (err: unknown): boolean => errorKind(err) === 'Unavailable';
export const isInvalidArgument = (err: unknown): boolean => errorKind(err) === 'InvalidArgument';
export const isUnimplemented = (err: unknown): boolean => errorKind(err) === 'Unimplemented';
export const isDeadlineExceeded = (err: unknown): boolean => errorKind(err) === 'DeadlineExceeded';

/** A readable message for any thrown value. */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
