/**
 * Whether a kubelet root directory is a shared mount, and what makes it one (kubelet setupDataDirs ->
 * mount-utils MakeRShared). Bidirectional mount propagation needs the source of the container's mount to be
 * in a shared peer group (containerd refuses it otherwise: "... is not a shared mount"), so a CSI driver in a
 * pod can mount volumes the node and the pods' other containers see. A kubelet makes its root rshared at
 * start: a bind mount of the directory onto itself when it is no mount point, then `--make-rshared`.
 *
 * Pure: reads a /proc/self/mountinfo text; the mounting is in shell/mounter.ts (makeRShared).
 */

import { parseMountInfo, type MountInfoEntry } from './mountinfo.js';

/** What a directory needs to be in a shared peer group: nothing, the propagation flag, or a bind mount first. */
export type RSharedSteps = 'none' | 'make-rshared' | 'bind-then-make-rshared';

const contains = (mountPoint: string, dir: string): boolean =>
  mountPoint === '/' || dir === mountPoint || dir.startsWith(`${mountPoint}/`);

/**
 * The steps that make `dir` (absolute, normalised) rshared, given the mountinfo table: the mount `dir` is on
 * is the deepest mount point containing it (the last listed of equal ones: it is on top).
 */
export function rsharedSteps(mountinfo: string, dir: string): RSharedSteps {
  // The table keeps the last (top) mount of each path, so the longest containing mount point is the one.
  let on: [string, MountInfoEntry] | undefined;
  for (const e of parseMountInfo(mountinfo)) {
    if (!contains(e[0], dir)) continue;
    if (!on || e[0].length > on[0].length) on = e;
  }
  if (on?.[1].shared) return 'none';
  return on?.[0] === dir ? 'make-rshared' : 'bind-then-make-rshared';
}
