/**
 * Whether a kubelet root directory is a shared mount, and what makes it one (kubelet setupDataDirs ->
 * mount-utils MakeRShared). Bidirectional mount propagation needs the source of the container's mount to be
 * in a shared peer group (containerd refuses it otherwise: "... is not a shared mount"), so a CSI driver in a
 * pod can mount volumes the node and the pods' other containers see. A kubelet makes its root rshared at
 * start: a bind mount of the directory onto itself when it is no mount point, then `--make-rshared`.
 *
 * Pure: reads a /proc/self/mountinfo text; the mounting is in shell/mounter.ts (makeRShared).
 */

/** What a directory needs to be in a shared peer group: nothing, the propagation flag, or a bind mount first. */
export type RSharedSteps = 'none' | 'make-rshared' | 'bind-then-make-rshared';

interface MountInfoEntry {
  mountPoint: string;
  shared: boolean;
}

const unescape = (s: string): string =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

/** The mount point and its `shared:N` optional field per mountinfo line, in table order. */
function entries(mountinfo: string): MountInfoEntry[] {
  const out: MountInfoEntry[] = [];
  for (const line of mountinfo.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const fields = line.slice(0, sep).split(' ');
    const mountPoint = fields[4];
    if (!mountPoint) continue;
    // Fields 7.. are the optional ones: shared:N, master:N, propagate_from:N, unbindable.
    out.push({
      mountPoint: unescape(mountPoint),
      shared: fields.slice(6).some((f) => f.startsWith('shared:')),
    });
  }
  return out;
}

const contains = (mountPoint: string, dir: string): boolean =>
  mountPoint === '/' || dir === mountPoint || dir.startsWith(`${mountPoint}/`);

/**
 * The steps that make `dir` (absolute, normalised) rshared, given the mountinfo table: the mount `dir` is on
 * is the deepest mount point containing it (the last listed of equal ones: it is on top).
 */
export function rsharedSteps(mountinfo: string, dir: string): RSharedSteps {
  let on: MountInfoEntry | undefined;
  for (const e of entries(mountinfo)) {
    if (!contains(e.mountPoint, dir)) continue;
    if (!on || e.mountPoint.length >= on.mountPoint.length) on = e;
  }
  if (on?.shared) return 'none';
  return on?.mountPoint === dir ? 'make-rshared' : 'bind-then-make-rshared';
}
