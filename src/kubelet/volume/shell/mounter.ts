/**
 * The few mount operations the volume plugins need (kubelet: k8s.io/mount-utils Interface, only tmpfs here):
 * `RealMounter` runs mount(8)/umount(8) and reads /proc/self/mountinfo; `MemoryMounter` records mounts for the
 * simulated runtime and for tests. Mounting needs CAP_SYS_ADMIN; for containers to see a mount made by the
 * operator, the pods directory must be shared with the runtime's mount namespace (a privileged operator with
 * Bidirectional propagation, or the operator running on the host): see docs/features.md, Volumes.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseMountInfo, type MountPoint } from '../mountinfo.js';
import { rsharedSteps } from '../sharedroot.js';

export { parseMountInfo, type MountPoint } from '../mountinfo.js';

export interface Mounter {
  /** Mounts a tmpfs on the existing directory `dir`; `sizeBytes` caps it (kernel default: half the RAM). */
  mountTmpfs(dir: string, sizeBytes?: number): Promise<void>;
  /** Unmounts `dir`; an unmounted `dir` is not an error. */
  unmount(dir: string): Promise<void>;
  /** The mount at exactly `dir`, if any. */
  mountPoint(dir: string): Promise<MountPoint | undefined>;
  /** Every mount point strictly under `dir`, deepest first (the order to unmount them in). */
  mountsUnder(dir: string): Promise<string[]>;
}

function under(table: Iterable<string>, dir: string): string[] {
  const prefix = `${path.resolve(dir)}/`;
  return [...table].filter((m) => m.startsWith(prefix)).sort((a, b) => b.length - a.length);
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 30_000 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')}: ${String(stderr).trim() || err.message}`));
      else resolve();
    });
  });
}

/**
 * Makes `dir` (created if missing) a shared mount, as a kubelet makes its root directory at start (mount-utils
 * MakeRShared): pods' Bidirectional mounts of it then propagate both ways. What it did: the steps taken.
 */
export async function makeRShared(dir: string): Promise<ReturnType<typeof rsharedSteps>> {
  const abs = path.resolve(dir);
  await mkdir(abs, { recursive: true });
  const steps = rsharedSteps(await readFile('/proc/self/mountinfo', 'utf8'), abs);
  if (steps === 'bind-then-make-rshared') await run('mount', ['--rbind', abs, abs]);
  if (steps !== 'none') await run('mount', ['--make-rshared', abs]);
  return steps;
}

export class RealMounter implements Mounter {
  async mountTmpfs(dir: string, sizeBytes?: number): Promise<void> {
    const opts = sizeBytes !== undefined && sizeBytes > 0 ? ['-o', `size=${Math.floor(sizeBytes)}`] : [];
    await run('mount', ['-t', 'tmpfs', ...opts, 'tmpfs', dir]);
  }

  async unmount(dir: string): Promise<void> {
    if (!(await this.mountPoint(dir))) return;
    await run('umount', [dir]);
  }

  async mountPoint(dir: string): Promise<MountPoint | undefined> {
    const m = parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8')).get(path.resolve(dir));
    return m && { fstype: m.fstype };
  }

  async mountsUnder(dir: string): Promise<string[]> {
    return under(parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8')).keys(), dir);
  }
}

export class MemoryMounter implements Mounter {
  readonly mounts = new Map<string, MountPoint & { sizeBytes?: number }>();

  async mountTmpfs(dir: string, sizeBytes?: number): Promise<void> {
    this.mounts.set(path.resolve(dir), {
      fstype: 'tmpfs',
      ...(sizeBytes !== undefined ? { sizeBytes } : {}),
    });
  }

  async unmount(dir: string): Promise<void> {
    this.mounts.delete(path.resolve(dir));
  }

  async mountPoint(dir: string): Promise<MountPoint | undefined> {
    const m = this.mounts.get(path.resolve(dir));
    return m ? { fstype: m.fstype } : undefined;
  }

  async mountsUnder(dir: string): Promise<string[]> {
    return under(this.mounts.keys(), dir);
  }
}
