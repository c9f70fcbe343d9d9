/**
 * One node's stats provider: gathers the runtime's readings (ListPodSandboxStats, with ListContainerStats
 * as the fallback for a runtime that does not implement it), this node's share of the operator process, and
 * the cached disk usage of volumes and logs, and hands them to the SummaryBuilder. Serves `/stats/summary`
 * and `/metrics/resource` (resourcemetrics.ts) of the node API.
 *
 * Concurrent callers share one build (metrics-server and a dashboard scraping together cost one round).
 * The node's share of the operator: the process's CPU time is split evenly between the nodes it serves, as
 * it accrues; its resident memory likewise.
 */
import type { StatsFs } from 'node:fs';
import { stat, statfs } from 'node:fs/promises';
import type {
  Container,
  FilesystemUsage,
  ImageFsInfo,
  PodSandbox,
  PodSandboxStats,
  Runtime,
} from '../../../runtime/types.js';
import type { Clock } from '../../../util/clock.js';
import { isUnimplemented } from '../../../util/errors.js';
import { filesystemLayout } from '../../images/imagegc.js';
import { PluginDirs } from '../../volume/podpaths.js';
import type { VolumeFS } from '../../volume/fs.js';
import { joinPath } from '../../volume/paths.js';
import type { DirUsage, DirUsageReading } from './du.js';
import { SummaryBuilder, hugePageCapacityBytes, type SummaryInput } from '../summary.js';
import {
  declaredFilesystems,
  type DeclaredContents,
  type DeclaredFilesystems,
  type FsLayoutReading,
} from '../declareddisks.js';
import type { FsStats, Summary, VolumeStats } from '../types.js';

export type StatsRuntime = Pick<
  Runtime,
  'listPodSandbox' | 'listContainers' | 'listPodSandboxStats' | 'listContainerStats'
>;

export interface ProcessUsage {
  /** User plus system CPU time of the process, in microseconds. */
  cpuMicros: number;
  rssBytes: number;
}

export interface StatsProviderDeps {
  nodeName: string;
  runtime: StatsRuntime;
  clock: Clock;
  /** When the node started serving (NodeStats.startTime). */
  startTimeMs: number;
  memoryCapacityBytes: number;
  /** The Node's capacity as its status last had it: its huge pages leave the node's available memory. */
  nodeCapacity?: () => Readonly<Record<string, string | number>> | undefined;
  ephemeralStorageCapacityBytes: number;
  /**
   * Whether a pod (by UID) is this node's. Sandboxes of other pods are left out: nodes that share one
   * runtime (several VirtualNodes on one containerd) must not report each other's pods. Absent: all.
   */
  ownsPod?(uid: string): boolean;
  /** How many nodes this process serves now (the node's share of it). */
  nodesServed(): number;
  /** Default: process.cpuUsage() and process.memoryUsage.rss(). */
  processUsage?: () => ProcessUsage;
  /** Volumes: `<podsDir>/<uid>/volumes/<plugin>/<name>`, measured through `usage`. */
  volumes?: { podsDir: string; fs: Pick<VolumeFS, 'readdir'>; usage: DirUsage };
  /** The pod's persistent (CSI) volumes' stats, from their drivers (the volume manager caches them). */
  persistentVolumes?: (podUID: string) => Promise<VolumeStats[]>;
  /** Container logs: the directory of a container's log files, measured through `usage` (cri). */
  logs?: {
    dir(pod: { namespace: string; name: string; uid: string }, container: string): string;
    usage: DirUsage;
  };
  /** A real filesystem to statfs for the node's fs and the containers' rootfs capacity; absent: from capacity. */
  statfsPath?: string;
  /** The runtime's CRI ImageFsInfo (the image filesystem the image GC reads); absent: no image filesystem. */
  imageFsInfo?: () => Promise<ImageFsInfo>;
  /**
   * A node without a real disk that declares an image disk of its own (sim `runtime.sim.imageFs`): its
   * capacity. Absent: the images share the node's declared disk.
   */
  imageFsCapacityBytes?: number;
}

/** The image and container filesystems as the image GC and the eviction manager see them. */
export interface ImageFsReading {
  imageFs: FsStats;
  containerFs: FsStats;
  /** Images off the node's filesystem; containers' writable layers on another one than the images'. */
  layout: FsLayoutReading;
}

/** One filesystem for everything: what a node whose runtime names no image filesystem is taken to have. */
const OneFilesystem: FsLayoutReading = { dedicatedImageFs: false, splitContainerImageFs: false };

/** The volume plugins whose directories hold the pod's ephemeral data (the kubelet's ephemeral volumes). */
const EPHEMERAL_PLUGINS = [
  PluginDirs.emptyDir,
  PluginDirs.configMap,
  PluginDirs.secret,
  PluginDirs.downwardAPI,
  PluginDirs.projected,
];

/**
 * The volume plugins whose data sits on the node's disk: an emptyDir, and the configMap and downwardAPI
 * volumes the kubelet backs by one; secrets and projected volumes live on tmpfs. (An emptyDir of medium
 * Memory is counted too: the directory does not say its medium.)
 */
const ON_DISK_PLUGINS = new Set<string>([PluginDirs.emptyDir, PluginDirs.configMap, PluginDirs.downwardAPI]);

function defaultProcessUsage(): ProcessUsage {
  const u = process.cpuUsage();
  return { cpuMicros: u.user + u.system, rssBytes: process.memoryUsage.rss() };
}

export class StatsProvider {
  private readonly builder = new SummaryBuilder();
  private inflight: { fs: boolean; pods: boolean; promise: Promise<Summary> } | undefined;
  private share = { lastCpuMicros: -1, coreNanoSeconds: 0 };
  /** Volume names per pod, listed in the background like the usage itself. */
  private readonly volumeNames = new Map<string, { plugin: string; name: string }[]>();
  /** A declared disk's contents besides the runtime's own figures, as the last Summary found them. */
  private declaredContents: DeclaredContents = { volumeBytes: 0, writableBytes: 0 };

  constructor(private readonly d: StatsProviderDeps) {}

  /**
   * The Summary now; with `fs` false the filesystem figures are skipped (the resource metrics need none),
   * with `pods` false the pods' stats and all CPU figures (the eviction manager's round without pressure or
   * local storage limits needs the node's memory and filesystems alone). A build in flight that has what
   * is asked for answers.
   */
  summary(opts: { fs: boolean; pods?: boolean } = { fs: true }): Promise<Summary> {
    const pods = opts.pods !== false;
    const cur = this.inflight;
    if (cur && (cur.fs || !opts.fs) && (cur.pods || !pods)) return cur.promise;
    const promise = this.build(opts.fs, pods).finally(() => {
      if (this.inflight?.promise === promise) this.inflight = undefined;
    });
    this.inflight = { fs: opts.fs, pods, promise };
    return promise;
  }

  private async build(withFs: boolean, withPods: boolean): Promise<Summary> {
    const { runtime, clock } = this.d;
    const [sandboxes, containers, reported] = await Promise.all([
      runtime.listPodSandbox({ state: 'ready' }),
      runtime.listContainers({ state: 'running' }),
      runtime.listPodSandboxStats().catch((err: unknown) => {
        if (isUnimplemented(err)) return undefined;
        throw err;
      }),
    ]);
    const all = reported ?? (await this.fromContainerStats(sandboxes, containers));
    const owns = this.d.ownsPod;
    const sandboxStats = owns ? all.filter((s) => owns(s.attributes.metadata.uid)) : all;
    const nowMs = clock.now();
    const input: SummaryInput = {
      nodeName: this.d.nodeName,
      nodeStartTimeMs: this.d.startTimeMs,
      nowMs,
      memoryCapacityBytes: this.d.memoryCapacityBytes,
      hugePageCapacityBytes: hugePageCapacityBytes(this.d.nodeCapacity?.()),
      sandboxes,
      containers,
      sandboxStats,
      kubelet: this.kubeletShare(nowMs),
      withPods,
    };
    if (withFs) input.fs = await this.filesystems(nowMs, sandboxStats);
    return this.builder.build(input);
  }

  /** A runtime without ListPodSandboxStats: its containers' stats, grouped by the ready sandboxes listed. */
  private async fromContainerStats(
    sandboxes: readonly PodSandbox[],
    containers: readonly Container[],
  ): Promise<PodSandboxStats[]> {
    const stats = await this.d.runtime.listContainerStats();
    const sandboxOf = new Map(containers.map((c) => [c.id, c.podSandboxId]));
    const out = new Map<string, PodSandboxStats>();
    for (const s of sandboxes) {
      out.set(s.id, {
        attributes: { id: s.id, metadata: s.metadata, labels: s.labels, annotations: s.annotations },
        containers: [],
      });
    }
    for (const c of stats) {
      const sandbox = c.attributes ? sandboxOf.get(c.attributes.id) : undefined;
      if (sandbox !== undefined) out.get(sandbox)?.containers.push(c);
    }
    return [...out.values()];
  }

  private kubeletShare(nowMs: number): NonNullable<SummaryInput['kubelet']> {
    const usage = (this.d.processUsage ?? defaultProcessUsage)();
    const nodes = Math.max(1, this.d.nodesServed());
    if (this.share.lastCpuMicros >= 0) {
      const delta = Math.max(0, usage.cpuMicros - this.share.lastCpuMicros);
      this.share.coreNanoSeconds += Math.round((delta * 1000) / nodes);
    } else {
      this.share.coreNanoSeconds = Math.round((usage.cpuMicros * 1000) / nodes);
    }
    this.share.lastCpuMicros = usage.cpuMicros;
    return {
      cpu: { timeMs: nowMs, coreNanoSeconds: this.share.coreNanoSeconds },
      memoryBytes: Math.round(usage.rssBytes / nodes),
    };
  }

  private async filesystems(
    nowMs: number,
    sandboxStats: readonly PodSandboxStats[],
  ): Promise<NonNullable<SummaryInput['fs']>> {
    const capacity = await this.capacity(nowMs);
    const uids = new Set(sandboxStats.map((s) => s.attributes.metadata.uid));
    const { volumes, logs } = this.d;
    if (volumes) {
      for (const uid of this.volumeNames.keys()) if (!uids.has(uid)) this.volumeNames.delete(uid);
      await Promise.all([...uids].map((uid) => this.listVolumes(uid)));
      const prefix = `${volumes.podsDir}/`;
      volumes.usage.retain(
        (dir) => !dir.startsWith(prefix) || uids.has(dir.slice(prefix.length).split('/')[0]!),
      );
    }
    const persistent = new Map<string, VolumeStats[]>();
    const readPersistent = this.d.persistentVolumes;
    if (readPersistent) {
      await Promise.all(
        [...uids].map(async (uid) => {
          const v = await readPersistent(uid).catch(() => [] as VolumeStats[]);
          if (v.length > 0) persistent.set(uid, v);
        }),
      );
    }
    const withCapacity = (r: DirUsageReading): FsStats => ({
      ...capacity,
      time: r.timeMs,
      usedBytes: r.usedBytes,
      inodesUsed: r.inodesUsed,
    });
    const disks = this.d.statfsPath
      ? { node: capacity, ...(await this.realRuntimeFs().catch(() => undefined)) }
      : await this.declaredDisks(nowMs, sandboxStats);
    return {
      node: disks.node,
      // The kubelet's Summary: the runtime's image and container filesystems (ImageFsStats); a runtime that
      // cannot say keeps its containers' rootfs on the node's.
      ...(disks.imageFs ? { imageFs: disks.imageFs } : {}),
      containerFs: disks.containerFs ?? disks.node,
      volumes: (uid): VolumeStats[] | undefined => {
        if (!volumes) return undefined;
        const out: VolumeStats[] = [];
        for (const v of this.volumeNames.get(uid) ?? []) {
          const r = volumes.usage.get(joinPath(volumes.podsDir, uid, 'volumes', v.plugin, v.name));
          if (r) out.push({ ...withCapacity(r), name: v.name });
        }
        return out;
      },
      persistentVolumes: (uid) => persistent.get(uid),
      logs: (pod, container): FsStats | undefined => {
        const r = logs?.usage.get(logs.dir(pod, container));
        return r ? withCapacity(r) : undefined;
      },
    };
  }

  /** The node filesystem's capacity: statfs of a real path, else the node's declared ephemeral storage. */
  private async capacity(nowMs: number): Promise<FsStats> {
    if (this.d.statfsPath) {
      try {
        const s = await statfs(this.d.statfsPath);
        return {
          time: nowMs,
          ...statfsFigures(s),
          usedBytes: (s.blocks - s.bfree) * s.bsize,
          inodesUsed: s.files - s.ffree,
        };
      } catch {
        // fall back to the declared capacity
      }
    }
    return { time: nowMs, capacityBytes: this.d.ephemeralStorageCapacityBytes };
  }

  /**
   * A node without a real disk (sim): its declared disks (declareddisks.ts) holding what a kubelet's disks
   * hold: the images (the runtime's ImageFsInfo), the containers' writable layers and the on-disk volumes.
   * Used and available follow from them, so nodefs, imagefs and containerfs fill as a kubelet's do.
   */
  private async declaredDisks(
    nowMs: number,
    sandboxStats: readonly PodSandboxStats[],
  ): Promise<DeclaredFilesystems> {
    let writableBytes = 0;
    for (const s of sandboxStats)
      for (const c of s.containers) writableBytes += c.writableLayer?.usedBytes ?? 0;
    let volumeBytes = 0;
    const volumes = this.d.volumes;
    if (volumes)
      for (const [uid, names] of this.volumeNames)
        for (const v of names)
          if (ON_DISK_PLUGINS.has(v.plugin))
            volumeBytes +=
              volumes.usage.get(joinPath(volumes.podsDir, uid, 'volumes', v.plugin, v.name))?.usedBytes ?? 0;
    this.declaredContents = { volumeBytes, writableBytes };
    const info = this.d.imageFsInfo ? await this.d.imageFsInfo().catch(() => undefined) : undefined;
    return declaredFilesystems(this.declaredDisksOf(), info, this.declaredContents, nowMs);
  }

  private declaredDisksOf(): { nodeCapacityBytes: number; imageCapacityBytes?: number } {
    return {
      nodeCapacityBytes: this.d.ephemeralStorageCapacityBytes,
      ...(this.d.imageFsCapacityBytes !== undefined
        ? { imageCapacityBytes: this.d.imageFsCapacityBytes }
        : {}),
    };
  }

  /**
   * The image filesystem (kubelet ImageFsStats): the first one the runtime's ImageFsInfo names, its usage as
   * the runtime reports it; capacity and available by statfs of its mountpoint on a node with a real disk
   * (of the node's path when the mountpoint cannot be read), else of the declared disk that holds it. The
   * container filesystem is the same one unless the runtime names another on another device (the split
   * layout of KubeletSeparateDiskGC); the layout is what the devices under them make. Throws when the
   * runtime names no image filesystem.
   */
  async imageFsStats(): Promise<ImageFsReading> {
    if (!this.d.imageFsInfo) throw new Error('imageFs information is unavailable');
    if (this.d.statfsPath) return this.realRuntimeFs();
    const info = await this.d.imageFsInfo();
    const r = declaredFilesystems(this.declaredDisksOf(), info, this.declaredContents, this.d.clock.now());
    if (!r.imageFs || !r.containerFs) throw new Error('imageFs information is unavailable');
    return { imageFs: r.imageFs, containerFs: r.containerFs, layout: r.layout };
  }

  /**
   * The node's filesystem layout (kubelet HasDedicatedImageFs and HasDedicatedContainerFs): one filesystem
   * when the runtime has no ImageFsInfo; throws when it cannot answer it.
   */
  async filesystemLayout(): Promise<FsLayoutReading> {
    if (!this.d.imageFsInfo) return OneFilesystem;
    return (await this.imageFsStats()).layout;
  }

  /** imageFsStats on a node with a real disk: statfs and stat of the mountpoints the runtime names. */
  private async realRuntimeFs(): Promise<ImageFsReading> {
    if (!this.d.imageFsInfo) throw new Error('imageFs information is unavailable');
    const info = await this.d.imageFsInfo();
    const image = info.imageFilesystems[0];
    if (!image) throw new Error('imageFs information is unavailable');
    const container = info.containerFilesystems[0] ?? image;
    const [rootDevice, imageDevice, containerDevice] = await Promise.all([
      this.deviceOf(this.d.statfsPath),
      this.deviceOf(image.mountpoint),
      this.deviceOf(container.mountpoint),
    ]);
    const layout = filesystemLayout({
      rootDevice,
      imageFs: {
        ...(image.mountpoint !== undefined ? { mountpoint: image.mountpoint } : {}),
        ...(imageDevice !== undefined ? { device: imageDevice } : {}),
      },
      containerFs: {
        ...(container.mountpoint !== undefined ? { mountpoint: container.mountpoint } : {}),
        ...(containerDevice !== undefined ? { device: containerDevice } : {}),
      },
    });
    const imageFs = await this.fsOf(image);
    const containerFs = layout.splitContainerImageFs ? await this.fsOf(container) : imageFs;
    return { imageFs, containerFs, layout };
  }

  private async fsOf(u: FilesystemUsage): Promise<FsStats> {
    const timeMs = Number(u.timestamp / 1_000_000n) || this.d.clock.now();
    const used = { ...(u.usedBytes !== undefined ? { usedBytes: u.usedBytes } : {}) };
    const inodesUsed = { ...(u.inodesUsed !== undefined ? { inodesUsed: u.inodesUsed } : {}) };
    for (const path of [u.mountpoint, this.d.statfsPath]) {
      if (!path) continue;
      try {
        return { time: timeMs, ...statfsFigures(await statfs(path)), ...used, ...inodesUsed };
      } catch {
        // the next candidate
      }
    }
    // Neither can be read: the runtime's usage alone, as the kubelet's best-effort partial figures.
    return { time: timeMs, ...used, ...inodesUsed };
  }

  /** The device of a real path (stat's dev); undefined on a node without a disk or an unreadable path. */
  private async deviceOf(path: string | undefined): Promise<number | undefined> {
    if (!this.d.statfsPath || !path) return undefined;
    try {
      return (await stat(path)).dev;
    } catch {
      return undefined;
    }
  }

  private async listVolumes(uid: string): Promise<void> {
    const v = this.d.volumes!;
    if (this.volumeNames.has(uid)) return;
    const found: { plugin: string; name: string }[] = [];
    for (const plugin of EPHEMERAL_PLUGINS) {
      const names = await v.fs
        .readdir(joinPath(v.podsDir, uid, 'volumes', plugin))
        .catch(() => [] as string[]);
      for (const name of names) found.push({ plugin, name });
    }
    this.volumeNames.set(uid, found);
  }
}

/** A filesystem's size, room for non-root users and inodes, from statfs. */
function statfsFigures(
  s: StatsFs,
): Required<Pick<FsStats, 'capacityBytes' | 'availableBytes' | 'inodes' | 'inodesFree'>> {
  return {
    capacityBytes: s.blocks * s.bsize,
    availableBytes: s.bavail * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
  };
}
