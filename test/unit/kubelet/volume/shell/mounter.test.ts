import { expect } from 'chai';
import { MemoryMounter, parseMountInfo } from '../../../../../src/kubelet/volume/shell/mounter.js';

const MOUNTINFO = [
  '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw',
  '25 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw',
  '101 22 0:45 / /var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/tok rw,relatime shared:60 - tmpfs tmpfs rw,size=1048576k',
  '102 22 0:46 / /mnt/with\\040space rw,relatime - tmpfs tmpfs rw',
  '103 22 8:1 /data /var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/tok rw,relatime - ext4 /dev/sda1 rw',
  '104 22 0:47 / /opt/opt1 rw master:3 shared:7 - overlay overlay rw,lowerdir=/a',
  'garbage line without separator',
  '',
].join('\n');

describe('volumemanager/mounter', () => {
  describe('parseMountInfo', () => {
    const table = parseMountInfo(MOUNTINFO);

    const cases: [string, string | undefined][] = [
      ['/', 'ext4'],
      ['/proc', 'proc'],
      ['/mnt/with space', 'tmpfs'],
      // The last mount of a path is on top.
      ['/var/lib/kubelet/pods/u1/volumes/kubernetes.io~secret/tok', 'ext4'],
      // Optional fields (several, before " - ") do not shift the fstype.
      ['/opt/opt1', 'overlay'],
      ['/nowhere', undefined],
    ];
    for (const [mountPoint, fstype] of cases) {
      it(`${mountPoint} -> ${fstype ?? 'not mounted'}`, () => {
        expect(table.get(mountPoint)?.fstype).to.equal(fstype);
      });
    }

    it('skips lines without the optional-fields separator', () => {
      expect([...table.keys()]).to.have.length(5);
    });
  });

  describe('MemoryMounter', () => {
    it('records tmpfs mounts with their size, by resolved path', async () => {
      const m = new MemoryMounter();
      await m.mountTmpfs('/a/b/../c', 1024);
      await m.mountTmpfs('/d');
      expect(m.mounts.get('/a/c')).to.deep.equal({ fstype: 'tmpfs', sizeBytes: 1024 });
      expect(m.mounts.get('/d')).to.deep.equal({ fstype: 'tmpfs' });
      expect(await m.mountPoint('/a/c/')).to.deep.equal({ fstype: 'tmpfs' });
      expect(await m.mountPoint('/a')).to.equal(undefined);
    });

    it('lists mounts strictly under a directory, deepest first', async () => {
      const m = new MemoryMounter();
      for (const d of ['/p', '/p/a', '/p/a/b/c', '/p/b', '/pp', '/q']) await m.mountTmpfs(d);
      expect(await m.mountsUnder('/p')).to.deep.equal(['/p/a/b/c', '/p/a', '/p/b']);
      expect(await m.mountsUnder('/p/')).to.deep.equal(['/p/a/b/c', '/p/a', '/p/b']);
      expect(await m.mountsUnder('/x')).to.deep.equal([]);
    });

    it('unmount is idempotent', async () => {
      const m = new MemoryMounter();
      await m.mountTmpfs('/t');
      await m.unmount('/t');
      await m.unmount('/t');
      expect(await m.mountPoint('/t')).to.equal(undefined);
    });
  });
});
