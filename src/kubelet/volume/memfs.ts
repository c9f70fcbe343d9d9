/**
 * An in-memory VolumeFS: a tree of directories, files and symlinks with modes and owners, resolved the way the
 * kernel resolves paths (symlinks in intermediate components always followed, relative targets against the
 * link's own directory, `..` applied physically after a link, a bound on link hops). It backs the unit tests
 * and the simulated runtime, whose containers read their mounted files through the synchronous helpers
 * (`readFileSync`, `listSync`, `existsSync`) after the kubelet wrote them through the async interface.
 *
 * There are no permission checks (the operator writes as root); `umask` is applied to created entries as the
 * real file system does, so code that must chmod after creating behaves the same on both.
 */
import { type EntryStat, type Owner, type VolumeFS, VolumeFSError } from './fs.js';

interface Meta {
  mode: number;
  uid: number;
  gid: number;
}

interface MemFile extends Meta {
  kind: 'file';
  data: Buffer;
}

interface MemDir extends Meta {
  kind: 'dir';
  children: Map<string, MemNode>;
}

interface MemLink extends Meta {
  kind: 'symlink';
  target: string;
}

type MemNode = MemFile | MemDir | MemLink;

/** Linux's MAXSYMLINKS. */
const MAX_LINK_HOPS = 40;
const DIR_SIZE = 4096;

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

  constructor(opts: MemoryVolumeFSOptions = {}) {
    this.umask = opts.umask ?? 0o022;
    this.uid = opts.uid ?? 0;
    this.gid = opts.gid ?? 0;
    this.root = { kind: 'dir', children: new Map(), mode: 0o755, uid: this.uid, gid: this.gid };
  }

  // ------------------------------------------------------------------------------------ async VolumeFS

  async mkdir(path: string, mode = 0o777): Promise<void> {
    const parts = components(path, 'mkdir');
    let prefix = '';
    for (const part of parts) {
      prefix += `/${part}`;
      const r = this.resolve(prefix, true, 'mkdir');
      if (r.node?.kind === 'dir') continue;
      if (r.node) throw new VolumeFSError('EEXIST', 'mkdir', path);
      if (!r.parent) throw new VolumeFSError('ENOENT', 'mkdir', path);
      r.parent.children.set(r.name, this.newDir(mode));
    }
  }

  async writeFile(path: string, data: Buffer, mode = 0o666): Promise<void> {
    const r = this.resolve(path, true, 'open');
    if (r.node?.kind === 'dir' || !r.parent) throw new VolumeFSError('EISDIR', 'open', path);
    if (r.node?.kind === 'file') {
      r.node.data = Buffer.from(data);
      return;
    }
    r.parent.children.set(r.name, {
      kind: 'file',
      data: Buffer.from(data),
      mode: mode & ~this.umask & 0o7777,
      uid: this.uid,
      gid: this.gid,
    });
  }

  async readFile(path: string): Promise<Buffer> {
    const node = this.existing(path, true, 'open');
    if (node.kind !== 'file') throw new VolumeFSError('EISDIR', 'read', path);
    return Buffer.from(node.data);
  }

  async symlink(target: string, path: string): Promise<void> {
    const r = this.resolve(path, false, 'symlink');
    if (r.node || !r.parent) throw new VolumeFSError('EEXIST', 'symlink', path);
    r.parent.children.set(r.name, { kind: 'symlink', target, mode: 0o777, uid: this.uid, gid: this.gid });
  }

  async readlink(path: string): Promise<string> {
    const node = this.existing(path, false, 'readlink');
    if (node.kind !== 'symlink') throw new VolumeFSError('EINVAL', 'readlink', path);
    return node.target;
  }

  async rename(from: string, to: string): Promise<void> {
    const src = this.resolve(from, false, 'rename');
    if (!src.node) throw new VolumeFSError('ENOENT', 'rename', from);
    if (!src.parent) throw new VolumeFSError('EBUSY', 'rename', from);
    const dst = this.resolve(to, false, 'rename');
    if (!dst.parent) throw new VolumeFSError('EBUSY', 'rename', to);
    if (dst.node === src.node) return;
    if (src.node.kind === 'dir') {
      if (dst.path === src.path || dst.path.startsWith(`${src.path}/`)) {
        throw new VolumeFSError('EINVAL', 'rename', to);
      }
      if (dst.node && dst.node.kind !== 'dir') throw new VolumeFSError('ENOTDIR', 'rename', to);
      if (dst.node?.kind === 'dir' && dst.node.children.size > 0) {
        throw new VolumeFSError('ENOTEMPTY', 'rename', to);
      }
    } else if (dst.node?.kind === 'dir') {
      throw new VolumeFSError('EISDIR', 'rename', to);
    }
    src.parent.children.delete(src.name);
    dst.parent.children.set(dst.name, src.node);
  }

  async readdir(path: string): Promise<string[]> {
    const node = this.existing(path, true, 'scandir');
    if (node.kind !== 'dir') throw new VolumeFSError('ENOTDIR', 'scandir', path);
    return [...node.children.keys()].sort();
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
    r.parent.children.delete(r.name);
  }

  async chmod(path: string, mode: number): Promise<void> {
    this.existing(path, true, 'chmod').mode = mode & 0o7777;
  }

  async chown(path: string, owner: Owner): Promise<void> {
    const node = this.existing(path, false, 'lchown');
    if (owner.uid !== undefined) node.uid = owner.uid;
    if (owner.gid !== undefined) node.gid = owner.gid;
  }

  async realpath(path: string): Promise<string> {
    const r = this.resolve(path, true, 'realpath');
    if (!r.node) throw new VolumeFSError('ENOENT', 'realpath', path);
    return r.path;
  }

  // ------------------------------------------------------------------------------- synchronous readers

  /** A file's content following symlinks, or undefined when the path is missing or not a file. */
  readFileSync(path: string): Buffer | undefined {
    const node = this.tryResolve(path, true)?.node;
    return node?.kind === 'file' ? Buffer.from(node.data) : undefined;
  }

  /** A directory's sorted entry names following symlinks, or undefined when it is not a directory. */
  listSync(path: string): string[] | undefined {
    const node = this.tryResolve(path, true)?.node;
    return node?.kind === 'dir' ? [...node.children.keys()].sort() : undefined;
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
    const size =
      n.kind === 'file' ? n.data.length : n.kind === 'symlink' ? Buffer.byteLength(n.target) : DIR_SIZE;
    return { kind: n.kind, mode: n.mode, uid: n.uid, gid: n.gid, size };
  }

  // ---------------------------------------------------------------------------------------- resolution

  private newDir(mode: number): MemDir {
    return {
      kind: 'dir',
      children: new Map(),
      mode: mode & ~this.umask & 0o7777,
      uid: this.uid,
      gid: this.gid,
    };
  }

  private existing(path: string, follow: boolean, syscall: string): MemNode {
    const r = this.resolve(path, follow, syscall);
    if (!r.node) throw new VolumeFSError('ENOENT', syscall, path);
    return r.node;
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
    const todo = components(path, syscall);
    const dirs: MemDir[] = [this.root];
    const names: string[] = [];
    let hops = 0;
    while (todo.length > 0) {
      const part = todo.shift()!;
      const cur = dirs[dirs.length - 1]!;
      if (part === '.') continue;
      if (part === '..') {
        if (dirs.length > 1) {
          dirs.pop();
          names.pop();
        }
        continue;
      }
      const child = cur.children.get(part);
      const last = todo.length === 0;
      if (child?.kind === 'symlink' && (!last || followFinal)) {
        if (++hops > MAX_LINK_HOPS) throw new VolumeFSError('ELOOP', syscall, path);
        if (child.target.startsWith('/')) {
          dirs.length = 1;
          names.length = 0;
        }
        todo.unshift(...child.target.split('/').filter((p) => p !== ''));
        continue;
      }
      if (last) return { parent: cur, name: part, node: child, path: `/${[...names, part].join('/')}` };
      if (!child) {
        if (missingOk) return { parent: undefined, name: part, node: undefined, path };
        throw new VolumeFSError('ENOENT', syscall, path);
      }
      if (child.kind !== 'dir') {
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

function components(path: string, syscall: string): string[] {
  if (!path.startsWith('/')) throw new VolumeFSError('EINVAL', syscall, path);
  return path.split('/').filter((p) => p !== '');
}
