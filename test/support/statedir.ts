/**
 * Removes an operator state directory made for a test run: first every mount under it (tmpfs volumes of
 * pods the run left behind), deepest first, then the files.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseMountInfo } from '../../src/kubelet/volume/shell/mounter.js';

export async function removeStateDir(dir: string): Promise<void> {
  const mounts = [...parseMountInfo(await readFile('/proc/self/mountinfo', 'utf8')).keys()]
    .filter((m) => m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) {
    await new Promise<void>((resolve) => execFile('umount', ['-l', m], () => resolve()));
  }
  await rm(dir, { recursive: true, force: true });
}

let processStateDir: string | undefined;

/**
 * One state dir for the test process's operators (`<tmp>/ko-test-state-<pid>`), removed at exit with every
 * mount under it.
 */
export function testStateDir(): string {
  if (processStateDir) return processStateDir;
  const dir = path.join(tmpdir(), `ko-test-state-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  process.on('exit', () => {
    try {
      const mounts = [...parseMountInfo(readFileSync('/proc/self/mountinfo', 'utf8')).keys()]
        .filter((m) => m.startsWith(`${dir}/`))
        .sort((a, b) => b.length - a.length);
      for (const m of mounts) spawnSync('umount', ['-l', m], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Best effort at exit.
    }
  });
  processStateDir = dir;
  return dir;
}
