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
