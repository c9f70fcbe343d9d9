/**
 * The container security context's checks and paths the kubelet works out itself.
 *
 * runAsNonRoot (kubelet: kuberuntime/security_context_others.go verifyRunAsNonRoot, getImageUser, and
 * securitycontext.DetermineEffectiveSecurityContext for the two fields it reads). A container that must not
 * run as root, and names no user of its own, may start only when its image's user is provably not root: a
 * numeric uid other than 0. Failing that, the container is not created (CreateContainerConfigError).
 *
 *
 * procMount (kubelet securitycontext ConvertToRuntimeMaskedPaths / ReadonlyPaths): the /proc and /sys paths
 * the runtime masks or mounts read-only.
 *
 * Pure: the pod, the container and the image status in, an error message, paths or nothing out.
 */
import type { Container, Pod } from '../../api/core.js';
import type { Image } from '../../runtime/types.js';
import { formatPod } from '../backoff.js';

/**
 * What procMount `Default` masks (securitycontext's default masked paths, kept in step with the Docker
 * defaults), before the host's per-cpu thermal_throttle directories.
 */
export const DEFAULT_MASKED_PATHS: readonly string[] = [
  '/proc/asound',
  '/proc/acpi',
  '/proc/interrupts',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/devices/virtual/powercap',
];
/** What procMount `Default` mounts read-only. */
export const DEFAULT_READONLY_PATHS: readonly string[] = [
  '/proc/bus',
  '/proc/fs',
  '/proc/irq',
  '/proc/sys',
  '/proc/sysrq-trigger',
];

/**
 * The masked and read-only paths of a container (kubelet ConvertToRuntimeMaskedPaths / ReadonlyPaths): none
 * for procMount `Unmasked`, else the defaults, with the host's thermal_throttle directories masked too. Sent
 * for every container, privileged ones included (the runtime leaves a privileged container unmasked).
 */
export function procMountPaths(
  container: Container,
  thermalThrottlePaths: readonly string[] = [],
): { maskedPaths: string[]; readonlyPaths: string[] } {
  if (container.securityContext?.procMount === 'Unmasked') return { maskedPaths: [], readonlyPaths: [] };
  return {
    maskedPaths: [...DEFAULT_MASKED_PATHS, ...thermalThrottlePaths],
    readonlyPaths: [...DEFAULT_READONLY_PATHS],
  };
}

/** validation.IsValidUserID's range. */
const MaxUserID = 2 ** 31 - 1;

/** The image's user as the kubelet takes it (getImageUser): the uid, else the name, else root (uid 0). */
export function imageUserOf(image: Pick<Image, 'uid' | 'username'> | null | undefined): {
  uid?: number;
  username: string;
} {
  if (image?.uid !== undefined) return { uid: image.uid, username: '' };
  if (image?.username) return { username: image.username };
  return { uid: 0, username: '' };
}

/** runAsNonRoot and runAsUser with the container's settings over the pod's. */
export function effectiveRunAs(
  pod: Pod,
  container: Container,
): { runAsNonRoot?: boolean; runAsUser?: number } {
  const psc = pod.spec.securityContext;
  const csc = container.securityContext;
  const runAsNonRoot = csc?.runAsNonRoot ?? psc?.runAsNonRoot;
  const runAsUser = csc?.runAsUser ?? psc?.runAsUser;
  return {
    ...(runAsNonRoot !== undefined ? { runAsNonRoot } : {}),
    ...(runAsUser !== undefined ? { runAsUser } : {}),
  };
}

/** Whether the check needs the image's user at all (runAsNonRoot on, no runAsUser). */
export function needsImageUser(pod: Pod, container: Container): boolean {
  const sc = effectiveRunAs(pod, container);
  return sc.runAsNonRoot === true && sc.runAsUser === undefined;
}

/**
 * Why the container may not start under its runAsNonRoot, in the kubelet's words, or undefined when it may.
 * `uid`/`username` are the image's user as imageUserOf gives it.
 */
export function verifyRunAsNonRoot(
  pod: Pod,
  container: Container,
  uid: number | undefined,
  username: string,
): string | undefined {
  const sc = effectiveRunAs(pod, container);
  if (sc.runAsNonRoot !== true) return undefined;
  const where = `(pod: ${JSON.stringify(formatPod(pod))}, container: ${container.name})`;
  if (sc.runAsUser !== undefined) {
    return sc.runAsUser === 0 ? `container's runAsUser breaks non-root policy ${where}` : undefined;
  }
  if (uid === undefined) {
    return username.length > 0
      ? `container has runAsNonRoot and image has non-numeric user (${username}), cannot verify user is non-root ${where}`
      : undefined;
  }
  if (uid === 0) return `container has runAsNonRoot and image will run as root ${where}`;
  if (!Number.isInteger(uid) || uid < 0 || uid > MaxUserID) {
    return (
      `container has runAsNonRoot and image has an invalid user id (${uid}). (Must be 1-(${MaxUserID})): ` +
      `must be between 0 and ${MaxUserID}, inclusive ${where}`
    );
  }
  return undefined;
}
