/**
 * The two VolumeFS implementations behind one factory, so that contract tests and the atomic writer's tests run
 * against the in-memory tree and a real temporary directory alike.
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { VolumeFS } from '../../../../src/kubelet/volume/fs.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import type { PayloadResult } from '../../../../src/kubelet/volume/payload.js';
import { RealVolumeFS } from '../../../../src/kubelet/volume/shell/realfs.js';

export interface FsFixture {
  fs: VolumeFS;
  /** An existing, empty, absolute directory to work in. */
  root: string;
  cleanup(): Promise<void>;
}

export interface FsKind {
  name: string;
  make(): Promise<FsFixture>;
}

/** The process umask, which the real file system applies; the in-memory one is given the same. */
export const UMASK = process.umask();

export const FS_KINDS: FsKind[] = [
  {
    name: 'MemoryVolumeFS',
    async make() {
      const fs = new MemoryVolumeFS({ umask: UMASK });
      await fs.mkdir('/var/lib/kubelet/pods/uid/volumes/vol');
      return { fs, root: '/var/lib/kubelet/pods/uid/volumes/vol', cleanup: async () => undefined };
    },
  },
  {
    name: 'RealVolumeFS',
    async make() {
      const root = await mkdtemp(path.join(tmpdir(), 'kubelet-operator-volume-'));
      return { fs: new RealVolumeFS(), root, cleanup: () => rm(root, { recursive: true, force: true }) };
    },
  },
];

/** Whether this process may give files away to other users (root). */
export const CAN_CHOWN = typeof process.getuid === 'function' && process.getuid() === 0;

/** A payload as { path: [text, mode] } for compact assertions. */
export function files(r: PayloadResult): Record<string, [string, number]> {
  if (!r.ok) return expect.fail(`unexpected failure: ${r.message}`);
  return Object.fromEntries([...r.payload].map(([k, v]) => [k, [v.data.toString('utf8'), v.mode]]));
}

export function message(r: PayloadResult): string {
  if (r.ok) return expect.fail('expected a failure');
  return r.message;
}
