/**
 * The file-system seam of the volume plugins: the few operations the atomic writer, the ownership walk and the
 * volume setup need, so that the same code runs over the node's disk (RealVolumeFS) and over an in-memory tree
 * (MemoryVolumeFS, used by unit tests and by the simulated runtime).
 *
 * Contract shared by every implementation:
 * - Paths are absolute POSIX paths. Symlinks in intermediate components are always followed, as the kernel does.
 * - Failures reject with an error carrying a Node-style `code` (ENOENT, EEXIST, ENOTDIR, EISDIR, ENOTEMPTY,
 *   EINVAL, ELOOP); `fsErrorCode` reads it from either implementation's errors.
 * - Modes are the permission bits plus setuid/setgid/sticky (`& 0o7777`); no file type bits.
 * - Nothing is cached: each call sees the effect of every call that resolved before it.
 */

export type EntryKind = 'file' | 'dir' | 'symlink' | 'other';

export interface EntryStat {
  kind: EntryKind;
  /** Permission bits plus setuid (0o4000), setgid (0o2000) and sticky (0o1000). */
  mode: number;
  uid: number;
  gid: number;
  /** Bytes of a file's content or of a symlink's target. */
  size: number;
  /** What an `other` entry is, when the implementation knows (hostPath type checks need it). */
  special?: 'socket' | 'charDevice' | 'blockDevice' | 'fifo';
  /** Where the entry sits on a real disk (absent in memory): what disk usage counts, as `du` does. */
  disk?: EntryDisk;
}

/** stat(2)'s device, inode, link count and 512-byte blocks of an entry on a real disk. */
export interface EntryDisk {
  dev: number;
  ino: number;
  nlink: number;
  blocks: number;
}

/** A change of owner; an absent id stays as it is (chown(2)'s -1). */
export interface Owner {
  uid?: number;
  gid?: number;
}

export interface VolumeFS {
  /** Creates the directory and any missing parents with `mode` (before umask; default 0o777). An existing
   *  directory is fine; an existing non-directory rejects with EEXIST or ENOTDIR. */
  mkdir(path: string, mode?: number): Promise<void>;
  /** Creates or truncates a file. `mode` (before umask; default 0o666) applies only to a file it creates;
   *  callers that need exact bits chmod afterwards. The parent must exist. */
  writeFile(path: string, data: Buffer, mode?: number): Promise<void>;
  /** The content of a file, following symlinks. */
  readFile(path: string): Promise<Buffer>;
  /** Creates a symlink at `path` pointing at `target` (relative targets resolve against `path`'s directory). */
  symlink(target: string, path: string): Promise<void>;
  /** A symlink's target as written. EINVAL for anything that is not a symlink. */
  readlink(path: string): Promise<string>;
  /** rename(2): atomically replaces `to` (a file, a symlink or an empty directory). Neither end is followed
   *  if it is a symlink, which is what makes the `..data_tmp` -> `..data` swap atomic. */
  rename(from: string, to: string): Promise<void>;
  /** Entry names of a directory (following symlinks to it), sorted. */
  readdir(path: string): Promise<string[]>;
  /** The entry itself (a symlink is not followed); undefined when the path does not exist, an ancestor
   *  included (ENOENT, or ENOTDIR for an ancestor that is a file). */
  lstat(path: string): Promise<EntryStat | undefined>;
  /** What the path leads to (symlinks followed); undefined when it does not exist (as lstat) or dangles. */
  stat(path: string): Promise<EntryStat | undefined>;
  /** Removes the entry and, for a directory, everything under it; a missing path is not an error. A symlink
   *  is removed, never what it points at. */
  rm(path: string): Promise<void>;
  /** chmod(2): follows symlinks. */
  chmod(path: string, mode: number): Promise<void>;
  /** lchown(2): changes the entry itself, a symlink included. */
  chown(path: string, owner: Owner): Promise<void>;
  /** The canonical absolute path with every symlink resolved; the path must exist. */
  realpath(path: string): Promise<string>;
}

/** The errno-style code of a file-system error (either implementation's), or undefined. */
export function fsErrorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const code = (err as { code: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export function isNotExist(err: unknown): boolean {
  return fsErrorCode(err) === 'ENOENT';
}

const DESCRIPTIONS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EEXIST: 'file already exists',
  ENOTDIR: 'not a directory',
  EISDIR: 'illegal operation on a directory',
  ENOTEMPTY: 'directory not empty',
  EINVAL: 'invalid argument',
  ELOOP: 'too many symbolic links encountered',
  EBUSY: 'resource busy or locked',
};

/** An error shaped like Node's system errors, so callers treat both implementations alike. */
export class VolumeFSError extends Error {
  readonly code: string;
  readonly syscall: string;
  readonly path: string;

  constructor(code: string, syscall: string, path: string) {
    super(`${code}: ${DESCRIPTIONS[code] ?? 'error'}, ${syscall} '${path}'`);
    this.name = 'VolumeFSError';
    this.code = code;
    this.syscall = syscall;
    this.path = path;
  }
}
