// The image garbage collector's pure decisions, after the kubelet's image_gc_manager_test.go cases: detection,
// eviction order, minimum and maximum age, the thresholds' arithmetic, its messages and the policy's rules.
import { expect } from 'chai';
import {
  DefaultImageGCPolicy,
  detectImages,
  filesystemLayout,
  formatSize,
  freeDiskSpaceFailedMessage,
  freeOldImagesErrorMessage,
  freeSpaceErrorMessage,
  imageGCDisabled,
  imageGCPolicyFrom,
  imagesInEvictionOrder,
  imagesInUse,
  oldImages,
  spaceCandidates,
  spaceDecision,
  type ImageGCPolicy,
  type ImageRecord,
} from '../../../../src/kubelet/images/imagegc.js';
import type { Image } from '../../../../src/runtime/types.js';

const img = (i: number, size: number, extra: Partial<Image> = {}): Image => ({
  id: `image-${i}`,
  repoTags: [`registry.example/image-${i}:1`],
  repoDigests: [],
  size,
  ...extra,
});
const rec = (r: Partial<ImageRecord>): ImageRecord => ({
  firstDetectedMs: 0,
  lastUsedMs: 0,
  size: 1024,
  pinned: false,
  ...r,
});
const policy = (p: Partial<ImageGCPolicy>): ImageGCPolicy => ({
  highThresholdPercent: 90,
  lowThresholdPercent: 80,
  minAgeMs: 0,
  maxAgeMs: 0,
  ...p,
});
const T0 = 1_000_000;

describe('image GC: detection (kubelet detectImages)', () => {
  it('initial detection: every image gets a record first detected now; the one in use is also used now', () => {
    const images = [img(0, 1024), img(1, 2048)];
    const inUse = imagesInUse(images, [{ imageRef: 'image-1' }]);
    const r = detectImages(new Map(), images, inUse, T0, T0 + 5);
    expect([...r.keys()]).to.deep.equal(['image-0', 'image-1']);
    expect(r.get('image-0')).to.deep.equal({ firstDetectedMs: T0, lastUsedMs: 0, size: 1024, pinned: false });
    expect(r.get('image-1')).to.deep.equal({
      firstDetectedMs: T0,
      lastUsedMs: T0 + 5,
      size: 2048,
      pinned: false,
    });
  });

  it('a new image is detected at the later time; known ones keep their first detection', () => {
    const first = detectImages(new Map(), [img(0, 1), img(1, 2)], new Set(), T0, T0);
    const second = detectImages(
      first,
      [img(0, 1), img(1, 2), img(2, 3)],
      new Set(),
      T0 + 60_000,
      T0 + 60_000,
    );
    expect(second.get('image-0')?.firstDetectedMs).to.equal(T0);
    expect(second.get('image-2')?.firstDetectedMs).to.equal(T0 + 60_000);
  });

  it('a container stopped (gone): its image keeps the last time it was seen used', () => {
    const images = [img(0, 1024), img(1, 2048)];
    const a = detectImages(new Map(), images, imagesInUse(images, [{ imageRef: 'image-1' }]), T0, T0 + 1);
    const b = detectImages(a, images, new Set(), T0 + 100, T0 + 100);
    expect(b.get('image-1')).to.deep.include({ firstDetectedMs: T0, lastUsedMs: T0 + 1 });
    expect(b.get('image-0')).to.deep.include({ firstDetectedMs: T0, lastUsedMs: 0 });
  });

  it('removed images lose their records; size and pinned follow the listing', () => {
    const a = detectImages(new Map(), [img(0, 1), img(1, 2)], new Set(), T0, T0);
    const b = detectImages(a, [img(1, 7, { pinned: true })], new Set(), T0 + 1, T0 + 1);
    expect([...b.keys()]).to.deep.equal(['image-1']);
    expect(b.get('image-1')).to.deep.include({ size: 7, pinned: true });
  });

  it('in use: by image ID, by a tag or digest the runtime names instead, and image volumes', () => {
    const images = [
      img(0, 1),
      img(1, 1, { repoDigests: ['registry.example/image-1@sha256:abc'] }),
      img(2, 1),
      img(3, 1),
    ];
    const inUse = imagesInUse(
      images,
      [{ imageRef: 'image-0' }, { imageRef: 'registry.example/image-1@sha256:abc' }],
      ['registry.example/image-2:1'],
    );
    expect([...inUse].sort()).to.deep.equal(['image-0', 'image-1', 'image-2']);
  });
});

describe('image GC: eviction order (kubelet imagesInEvictionOrder)', () => {
  it('least recently used first, ties broken by first detection; in-use and pinned images never listed', () => {
    const records = new Map<string, ImageRecord>([
      ['recent', rec({ lastUsedMs: 50, firstDetectedMs: 1 })],
      ['old-late', rec({ lastUsedMs: 10, firstDetectedMs: 9 })],
      ['old-early', rec({ lastUsedMs: 10, firstDetectedMs: 2 })],
      ['never', rec({ lastUsedMs: 0, firstDetectedMs: 5 })],
      ['sandbox', rec({ pinned: true })],
      ['running', rec({ lastUsedMs: 60 })],
    ]);
    const order = imagesInEvictionOrder(records, new Set(['running'])).map((c) => c.id);
    expect(order).to.deep.equal(['never', 'old-early', 'old-late', 'recent']);
  });

  it('all pinned: nothing to remove (kubelet TestAllPinnedImages)', () => {
    const records = new Map([
      ['a', rec({ pinned: true })],
      ['b', rec({ pinned: true })],
    ]);
    expect(imagesInEvictionOrder(records, new Set())).to.deep.equal([]);
  });
});

describe('image GC: eligibility to free space (kubelet freeSpace)', () => {
  const cases: {
    name: string;
    records: [string, Partial<ImageRecord>][];
    minAgeMs: number;
    freeTimeMs: number;
    want: string[];
  }[] = [
    {
      name: 'not old enough: first detected less than minAge ago (TestGarbageCollectImageNotOldEnough)',
      records: [['a', { firstDetectedMs: T0 }]],
      minAgeMs: 60_000,
      freeTimeMs: T0 + 59_999,
      want: [],
    },
    {
      name: 'exactly minAge old: eligible',
      records: [['a', { firstDetectedMs: T0 }]],
      minAgeMs: 60_000,
      freeTimeMs: T0 + 60_000,
      want: ['a'],
    },
    {
      name: 'used at or after the free time: kept',
      records: [
        ['a', { lastUsedMs: T0 }],
        ['b', { lastUsedMs: T0 - 1 }],
      ],
      minAgeMs: 0,
      freeTimeMs: T0,
      want: ['b'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const candidates = imagesInEvictionOrder(new Map(c.records.map(([id, r]) => [id, rec(r)])), new Set());
      expect(spaceCandidates(candidates, c.minAgeMs, c.freeTimeMs).map((x) => x.id)).to.deep.equal(c.want);
    });
  }
});

describe('image GC: maximum age (kubelet freeOldImages)', () => {
  const candidates = imagesInEvictionOrder(
    new Map([
      ['used-recently', rec({ lastUsedMs: T0 })],
      ['never-used', rec({ lastUsedMs: 0, firstDetectedMs: T0 })],
    ]),
    new Set(),
  );
  it('too old: removed once unused for longer than maxAge (TestGarbageCollectImageTooOld)', () => {
    const p = policy({ maxAgeMs: 60_000 });
    const beganGC = T0 - 120_000;
    expect(oldImages(candidates, p, T0, beganGC).remove.map((c) => c.id)).to.deep.equal(['never-used']);
    expect(oldImages(candidates, p, T0 + 60_000, beganGC).remove.map((c) => c.id)).to.deep.equal([
      'never-used',
    ]);
    expect(oldImages(candidates, p, T0 + 60_001, beganGC).remove.map((c) => c.id)).to.deep.equal([
      'never-used',
      'used-recently',
    ]);
  });
  it('nothing before the collector has run longer than maxAge', () => {
    const p = policy({ maxAgeMs: 60_000 });
    expect(oldImages(candidates, p, T0 + 60_000, T0).remove).to.deep.equal([]);
    expect(oldImages(candidates, p, T0 + 60_001, T0).remove.map((c) => c.id)).to.deep.equal([
      'never-used',
      'used-recently',
    ]);
  });
  it('maxAge 0: never (TestGarbageCollectImageMaxAgeDisabled)', () => {
    const r = oldImages(candidates, policy({ maxAgeMs: 0 }), Number.MAX_SAFE_INTEGER, T0);
    expect(r.remove).to.deep.equal([]);
    expect(r.keep).to.have.length(2);
  });
});

describe('image GC: thresholds (kubelet GarbageCollect)', () => {
  const GiB = 1024 ** 3;
  const cases: {
    name: string;
    fs: { capacityBytes?: number; availableBytes?: number };
    p: Partial<ImageGCPolicy>;
    want: ReturnType<typeof spaceDecision>;
  }[] = [
    {
      name: 'below the high threshold: nothing (TestGarbageCollectBelowLowThreshold)',
      fs: { capacityBytes: 1000, availableBytes: 600 },
      p: {},
      want: { kind: 'below', usagePercent: 40 },
    },
    {
      name: 'at 95% of 10 GiB with high 90 low 80: free down to 80% (TestGarbageCollectNotEnoughFreed)',
      fs: { capacityBytes: 10 * GiB, availableBytes: (10 * GiB) / 20 },
      p: {},
      want: {
        kind: 'free',
        usagePercent: 95,
        capacityBytes: 10 * GiB,
        bytesToFree: 2 * GiB - (10 * GiB) / 20,
      },
    },
    {
      name: 'exactly at the high threshold counts',
      fs: { capacityBytes: 100, availableBytes: 10 },
      p: {},
      want: { kind: 'free', usagePercent: 90, capacityBytes: 100, bytesToFree: 10 },
    },
    {
      name: 'usage truncates as the kubelet: 89.9% is 90%',
      fs: { capacityBytes: 1000, availableBytes: 101 },
      p: {},
      want: { kind: 'free', usagePercent: 90, capacityBytes: 1000, bytesToFree: 99 },
    },
    {
      name: 'available above capacity is clamped to it',
      fs: { capacityBytes: 1000, availableBytes: 5000 },
      p: {},
      want: { kind: 'below', usagePercent: 0 },
    },
    {
      name: 'capacity 0: InvalidDiskCapacity',
      fs: { availableBytes: 10 },
      p: {},
      want: {
        kind: 'invalid',
        reason: 'InvalidDiskCapacity',
        message: 'invalid capacity 0 on image filesystem',
      },
    },
    {
      name: 'high 1 low 0: anything used is over, everything used is to free',
      fs: { capacityBytes: 1000, availableBytes: 250 },
      p: { highThresholdPercent: 1, lowThresholdPercent: 0 },
      want: { kind: 'free', usagePercent: 75, capacityBytes: 1000, bytesToFree: 750 },
    },
  ];
  for (const c of cases) {
    it(c.name, () => expect(spaceDecision(c.fs, policy(c.p))).to.deep.equal(c.want));
  }

  it("FreeDiskSpaceFailed says the kubelet's words", () => {
    expect(freeDiskSpaceFailedMessage(95, 10 * GiB, 524288000)).to.equal(
      "Insufficient free disk space on the node's image filesystem (95% of 10.0 GiB used). " +
        'Failed to free sufficient space by deleting unused images (freed 524288000 bytes). ' +
        'Investigate disk usage, as it could be used by active images, logs, volumes, or other data.',
    );
  });

  it('formatSize as the kubelet: bytes, then one decimal in binary units', () => {
    expect([512, 1536, 5 * 1024 ** 2, 10 * GiB, 3 * 1024 ** 4].map(formatSize)).to.deep.equal([
      '512 B',
      '1.5 KiB',
      '5.0 MiB',
      '10.0 GiB',
      '3.0 TiB',
    ]);
  });

  it('removal errors: one as is, several aggregated', () => {
    expect(freeSpaceErrorMessage(100, 40, ['boom'])).to.equal(
      'wanted to free 100 bytes, but freed 40 bytes space with errors in image deletion: boom',
    );
    expect(freeOldImagesErrorMessage(60_000, ['a', 'b'])).to.equal(
      'wanted to free images older than 1m0s, encountered errors in image deletion: [a, b]',
    );
  });
});

describe('image GC: the policy (kubelet configuration validation)', () => {
  const cases: { name: string; s: Parameters<typeof imageGCPolicyFrom>[0]; want: ImageGCPolicy | string }[] =
    [
      { name: 'unset: the defaults 85/80, 2m0s, 0s', s: undefined, want: DefaultImageGCPolicy },
      {
        name: 'set',
        s: {
          imageGCHighThresholdPercent: 1,
          imageGCLowThresholdPercent: 0,
          imageMinimumGCAge: '1s',
          imageMaximumGCAge: '5s',
        },
        want: { highThresholdPercent: 1, lowThresholdPercent: 0, minAgeMs: 1000, maxAgeMs: 5000 },
      },
      {
        name: 'imageMinimumGCAge 0s is the default 2m0s',
        s: { imageMinimumGCAge: '0s' },
        want: { ...DefaultImageGCPolicy, minAgeMs: 120_000 },
      },
      {
        name: 'low equal to high refused',
        s: { imageGCHighThresholdPercent: 80, imageGCLowThresholdPercent: 80 },
        want: 'invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 80',
      },
      {
        name: 'high above 100 refused',
        s: { imageGCHighThresholdPercent: 101 },
        want: 'invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be between 0 and 100, inclusive',
      },
      {
        name: 'maximum age not above the minimum refused',
        s: { imageMinimumGCAge: '2m', imageMaximumGCAge: '1m' },
        want: 'invalid configuration: imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s',
      },
      {
        name: 'negative maximum age refused',
        s: { imageMaximumGCAge: '-1s' },
        want: 'invalid configuration: imageMaximumGCAge -1s must not be negative',
      },
    ];
  for (const c of cases) {
    it(c.name, () => {
      const r = imageGCPolicyFrom(c.s);
      if (typeof c.want === 'string') {
        expect(r.error).to.equal(c.want);
        expect(r.policy).to.deep.equal(DefaultImageGCPolicy);
      } else {
        expect(r.error).to.equal(undefined);
        expect(r.policy).to.deep.equal(c.want);
      }
    });
  }

  it('high 100 with no maximum age turns image GC off; a maximum age keeps it on', () => {
    expect(imageGCDisabled(policy({ highThresholdPercent: 100 }))).to.equal(true);
    expect(imageGCDisabled(policy({ highThresholdPercent: 100, maxAgeMs: 1 }))).to.equal(false);
    expect(imageGCDisabled(DefaultImageGCPolicy)).to.equal(false);
  });
});

describe('image GC: filesystem layout (KubeletSeparateDiskGC)', () => {
  const cases: {
    name: string;
    o: Parameters<typeof filesystemLayout>[0];
    want: ReturnType<typeof filesystemLayout>;
  }[] = [
    {
      name: 'one filesystem (containerd here: one mountpoint for both, the root device)',
      o: {
        rootDevice: 1,
        imageFs: { mountpoint: '/var/lib/containerd/snap', device: 1 },
        containerFs: { mountpoint: '/var/lib/containerd/snap', device: 1 },
      },
      want: { dedicatedImageFs: false, splitContainerImageFs: false },
    },
    {
      name: 'images and containers on their own device, not the root: dedicated image filesystem',
      o: {
        rootDevice: 1,
        imageFs: { mountpoint: '/a', device: 2 },
        containerFs: { mountpoint: '/a', device: 2 },
      },
      want: { dedicatedImageFs: true, splitContainerImageFs: false },
    },
    {
      name: 'containers on another mountpoint and device than the images: split',
      o: {
        rootDevice: 1,
        imageFs: { mountpoint: '/img', device: 2 },
        containerFs: { mountpoint: '/ctr', device: 1 },
      },
      want: { dedicatedImageFs: true, splitContainerImageFs: true },
    },
    {
      name: 'other mountpoints on one device: not split',
      o: {
        rootDevice: 1,
        imageFs: { mountpoint: '/img', device: 1 },
        containerFs: { mountpoint: '/ctr', device: 1 },
      },
      want: { dedicatedImageFs: false, splitContainerImageFs: false },
    },
    {
      name: 'devices unknown (a simulated node): the root filesystem',
      o: { rootDevice: undefined, imageFs: { mountpoint: '/img' }, containerFs: { mountpoint: '/img' } },
      want: { dedicatedImageFs: false, splitContainerImageFs: false },
    },
  ];
  for (const c of cases) it(c.name, () => expect(filesystemLayout(c.o)).to.deep.equal(c.want));
});
