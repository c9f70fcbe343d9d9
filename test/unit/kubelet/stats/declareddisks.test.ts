import { expect } from 'chai';
import { declaredFilesystems, type DeclaredDisks } from '../../../../src/kubelet/stats/declareddisks.js';
import type { ImageFsInfo } from '../../../../src/runtime/types.js';

const MiB = 1 << 20;
const NOW = 5_000_000;
const IMAGES = '/var/lib/sim/images';
const CONTAINERS = '/var/lib/sim/containers';

/** ImageFsInfo with images of `images` MiB; containers with them, or apart with `layers` MiB. */
function info(images: number, containers?: { layers: number }): ImageFsInfo {
  const image = { timestamp: 7_000_000_000_000n, mountpoint: IMAGES, usedBytes: images * MiB, inodesUsed: 3 };
  return {
    imageFilesystems: [image],
    containerFilesystems: [
      containers
        ? { timestamp: 7_000_000_000_000n, mountpoint: CONTAINERS, usedBytes: containers.layers * MiB }
        : { ...image },
    ],
  };
}

const fig = (f: { capacityBytes?: number; usedBytes?: number; availableBytes?: number } | undefined) =>
  f && {
    capacity: (f.capacityBytes ?? -1) / MiB,
    used: (f.usedBytes ?? -1) / MiB,
    available: (f.availableBytes ?? -1) / MiB,
  };

describe('declared disks: the filesystems of a node without a real disk, per layout', () => {
  // 100 MiB of on-disk volumes and 200 MiB of this node's running layers in every case.
  const contents = { volumeBytes: 100 * MiB, writableBytes: 200 * MiB };
  const cases: {
    name: string;
    disks: DeclaredDisks;
    info: ImageFsInfo | undefined;
    layout: { dedicatedImageFs: boolean; splitContainerImageFs: boolean };
    node: { capacity: number; used: number; available: number };
    imageFs?: { capacity: number; used: number; available: number };
    containerFs?: { capacity: number; used: number; available: number };
    containerIsImage: boolean;
  }[] = [
    {
      name: 'one disk: images, layers and volumes on the node disk; imagefs and containerfs are that disk',
      disks: { nodeCapacityBytes: 1024 * MiB },
      info: info(300),
      layout: { dedicatedImageFs: false, splitContainerImageFs: false },
      node: { capacity: 1024, used: 600, available: 424 },
      imageFs: { capacity: 1024, used: 300, available: 424 },
      containerFs: { capacity: 1024, used: 300, available: 424 },
      containerIsImage: true,
    },
    {
      name: 'image disk: images and layers on it, volumes on the node disk',
      disks: { nodeCapacityBytes: 1024 * MiB, imageCapacityBytes: 2048 * MiB },
      info: info(300),
      layout: { dedicatedImageFs: true, splitContainerImageFs: false },
      node: { capacity: 1024, used: 100, available: 924 },
      imageFs: { capacity: 2048, used: 300, available: 1548 },
      containerFs: { capacity: 2048, used: 300, available: 1548 },
      containerIsImage: true,
    },
    {
      name: 'split: images alone on theirs, the runtime-counted layers with the volumes on the node disk',
      disks: { nodeCapacityBytes: 1024 * MiB, imageCapacityBytes: 2048 * MiB },
      info: info(300, { layers: 500 }),
      layout: { dedicatedImageFs: true, splitContainerImageFs: true },
      node: { capacity: 1024, used: 600, available: 424 },
      imageFs: { capacity: 2048, used: 300, available: 1748 },
      containerFs: { capacity: 1024, used: 500, available: 424 },
      containerIsImage: false,
    },
    {
      name: 'a container filesystem apart but no image disk: one device, so not split; all on the node disk',
      disks: { nodeCapacityBytes: 1024 * MiB },
      info: info(300, { layers: 500 }),
      layout: { dedicatedImageFs: false, splitContainerImageFs: false },
      node: { capacity: 1024, used: 900, available: 124 },
      imageFs: { capacity: 1024, used: 300, available: 124 },
      containerFs: { capacity: 1024, used: 300, available: 124 },
      containerIsImage: true,
    },
    {
      name: 'no ImageFsInfo: the node disk with volumes and layers, no runtime filesystems',
      disks: { nodeCapacityBytes: 1024 * MiB, imageCapacityBytes: 2048 * MiB },
      info: undefined,
      layout: { dedicatedImageFs: false, splitContainerImageFs: false },
      node: { capacity: 1024, used: 300, available: 724 },
      containerIsImage: true,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = declaredFilesystems(c.disks, c.info, contents, NOW);
      expect(r.layout).to.deep.equal(c.layout);
      expect(fig(r.node)).to.deep.equal(c.node);
      expect(fig(r.imageFs)).to.deep.equal(c.imageFs);
      expect(fig(r.containerFs)).to.deep.equal(c.containerFs);
      expect(r.containerFs === r.imageFs).to.equal(c.containerIsImage);
    });
  }

  it('the runtime filesystems carry the runtime time and inode use; the node disk the time given', () => {
    const r = declaredFilesystems({ nodeCapacityBytes: 1024 * MiB }, info(300), contents, NOW);
    expect(r.node.time).to.equal(NOW);
    expect(r.imageFs).to.deep.include({ time: 7_000_000, inodesUsed: 3 });
    expect(r.imageFs).to.not.have.property('inodes');
  });

  it('a disk filled past its size has nothing available, never a negative figure', () => {
    const r = declaredFilesystems(
      { nodeCapacityBytes: 1024 * MiB, imageCapacityBytes: 256 * MiB },
      info(300),
      contents,
      NOW,
    );
    expect(r.imageFs?.availableBytes).to.equal(0);
  });
});
