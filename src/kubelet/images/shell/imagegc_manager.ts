/**
 * The image garbage collector of one node (kubelet: realImageGCManager and the image half of
 * Kubelet.StartGarbageCollection): detection every 5 minutes, a GarbageCollect round every 5 minutes (the
 * first at start), and DeleteUnusedImages for the eviction manager's node-level reclaim. The decisions are
 * imagegc.ts's; this module lists, removes, reads the image filesystem and records Events.
 *
 * Invariants: one detection or removal pass at a time (a round and a reclaim never remove concurrently);
 * images used by any container of the runtime (other nodes' too, when nodes share a runtime) are never
 * removed, nor pinned ones; after stop() no round starts.
 */
import type { Container, ContainerStatus, Image } from '../../../runtime/types.js';
import type { Clock, TimerHandle } from '../../../util/clock.js';
import { errorMessage, isNotFound } from '../../../util/errors.js';
import {
  detectImages,
  freeDiskSpaceFailedMessage,
  freeOldImagesErrorMessage,
  freeSpaceErrorMessage,
  ImageGCPeriodMs,
  imageGCDisabled,
  imagesInEvictionOrder,
  imagesInUse,
  oldImages,
  spaceCandidates,
  spaceDecision,
  type EvictionCandidate,
  type ImageFsFigures,
  type ImageGCPolicy,
  type ImageRecord,
} from '../imagegc.js';

/** What the collector needs of the runtime. */
export interface ImageGCRuntime {
  listImages(): Promise<Image[]>;
  /** Every container, exited ones too (kubelet GetPods(all)). */
  listContainers(): Promise<readonly Pick<Container, 'id' | 'imageRef' | 'image'>[]>;
  removeImage(id: string): Promise<void>;
  /**
   * Present when the runtime mounts image volumes: each container's mounts are read for the images they
   * mount (kubelet handleImageVolumes), which count as in use.
   */
  containerStatus?(id: string): Promise<Pick<ContainerStatus, 'mounts'>>;
}

export interface ImageGCManagerDeps {
  policy: ImageGCPolicy;
  runtime: ImageGCRuntime;
  /** The image filesystem's capacity and available bytes now (kubelet statsProvider.ImageFsStats). */
  imageFsStats: () => Promise<ImageFsFigures>;
  clock: Clock;
  /** Records an Event about the Node. */
  recordNode: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  logger: {
    info(msg: string, meta?: Record<string, unknown>): void;
    warn(msg: string, meta?: Record<string, unknown>): void;
  };
  /** Both loops' period; default the kubelet's 5 minutes (tests shorten it). */
  periodMs?: number;
  /** An image removed, by why (kubelet_image_garbage_collected_total by reason); none without metrics. */
  garbageCollected?: (reason: 'age' | 'space') => void;
}

export class ImageGCManager {
  private records = new Map<string, ImageRecord>();
  private timers: TimerHandle[] = [];
  private stopped = false;
  private chain: Promise<unknown> = Promise.resolve();
  private prevFailed = false;
  private beganGCMs: number | undefined;
  /** Images removed so far, by reason (kubelet_image_garbage_collected_total). */
  readonly removed = { age: 0, space: 0 };

  constructor(private readonly d: ImageGCManagerDeps) {}

  /** Starts detection and, unless the policy turns image GC off, the GarbageCollect loop. */
  start(): void {
    if (this.stopped || this.timers.length > 0) return;
    const period = this.d.periodMs ?? ImageGCPeriodMs;
    this.every(period, async () => {
      try {
        await this.serial(() => this.detect(this.d.clock.now()));
      } catch (err) {
        this.d.logger.info('image GC: failed to monitor images', { err: errorMessage(err) });
      }
    });
    if (imageGCDisabled(this.d.policy)) {
      this.d.logger.info(
        'image GC: imageGCHighThresholdPercent is 100 and imageMaximumGCAge 0, image GC off',
      );
      return;
    }
    this.beganGCMs = this.d.clock.now();
    this.every(period, () => this.garbageCollectOnce());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) t.cancel();
    this.timers = [];
    await this.chain.catch(() => undefined);
  }

  /**
   * One round of the kubelet's GC loop: GarbageCollect; a failure is logged, and from the second failure in
   * a row also a Warning Event ImageGCFailed on the Node (the first may be stats not ready yet). Never throws.
   */
  async garbageCollectOnce(): Promise<void> {
    try {
      await this.garbageCollect(this.beganGCMs ?? this.d.clock.now());
      if (this.prevFailed) this.d.logger.info('image GC: succeeded');
      this.prevFailed = false;
    } catch (err) {
      const message = errorMessage(err);
      if (this.prevFailed) {
        this.d.logger.warn('image GC: failed multiple times in a row', { err: message });
        this.d.recordNode('Warning', 'ImageGCFailed', message);
      } else {
        this.d.logger.warn('image GC: failed once, stats initialization may not have completed yet', {
          err: message,
        });
      }
      this.prevFailed = true;
    }
  }

  /** kubelet GarbageCollect: old images, then space down to the low threshold. Throws the round's error. */
  garbageCollect(beganGCMs: number): Promise<void> {
    return this.serial(async () => {
      const freeTime = this.d.clock.now();
      const inUse = await this.detect(freeTime);
      let candidates = imagesInEvictionOrder(this.records, inUse);
      const old = oldImages(candidates, this.d.policy, freeTime, beganGCMs);
      candidates = old.keep;
      if (old.remove.length > 0) {
        const errors: string[] = [];
        for (const c of old.remove) {
          const err = await this.freeImage(c, 'age');
          if (err !== undefined) errors.push(err);
        }
        if (errors.length > 0) {
          throw new Error(freeOldImagesErrorMessage(this.d.policy.maxAgeMs, errors));
        }
      }
      const decision = spaceDecision(await this.d.imageFsStats(), this.d.policy);
      if (decision.kind === 'invalid') {
        this.d.recordNode('Warning', decision.reason, decision.message);
        throw new Error(decision.message);
      }
      if (decision.kind === 'below') return;
      this.d.logger.info(
        'image GC: disk usage on image filesystem is over the high threshold, freeing down to the low threshold',
        {
          usage: decision.usagePercent,
          highThreshold: this.d.policy.highThresholdPercent,
          amountToFree: decision.bytesToFree,
          lowThreshold: this.d.policy.lowThresholdPercent,
        },
      );
      const freed = await this.freeSpace(decision.bytesToFree, freeTime, candidates);
      if (freed < decision.bytesToFree) {
        const message = freeDiskSpaceFailedMessage(decision.usagePercent, decision.capacityBytes, freed);
        this.d.recordNode('Warning', 'FreeDiskSpaceFailed', message);
        throw new Error(message);
      }
    });
  }

  /** kubelet DeleteUnusedImages (the eviction manager's node-level reclaim): every eligible unused image. */
  deleteUnusedImages(): Promise<void> {
    return this.serial(async () => {
      this.d.logger.info('image GC: attempting to delete unused images');
      const freeTime = this.d.clock.now();
      const inUse = await this.detect(freeTime);
      await this.freeSpace(Number.POSITIVE_INFINITY, freeTime, imagesInEvictionOrder(this.records, inUse));
    });
  }

  /** The records now (for tests and debugging). */
  imageRecords(): ReadonlyMap<string, ImageRecord> {
    return this.records;
  }

  /** kubelet detectImages: updates the records, returns the image IDs in use. */
  private async detect(detectTimeMs: number): Promise<Set<string>> {
    const [images, containers] = await Promise.all([
      this.d.runtime.listImages(),
      this.d.runtime.listContainers(),
    ]);
    const inUse = imagesInUse(
      images,
      containers.map((c) => ({ imageRef: c.imageRef, image: c.image })),
      await this.imageVolumes(containers),
    );
    this.records = detectImages(this.records, images, inUse, detectTimeMs, this.d.clock.now());
    return inUse;
  }

  /** The images containers mount as volumes; a container gone meanwhile mounts nothing. */
  private async imageVolumes(containers: readonly Pick<Container, 'id'>[]): Promise<string[]> {
    const status = this.d.runtime.containerStatus?.bind(this.d.runtime);
    if (!status) return [];
    const out: string[] = [];
    for (const c of containers) {
      let mounts: ContainerStatus['mounts'];
      try {
        mounts = (await status(c.id)).mounts;
      } catch (err) {
        if (isNotFound(err)) continue;
        throw new Error(`get container status: ${errorMessage(err)}`);
      }
      for (const m of mounts ?? []) if (m.image) out.push(m.image);
    }
    return out;
  }

  /** kubelet freeSpace: removes eligible candidates in order until `bytesToFree`; returns the bytes freed. */
  private async freeSpace(
    bytesToFree: number,
    freeTimeMs: number,
    candidates: readonly EvictionCandidate[],
  ): Promise<number> {
    let freed = 0;
    const errors: string[] = [];
    for (const c of spaceCandidates(candidates, this.d.policy.minAgeMs, freeTimeMs)) {
      if (this.stopped) break;
      const err = await this.freeImage(c, 'space');
      if (err !== undefined) {
        errors.push(err);
        continue;
      }
      freed += c.size;
      if (freed >= bytesToFree) break;
    }
    if (errors.length > 0) {
      // DeleteUnusedImages asks for "everything": the kubelet's math.MaxInt64.
      const want = Number.isFinite(bytesToFree) ? String(bytesToFree) : '9223372036854775807';
      throw new Error(freeSpaceErrorMessage(want, freed, errors));
    }
    return freed;
  }

  /** Removes one image; the error's text when the runtime refused. */
  private async freeImage(c: EvictionCandidate, reason: 'age' | 'space'): Promise<string | undefined> {
    this.d.logger.info('image GC: removing image to free bytes', { imageID: c.id, size: c.size, reason });
    try {
      await this.d.runtime.removeImage(c.id);
    } catch (err) {
      return errorMessage(err);
    }
    this.records.delete(c.id);
    this.removed[reason] += 1;
    this.d.garbageCollected?.(reason);
    return undefined;
  }

  /** Runs `fn` after whatever detection or removal is in flight. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Runs `fn` now and then every `periodMs` after it ends, until stop(). */
  private every(periodMs: number, fn: () => Promise<void>): void {
    const arm = (ms: number): void => {
      const handle = this.d.clock.setTimer(ms, () => {
        if (this.stopped) return;
        void fn().finally(() => {
          this.timers = this.timers.filter((t) => t !== handle);
          if (!this.stopped) arm(periodMs);
        });
      });
      this.timers.push(handle);
    };
    arm(0);
  }
}
