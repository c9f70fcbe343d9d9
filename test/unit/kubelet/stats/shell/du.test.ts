import { expect } from 'chai';
import { DirUsage, walkUsage } from '../../../../../src/kubelet/stats/shell/du.js';
import { MemoryVolumeFS } from '../../../../../src/kubelet/volume/memfs.js';
import { FakeClock } from '../../../../../src/util/clock.js';

describe('stats/du', () => {
  it('sums file sizes and counts entries (directories and links too) without following symlinks', async () => {
    const fs = new MemoryVolumeFS();
    await fs.mkdir('/v/..2026/sub');
    await fs.writeFile('/v/..2026/a', Buffer.alloc(100));
    await fs.writeFile('/v/..2026/sub/b', Buffer.alloc(23));
    await fs.symlink('..2026', '/v/..data');
    await fs.symlink('..data/a', '/v/a');
    expect(await walkUsage(fs, '/v')).to.deep.equal({ usedBytes: 123, inodesUsed: 7 });
  });

  it('on a real disk counts allocated blocks of every entry, a hard link once, and stops at another device', async () => {
    type Entry = {
      kind: 'file' | 'dir' | 'symlink';
      dev?: number;
      ino: number;
      nlink?: number;
      blocks: number;
    };
    const tree: Record<string, Entry> = {
      '/v': { kind: 'dir', ino: 1, nlink: 3, blocks: 8 },
      '/v/a': { kind: 'file', ino: 2, blocks: 16 },
      '/v/sparse': { kind: 'file', ino: 3, blocks: 0 },
      '/v/h1': { kind: 'file', ino: 4, nlink: 2, blocks: 32 },
      '/v/h2': { kind: 'file', ino: 4, nlink: 2, blocks: 32 },
      '/v/l': { kind: 'symlink', ino: 5, blocks: 0 },
      '/v/sub': { kind: 'dir', ino: 6, nlink: 2, blocks: 8 },
      '/v/sub/b': { kind: 'file', ino: 7, blocks: 8 },
      '/v/mnt': { kind: 'dir', dev: 9, ino: 1, nlink: 2, blocks: 8 },
      '/v/mnt/big': { kind: 'file', dev: 9, ino: 2, blocks: 1 << 20 },
    };
    const fs = {
      lstat: async (p: string) => {
        const e = tree[p];
        if (!e) return undefined;
        return {
          kind: e.kind,
          mode: 0o644,
          uid: 0,
          gid: 0,
          size: 1 << 30, // apparent sizes are not what a disk holds
          disk: { dev: e.dev ?? 1, ino: e.ino, nlink: e.nlink ?? 1, blocks: e.blocks },
        };
      },
      readdir: async (p: string) =>
        Object.keys(tree)
          .filter((k) => k.startsWith(`${p}/`) && !k.slice(p.length + 1).includes('/'))
          .map((k) => k.slice(p.length + 1)),
    };
    // /v, a, sparse, h1 (h2 is the same inode), l, sub, sub/b; mnt and what it holds are another device's.
    expect(await walkUsage(fs, '/v')).to.deep.equal({
      usedBytes: (8 + 16 + 0 + 32 + 0 + 8 + 8) * 512,
      inodesUsed: 7,
    });
  });

  it('serves the cached reading and walks again in the background once it is a period old', async () => {
    const fs = new MemoryVolumeFS();
    const clock = new FakeClock(1_000);
    const du = new DirUsage(fs, clock, 60_000);
    expect(du.get('/v')).to.equal(undefined);
    await du.idle();
    expect(du.get('/v'), 'missing directory').to.equal(undefined);
    await fs.mkdir('/v');
    await fs.writeFile('/v/f', Buffer.alloc(10));
    expect(du.get('/v'), 'not re-walked within the period').to.equal(undefined);
    clock.advance(60_000);
    du.get('/v');
    await du.idle();
    expect(du.get('/v')).to.deep.equal({ timeMs: 61_000, usedBytes: 10, inodesUsed: 2 });
    await fs.writeFile('/v/g', Buffer.alloc(5));
    expect(du.get('/v')?.usedBytes).to.equal(10);
    du.retain(() => false);
    expect(du.size()).to.equal(0);
  });
});
