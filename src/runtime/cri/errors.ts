/**
 * gRPC status -> KindError for CRI calls. Pure; the message keeps the runtime's own words (an image pull
 * failure must reach the pod's status as containerd phrased it).
 */
import { KindError, type ErrorKind } from '../../util/errors.js';

/** gRPC's status code names by number (the same in every gRPC implementation; grpc-js loads lazily). */
const GRPC_CODE_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;
const GrpcStatus = Object.fromEntries(GRPC_CODE_NAMES.map((name, code) => [name, code])) as Record<
  (typeof GRPC_CODE_NAMES)[number],
  number
>;

/** The parts of a grpc-js ServiceError this module reads. */
export interface GrpcErrorLike {
  code?: number;
  details?: string;
  message?: string;
}

const CODE_TO_KIND: Partial<Record<number, ErrorKind>> = {
  [GrpcStatus.CANCELLED]: 'Unavailable',
  [GrpcStatus.UNKNOWN]: 'Unknown',
  [GrpcStatus.INVALID_ARGUMENT]: 'InvalidArgument',
  [GrpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [GrpcStatus.NOT_FOUND]: 'NotFound',
  [GrpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
  [GrpcStatus.PERMISSION_DENIED]: 'Forbidden',
  [GrpcStatus.RESOURCE_EXHAUSTED]: 'Unavailable',
  [GrpcStatus.FAILED_PRECONDITION]: 'Conflict',
  [GrpcStatus.ABORTED]: 'Conflict',
  [GrpcStatus.OUT_OF_RANGE]: 'InvalidArgument',
  [GrpcStatus.UNIMPLEMENTED]: 'Unimplemented',
  [GrpcStatus.INTERNAL]: 'Internal',
  [GrpcStatus.UNAVAILABLE]: 'Unavailable',
  [GrpcStatus.DATA_LOSS]: 'Internal',
  [GrpcStatus.UNAUTHENTICATED]: 'Forbidden',
};

/** containerd 1.6 refuses a duplicate (name, attempt) with UNKNOWN "... name ... is reserved for ...". */
const RESERVED_NAME = /is reserved for/;

export function grpcCodeName(code: number | undefined): string {
  if (code === undefined) return 'NONE';
  return GRPC_CODE_NAMES[code] ?? `CODE_${code}`;
}

export function kindForGrpcError(err: GrpcErrorLike): ErrorKind {
  const code = err.code;
  if (code === undefined) return 'Unknown';
  if (code === GrpcStatus.UNKNOWN && RESERVED_NAME.test(err.details ?? err.message ?? ''))
    return 'AlreadyExists';
  return CODE_TO_KIND[code] ?? 'Unknown';
}

export interface CriCallContext {
  /** The RPC, e.g. "RunPodSandbox". */
  method: string;
  /** The runtime's endpoint, `unix:///...`. */
  endpoint: string;
  /** The deadline the call had, in ms. */
  timeoutMs?: number;
  /** Whatever identifies the subject (sandbox, container, image). */
  [key: string]: unknown;
}

/**
 * The KindError for a failed CRI call. `err` is normally a grpc-js ServiceError; anything else (a thrown
 * encoding error, say) becomes InvalidArgument when it happened before the call left, Unknown otherwise.
 */
export function criError(err: unknown, ctx: CriCallContext): KindError {
  if (err instanceof KindError) return err;
  const e: GrpcErrorLike =
    typeof err === 'object' && err !== null ? (err as GrpcErrorLike) : { message: String(err) };
  const kind = kindForGrpcError(e);
  const details = e.details || e.message || 'no details';
  let message: string;
  switch (kind) {
    case 'Unavailable':
      message = `CRI ${ctx.method}: runtime unavailable at ${ctx.endpoint}: ${details}`;
      break;
    case 'DeadlineExceeded':
      message =
        ctx.timeoutMs !== undefined
          ? `CRI ${ctx.method}: deadline exceeded (${ctx.timeoutMs} ms): ${details}`
          : `CRI ${ctx.method}: deadline exceeded: ${details}`;
      break;
    default:
      // The kubelet shows a pull failure to the user as the runtime worded it (ErrImagePull's message).
      message = ctx.method === 'PullImage' ? details : `CRI ${ctx.method}: ${details}`;
  }
  return new KindError(kind, message, { ...ctx, grpcCode: grpcCodeName(e.code) }, { cause: err });
}
