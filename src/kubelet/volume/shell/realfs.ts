/**
 * VolumeFS over the node's disk (node:fs/promises). The shell side of the volume plugins: everything else in
 * this directory is written against the VolumeFS interface and never imports node:fs.
 */
import { promises as fsp, type Stats } from 'node:fs';
import { type EntryKind, type EntryStat, type Owner, type VolumeFS, fsErrorCode, isNotExist } from '../fs.js';

function kindOf(st: Stats): EntryKind {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'dir';
  if (st.isFile()) return 'file';
  return 'other';
}

function specialOf(st: Stats): EntryStat['special'] {
  if (st.isSocket()) return 'socket';
  if (st.isCharacterDevice()) return 'charDevice';
  if (st.isBlockDevice()) return 'blockDevice';
  if (st.isFIFO()) return 'fifo';
  return undefined;
}

function toEntryStat(st: Stats): EntryStat {
  const out: EntryStat = {
    kind: kindOf(st),
    mode: st.mode & 0o7777,
    uid: st.uid,
    gid: st.gid,
    size: st.size,
    disk: { dev: st.dev, ino: st.ino, nlink: st.nlink, blocks: st.blocks },
  };
  const special = specialOf(st);
  if (special) out.special = special;
  return out;
}

async function statOrUndefined(fn: () => Promise<Stats>): Promise<EntryStat | undefined> {
  try {
    return toEntryStat(await fn());
  } catch (err) {
    if (isNotExist(err) || fsErrorCode(err) === 'ENOTDIR') return undefined;
    throw err;
  }
}

export class RealVolumeFS implements VolumeFS {
  async mkdir(path: string, mode = 0o777): Promise<void> {
    await fsp.mkdir(path, { recursive: true, mode });
  }

  async writeFile(path: string, data: Buffer, mode = 0o666): Promise<void> {
    await fsp.writeFile(path, data, { mode });
  }

  readFile(path: string): Promise<Buffer> {
    return fsp.readFile(path);
  }

  symlink(target: string, path: string): Promise<void> {
    return fsp.symlink(target, path);
  }

  readlink(path: string): Promise<string> {
    return fsp.readlink(path);
  }

  rename(from: string, to: string): Promise<void> {
    return fsp.rename(from, to);
  }

  async readdir(path: string): Promise<string[]> {
    return (await fsp.readdir(path)).sort();
  }

  lstat(path: string): Promise<EntryStat | undefined> {
    return statOrUndefined(() => fsp.lstat(path));
  }

  stat(path: string): Promise<EntryStat | undefined> {
    return statOrUndefined(() => fsp.stat(path));
  }

  rm(path: string): Promise<void> {
    return fsp.rm(path, { recursive: true, force: true });
  }

  chmod(path: string, mode: number): Promise<void> {
    return fsp.chmod(path, mode & 0o7777);
  }

  chown(path: string, owner: Owner): Promise<void> {
    return fsp.lchown(path, owner.uid ?? -1, owner.gid ?? -1);
  }

  realpath(path: string): Promise<string> {
    return fsp.realpath(path);
  }
}
