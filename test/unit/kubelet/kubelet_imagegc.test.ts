// The Kubelet's image GC wiring on the simulated runtime: its GarbageCollect loop removes the unused image and
// keeps the one its pod runs, and under disk pressure the eviction manager's node-level reclaim deletes
// unused images (DeleteUnusedImages) before it would evict a pod.
import { expect } from 'chai';
import { evictionConfigFrom } from '../../../src/kubelet/eviction/settings.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import type { Summary } from '../../../src/kubelet/stats/types.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';
import { summary } from './eviction/fixtures.js';

const tags = async (runtime: { listImages(): Promise<{ repoTags: string[] }[]> }): Promise<string[]> =>
  (await runtime.listImages()).flatMap((i) => i.repoTags).sort();

describe('Kubelet: image garbage collection', () => {
  it('a GC round above the high threshold removes the unused image once old enough; the running pod keeps its image', async () => {
    const { clock, runtime, api, deps, events } = setup({ images: ['img:1', 'unused:1'] });
    api.pods.set('p-a', mkPod('a'));
    const k = new Kubelet({
      ...deps(),
      imageGC: {
        policy: { highThresholdPercent: 50, lowThresholdPercent: 10, minAgeMs: 20_000, maxAgeMs: 0 },
        // 90% used whatever happens: every round wants to free, so it removes all it may.
        imageFsStats: async () => ({ capacityBytes: 100, availableBytes: 10 }),
        recordNode: (type, reason) => events.push(`${type} ${reason} (node)`),
        periodMs: 10_000,
      },
    });
    await start(k, clock);
    await advance(clock, 11_000);
    expect(await tags(runtime)).to.include('docker.io/library/unused:1'); // not 20 s old yet
    await advance(clock, 20_000);
    expect(await tags(runtime)).to.deep.equal(['docker.io/library/img:1']);
    expect(events).to.include('Warning FreeDiskSpaceFailed (node)');
    await k.stop(0);
  });

  it('disk pressure: the eviction manager deletes unused images first, and no pod is evicted when that is enough', async () => {
    const { clock, runtime, api, deps, events } = setup({ images: ['img:1', 'unused:1'] });
    api.pods.set('p-a', mkPod('a'));
    let reclaimed = false;
    // The disk fills 15 s in (the images are older than their minimum age by then), until an image goes.
    const began = clock.now();
    const nodefs = (): Summary =>
      summary({
        time: clock.now(),
        memAvailable: 8 * 1024 ** 3,
        nodefs:
          reclaimed || clock.now() - began < 15_000
            ? { available: 90, capacity: 100 }
            : { available: 5, capacity: 100 },
      });
    const removeImage = runtime.removeImage.bind(runtime);
    runtime.removeImage = async (id: string) => {
      await removeImage(id);
      reclaimed = true;
    };
    const k = new Kubelet({
      ...deps(),
      eviction: { config: evictionConfigFrom(undefined).config, summary: async () => nodefs() },
      imageGC: {
        // GC rounds themselves never free anything here (the disk reads below the high threshold).
        policy: {
          highThresholdPercent: 100,
          lowThresholdPercent: 99,
          minAgeMs: 5_000,
          maxAgeMs: 60 * 60_000,
        },
        imageFsStats: async () => ({ capacityBytes: 100, availableBytes: 100 }),
        recordNode: () => undefined,
        periodMs: 60_000,
      },
    });
    await start(k, clock);
    await advance(clock, 14_000);
    expect(await tags(runtime)).to.include('docker.io/library/unused:1');
    await advance(clock, 11_000);
    expect(reclaimed).to.equal(true);
    expect(await tags(runtime)).to.deep.equal(['docker.io/library/img:1']);
    expect(events.filter((e) => e.includes('Evicted'))).to.deep.equal([]);
    expect(api.pods.get('p-a')?.status?.reason).to.not.equal('Evicted');
    await k.stop(0);
  });
});
