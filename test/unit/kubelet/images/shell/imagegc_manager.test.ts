// The image garbage collector's shell with a fake runtime, a fake image filesystem and a fake clock: which
// images a round removes, its Events (FreeDiskSpaceFailed, ImageGCFailed only on repeated failure,
// InvalidDiskCapacity), the maximum age through the loop, DeleteUnusedImages, and the loop turned off.
import { expect } from 'chai';
import {
  ImageGCManager,
  type ImageGCManagerDeps,
  type ImageGCRuntime,
} from '../../../../../src/kubelet/images/shell/imagegc_manager.js';
import type { ImageGCPolicy } from '../../../../../src/kubelet/images/imagegc.js';
import type { Image, Mount } from '../../../../../src/runtime/types.js';
import { KindError } from '../../../../../src/util/errors.js';
import { FakeClock } from '../../../../../src/util/clock.js';
import { Metrics } from '../../../../../src/metrics.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
};

class FakeImageRuntime implements ImageGCRuntime {
  images: Image[] = [];
  containers: { id: string; imageRef: string; image: string }[] = [];
  mounts = new Map<string, Mount[]>();
  failRemove = new Set<string>();
  removed: string[] = [];
  async listImages(): Promise<Image[]> {
    return this.images.map((i) => ({ ...i }));
  }
  async listContainers(): Promise<{ id: string; imageRef: string; image: string }[]> {
    return [...this.containers];
  }
  async removeImage(id: string): Promise<void> {
    if (this.failRemove.has(id)) throw new Error(`remove ${id}: device busy`);
    this.images = this.images.filter((i) => i.id !== id);
    this.removed.push(id);
  }
  async containerStatus(id: string): Promise<{ mounts?: Mount[] }> {
    if (!this.containers.some((c) => c.id === id))
      throw new KindError('NotFound', `container ${id} not found`);
    return { mounts: this.mounts.get(id) ?? [] };
  }
  use(image: string): void {
    this.containers.push({ id: `c-${this.containers.length}`, imageRef: image, image });
  }
}

const image = (id: string, size: number, pinned = false): Image => ({
  id,
  repoTags: [`registry.example/${id}:1`],
  repoDigests: [],
  size,
  ...(pinned ? { pinned } : {}),
});

function setup(
  p: Partial<ImageGCPolicy>,
  o: { capacity?: number; other?: number; periodMs?: number; metrics?: Metrics } = {},
) {
  const clock = new FakeClock();
  const runtime = new FakeImageRuntime();
  const events: string[] = [];
  const capacity = o.capacity ?? 10_000;
  const deps: ImageGCManagerDeps = {
    policy: { highThresholdPercent: 90, lowThresholdPercent: 80, minAgeMs: 60_000, maxAgeMs: 0, ...p },
    runtime,
    // The disk holds the images and `other` bytes of something else.
    imageFsStats: async () => ({
      capacityBytes: capacity,
      availableBytes: capacity - (o.other ?? 0) - runtime.images.reduce((s, i) => s + i.size, 0),
    }),
    clock,
    recordNode: (type, reason, message) => events.push(`${type} ${reason} ${message}`),
    logger: { info: () => undefined, warn: () => undefined },
    ...(o.periodMs !== undefined ? { periodMs: o.periodMs } : {}),
    ...(o.metrics && {
      garbageCollected: (reason: 'age' | 'space') =>
        o.metrics!.forNode('n1').imageGarbageCollected(reason).inc(),
    }),
  };
  return { clock, runtime, events, gc: new ImageGCManager(deps), deps };
}

describe('image GC manager', () => {
  it('kubelet_image_garbage_collected_total: each removal counted by reason (space, then age), a refused one not', async () => {
    const metrics = new Metrics();
    const { clock, runtime, gc } = setup(
      { minAgeMs: 1, maxAgeMs: 5_000 },
      { capacity: 10_000, other: 8_500, metrics },
    );
    const began = clock.now();
    runtime.images = [image('a', 300), image('b', 200), image('refused', 100), image('old', 100)];
    runtime.failRemove = new Set(['refused']);
    await gc.garbageCollect(began).catch(() => undefined);
    clock.advance(10);
    await gc.garbageCollect(began).catch(() => undefined);
    const scrape = async (): Promise<string[]> =>
      (await metrics.registry.metrics())
        .split('\n')
        .filter((l) => l.startsWith('kubelet_image_garbage_collected_total'));
    expect(await scrape()).to.deep.equal([
      'kubelet_image_garbage_collected_total{node="n1",reason="space"} 3',
    ]);
    runtime.images = [image('idle', 100)];
    await gc.garbageCollect(began).catch(() => undefined);
    clock.advance(6_000);
    await gc.garbageCollect(began).catch(() => undefined);
    expect(await scrape()).to.deep.equal([
      'kubelet_image_garbage_collected_total{node="n1",reason="space"} 3',
      'kubelet_image_garbage_collected_total{node="n1",reason="age"} 1',
    ]);
    expect(gc.removed).to.deep.equal({ age: 1, space: 3 });
  });

  it('above the high threshold: unused images go least recently used first until below the low one; in use and pinned stay', async () => {
    const { clock, runtime, gc, events } = setup({}, { other: 4_000 });
    runtime.images = [
      image('used-a-while-ago', 1_000),
      image('never-used', 1_500),
      image('running', 1_000),
      image('pause', 500, true),
      image('used-lately', 1_000),
    ];
    // 9,000 of 10,000 used (90%): to reach 80% it must free 1,000 bytes.
    runtime.use('running');
    runtime.use('used-a-while-ago');
    runtime.use('used-lately');
    // Detects all; nothing is 1 minute old yet, so nothing can go (FreeDiskSpaceFailed).
    await gc.garbageCollect(clock.now()).catch(() => undefined);
    expect(runtime.removed).to.deep.equal([]);
    clock.advance(30_000);
    runtime.containers = runtime.containers.filter((c) => c.imageRef !== 'used-a-while-ago');
    await gc.garbageCollect(clock.now()).catch(() => undefined);
    clock.advance(30_000);
    runtime.containers = runtime.containers.filter((c) => c.imageRef !== 'used-lately');
    events.length = 0;
    await gc.garbageCollect(clock.now());
    // never-used (never used: first) frees 1,500 >= 1,000: enough, the rest stays.
    expect(runtime.removed).to.deep.equal(['never-used']);
    expect(events).to.deep.equal([]);
    // Below the high threshold now: the next round removes nothing more.
    clock.advance(60_000);
    await gc.garbageCollect(clock.now());
    expect(runtime.removed).to.deep.equal(['never-used']);
    expect(gc.removed).to.deep.equal({ age: 0, space: 1 });
  });

  it('not enough to free: every eligible image goes, then FreeDiskSpaceFailed with the numbers', async () => {
    const { clock, runtime, gc, events } = setup({ minAgeMs: 1 }, { capacity: 10_000, other: 8_500 });
    runtime.images = [image('a', 300), image('b', 200), image('running', 500)];
    runtime.use('running');
    await gc.garbageCollect(clock.now()).catch(() => undefined);
    clock.advance(10);
    let err: unknown;
    try {
      await gc.garbageCollect(clock.now());
    } catch (e) {
      err = e;
    }
    expect(runtime.removed).to.deep.equal(['a', 'b']);
    const message =
      "Insufficient free disk space on the node's image filesystem (95% of 9.8 KiB used). " +
      'Failed to free sufficient space by deleting unused images (freed 500 bytes). ' +
      'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.';
    expect((err as Error).message).to.equal(message);
    // The first round (nothing eligible yet) failed too.
    // The first round, with nothing old enough yet, failed too.
    expect(events).to.deep.equal([
      `Warning FreeDiskSpaceFailed ${message.replace('freed 500 bytes', 'freed 0 bytes')}`,
      `Warning FreeDiskSpaceFailed ${message}`,
    ]);
  });

  it('the loop: ImageGCFailed only from the second failure in a row', async () => {
    const { clock, gc, events, deps } = setup({}, { periodMs: 1_000 });
    let capacity = 0;
    deps.imageFsStats = async () => ({ capacityBytes: capacity, availableBytes: capacity });
    gc.start();
    clock.advance(0);
    await flush();
    expect(events).to.deep.equal(['Warning InvalidDiskCapacity invalid capacity 0 on image filesystem']);
    clock.advance(1_000);
    await flush();
    expect(events.slice(1)).to.deep.equal([
      'Warning InvalidDiskCapacity invalid capacity 0 on image filesystem',
      'Warning ImageGCFailed invalid capacity 0 on image filesystem',
    ]);
    capacity = 100;
    clock.advance(1_000);
    await flush();
    expect(events).to.have.length(3);
    // A success in between: the next failure is a first one again.
    capacity = 0;
    clock.advance(1_000);
    await flush();
    expect(events.slice(3)).to.deep.equal([
      'Warning InvalidDiskCapacity invalid capacity 0 on image filesystem',
    ]);
    await gc.stop();
  });

  it('a removal that fails: the next image is tried, and the round fails with the kubelet error', async () => {
    const { clock, runtime, gc } = setup({ minAgeMs: 1 }, { other: 7_000 });
    runtime.images = [image('stuck', 1_000), image('b', 1_000)];
    runtime.failRemove.add('stuck');
    await gc.garbageCollect(clock.now()).catch(() => undefined);
    clock.advance(10);
    let err: unknown;
    await gc.garbageCollect(clock.now()).catch((e: unknown) => (err = e));
    expect(runtime.removed).to.deep.equal(['b']);
    expect((err as Error).message).to.equal(
      'wanted to free 1000 bytes, but freed 1000 bytes space with errors in image deletion: remove stuck: device busy',
    );
  });

  it('imageMaximumGCAge through the loop: an image unused longer than the age goes, even with a free disk', async () => {
    const { clock, runtime, gc } = setup(
      { minAgeMs: 1_000, maxAgeMs: 5_000 },
      { capacity: 1e12, periodMs: 2_000 },
    );
    runtime.images = [image('idle', 100), image('running', 100)];
    runtime.use('running');
    gc.start();
    clock.advance(0);
    await flush();
    for (let t = 0; t < 4; t++) {
      clock.advance(2_000); // 8 s: the collector has run 6 s > 5 s by the third round
      await flush();
    }
    expect(runtime.removed).to.deep.equal(['idle']);
    expect(gc.removed).to.deep.equal({ age: 1, space: 0 });
    await gc.stop();
  });

  it('before the collector has run longer than the maximum age, no image goes for its age', async () => {
    const { clock, runtime, gc } = setup(
      { minAgeMs: 1_000, maxAgeMs: 5_000 },
      { capacity: 1e12, periodMs: 2_000 },
    );
    runtime.images = [image('idle', 100)];
    gc.start();
    clock.advance(0);
    await flush();
    clock.advance(2_000);
    await flush();
    clock.advance(2_000);
    await flush();
    expect(runtime.removed).to.deep.equal([]);
    await gc.stop();
  });

  it('DeleteUnusedImages (eviction reclaim): every unused image old enough, whatever the disk; not the sandbox image', async () => {
    const { clock, runtime, gc } = setup({ minAgeMs: 60_000 }, { capacity: 1e12 });
    runtime.images = [image('a', 1), image('b', 2), image('pause', 3, true), image('running', 4)];
    runtime.use('running');
    await gc.deleteUnusedImages();
    expect(runtime.removed).to.deep.equal([]); // all just detected
    clock.advance(60_000);
    runtime.images.push(image('fresh', 5));
    await gc.deleteUnusedImages();
    expect(runtime.removed).to.deep.equal(['a', 'b']);
  });

  it('an image mounted as an image volume counts as in use', async () => {
    const { clock, runtime, gc } = setup({ minAgeMs: 1 }, { capacity: 1e12 });
    runtime.images = [image('app', 1), image('data', 1)];
    runtime.use('app');
    runtime.mounts.set('c-0', [
      { containerPath: '/data', hostPath: '', readonly: true, image: 'data' } as Mount,
    ]);
    await gc.deleteUnusedImages();
    clock.advance(10);
    await gc.deleteUnusedImages();
    expect(runtime.removed).to.deep.equal([]);
  });

  it('imageGCHighThresholdPercent 100 without a maximum age: no GC round, only detection', async () => {
    const { clock, runtime, gc, events, deps } = setup(
      { highThresholdPercent: 100, minAgeMs: 1 },
      { periodMs: 1_000 },
    );
    let fsReads = 0;
    deps.imageFsStats = async () => {
      fsReads++;
      return { capacityBytes: 0 };
    };
    runtime.images = [image('a', 1)];
    gc.start();
    clock.advance(0);
    await flush();
    clock.advance(5_000);
    await flush();
    expect(fsReads).to.equal(0);
    expect(events).to.deep.equal([]);
    expect([...gc.imageRecords().keys()]).to.deep.equal(['a']);
    await gc.stop();
  });
});
