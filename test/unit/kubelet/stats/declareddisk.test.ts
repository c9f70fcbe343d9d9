import { expect } from 'chai';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { StatsProvider, type StatsRuntime } from '../../../../src/kubelet/stats/shell/provider.js';
import { DirUsage } from '../../../../src/kubelet/stats/shell/du.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import { PluginDirs } from '../../../../src/kubelet/volume/podpaths.js';
import type { ImageFsInfo, PodSandboxStats } from '../../../../src/runtime/types.js';
import { FakeClock } from '../../../../src/util/clock.js';

const MiB = 1 << 20;
const PODS = '/pods';

/** One ready pod (uid u1) whose container's writable layer holds `writable` bytes. */
function runtimeWith(writable: { bytes: number }, running = false): StatsRuntime {
  const sandbox = {
    id: 's1',
    metadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 0 },
    state: 'ready' as const,
    createdAt: 1n,
    labels: {},
    annotations: {},
  };
  return {
    listPodSandbox: async () => [sandbox],
    listContainers: async () =>
      running ? [{ id: 'c1', podSandboxId: 's1', createdAt: 1n, metadata: { name: 'app', attempt: 0 } }] : [],
    listContainerStats: async () => [],
    listPodSandboxStats: async (): Promise<PodSandboxStats[]> => [
      {
        attributes: { id: 's1', metadata: sandbox.metadata, labels: {}, annotations: {} },
        containers: [
          {
            attributes: { id: 'c1', metadata: { name: 'app', attempt: 0 }, labels: {}, annotations: {} },
            writableLayer: { timestamp: 1n, usedBytes: writable.bytes, inodesUsed: 0 },
          },
        ],
      },
    ],
  } as unknown as StatsRuntime;
}

describe('stats provider: a declared disk (sim) holds images, writable layers and on-disk volumes', () => {
  it('nodefs and imagefs available are the capacity less all three; tmpfs volumes are left out', async () => {
    const clock = new FakeClock(1_000_000);
    const fs = new MemoryVolumeFS();
    const usage = new DirUsage(fs, clock);
    const vol = (plugin: string, name: string): string => `${PODS}/u1/volumes/${plugin}/${name}`;
    await fs.mkdir(vol(PluginDirs.emptyDir, 'scratch'));
    await fs.writeFile(`${vol(PluginDirs.emptyDir, 'scratch')}/f`, Buffer.alloc(100 * MiB));
    await fs.mkdir(vol(PluginDirs.secret, 'creds'));
    await fs.writeFile(`${vol(PluginDirs.secret, 'creds')}/f`, Buffer.alloc(50 * MiB));
    const writable = { bytes: 200 * MiB };
    const images = { bytes: 300 * MiB };
    const imageFsInfo = async (): Promise<ImageFsInfo> => {
      const fsUsage = { timestamp: 1n, mountpoint: '/sim/images', usedBytes: images.bytes, inodesUsed: 3 };
      return { imageFilesystems: [fsUsage], containerFilesystems: [{ ...fsUsage }] };
    };
    const provider = new StatsProvider({
      nodeName: 'n1',
      runtime: runtimeWith(writable),
      clock,
      startTimeMs: 0,
      memoryCapacityBytes: 1 << 30,
      ephemeralStorageCapacityBytes: 1024 * MiB,
      nodesServed: () => 1,
      processUsage: () => ({ cpuMicros: 0, rssBytes: 0 }),
      volumes: { podsDir: PODS, fs, usage },
      imageFsInfo,
    });
    // Volume sizes are walked in the background: the first Summary starts the walks.
    await provider.summary();
    await usage.idle();
    const node = (await provider.summary()).node.fs!;
    expect(node).to.deep.include({
      capacityBytes: 1024 * MiB,
      usedBytes: 600 * MiB,
      availableBytes: 424 * MiB,
    });
    const { imageFs } = await provider.imageFsStats();
    expect(imageFs).to.deep.include({
      capacityBytes: 1024 * MiB,
      usedBytes: 300 * MiB,
      availableBytes: 424 * MiB,
    });

    // A layer that grows past the disk: nothing available, never a negative figure.
    writable.bytes = 900 * MiB;
    expect((await provider.summary()).node.fs).to.deep.include({ usedBytes: 1300 * MiB, availableBytes: 0 });
  });
});

/** The provider's parts these cases share: one node, 1 GiB of memory and of declared disk, an idle process. */
const fixedDeps = () => ({
  nodeName: 'n1',
  clock: new FakeClock(1_000_000),
  startTimeMs: 0,
  memoryCapacityBytes: 1 << 30,
  ephemeralStorageCapacityBytes: 1024 * MiB,
  nodesServed: () => 1,
  processUsage: () => ({ cpuMicros: 0, rssBytes: 0 }),
});

describe('stats provider: the Summary’s runtime filesystems and the layout (KubeletSeparateDiskGC)', () => {
  const images = 300 * MiB;
  const imageFsInfo = (layers?: number) => async (): Promise<ImageFsInfo> => {
    const image = { timestamp: 1n, mountpoint: '/sim/images', usedBytes: images, inodesUsed: 3 };
    const container =
      layers === undefined ? { ...image } : { timestamp: 1n, mountpoint: '/sim/c', usedBytes: layers };
    return { imageFilesystems: [image], containerFilesystems: [container] };
  };
  const provider = (o: { imageFsInfo?: () => Promise<ImageFsInfo>; imageFsCapacityBytes?: number }) =>
    new StatsProvider({ ...fixedDeps(), runtime: runtimeWith({ bytes: 200 * MiB }, true), ...o });

  it('one disk: runtime.imageFs and containerFs are the node disk’s figures with the images’ usage', async () => {
    const p = provider({ imageFsInfo: imageFsInfo() });
    const s = await p.summary();
    expect(s.node.runtime?.imageFs).to.deep.include({
      capacityBytes: 1024 * MiB,
      usedBytes: images,
      availableBytes: 524 * MiB,
    });
    expect(s.node.runtime?.containerFs).to.deep.equal(s.node.runtime?.imageFs);
    expect(await p.filesystemLayout()).to.deep.equal({
      dedicatedImageFs: false,
      splitContainerImageFs: false,
    });
  });

  it('an image disk: imageFs is that disk, holding the layers too; a container’s rootfs has its capacity', async () => {
    const p = provider({ imageFsInfo: imageFsInfo(), imageFsCapacityBytes: 2048 * MiB });
    const s = await p.summary();
    expect(s.node.fs).to.deep.include({ capacityBytes: 1024 * MiB, availableBytes: 1024 * MiB });
    expect(s.node.runtime?.imageFs).to.deep.include({
      capacityBytes: 2048 * MiB,
      availableBytes: 1548 * MiB,
    });
    expect(s.pods[0]?.containers[0]?.rootfs).to.deep.include({
      capacityBytes: 2048 * MiB,
      usedBytes: 200 * MiB,
      availableBytes: 1548 * MiB,
    });
    expect(await p.filesystemLayout()).to.deep.equal({
      dedicatedImageFs: true,
      splitContainerImageFs: false,
    });
    expect((await p.imageFsStats()).imageFs).to.deep.include({
      capacityBytes: 2048 * MiB,
      usedBytes: images,
    });
  });

  it('split: containerFs is the node disk with the runtime’s layer count; imageFs holds the images alone', async () => {
    const p = provider({ imageFsInfo: imageFsInfo(500 * MiB), imageFsCapacityBytes: 2048 * MiB });
    const s = await p.summary();
    expect(s.node.fs).to.deep.include({ capacityBytes: 1024 * MiB, availableBytes: 524 * MiB });
    expect(s.node.runtime?.imageFs).to.deep.include({
      capacityBytes: 2048 * MiB,
      availableBytes: 1748 * MiB,
    });
    expect(s.node.runtime?.containerFs).to.deep.include({
      capacityBytes: 1024 * MiB,
      usedBytes: 500 * MiB,
      availableBytes: 524 * MiB,
    });
    expect(await p.filesystemLayout()).to.deep.equal({ dedicatedImageFs: true, splitContainerImageFs: true });
  });

  it('no ImageFsInfo: no runtime.imageFs, one filesystem; a failing one fails the layout', async () => {
    const p = provider({});
    expect((await p.summary()).node.runtime?.imageFs).to.equal(undefined);
    expect(await p.filesystemLayout()).to.deep.equal({
      dedicatedImageFs: false,
      splitContainerImageFs: false,
    });
    const failing = provider({ imageFsInfo: () => Promise.reject(new Error('unavailable')) });
    expect((await failing.summary()).node.runtime?.imageFs).to.equal(undefined);
    let err: unknown;
    await failing.filesystemLayout().catch((e: unknown) => (err = e));
    expect(String(err)).to.contain('unavailable');
  });
});

describe('stats provider: a real disk (cri)', () => {
  it('statfs of the mountpoints; a container filesystem on the same device is the image filesystem', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'imagefs-'));
    try {
      await mkdir(path.join(dir, 'images'));
      await mkdir(path.join(dir, 'containers'));
      const p = new StatsProvider({
        ...fixedDeps(),
        runtime: runtimeWith({ bytes: 0 }),
        statfsPath: dir,
        imageFsInfo: async () => ({
          imageFilesystems: [{ timestamp: 1n, mountpoint: path.join(dir, 'images'), usedBytes: 5 * MiB }],
          containerFilesystems: [{ timestamp: 1n, mountpoint: path.join(dir, 'containers'), usedBytes: 7 }],
        }),
      });
      const r = await p.imageFsStats();
      expect(r.layout).to.deep.equal({ dedicatedImageFs: false, splitContainerImageFs: false });
      expect(r.containerFs).to.equal(r.imageFs);
      expect(r.imageFs.usedBytes).to.equal(5 * MiB);
      const s = await p.summary();
      expect(s.node.runtime?.imageFs?.capacityBytes).to.equal(s.node.fs?.capacityBytes).and.be.greaterThan(0);
      expect(s.node.runtime?.containerFs?.usedBytes).to.equal(5 * MiB);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
