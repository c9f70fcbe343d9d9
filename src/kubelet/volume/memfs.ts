/**
 * An in-memory VolumeFS: a tree of directories, files and symlinks with modes and owners, resolved the way the
 * kernel resolves paths (symlinks in intermediate components always followed, relative targets against the
 * link's own directory, `..` applied physically after a link, a bound on link hops). It backs the unit tests
 * and the simulated runtime, whose containers read their mounted files through the synchronous helpers
 * (`readFileSync`, `listSync`, `existsSync`) after the kubelet wrote them through the async interface.
 *
 * There are no permission checks (the operator writes as root); `umask` is applied to created entries as the
 * real file system does, so code that must chmod after creating behaves the same on both.
 *
 * A simulated node holds a few entries per pod for every pod, so entries are small: no Map for a directory
 * of few entries, file bytes as a string (what files share up to their last line kept once, see fileBytes),
 * one shared mode-and-owner object per distinct triple, one copy of each common name. What the interface
 * returns is always a fresh copy.
 */
import { SharedValues } from '../../util/sharedvalues.js';
import { type EntryStat, type Owner, type VolumeFS, VolumeFSError } from './fs.js';
import {
  deleteEntry,
  emptyDir,
  entryNames,
  getEntry,
  getEntryAt,
  isDir,
  isFile,
  isLink,
  setEntry,
  sortedEntryNames,
  type Meta,
  type MemDir,
  type MemNode,
} from './memfs_tree.js';

/** Linux's MAXSYMLINKS. */
const MAX_LINK_HOPS = 40;
const DIR_SIZE = 4096;
/** Distinct mode and owner triples, and entry names, kept for sharing (the table starts over when full). */
const METAS_LIMIT = 256;
const NAMES_LIMIT = 1024;
/** File heads kept for sharing (see fileBytes), and the shortest head worth it. */
const HEADS_LIMIT = 256;
const MIN_HEAD = 64;

interface Resolved {
  /** The directory holding the final entry; undefined for the root. */
  parent: MemDir | undefined;
  name: string;
  node: MemNode | undefined;
  /** Canonical absolute path of the final entry (its parent resolved, the entry itself as named). */
  path: string;
}

export interface MemoryVolumeFSOptions {
  /** Applied to the mode of created files and directories; default 0o022. */
  umask?: number;
  /** Owner of created entries; default root (0:0). */
  uid?: number;
  gid?: number;
}

export class MemoryVolumeFS implements VolumeFS {
  private readonly root: MemDir;
  private readonly umask: number;
  private readonly uid: number;
  private readonly gid: number;
  private readonly metas = new SharedValues<Meta>(METAS_LIMIT);
  private readonly names = new Map<string, string>();
  private readonly heads = new SharedValues<string>(HEADS_LIMIT);

  constructor(opts: MemoryVolumeFSOptions = {}) {
    this.umask = opts.umask ?? 0o022;
    this.uid = opts.uid ?? 0;
    this.gid = opts.gid ?? 0;
    this.root = emptyDir(this.meta(0o755, this.uid, this.gid));
  }

  // ------------------------------------------------------------------------------------ async VolumeFS

  async mkdir(path: string, mode = 0o777): Promise<void> {
    // Most calls find the directory there already: one walk instead of one per prefix.
    const found = this.resolve(path, true, 'mkdir', true);
    if (found.node && isDir(found.node)) return;
    const parts = components(path, 'mkdir');
    // Back from the end to the deepest ancestor there is (usually the parent), then forward creating: a walk
    // per missing directory, not one per component from the root.
    let have = parts.length - 1;
    for (; have > 0; have--) {
      const r = this.resolve(`/${parts.slice(0, have).join('/')}`, true, 'mkdir', true);
      if (!r.node) continue;
      if (!isDir(r.node)) throw new VolumeFSError('ENOTDIR', 'mkdir', path);
      break;
    }
    let prefix = have > 0 ? `/${parts.slice(0, have).join('/')}` : '';
    for (let k = have; k < parts.length; k++) {
      prefix += `/${parts[k]!}`;
      const r = this.resolve(prefix, true, 'mkdir');
      if (r.node && isDir(r.node)) continue;
      if (r.node) throw new VolumeFSError(k < parts.length - 1 ? 'ENOTDIR' : 'EEXIST', 'mkdir', path);
      // A dangling symlink in the way: mkdir(2) does not follow it, and nothing can be made under it.
      if (!r.parent || this.resolve(prefix, false, 'mkdir', true).node) {
        throw new VolumeFSError('ENOENT', 'mkdir', path);
      }
      setEntry(r.parent, this.entryName(r.name), emptyDir(this.created(mode)));
    }
  }

  async writeFile(path: string, data: Buffer, mode = 0o666): Promise<void> {
    const r = this.resolve(path, true, 'open');
    if ((r.node && isDir(r.node)) || !r.parent) throw new VolumeFSError('EISDIR', 'open', path);
    const bytes = this.fileBytes(Buffer.isBuffer(data) ? data : Buffer.from(data));
    if (r.node && isFile(r.node)) {
      r.node.data = bytes;
      return;
    }
    setEntry(r.parent, this.entryName(r.name), { meta: this.created(mode), data: bytes });
  }

  async readFile(path: string): Promise<Buffer> {
    const node = this.existing(path, true, 'open');
    if (!isFile(node)) throw new VolumeFSError('EISDIR', 'read', path);
    return Buffer.from(node.data, 'latin1');
  }

  async symlink(target: string, path: string): Promise<void> {
    const r = this.resolve(path, false, 'symlink');
    if (r.node || !r.parent) throw new VolumeFSError('EEXIST', 'symlink', path);
    setEntry(r.parent, this.entryName(r.name), { meta: this.meta(0o777, this.uid, this.gid), target });
  }

  async readlink(path: string): Promise<string> {
    const node = this.existing(path, false, 'readlink');
    if (!isLink(node)) throw new VolumeFSError('EINVAL', 'readlink', path);
    return node.target;
  }

  async rename(from: string, to: string): Promise<void> {
    const src = this.resolve(from, false, 'rename');
    if (!src.node) throw new VolumeFSError('ENOENT', 'rename', from);
    if (!src.parent) throw new VolumeFSError('EBUSY', 'rename', from);
    const dst = this.resolve(to, false, 'rename');
    if (!dst.parent) throw new VolumeFSError('EBUSY', 'rename', to);
    if (dst.node === src.node) return;
    if (isDir(src.node)) {
      if (dst.path === src.path || dst.path.startsWith(`${src.path}/`)) {
        throw new VolumeFSError('EINVAL', 'rename', to);
      }
      if (dst.node && !isDir(dst.node)) throw new VolumeFSError('ENOTDIR', 'rename', to);
      if (dst.node && isDir(dst.node) && entryNames(dst.node).length > 0) {
        throw new VolumeFSError('ENOTEMPTY', 'rename', to);
      }
    } else if (dst.node && isDir(dst.node)) {
      throw new VolumeFSError('EISDIR', 'rename', to);
    }
    deleteEntry(src.parent, src.name);
    setEntry(dst.parent, this.entryName(dst.name), src.node);
  }

  async readdir(path: string): Promise<string[]> {
    const node = this.existing(path, true, 'scandir');
    if (!isDir(node)) throw new VolumeFSError('ENOTDIR', 'scandir', path);
    return sortedEntryNames(node);
  }

  async lstat(path: string): Promise<EntryStat | undefined> {
    return this.statSync(path, false);
  }

  async stat(path: string): Promise<EntryStat | undefined> {
    return this.statSync(path, true);
  }

  async rm(path: string): Promise<void> {
    const r = this.resolve(path, false, 'rm', true);
    if (!r.node) return;
    if (!r.parent) throw new VolumeFSError('EBUSY', 'rm', path);
    deleteEntry(r.parent, r.name);
  }

  async chmod(path: string, mode: number): Promise<void> {
    const node = this.existing(path, true, 'chmod');
    node.meta = this.meta(mode & 0o7777, node.meta.uid, node.meta.gid);
  }

  async chown(path: string, owner: Owner): Promise<void> {
    const node = this.existing(path, false, 'lchown');
    const { mode, uid, gid } = node.meta;
    node.meta = this.meta(
      mode,
      owner.uid !== undefined ? owner.uid : uid,
      owner.gid !== undefined ? owner.gid : gid,
    );
  }

  async realpath(path: string): Promise<string> {
    const r = this.resolve(path, true, 'realpath');
    if (!r.node) throw new VolumeFSError('ENOENT', 'realpath', path);
    return r.path;
  }

  // ------------------------------------------------------------------------------- synchronous readers

  /**
   * Writes or appends to a file at once, as a simulated container's shell redirection does (a file it creates
   * gets 0666 less the umask); false when it cannot (the directory is missing, the path is a directory).
   */
  writeFileSync(path: string, data: Buffer, append = false): boolean {
    const r = this.tryResolveForWrite(path);
    if (!r || (r.node && isDir(r.node)) || !r.parent) return false;
    if (r.node && isFile(r.node)) {
      r.node.data = this.fileBytes(append ? Buffer.concat([Buffer.from(r.node.data, 'latin1'), data]) : data);
      return true;
    }
    if (r.node) return false;
    setEntry(r.parent, this.entryName(r.name), { meta: this.created(0o666), data: this.fileBytes(data) });
    return true;
  }

  /** A file's content following symlinks, or undefined when the path is missing or not a file. */
  readFileSync(path: string): Buffer | undefined {
    const node = this.tryResolve(path, true)?.node;
    return node && isFile(node) ? Buffer.from(node.data, 'latin1') : undefined;
  }

  /** A directory's sorted entry names following symlinks, or undefined when it is not a directory. */
  listSync(path: string): string[] | undefined {
    const node = this.tryResolve(path, true)?.node;
    return node && isDir(node) ? sortedEntryNames(node) : undefined;
  }

  /** Whether the path leads somewhere (a dangling symlink does not). */
  existsSync(path: string): boolean {
    return this.tryResolve(path, true)?.node !== undefined;
  }

  /** lstat (follow = false) or stat (follow = true) without the promise. */
  statSync(path: string, follow: boolean): EntryStat | undefined {
    const r = this.resolve(path, follow, follow ? 'stat' : 'lstat', true);
    if (!r.node) return undefined;
    const n = r.node;
    const { mode, uid, gid } = n.meta;
    if (isFile(n)) return { kind: 'file', mode, uid, gid, size: n.data.length };
    if (isLink(n)) return { kind: 'symlink', mode, uid, gid, size: Buffer.byteLength(n.target) };
    return { kind: 'dir', mode, uid, gid, size: DIR_SIZE };
  }

  // ---------------------------------------------------------------------------------------- resolution

  /** The meta of an entry created with `mode` (before the umask), owned by the default owner. */
  private created(mode: number): Meta {
    return this.meta(mode & ~this.umask & 0o7777, this.uid, this.gid);
  }

  /**
   * The name to keep for a new entry: one copy of each name in common use (`containers`, `etc-hosts`), and
   * never a piece still pointing into the whole path it was split from (V8 slices strings of 13 chars or more).
   */
  private entryName(name: string): string {
    let kept = this.names.get(name);
    if (kept !== undefined) return kept;
    kept = name.length < 13 ? name : (JSON.parse(JSON.stringify(name)) as string);
    if (this.names.size >= NAMES_LIMIT) this.names.clear();
    this.names.set(kept, kept);
    return kept;
  }

  /**
   * A file's bytes to keep: everything up to its last line in one copy shared by every file that begins alike,
   * then its last line. Pods' files differ in their last line when at all: each pod's hosts file has the same
   * header and local entries before the line naming the pod, and a projected CA bundle is the same file in
   * every pod. `head + last` stays a pair of the two (a cons string) until something reads the file whole; a file that is read (the atomic writer compares its
   * projections) is flattened into a copy of its own again, as it was before.
   */
  private fileBytes(data: Buffer): string {
    // Each part decoded from the bytes: a piece cut from the whole string would keep the whole alive.
    const cut = data.length > MIN_HEAD ? data.lastIndexOf(0x0a, data.length - 2) + 1 : 0;
    if (cut < MIN_HEAD) return data.toString('latin1');
    const head = data.toString('latin1', 0, cut);
    return this.heads.get(head, () => head) + data.toString('latin1', cut);
  }

  /** The shared meta for these values (one of its own for values a key would blur). */
  private meta(mode: number, uid: number, gid: number): Meta {
    if (![mode, uid, gid].every((v) => typeof v === 'number' && !Object.is(v, -0))) return { mode, uid, gid };
    return this.metas.get(`${mode}:${uid}:${gid}`, () => Object.freeze({ mode, uid, gid }));
  }

  private existing(path: string, follow: boolean, syscall: string): MemNode {
    const r = this.resolve(path, follow, syscall);
    if (!r.node) throw new VolumeFSError('ENOENT', syscall, path);
    return r.node;
  }

  private tryResolveForWrite(path: string): Resolved | undefined {
    try {
      return this.resolve(path, true, 'open');
    } catch {
      return undefined;
    }
  }

  private tryResolve(path: string, follow: boolean): Resolved | undefined {
    try {
      return this.resolve(path, follow, 'stat');
    } catch {
      return undefined;
    }
  }

  /**
   * Walks the path component by component. A symlink met before the last component (or at it, when
   * `followFinal`) has its target spliced into the components still to walk, from the root for an absolute
   * target or from the link's directory otherwise. A missing last component is not an error (the caller may
   * be about to create it); a missing or non-directory intermediate one is ENOENT / ENOTDIR, unless
   * `missingOk`, which reports either as a missing entry.
   */
  private resolve(path: string, followFinal: boolean, syscall: string, missingOk = false): Resolved {
    if (path.charCodeAt(0) !== SLASH) throw new VolumeFSError('EINVAL', syscall, path);
    // Most paths hold no `.`, `..` or symlink: walked on the string itself, without splitting it (a pod start
    // resolves dozens of paths). Anything else goes to the general walk below, from the start.
    let cur = this.root;
    const n = path.length;
    let i = skipSlashes(path, 1);
    while (i < n) {
      let end = path.indexOf('/', i);
      if (end < 0) end = n;
      const next = skipSlashes(path, end);
      const last = next >= n;
      if (isDotComponent(path, i, end)) break;
      const child = getEntryAt(cur, path, i, end);
      if (child && isLink(child) && (!last || followFinal)) break;
      if (last) return new Found(cur, path.slice(i, end), child, path, i);
      if (!child || !isDir(child)) {
        if (missingOk) return { parent: undefined, name: path.slice(i, end), node: undefined, path };
        throw new VolumeFSError(child ? 'ENOTDIR' : 'ENOENT', syscall, path);
      }
      cur = child;
      i = next;
    }
    return this.resolveComponents(path, followFinal, syscall, missingOk);
  }

  /** The general walk of `resolve`: the path split into components, symlinks spliced in as met. */
  private resolveComponents(
    path: string,
    followFinal: boolean,
    syscall: string,
    missingOk: boolean,
  ): Resolved {
    let todo = components(path, syscall);
    let at = 0;
    const dirs: MemDir[] = [this.root];
    const names: string[] = [];
    let hops = 0;
    while (at < todo.length) {
      const part = todo[at++]!;
      const cur = dirs[dirs.length - 1]!;
      if (part === '.') continue;
      if (part === '..') {
        if (dirs.length > 1) {
          dirs.pop();
          names.pop();
        }
        continue;
      }
      const child = getEntry(cur, part);
      const last = at === todo.length;
      if (child && isLink(child) && (!last || followFinal)) {
        if (++hops > MAX_LINK_HOPS) throw new VolumeFSError('ELOOP', syscall, path);
        if (child.target.startsWith('/')) {
          dirs.length = 1;
          names.length = 0;
        }
        todo = [...child.target.split('/').filter((p) => p !== ''), ...todo.slice(at)];
        at = 0;
        continue;
      }
      if (last) return new Found(cur, part, child, names);
      if (!child) {
        if (missingOk) return { parent: undefined, name: part, node: undefined, path };
        throw new VolumeFSError('ENOENT', syscall, path);
      }
      if (!isDir(child)) {
        if (missingOk) return { parent: undefined, name: part, node: undefined, path };
        throw new VolumeFSError('ENOTDIR', syscall, path);
      }
      dirs.push(child);
      names.push(part);
    }
    // The path ended on a directory reached through "." / ".." or a followed link.
    const node = dirs[dirs.length - 1]!;
    return {
      parent: dirs.length > 1 ? dirs[dirs.length - 2] : undefined,
      name: names[names.length - 1] ?? '',
      node,
      path: `/${names.join('/')}`,
    };
  }
}

/**
 * A resolved entry; its canonical path is only put together when asked for (rename, realpath), from its
 * directory's components, or from a path whose first `dirEnd` chars led to that directory with no `.`, `..`
 * or symlink on the way.
 */
class Found implements Resolved {
  constructor(
    readonly parent: MemDir,
    readonly name: string,
    readonly node: MemNode | undefined,
    private readonly dir: readonly string[] | string,
    private readonly dirEnd = 0,
  ) {}

  get path(): string {
    const dirNames =
      typeof this.dir === 'string' ? components(this.dir.slice(0, this.dirEnd), 'realpath') : this.dir;
    return `/${[...dirNames, this.name].join('/')}`;
  }
}

/** The index of the first char at or after `i` that is not a slash. */
function skipSlashes(path: string, i: number): number {
  while (i < path.length && path.charCodeAt(i) === SLASH) i++;
  return i;
}

/** Whether path[i, end) is `.` or `..`. */
function isDotComponent(path: string, i: number, end: number): boolean {
  const len = end - i;
  return (
    (len === 1 || len === 2) && path.charCodeAt(i) === DOT && (len === 1 || path.charCodeAt(i + 1) === DOT)
  );
}

/** The path's non-empty components (one pass, no intermediate array: every call resolves a path). */
function components(path: string, syscall: string): string[] {
  if (path.charCodeAt(0) !== SLASH) throw new VolumeFSError('EINVAL', syscall, path);
  const out: string[] = [];
  let start = 1;
  for (let i = 1; i <= path.length; i++) {
    if (i < path.length && path.charCodeAt(i) !== SLASH) continue;
    if (i > start) out.push(path.slice(start, i));
    start = i + 1;
  }
  return out;
}

const SLASH = 0x2f;
const DOT = 0x2e;
