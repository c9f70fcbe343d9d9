/**
 * SimRuntime's options and what the runtime makes of them: its clock, pod IP range, node IP, behaviour
 * profiles, images present from the start, ID seed, node files and version. Everything is checked here, so
 * a runtime that was constructed has no bad option left to trip on later.
 */
import type { Clock } from '../../util/clock.js';
import { BehaviourResolver } from './behaviour.js';
import * as errs from './errors.js';
import { ImageStore, parseImageReference } from './images.js';
import { parseIPv4 } from '../../util/ipv4.js';
import { IPAllocator } from './ipam.js';
import type { NodeFiles } from './podview.js';

export interface SimRuntimeOptions {
  clock: Clock;
  /** Pod network range (default 10.88.0.0/16, containerd's default bridge range). */
  podCIDR?: string;
  /** What host-network sandboxes report as their IP (default 10.0.0.2). */
  nodeIP?: string;
  /** SimProfiles data (profile.ts), validated here: `{ defaults?, images? }`. */
  profiles?: unknown;
  /** Images present from the start, as if imported. */
  images?: readonly string[];
  /** Seeds the deterministic IDs (default "sim"): two runtimes with different seeds never share an ID. */
  idSeed?: string;
  /**
   * The node's files (its in-memory pod directories): a container's `cat` of a path under one of its mounts
   * reads them, so probes and hooks that read volumes, /etc/hosts or tokens behave.
   */
  files?: NodeFiles;
  runtimeVersion?: string;
  /**
   * Where containers' writable layers live: with the images (default, as containerd on one disk: ImageFsInfo
   * names one filesystem for both), or on a filesystem of their own (`separate`: ImageFsInfo names
   * SimContainerFsMountpoint for them, KubeletSeparateDiskGC's split layout).
   */
  containerFilesystem?: 'images' | 'separate';
}

export interface RuntimeSetup {
  clock: Clock;
  ipam: IPAllocator;
  nodeIP: string;
  behaviours: BehaviourResolver;
  images: ImageStore;
  idSeed: string;
  files: NodeFiles | undefined;
  runtimeVersion: string;
  containerFilesystem: 'images' | 'separate';
}

/** Throws InvalidArgument for a missing clock, a bad CIDR, node IP, image reference or profile data. */
export function setUp(opts: SimRuntimeOptions): RuntimeSetup {
  if (!opts || typeof opts.clock?.setTimer !== 'function') {
    throw errs.optionError('clock', 'options.clock is required');
  }
  const ipam = new IPAllocator(opts.podCIDR ?? '10.88.0.0/16');
  const nodeIP = opts.nodeIP ?? '10.0.0.2';
  if (parseIPv4(nodeIP) === undefined) {
    throw errs.optionError('nodeIP', `nodeIP ${JSON.stringify(nodeIP)} is not an IPv4 address`);
  }
  const behaviours = new BehaviourResolver(opts.profiles);
  const images = new ImageStore();
  for (const image of opts.images ?? []) {
    const r = parseImageReference(image);
    if (!r) throw errs.optionError('images', `images: ${JSON.stringify(image)} is not an image reference`);
    images.add(r);
  }
  return {
    clock: opts.clock,
    ipam,
    nodeIP,
    behaviours,
    images,
    idSeed: opts.idSeed ?? 'sim',
    files: opts.files,
    runtimeVersion: opts.runtimeVersion ?? '0.1.0',
    containerFilesystem: opts.containerFilesystem ?? 'images',
  };
}
