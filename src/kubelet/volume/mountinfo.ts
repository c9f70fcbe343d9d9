/**
 * The mount table of /proc/self/mountinfo, parsed (pure: the text is read by the caller): each mount point's
 * file system type and whether it is in a shared peer group (the `shared:N` optional field).
 */

export interface MountPoint {
  fstype: string;
}

/** A row of the mount table. */
export interface MountInfoEntry extends MountPoint {
  /** In a shared peer group: mounts under it propagate to its peers (Bidirectional propagation needs it). */
  shared: boolean;
}

/** Decodes the octal escapes of mountinfo paths (`\040` for a space). */
function unescapeMountPath(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** The mount point -> mount table of a mountinfo text; the last mount of a path wins (it is on top). */
export function parseMountInfo(text: string): Map<string, MountInfoEntry> {
  const out = new Map<string, MountInfoEntry>();
  for (const line of text.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const fields = line.slice(0, sep).split(' ');
    const after = line.slice(sep + 3).split(' ');
    const mountPoint = fields[4];
    const fstype = after[0];
    // Fields 7.. are the optional ones: shared:N, master:N, propagate_from:N, unbindable.
    const shared = fields.slice(6).some((f) => f.startsWith('shared:'));
    if (mountPoint && fstype) out.set(unescapeMountPath(mountPoint), { fstype, shared });
  }
  return out;
}
