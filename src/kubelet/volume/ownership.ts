/**
 * The kubelet's SetVolumeOwnership (pkg/volume/volume_linux.go): with a pod-level fsGroup, every entry of a
 * volume gets that group and the group (and owner) read/write bits, so processes running with the fsGroup as a
 * supplementary group can use the volume; directories also get setgid, so new files inherit the group.
 *
 * Upstream details kept here:
 * - The masks are 0660 for a writable volume and 0440 for a read-only one (configMap, secret, downwardAPI and
 *   projected volumes are read-only), plus 0110 and setgid on directories. Bits are only ever added.
 * - Symlinks get the group (lchown) but no chmod: chmod would go through to the target and overwrite the mode
 *   the plugin chose for it.
 * - `OnRootMismatch` skips the whole walk when the root directory already has the group, at least the masked
 *   bits and setgid. `Always` (and no policy) walk every time.
 * - The walk is depth-first with a directory visited after its children; a failed chown or chmod is recorded
 *   and the walk goes on, a directory that cannot be read stops it.
 */
import type { PodSecurityContext } from '../../api/core.js';
import { type EntryKind, type EntryStat, type VolumeFS, VolumeFSError } from './fs.js';
import { joinPath } from './paths.js';

const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

export type FSGroupChangePolicy = NonNullable<PodSecurityContext['fsGroupChangePolicy']>;

/** What `ownershipChange` needs to know about an entry. */
export interface OwnershipEntry {
  kind: EntryKind;
  mode: number;
  gid: number;
}

/** The group and mode an entry should get; a field is undefined when it already holds. */
export interface OwnershipChange {
  gid: number | undefined;
  mode: number | undefined;
}

/** changeFilePermission as a decision: undefined when the entry already has the group and the bits. */
export function ownershipChange(
  entry: OwnershipEntry,
  fsGroup: number,
  readOnly: boolean,
): OwnershipChange | undefined {
  const gid = entry.gid === fsGroup ? undefined : fsGroup;
  let mode: number | undefined;
  if (entry.kind !== 'symlink') {
    let mask = readOnly ? RO_MASK : RW_MASK;
    if (entry.kind === 'dir') mask |= SETGID | EXEC_MASK;
    const wanted = entry.mode | mask;
    mode = wanted === entry.mode ? undefined : wanted;
  }
  return gid === undefined && mode === undefined ? undefined : { gid, mode };
}

/**
 * requiresPermissionChange: whether an `OnRootMismatch` volume needs the walk, judged by its root (followed
 * if it is a symlink). A missing root or a root that is not a directory always does.
 */
export function requiresPermissionChange(
  root: EntryStat | undefined,
  fsGroup: number,
  readOnly: boolean,
): boolean {
  if (!root || root.gid !== fsGroup || root.kind !== 'dir') return true;
  const wanted = (readOnly ? RO_MASK : RW_MASK) | EXEC_MASK;
  return (root.mode & wanted) !== wanted || (root.mode & SETGID) === 0;
}

export interface VolumeOwnershipOptions {
  /** No fsGroup: nothing to do. */
  fsGroup: number | undefined;
  fsGroupChangePolicy?: FSGroupChangePolicy;
  /** The volume plugin's `ReadOnly` attribute (true for configMap, secret, downwardAPI, projected). */
  readOnly: boolean;
}

export interface OwnershipFailure {
  path: string;
  op: 'chown' | 'chmod';
  error: unknown;
}

export interface OwnershipResult {
  /** True when the walk did not run (no fsGroup, or OnRootMismatch with a matching root). */
  skipped: boolean;
  visited: number;
  changed: number;
  /** chown/chmod calls that failed; the walk went on past them, as the kubelet's does. */
  failures: OwnershipFailure[];
}

/**
 * Applies the fsGroup to `dir` and everything under it. Rejects only when a directory cannot be listed or
 * an entry cannot be stat'ed; individual chown/chmod failures are returned in `failures`.
 */
export async function setVolumeOwnership(
  fs: VolumeFS,
  dir: string,
  opts: VolumeOwnershipOptions,
): Promise<OwnershipResult> {
  const result: OwnershipResult = { skipped: true, visited: 0, changed: 0, failures: [] };
  const { fsGroup, readOnly } = opts;
  if (fsGroup === undefined) return result;
  if (
    opts.fsGroupChangePolicy === 'OnRootMismatch' &&
    !requiresPermissionChange(await fs.stat(dir), fsGroup, readOnly)
  ) {
    return result;
  }
  result.skipped = false;

  const visit = async (path: string, entry: EntryStat): Promise<void> => {
    if (entry.kind === 'dir') {
      for (const name of await fs.readdir(path)) {
        const child = joinPath(path, name);
        const st = await fs.lstat(child);
        // Gone between readdir and lstat (a concurrent cleanup): nothing to own.
        if (st) await visit(child, st);
      }
    }
    result.visited++;
    const change = ownershipChange(entry, fsGroup, readOnly);
    if (!change) return;
    result.changed++;
    if (change.gid !== undefined) {
      await fs.chown(path, { gid: change.gid }).catch((error: unknown) => {
        result.failures.push({ path, op: 'chown', error });
      });
    }
    if (change.mode !== undefined) {
      await fs.chmod(path, change.mode).catch((error: unknown) => {
        result.failures.push({ path, op: 'chmod', error });
      });
    }
  };

  const root = await fs.lstat(dir);
  if (!root) throw new VolumeFSError('ENOENT', 'lstat', dir);
  await visit(dir, root);
  return result;
}
