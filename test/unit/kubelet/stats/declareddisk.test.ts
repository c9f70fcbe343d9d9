import { expect } from 'chai';
import { StatsProvider, type StatsRuntime } from '../../../../src/kubelet/stats/shell/provider.js';
import { DirUsage } from '../../../../src/kubelet/stats/shell/du.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import { PluginDirs } from '../../../../src/kubelet/volume/podpaths.js';
import type { ImageFsInfo, PodSandboxStats } from '../../../../src/runtime/types.js';
import { FakeClock } from '../../../../src/util/clock.js';

const MiB = 1 << 20;
const PODS = '/pods';

/** One ready pod (uid u1) whose container's writable layer holds `writable` bytes. */
function runtimeWith(writable: { bytes: number }): StatsRuntime {
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
    listContainers: async () => [],
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
