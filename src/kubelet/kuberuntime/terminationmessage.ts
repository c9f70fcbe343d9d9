/**
 * Termination messages of exited containers (kubelet: kuberuntime_container.go getTerminationMessage and
 * readLastStringFromContainerLogs, as toKubeContainerStatus uses them): the file the container wrote at its
 * terminationMessagePath is found among the container's mounts (its host side is the per-start file the kubelet
 * created), read, and cut to the kubelet's limits; with FallbackToLogsOnError a failed container without a
 * message gets the tail of its log instead. The decision is podfiles/termination.ts; this is the reading.
 */
import {
  ContainerTerminationMessagePathAnnotation,
  ContainerTerminationMessagePolicyAnnotation,
} from '../../runtime/labels.js';
import type { ContainerStatus as RuntimeContainerStatus } from '../../runtime/types.js';
import {
  getTerminationMessage,
  MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH,
  type TerminationMessageFile,
} from '../podfiles/termination.js';
import type { Container } from '../../api/core.js';

/** How the node reads a container's files and logs (the node's disk for cri, memory for sim). */
export interface ContainerFileReader {
  /** Up to the last `maxBytes` of the file; undefined when it does not exist. Rejects on other failures. */
  readFileTail(hostPath: string, maxBytes: number): Promise<Buffer | undefined>;
  /** The messages of the last `lines` lines of the container's log (stdout and stderr), as written. */
  readLogTail(status: RuntimeContainerStatus, lines: number): Promise<string>;
}

async function readMessageFile(
  status: RuntimeContainerStatus,
  path: string,
  reader: ContainerFileReader,
): Promise<TerminationMessageFile> {
  if (!path) return { kind: 'missing' };
  const mount = (status.mounts ?? []).find((m) => m.containerPath === path);
  if (!mount) return { kind: 'missing' };
  try {
    const data = await reader.readFileTail(mount.hostPath, MAX_CONTAINER_TERMINATION_MESSAGE_LENGTH);
    return data === undefined ? { kind: 'missing' } : { kind: 'read', data };
  } catch (err) {
    return {
      kind: 'error',
      hostPath: mount.hostPath,
      error: err instanceof Error ? err.message : String(err),
    };
  }
}

/** The termination message of an exited container ('' when it has none). */
export async function terminationMessageOf(
  status: RuntimeContainerStatus,
  reader: ContainerFileReader,
): Promise<string> {
  if (status.state !== 'exited') return '';
  const path = status.annotations[ContainerTerminationMessagePathAnnotation] ?? '';
  const policy = status.annotations[ContainerTerminationMessagePolicyAnnotation] as
    Container['terminationMessagePolicy'] | undefined;
  const file = await readMessageFile(status, path, reader);
  return getTerminationMessage(
    { ...(policy ? { policy } : {}), exitCode: status.exitCode, reason: status.reason, file },
    (lines) => reader.readLogTail(status, lines),
  );
}
