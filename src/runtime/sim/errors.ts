/**
 * The simulated runtime's errors, worded as containerd 1.6's CRI plugin words them (so logs and events read
 * the same on both runtimes) and typed with the kind the Runtime contract promises.
 */
import { KindError } from '../../util/errors.js';

type Context = Record<string, unknown>;

export const optionError = (field: string, message: string): KindError =>
  new KindError('InvalidArgument', `sim runtime: ${message}`, { field });

export const closedError = (op?: string): KindError =>
  new KindError('Unavailable', 'sim runtime closed', op === undefined ? {} : { op });

export const sandboxNotFound = (id: string): KindError =>
  new KindError('NotFound', `an error occurred when try to find sandbox "${id}": not found`, {
    sandboxId: id,
  });

export const containerNotFound = (id: string): KindError =>
  new KindError('NotFound', `an error occurred when try to find container "${id}": not found`, {
    containerId: id,
  });

export const sandboxIdNotFound = (id: string, context: Context): KindError =>
  new KindError('NotFound', `failed to find sandbox id "${id}": not found`, { sandboxId: id, ...context });

export const sandboxNotRunning = (sandboxId: string, context: Context): KindError =>
  new KindError('InvalidArgument', `sandbox container "${sandboxId}" is not running`, {
    sandboxId,
    ...context,
  });

export const imageNotFound = (image: string, context: Context): KindError =>
  new KindError('NotFound', `failed to resolve image "${image}": not found`, { image, ...context });

/** containerd answers UNKNOWN here; the Runtime contract (and the CRI client) call it AlreadyExists. */
export const nameReserved = (name: string, holder: string, context: Context): KindError =>
  new KindError(
    'AlreadyExists',
    `failed to reserve name "${name}": name "${name}" is reserved for "${holder}"`,
    {
      ...context,
      holder,
    },
  );

export const notStartable = (id: string, state: string): KindError =>
  new KindError(
    'InvalidArgument',
    `failed to set starting state for container "${id}": container is in ${state} state`,
    { containerId: id },
  );

export const startFailed = (id: string, cause: string): KindError =>
  new KindError('Unknown', `failed to create containerd task: ${cause}`, { containerId: id, injected: true });

export const notRunning = (id: string, state: string): KindError =>
  new KindError('InvalidArgument', `container ${id} is not running: in ${state} state`, { containerId: id });

export const execTimedOut = (id: string, timeoutSeconds: number, cmd: string[]): KindError =>
  new KindError('DeadlineExceeded', `timeout ${timeoutSeconds}s exceeded: context deadline exceeded`, {
    containerId: id,
    cmd,
  });

export const pullFailed = (ref: string, cause: string): KindError =>
  new KindError('Unknown', `failed to pull and unpack image "${ref}": ${cause}`, { image: ref });

export const noStreaming = (what: string): KindError =>
  new KindError('Unimplemented', `the simulated runtime has no streaming server (${what})`);

/** containerd's name for a CRI state in its messages. */
export const criState = (state: string): string => `CONTAINER_${state.toUpperCase()}`;
