/**
 * The filesystems of a node without a real disk (sim), from the disks its VirtualNode declares: the node's
 * disk (`capacity.ephemeral-storage`) and, optionally, an image disk of its own (`runtime.sim.imageFs`).
 * What sits on each follows the runtime's CRI ImageFsInfo: the images on the disk of the image filesystem's
 * mountpoint (the image disk when declared), the containers' writable layers on the container filesystem's
 * (the image disk when it names the images' mountpoint, else the node's), on-disk volumes on the node's.
 *
 * Figures are what the kubelet's ImageFsStats and RootFsStats give for such disks: usage from the runtime,
 * capacity of the disk, available its capacity less everything on it; the container filesystem is the image
 * filesystem unless the layout is split (another mountpoint and another disk), as the kubelet's stats provider
 * returns it. No inode figures: a declared disk has no inode count.
 */
import type { FilesystemUsage, ImageFsInfo } from '../../runtime/types.js';
import { filesystemLayout } from '../images/imagegc.js';
import type { FsStats } from './types.js';

export interface DeclaredDisks {
  nodeCapacityBytes: number;
  /** The image disk's capacity; absent: images share the node's disk. */
  imageCapacityBytes?: number;
}

/** What the last Summary found on the node's disks besides the runtime's own figures. */
export interface DeclaredContents {
  /** On-disk volumes (emptyDir, configMap, downwardAPI). */
  volumeBytes: number;
  /** The writable layers of this node's running containers, used when the runtime names no container fs. */
  writableBytes: number;
}

export interface FsLayoutReading {
  dedicatedImageFs: boolean;
  splitContainerImageFs: boolean;
}

export interface DeclaredFilesystems {
  node: FsStats;
  /** Absent when the runtime names no image filesystem. */
  imageFs?: FsStats;
  containerFs?: FsStats;
  layout: FsLayoutReading;
}

/** Device numbers the layout test compares: the node's disk and the image disk. */
const NodeDisk = 1;
const ImageDisk = 2;

const nsToMs = (ns: bigint, fallbackMs: number): number => (ns > 0n ? Number(ns / 1_000_000n) : fallbackMs);

export function declaredFilesystems(
  disks: DeclaredDisks,
  info: ImageFsInfo | undefined,
  contents: DeclaredContents,
  nowMs: number,
): DeclaredFilesystems {
  const image = info?.imageFilesystems[0];
  const named = info?.containerFilesystems[0];
  // A runtime naming no container filesystem keeps the layers with the images (the kubelet reads it so).
  const container = named ?? image;
  const imageDisk = image && disks.imageCapacityBytes !== undefined ? ImageDisk : NodeDisk;
  const ownContainerFs = container !== undefined && container.mountpoint !== image?.mountpoint;
  const containerDisk = ownContainerFs ? NodeDisk : imageDisk;
  const layout = filesystemLayout({
    rootDevice: NodeDisk,
    imageFs: image ? { ...mountpointOf(image), device: imageDisk } : undefined,
    containerFs: container ? { ...mountpointOf(container), device: containerDisk } : undefined,
  });

  const imagesBytes = image?.usedBytes ?? 0;
  // The runtime's own count of its container filesystem when it names one apart; else this node's layers.
  const writableBytes = ownContainerFs ? (container.usedBytes ?? 0) : contents.writableBytes;
  const used = new Map<number, number>([
    [NodeDisk, contents.volumeBytes],
    [ImageDisk, 0],
  ]);
  const add = (disk: number, bytes: number): void => {
    used.set(disk, (used.get(disk) ?? 0) + bytes);
  };
  add(imageDisk, imagesBytes);
  add(containerDisk, writableBytes);
  const capacityOf = (disk: number): number =>
    disk === ImageDisk ? (disks.imageCapacityBytes ?? 0) : disks.nodeCapacityBytes;
  const availableOn = (disk: number): number => Math.max(0, capacityOf(disk) - (used.get(disk) ?? 0));

  const node: FsStats = {
    time: nowMs,
    capacityBytes: disks.nodeCapacityBytes,
    usedBytes: used.get(NodeDisk) ?? 0,
    availableBytes: availableOn(NodeDisk),
  };
  if (!image) return { node, layout };
  const runtimeFs = (u: FilesystemUsage, disk: number): FsStats => ({
    time: nsToMs(u.timestamp, nowMs),
    capacityBytes: capacityOf(disk),
    availableBytes: availableOn(disk),
    ...(u.usedBytes !== undefined ? { usedBytes: u.usedBytes } : {}),
    ...(u.inodesUsed !== undefined ? { inodesUsed: u.inodesUsed } : {}),
  });
  const imageFs = runtimeFs(image, imageDisk);
  const containerFs =
    layout.splitContainerImageFs && container ? runtimeFs(container, containerDisk) : imageFs;
  return { node, imageFs, containerFs, layout };
}

function mountpointOf(u: FilesystemUsage): { mountpoint?: string } {
  return u.mountpoint !== undefined ? { mountpoint: u.mountpoint } : {};
}
