// Builders for the eviction tables: pods and stats Summaries with only the figures a case needs.
import type { Container, Pod } from '../../../../src/api/core.js';
import type { ContainerStats, PodStats, Summary } from '../../../../src/kubelet/stats/types.js';

export const Mi = 1024 * 1024;
export const Gi = 1024 * Mi;

export function ctr(
  name: string,
  requests: Record<string, string> = {},
  limits: Record<string, string> = {},
): Container {
  return { name, image: 'busybox', resources: { requests, limits } };
}

export function pod(name: string, containers: Container[], extra: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, generation: 2 },
    spec: { containers, ...extra },
  };
}

export function cstats(
  name: string,
  fig: { ws?: number; rootfs?: number; logs?: number } = {},
): ContainerStats {
  return {
    name,
    startTime: 0,
    ...(fig.ws !== undefined ? { memory: { time: 0, workingSetBytes: fig.ws } } : {}),
    ...(fig.rootfs !== undefined ? { rootfs: { time: 0, usedBytes: fig.rootfs, inodesUsed: 1 } } : {}),
    ...(fig.logs !== undefined ? { logs: { time: 0, usedBytes: fig.logs, inodesUsed: 1 } } : {}),
  };
}

export function pstats(p: Pod, containers: ContainerStats[], extra: Partial<PodStats> = {}): PodStats {
  const ws = containers.reduce((s, c) => s + (c.memory?.workingSetBytes ?? 0), 0);
  return {
    podRef: { name: p.metadata.name ?? '', namespace: 'ns', uid: p.metadata.uid ?? '' },
    startTime: 0,
    containers,
    memory: { time: 0, workingSetBytes: ws },
    ...extra,
  };
}

export interface NodeFigures {
  time?: number;
  memAvailable?: number;
  memWorkingSet?: number;
  nodefs?: { available: number; capacity: number; inodesFree?: number; inodes?: number };
  imagefs?: { available: number; capacity: number; inodesFree?: number; inodes?: number };
  containerfs?: { available: number; capacity: number; inodesFree?: number; inodes?: number };
  pids?: { max: number; used: number };
}

export function summary(n: NodeFigures, pods: PodStats[] = []): Summary {
  const time = n.time ?? 1000;
  const fs = (f: NodeFigures['nodefs']) =>
    f && {
      time,
      availableBytes: f.available,
      capacityBytes: f.capacity,
      ...(f.inodes !== undefined ? { inodes: f.inodes, inodesFree: f.inodesFree } : {}),
    };
  return {
    node: {
      nodeName: 'n',
      startTime: 0,
      ...(n.memAvailable !== undefined
        ? { memory: { time, availableBytes: n.memAvailable, workingSetBytes: n.memWorkingSet ?? 0 } }
        : {}),
      ...(n.nodefs ? { fs: fs(n.nodefs) } : {}),
      ...(n.imagefs || n.containerfs
        ? {
            runtime: {
              ...(n.imagefs ? { imageFs: fs(n.imagefs) } : {}),
              ...(n.containerfs ? { containerFs: fs(n.containerfs) } : {}),
            },
          }
        : {}),
      ...(n.pids ? { rlimit: { time, maxpid: n.pids.max, curproc: n.pids.used } } : {}),
    },
    pods,
  };
}
