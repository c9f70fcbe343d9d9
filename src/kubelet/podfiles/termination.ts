/**
 * Termination messages (kuberuntime_container.go getTerminationMessage, readLastStringFromContainerLogs,
 * convertToKubeContainerStatus, makeMounts' termination-log file; kubecontainer's limits).
 *
 * A container may explain its exit by writing to its terminationMessagePath; the kubelet gives each start of a
 * container its own empty file on the node, mounted there. When the container has exited, the kubelet reads
 * the end of that file, or, with FallbackToLogsOnError, the end of the log when the file said nothing and the
 * container failed, and appends the result to the runtime's own message.
 *
 * Pure: the caller reads the file and the log; only the decisions and cuts are here.
 */
import type { Container } from '../../api/core.js';
import type { Mount } from '../../runtime/types.js';

/** Bytes kept from the end of the message file. */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH = 1024 * 4;
/** Bytes kept from the end of the log fallback. */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH = 1024 * 2;
/** Log lines the fallback reads (the log's tail, before the byte cut). */
export const MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES = 80;
/** The message file's mode, whatever the umask (makeMounts chmods it). */
export const TERMINATION_MESSAGE_FILE_MODE = 0o666;
/** The API default of terminationMessagePath. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';
/** The CRI reason of a container that never started: it has no logs to fall back to. */
export const CONTAINER_CANNOT_RUN = 'ContainerCannotRun';

/** What became of reading the message file. */
export type TerminationMessageFile =
  /** No terminationMessagePath, no mount at it, or no file on the node. */
  | { kind: 'missing' }
  /** The file's bytes: all of them, or at least the last 4096. */
  | { kind: 'read'; data: Uint8Array | string }
  /** Any other read failure; the kubelet reports it as the message. */
  | { kind: 'error'; hostPath: string; error: string };

export interface TerminationMessageInputs {
  /** API default File. */
  policy?: Container['terminationMessagePolicy'];
  exitCode: number;
  /** The runtime's reason for the exit (the CRI status reason). */
  reason?: string;
  file: TerminationMessageFile;
}

export type TerminationMessageDecision =
  | { checkLogs: false; message: string }
  /** Read the last 80 log lines and pass them to `terminationMessageFromLogs`. */
  | { checkLogs: true };

const encoder = new TextEncoder();
/** Invalid sequences (a cut through a character) become U+FFFD, as they do when the status is JSON-encoded. */
const decoder = new TextDecoder('utf-8');

function bytesOf(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? encoder.encode(data) : data;
}

/** The last `max` bytes of `data`, as text. */
function tailText(data: Uint8Array | string, max: number): string {
  const bytes = bytesOf(data);
  return decoder.decode(bytes.length > max ? bytes.subarray(bytes.length - max) : bytes);
}

/**
 * Whether the log may stand in for the file: policy FallbackToLogsOnError, a non-zero exit, and a container
 * that did start (ContainerCannotRun has no logs).
 */
export function fallbackToLogs(
  inputs: Pick<TerminationMessageInputs, 'policy' | 'exitCode' | 'reason'>,
): boolean {
  return (
    inputs.policy === 'FallbackToLogsOnError' &&
    inputs.exitCode !== 0 &&
    inputs.reason !== CONTAINER_CANNOT_RUN
  );
}

/**
 * getTerminationMessage: the file's last 4096 bytes, unless the file is missing or empty and the fallback
 * applies, in which case the logs decide. A read error is reported as the message, never falls back.
 */
export function decideTerminationMessage(inputs: TerminationMessageInputs): TerminationMessageDecision {
  const fallback = fallbackToLogs(inputs);
  const file = inputs.file;
  switch (file.kind) {
    case 'missing':
      return fallback ? { checkLogs: true } : { checkLogs: false, message: '' };
    case 'error':
      return {
        checkLogs: false,
        message: `Error on reading termination log ${file.hostPath}: ${file.error}`,
      };
    case 'read': {
      const message = tailText(file.data, MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH);
      return fallback && bytesOf(file.data).length === 0
        ? { checkLogs: true }
        : { checkLogs: false, message };
    }
    default: {
      const never: never = file;
      return never;
    }
  }
}

/** readLastStringFromContainerLogs: the last 2048 bytes of the log's last 80 lines (stdout and stderr). */
export function terminationMessageFromLogs(logTail: Uint8Array | string): string {
  return tailText(logTail, MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LENGTH);
}

/** The message when the log cannot be read. */
export function terminationMessageLogError(error: string): string {
  return `Error on reading termination message from logs: ${error}`;
}

/**
 * The whole read: decide, read the log tail if needed (`readLogTail(80)`; a rejection becomes the error
 * message, as upstream), cut.
 */
export async function getTerminationMessage(
  inputs: TerminationMessageInputs,
  readLogTail: (lines: number) => Promise<Uint8Array | string>,
): Promise<string> {
  const decision = decideTerminationMessage(inputs);
  if (!decision.checkLogs) return decision.message;
  try {
    return terminationMessageFromLogs(await readLogTail(MAX_CONTAINER_TERMINATION_MESSAGE_LOG_LINES));
  } catch (err) {
    return terminationMessageLogError(err instanceof Error ? err.message : String(err));
  }
}

/** The container status message: the runtime's, then `: ` and the termination message when there is one. */
export function withTerminationMessage(
  runtimeMessage: string | undefined,
  terminationMessage: string,
): string {
  const base = runtimeMessage ?? '';
  if (terminationMessage.length === 0) return base;
  return base.length > 0 ? `${base}: ${terminationMessage}` : terminationMessage;
}

/** makeUID: 8 hex digits of a random 32-bit number, naming one start's message file. `random` is in [0, 1). */
export function makeTerminationMessageFileID(random: () => number): string {
  return Math.floor(random() * 2 ** 32)
    .toString(16)
    .padStart(8, '0');
}

/** `<podDir>/containers/<containerName>`: the container's directory (getPodContainerDir). */
export function podContainerDir(podDir: string, containerName: string): string {
  return `${podDir.replace(/\/+$/, '')}/containers/${containerName}`;
}

/** `<podDir>/containers/<containerName>/<id>`: the message file of one start. */
export function terminationMessageHostPath(podDir: string, containerName: string, id: string): string {
  return `${podContainerDir(podDir, containerName)}/${id}`;
}

/**
 * The mount of a fresh message file (create it empty with TERMINATION_MESSAGE_FILE_MODE first), or undefined
 * when terminationMessagePath is '' (absent means the API default, /dev/termination-log). The path is a new one for every start, so a restarted
 * container never reads its predecessor's message.
 */
export function terminationMessageMount(
  podDir: string,
  container: Pick<Container, 'name' | 'terminationMessagePath'>,
  id: string,
): Mount | undefined {
  const containerPath = container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
  if (containerPath.length === 0) return undefined;
  return { hostPath: terminationMessageHostPath(podDir, container.name, id), containerPath };
}
