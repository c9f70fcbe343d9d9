/**
 * The kubelet's AtomicWriter (pkg/volume/util/atomic_writer.go): projects a payload of files into a volume
 * directory so that a reader sees either the whole old content or the whole new content, never a mix.
 *
 * Layout of a target directory:
 *
 *   <target>/..2026_01_02_15_04_05.123000000/   the real files (a fresh directory per version)
 *   <target>/..data -> ..2026_01_02_15_04_05.123000000
 *   <target>/<name> -> ..data/<name>             one user-visible symlink per top-level path of the payload
 *
 * A new version is written into a new timestamped directory, a `..data_tmp` symlink to it is created and
 * renamed over `..data`: rename(2) replaces the link in one step, and every user-visible path goes through
 * `..data`, so the flip is atomic for readers. Names starting with `..` are reserved for the writer.
 *
 * Invariants kept by `write`:
 * - `..data`, when present, points at a complete timestamped directory (it only ever changes by rename).
 * - Nothing is written when the files already hold the payload's bytes; modes and owners are not compared
 *   (as upstream: a pod's volume spec, which decides them, is immutable).
 * - A run interrupted anywhere (a crash of the operator) leaves a state the next run repairs: a stale
 *   `..data_tmp` or an orphaned timestamped directory is removed, missing user-visible links are recreated
 *   and links into `..data` for paths no longer in the payload are removed.
 *
 * Not safe for concurrent use on one directory: the caller serialises writes (the kubelet does it per volume).
 */
import { KindError, errorMessage } from '../../util/errors.js';
import { type VolumeFS, isNotExist } from './fs.js';
import type { FileProjection } from './payload.js';
import { cleanPath, dirName, isAbsolutePath, joinPath, selfAndAncestors } from './paths.js';

export const DATA_DIR_NAME = '..data';
export const NEW_DATA_DIR_NAME = '..data_tmp';

const MAX_FILE_NAME_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;
/** `..` + Go's "2006_01_02_15_04_05." + digits (ours: nine; upstream's MkdirTemp: a random number). */
const TIMESTAMP_DIR = /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.\d+$/;
/** How many names one millisecond may take before the clock is considered stuck. */
const MAX_NAME_ATTEMPTS = 1000;

export interface AtomicWriterOptions {
  fs: VolumeFS;
  /** Absolute path of the volume directory; it must exist when `write` runs. */
  targetDir: string;
  /** Milliseconds since the epoch; names the timestamped directories. */
  now: () => number;
  /** Prefixed to error messages ("pod ns/name volume vol"). */
  logContext?: string;
}

/** Sets ownership/permissions under the new timestamped directory (its name is passed) before it is published. */
export type SetPerms = (subPath: string) => Promise<void>;

/**
 * validatePath: the error for a payload path the writer refuses, or undefined. Lengths are in bytes, as Go
 * counts them.
 */
export function validatePath(targetPath: string): string | undefined {
  if (targetPath === '') return 'invalid path: must not be empty: ""';
  if (isAbsolutePath(targetPath)) return `invalid path: must be relative path: ${targetPath}`;
  if (Buffer.byteLength(targetPath) > MAX_PATH_LENGTH) {
    return `invalid path: must be less than or equal to ${MAX_PATH_LENGTH} characters`;
  }
  const items = targetPath.split('/');
  for (const item of items) {
    if (item === '..') return `invalid path: must not contain '..': ${targetPath}`;
    if (Buffer.byteLength(item) > MAX_FILE_NAME_LENGTH) {
      return `invalid path: filenames must be less than or equal to ${MAX_FILE_NAME_LENGTH} characters`;
    }
  }
  const first = items[0] ?? '';
  if (first.startsWith('..') && first.length > 2)
    return `invalid path: must not start with '..': ${targetPath}`;
  return undefined;
}

/** validatePayload: the payload keyed by cleaned paths (a later duplicate wins), or the first path error. */
export function validatePayload(
  payload: ReadonlyMap<string, FileProjection>,
): { ok: true; payload: Map<string, FileProjection> } | { ok: false; message: string } {
  const clean = new Map<string, FileProjection>();
  for (const [p, content] of payload) {
    const message = validatePath(p);
    if (message !== undefined) return { ok: false, message };
    clean.set(cleanPath(p), content);
  }
  return { ok: true, payload: clean };
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** `..YYYY_MM_DD_HH_MM_SS.nnnnnnnnn` in UTC; the nine digits are the millisecond plus `seq` nanoseconds. */
export function timestampDirName(ms: number, seq = 0): string {
  const d = new Date(ms);
  const nanos = (((ms % 1000) + 1000) % 1000) * 1_000_000 + seq;
  return (
    `..${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_` +
    `${pad(d.getUTCHours())}_${pad(d.getUTCMinutes())}_${pad(d.getUTCSeconds())}.${pad(nanos, 9)}`
  );
}

export class AtomicWriter {
  private readonly fs: VolumeFS;
  private readonly targetDir: string;
  private readonly now: () => number;
  private readonly logContext: string;

  constructor(opts: AtomicWriterOptions) {
    if (!isAbsolutePath(opts.targetDir)) {
      throw new KindError(
        'InvalidArgument',
        `atomic writer: target directory must be absolute: ${opts.targetDir}`,
      );
    }
    this.fs = opts.fs;
    this.targetDir = cleanPath(opts.targetDir);
    this.now = opts.now;
    this.logContext = opts.logContext ?? this.targetDir;
  }

  /**
   * Projects `payload` into the target directory. Resolves to true when a new version was published (a new
   * `..data` target), false when the files already held the payload (user-visible links may still have been
   * repaired). Rejects with KindError InvalidArgument for a refused path, NotFound for a missing target
   * directory, and with the file system's error otherwise; the previous version stays visible in every case.
   */
  async write(payload: ReadonlyMap<string, FileProjection>, setPerms?: SetPerms): Promise<boolean> {
    const valid = validatePayload(payload);
    if (!valid.ok) {
      throw new KindError('InvalidArgument', valid.message, { logContext: this.logContext });
    }
    const clean = valid.payload;
    const target = await this.fs.stat(this.targetDir);
    if (target?.kind !== 'dir') {
      throw new KindError(
        'NotFound',
        `${this.logContext}: target directory ${this.targetDir} does not exist`,
      );
    }

    const dataDirPath = joinPath(this.targetDir, DATA_DIR_NAME);
    const oldTsDir = await this.readlinkIfExists(dataDirPath);
    await this.removeLeftovers(oldTsDir);
    const oldTsPath = oldTsDir === '' ? '' : joinPath(this.targetDir, oldTsDir);

    let removed = new Set<string>();
    let shouldWrite = true;
    if (oldTsPath !== '') {
      removed = await this.pathsToRemove(clean, oldTsPath);
      shouldWrite = removed.size > 0 || (await this.shouldWritePayload(clean, oldTsPath));
    }

    if (shouldWrite) await this.publish(clean, dataDirPath, setPerms);

    // After the swap, so that a new name never points into a version that lacks it.
    await this.createUserVisibleFiles(clean);
    await this.removeUserVisiblePaths(clean, removed);
    if (shouldWrite && oldTsPath !== '') await this.fs.rm(oldTsPath);
    return shouldWrite;
  }

  /** Writes a new timestamped directory and swaps `..data` to it; on failure removes what it created. */
  private async publish(
    payload: ReadonlyMap<string, FileProjection>,
    dataDirPath: string,
    setPerms: SetPerms | undefined,
  ): Promise<void> {
    const tsName = await this.newTimestampDir();
    const tsPath = joinPath(this.targetDir, tsName);
    const newDataDirPath = joinPath(this.targetDir, NEW_DATA_DIR_NAME);
    try {
      await this.writePayloadToDir(payload, tsPath);
      if (setPerms) await setPerms(tsName);
      await this.fs.symlink(tsName, newDataDirPath);
      await this.fs.rename(newDataDirPath, dataDirPath);
    } catch (err) {
      await this.fs.rm(newDataDirPath).catch(() => undefined);
      await this.fs.rm(tsPath).catch(() => undefined);
      throw err;
    }
  }

  private async readlinkIfExists(path: string): Promise<string> {
    try {
      return await this.fs.readlink(path);
    } catch (err) {
      if (isNotExist(err)) return '';
      throw err;
    }
  }

  /**
   * What an interrupted write leaves behind: a `..data_tmp` link (crash before the rename) and timestamped
   * directories other than the current one (crash before publishing, or before the old one was removed).
   */
  private async removeLeftovers(currentTsDir: string): Promise<void> {
    for (const name of await this.fs.readdir(this.targetDir)) {
      if (name === NEW_DATA_DIR_NAME || (TIMESTAMP_DIR.test(name) && name !== currentTsDir)) {
        await this.fs.rm(joinPath(this.targetDir, name));
      }
    }
  }

  /** Every path of the current version (files and directories) that neither is nor contains a new path. */
  private async pathsToRemove(
    payload: ReadonlyMap<string, FileProjection>,
    oldTsPath: string,
  ): Promise<Set<string>> {
    const current: string[] = [];
    const walk = async (rel: string): Promise<void> => {
      const abs = rel === '' ? oldTsPath : joinPath(oldTsPath, rel);
      const st = await this.fs.lstat(abs);
      if (!st) return;
      if (rel !== '') current.push(rel);
      if (st.kind !== 'dir') return;
      for (const name of await this.fs.readdir(abs)) await walk(rel === '' ? name : `${rel}/${name}`);
    };
    await walk('');
    const keep = new Set<string>();
    for (const p of payload.keys()) for (const a of selfAndAncestors(p)) keep.add(a);
    return new Set(current.filter((p) => !keep.has(p)));
  }

  /** Whether any file of the payload is missing from the current version or holds other bytes. */
  private async shouldWritePayload(
    payload: ReadonlyMap<string, FileProjection>,
    oldTsPath: string,
  ): Promise<boolean> {
    for (const [rel, projection] of payload) {
      const abs = joinPath(oldTsPath, rel);
      const st = await this.fs.lstat(abs);
      // Upstream fails reading a directory here; a different kind of entry simply needs a new version.
      if (st?.kind !== 'file') return true;
      if (!projection.data.equals(await this.fs.readFile(abs))) return true;
    }
    return false;
  }

  /** A fresh, empty directory named after the clock, mode 0755 whatever the umask. */
  private async newTimestampDir(): Promise<string> {
    const ms = this.now();
    for (let seq = 0; seq < MAX_NAME_ATTEMPTS; seq++) {
      const name = timestampDirName(ms, seq);
      const path = joinPath(this.targetDir, name);
      if (await this.fs.lstat(path)) continue;
      await this.fs.mkdir(path, 0o700);
      // 0755 lets group and other traverse the tree; chmod because mkdir's mode is subject to the umask.
      await this.fs.chmod(path, 0o755);
      return name;
    }
    throw new KindError('Internal', `${this.logContext}: no free timestamped directory name at ${ms}`);
  }

  private async writePayloadToDir(payload: ReadonlyMap<string, FileProjection>, dir: string): Promise<void> {
    for (const [rel, projection] of payload) {
      const full = joinPath(dir, rel);
      await this.fs.mkdir(dirName(full), 0o777);
      await this.fs.writeFile(full, projection.data, projection.mode);
      // The create mode went through the umask; the payload's mode must hold exactly.
      await this.fs.chmod(full, projection.mode);
      if (projection.fsUser !== undefined) await this.fs.chown(full, { uid: projection.fsUser });
    }
  }

  /** `<name> -> ..data/<name>` for each top-level name of the payload that has no entry yet. */
  private async createUserVisibleFiles(payload: ReadonlyMap<string, FileProjection>): Promise<void> {
    for (const name of topLevelNames(payload)) {
      const visible = joinPath(this.targetDir, name);
      if (await this.fs.lstat(visible)) continue;
      await this.fs.symlink(`${DATA_DIR_NAME}/${name}`, visible);
    }
  }

  /**
   * Removes the user-visible links of top-level paths that left the payload: those the old version had, and
   * (for a run after a crash) any other link into `..data` whose name the payload no longer has. Only
   * symlinks are removed: a directory here is someone else's (a nested mount point).
   */
  private async removeUserVisiblePaths(
    payload: ReadonlyMap<string, FileProjection>,
    removed: ReadonlySet<string>,
  ): Promise<void> {
    const keep = topLevelNames(payload);
    const candidates = new Set([...removed].filter((p) => !p.includes('/')));
    for (const name of await this.fs.readdir(this.targetDir)) {
      if (name.startsWith('..') || keep.has(name)) continue;
      const st = await this.fs.lstat(joinPath(this.targetDir, name));
      if (st?.kind !== 'symlink') continue;
      const link = await this.fs.readlink(joinPath(this.targetDir, name));
      if (link === `${DATA_DIR_NAME}/${name}`) candidates.add(name);
    }
    let lastError: unknown;
    for (const name of candidates) {
      const path = joinPath(this.targetDir, name);
      try {
        if ((await this.fs.lstat(path))?.kind === 'symlink') await this.fs.rm(path);
      } catch (err) {
        // As upstream: try every path, report the last failure.
        lastError = err;
      }
    }
    if (lastError !== undefined) {
      throw new KindError(
        'Internal',
        `${this.logContext}: error removing old visible symlinks: ${errorMessage(lastError)}`,
        {},
        { cause: lastError },
      );
    }
  }
}

function topLevelNames(payload: ReadonlyMap<string, FileProjection>): Set<string> {
  const names = new Set<string>();
  for (const p of payload.keys()) names.add(p.split('/')[0] ?? p);
  return names;
}
