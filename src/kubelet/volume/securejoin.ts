/**
 * A path under a root, with its symlinks resolved as if the root were `/` (the kubelet's
 * github.com/cyphar/filepath-securejoin SecureJoin): `..` never climbs above the root, an absolute symlink
 * target starts again at the root, and components that do not exist are kept as written. The result is
 * always the root or below it, whatever the files under the root (which a container may have written) say.
 */
import type { VolumeFS } from './fs.js';
import { joinPath } from './paths.js';

/** More symlinks than this on one walk is a loop (filepath-securejoin's limit). */
const MAX_SYMLINKS = 255;

/** `unsafePath` joined under `root` (see the module comment). Rejects with ELOOP after too many symlinks. */
export async function secureJoin(fs: VolumeFS, root: string, unsafePath: string): Promise<string> {
  const resolved: string[] = [];
  let pending = unsafePath.split('/');
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    const full = joinPath(root, ...resolved, part);
    const st = await fs.lstat(full);
    if (st?.kind !== 'symlink') {
      resolved.push(part);
      continue;
    }
    if (++links > MAX_SYMLINKS) {
      throw Object.assign(new Error(`SecureJoin ${root}/${unsafePath}: too many levels of symbolic links`), {
        code: 'ELOOP',
      });
    }
    const target = await fs.readlink(full);
    if (target.startsWith('/')) resolved.length = 0;
    pending = [...target.split('/'), ...pending];
  }
  return joinPath(root, ...resolved);
}
