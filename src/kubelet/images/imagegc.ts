/**
 * The decisions of the kubelet's image garbage collector (kubelet: images/image_gc_manager.go), as pure
 * functions: the runtime's images, the images its containers use, what the collector remembers, the image
 * filesystem's figures and a time (milliseconds) in; records, images to remove and messages out. The shell
 * (imagegc_manager.ts) lists, removes and records Events.
 *
 * A round of GarbageCollect, in the kubelet's order:
 *  1. detect: every image gets a record (first detected now when new; last used now while a container, dead
 *     or alive, uses it; its size and pinned flag as listed); records of images gone are dropped;
 *  2. the unused, unpinned images in eviction order: least recently used first, ties broken by the oldest
 *     first detection (an image never used counts as used at the epoch);
 *  3. imageMaximumGCAge (0: off): once the collector has run longer than the age, every such image unused
 *     for longer than it is removed, whatever the disk;
 *  4. the image filesystem's usage: at or above imageGCHighThresholdPercent, the images of step 2 that are
 *     at least imageMinimumGCAge old since first detected are removed in order until enough is freed to
 *     bring usage down to imageGCLowThresholdPercent; FreeDiskSpaceFailed when that is not enough.
 */
import { formatGoDuration, parseGoDuration } from '../../util/duration.js';
import type { Image } from '../../runtime/types.js';

/** The kubelet's ImageGCPeriod: a GarbageCollect round every 5 minutes (and detection as often). */
export const ImageGCPeriodMs = 5 * 60_000;

/** The kubelet's defaults (KubeletConfiguration v1beta1). */
export const DefaultImageGCHighThresholdPercent = 85;
export const DefaultImageGCLowThresholdPercent = 80;
export const DefaultImageMinimumGCAgeMs = 2 * 60_000;
export const DefaultImageMaximumGCAgeMs = 0;

export interface ImageGCPolicy {
  highThresholdPercent: number;
  lowThresholdPercent: number;
  minAgeMs: number;
  /** 0: images are never removed for their age alone. */
  maxAgeMs: number;
}

/** The VirtualNode's `spec.kubelet` image GC fields, as stored (durations as Go durations). */
export interface ImageGCSettings {
  imageGCHighThresholdPercent?: number;
  imageGCLowThresholdPercent?: number;
  imageMinimumGCAge?: string;
  imageMaximumGCAge?: string;
}

export const DefaultImageGCPolicy: ImageGCPolicy = {
  highThresholdPercent: DefaultImageGCHighThresholdPercent,
  lowThresholdPercent: DefaultImageGCLowThresholdPercent,
  minAgeMs: DefaultImageMinimumGCAgeMs,
  maxAgeMs: DefaultImageMaximumGCAgeMs,
};

/**
 * The policy a node runs with, checked with the kubelet's configuration rules and wording. A kubelet with a
 * bad value does not start; here the node keeps the defaults and `error` says why. An imageMinimumGCAge of
 * 0 is the kubelet's default (2m0s), as in its configuration defaulting.
 */
export function imageGCPolicyFrom(settings: ImageGCSettings | undefined): {
  policy: ImageGCPolicy;
  error?: string;
} {
  const s = settings ?? {};
  const errors: string[] = [];
  const duration = (name: string, v: string | undefined, dflt: number): number => {
    if (v === undefined) return dflt;
    try {
      return parseGoDuration(v);
    } catch (err) {
      errors.push(`invalid configuration: ${name} ${JSON.stringify(v)}: ${(err as Error).message}`);
      return dflt;
    }
  };
  const high = s.imageGCHighThresholdPercent ?? DefaultImageGCHighThresholdPercent;
  const low = s.imageGCLowThresholdPercent ?? DefaultImageGCLowThresholdPercent;
  let minAgeMs = duration('imageMinimumGCAge', s.imageMinimumGCAge, DefaultImageMinimumGCAgeMs);
  if (minAgeMs === 0) minAgeMs = DefaultImageMinimumGCAgeMs;
  const maxAgeMs = duration('imageMaximumGCAge', s.imageMaximumGCAge, DefaultImageMaximumGCAgeMs);
  if (!Number.isInteger(high) || high < 0 || high > 100) {
    errors.push(
      `invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) ${high} must be between 0 and 100, inclusive`,
    );
  }
  if (!Number.isInteger(low) || low < 0 || low > 100) {
    errors.push(
      `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be between 0 and 100, inclusive`,
    );
  }
  if (low >= high) {
    errors.push(
      `invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) ${low} must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) ${high}`,
    );
  }
  if (minAgeMs < 0) {
    errors.push(
      `invalid configuration: imageMinimumGCAge ${formatGoDuration(minAgeMs)} must not be negative`,
    );
  }
  if (maxAgeMs < 0) {
    errors.push(
      `invalid configuration: imageMaximumGCAge ${formatGoDuration(maxAgeMs)} must not be negative`,
    );
  }
  if (maxAgeMs > 0 && maxAgeMs <= minAgeMs) {
    errors.push(
      `invalid configuration: imageMaximumGCAge ${formatGoDuration(maxAgeMs)} must be greater than imageMinimumGCAge ${formatGoDuration(minAgeMs)}`,
    );
  }
  if (errors.length > 0) return { policy: DefaultImageGCPolicy, error: errors.join(', ') };
  return { policy: { highThresholdPercent: high, lowThresholdPercent: low, minAgeMs, maxAgeMs } };
}

/** The kubelet starts no image GC loop at all with a high threshold of 100 and no maximum age. */
export function imageGCDisabled(policy: ImageGCPolicy): boolean {
  return policy.highThresholdPercent === 100 && policy.maxAgeMs === 0;
}

/** What the collector remembers of one image (kubelet: imageRecord). */
export interface ImageRecord {
  firstDetectedMs: number;
  /** 0 when no container was ever seen using it. */
  lastUsedMs: number;
  size: number;
  pinned: boolean;
}

export type ImageRecords = ReadonlyMap<string, ImageRecord>;

/** What a container of the runtime names as its image: the image ID it runs, and the image as asked. */
export interface ContainerImageUse {
  imageRef: string;
  image?: string;
}

/**
 * The image IDs in use by containers (kubelet: the ImageID of every container of GetPods(all)), plus images
 * mounted as image volumes. A container names its image by ID (imageRef); a runtime that names a tag or
 * digest there is matched to the listed image that carries it.
 */
export function imagesInUse(
  images: readonly Image[],
  containers: readonly ContainerImageUse[],
  imageVolumes: readonly string[] = [],
): Set<string> {
  const byName = new Map<string, string>();
  for (const i of images) {
    byName.set(i.id, i.id);
    for (const t of i.repoTags) byName.set(t, i.id);
    for (const d of i.repoDigests) byName.set(d, i.id);
  }
  const out = new Set<string>();
  const use = (name: string | undefined): void => {
    if (!name) return;
    out.add(byName.get(name) ?? name);
  };
  for (const c of containers) use(c.imageRef);
  for (const v of imageVolumes) use(v);
  return out;
}

/**
 * kubelet detectImages: the records after looking at the runtime's images at `detectTimeMs`; images in use
 * are stamped used at `nowMs`.
 */
export function detectImages(
  records: ImageRecords,
  images: readonly Image[],
  inUse: ReadonlySet<string>,
  detectTimeMs: number,
  nowMs: number,
): Map<string, ImageRecord> {
  const out = new Map<string, ImageRecord>();
  for (const image of images) {
    const prev = records.get(image.id) ?? out.get(image.id);
    out.set(image.id, {
      firstDetectedMs: prev?.firstDetectedMs ?? detectTimeMs,
      lastUsedMs: inUse.has(image.id) ? nowMs : (prev?.lastUsedMs ?? 0),
      size: image.size,
      pinned: image.pinned === true,
    });
  }
  return out;
}

export interface EvictionCandidate extends ImageRecord {
  id: string;
}

/** kubelet imagesInEvictionOrder: unused, unpinned images, least recently used (then detected) first. */
export function imagesInEvictionOrder(
  records: ImageRecords,
  inUse: ReadonlySet<string>,
): EvictionCandidate[] {
  const out: EvictionCandidate[] = [];
  for (const [id, r] of records) {
    if (inUse.has(id) || r.pinned) continue;
    out.push({ id, ...r });
  }
  // Stable: equal on both keys keeps the records' order (the kubelet's sort of a map's values has none).
  return out.sort((a, b) =>
    a.lastUsedMs === b.lastUsedMs ? a.firstDetectedMs - b.firstDetectedMs : a.lastUsedMs - b.lastUsedMs,
  );
}

/**
 * kubelet freeOldImages: which candidates go for their age. Nothing until the collector has run longer
 * than maxAge (so images are not taken before their use could be seen), nor with maxAge 0.
 */
export function oldImages(
  candidates: readonly EvictionCandidate[],
  policy: ImageGCPolicy,
  freeTimeMs: number,
  beganGCMs: number,
): { remove: EvictionCandidate[]; keep: EvictionCandidate[] } {
  if (policy.maxAgeMs === 0 || freeTimeMs - beganGCMs <= policy.maxAgeMs) {
    return { remove: [], keep: [...candidates] };
  }
  const remove: EvictionCandidate[] = [];
  const keep: EvictionCandidate[] = [];
  for (const c of candidates) (freeTimeMs - c.lastUsedMs > policy.maxAgeMs ? remove : keep).push(c);
  return { remove, keep };
}

/**
 * kubelet freeSpace's eligibility: the candidates that may be removed to free space, in order (not used at
 * or after the free time, first detected at least minAge ago). The shell removes them one by one until
 * enough is freed; a removal that fails frees nothing and the next is tried.
 */
export function spaceCandidates(
  candidates: readonly EvictionCandidate[],
  minAgeMs: number,
  freeTimeMs: number,
): EvictionCandidate[] {
  return candidates.filter((c) => c.lastUsedMs < freeTimeMs && freeTimeMs - c.firstDetectedMs >= minAgeMs);
}

/** The image filesystem as the collector reads it (kubelet: ImageFsStats capacity and available). */
export interface ImageFsFigures {
  capacityBytes?: number;
  availableBytes?: number;
}

export type SpaceDecision =
  | { kind: 'invalid'; reason: 'InvalidDiskCapacity'; message: string }
  | { kind: 'below'; usagePercent: number }
  | { kind: 'free'; usagePercent: number; capacityBytes: number; bytesToFree: number };

/**
 * Whether the image filesystem is at or above the high threshold and how much to free to reach the low one
 * (kubelet GarbageCollect). Integer arithmetic as the kubelet's (percent truncated).
 */
export function spaceDecision(fs: ImageFsFigures, policy: ImageGCPolicy): SpaceDecision {
  const capacity = Math.max(0, Math.floor(fs.capacityBytes ?? 0));
  let available = Math.max(0, Math.floor(fs.availableBytes ?? 0));
  if (available > capacity) available = capacity;
  if (capacity === 0) {
    return {
      kind: 'invalid',
      reason: 'InvalidDiskCapacity',
      message: 'invalid capacity 0 on image filesystem',
    };
  }
  const usagePercent = 100 - Math.trunc((available * 100) / capacity);
  if (usagePercent < policy.highThresholdPercent) return { kind: 'below', usagePercent };
  const bytesToFree = Math.trunc((capacity * (100 - policy.lowThresholdPercent)) / 100) - available;
  return { kind: 'free', usagePercent, capacityBytes: capacity, bytesToFree };
}

/** The FreeDiskSpaceFailed Event's message (also the round's error). */
export function freeDiskSpaceFailedMessage(
  usagePercent: number,
  capacityBytes: number,
  freed: number,
): string {
  return (
    `Insufficient free disk space on the node's image filesystem (${usagePercent}% of ${formatSize(capacityBytes)} used). ` +
    `Failed to free sufficient space by deleting unused images (freed ${freed} bytes). ` +
    'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.'
  );
}

/** A size for people, in binary units with one decimal (kubelet formatSize). */
export function formatSize(bytes: number): string {
  const KiB = 1024;
  const MiB = 1024 * KiB;
  const GiB = 1024 * MiB;
  const TiB = 1024 * GiB;
  if (bytes < KiB) return `${Math.trunc(bytes)} B`;
  if (bytes < MiB) return `${(bytes / KiB).toFixed(1)} KiB`;
  if (bytes < GiB) return `${(bytes / MiB).toFixed(1)} MiB`;
  if (bytes < TiB) return `${(bytes / GiB).toFixed(1)} GiB`;
  return `${(bytes / TiB).toFixed(1)} TiB`;
}

/** The error of a space round whose removals failed (kubelet freeSpace). */
export function freeSpaceErrorMessage(
  bytesToFree: number | string,
  freed: number,
  errors: readonly string[],
): string {
  return `wanted to free ${bytesToFree} bytes, but freed ${freed} bytes space with errors in image deletion: ${aggregate(errors)}`;
}

/** The error of an age round whose removals failed (kubelet freeOldImages). */
export function freeOldImagesErrorMessage(maxAgeMs: number, errors: readonly string[]): string {
  return `wanted to free images older than ${formatGoDuration(maxAgeMs)}, encountered errors in image deletion: ${aggregate(errors)}`;
}

/** apimachinery's aggregate error text: one error as is, several in brackets. */
function aggregate(errors: readonly string[]): string {
  return errors.length === 1 ? (errors[0] ?? '') : `[${errors.join(', ')}]`;
}

/**
 * The filesystem layout the runtime's ImageFsInfo and the devices under it describe (kubelet
 * HasDedicatedImageFs, and the split test of KubeletSeparateDiskGC): images on a device other than the
 * node's root filesystem, and containers' writable layers on one other than the images'. Devices are
 * those of the mountpoints (stat's dev); an unknown device counts as the root's.
 */
export function filesystemLayout(o: {
  rootDevice: number | undefined;
  imageFs: { mountpoint?: string; device?: number } | undefined;
  containerFs: { mountpoint?: string; device?: number } | undefined;
}): { dedicatedImageFs: boolean; splitContainerImageFs: boolean } {
  const { rootDevice, imageFs, containerFs } = o;
  const imageDevice = imageFs?.device ?? rootDevice;
  const split =
    imageFs?.mountpoint !== undefined &&
    containerFs?.mountpoint !== undefined &&
    imageFs.mountpoint !== containerFs.mountpoint &&
    (containerFs.device ?? rootDevice) !== imageDevice;
  return { dedicatedImageFs: split || imageDevice !== rootDevice, splitContainerImageFs: split };
}
