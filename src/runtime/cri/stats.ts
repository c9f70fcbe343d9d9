/**
 * CRI stats messages (ContainerStats, PodSandboxStats and their usage records) to the Runtime's types.
 * Absent wrapper values stay absent: "not reported" is not zero.
 */
import type {
  ContainerStats,
  ContainerStatsFilter,
  CpuUsage,
  FilesystemUsage,
  ImageFsInfo,
  MemoryUsage,
  NetworkInterfaceUsage,
  PodSandboxStats,
  PodSandboxStatsFilter,
} from '../types.js';
import { int64ToBigint } from './convert.js';

type U64 = { value?: string | number } | null | undefined;
type Int64 = string | number | null | undefined;
type Labels = Record<string, string> | null | undefined;

export interface WireCpuUsage {
  timestamp?: Int64;
  usage_core_nano_seconds?: U64;
  usage_nano_cores?: U64;
}

export interface WireMemoryUsage {
  timestamp?: Int64;
  working_set_bytes?: U64;
  available_bytes?: U64;
  usage_bytes?: U64;
  rss_bytes?: U64;
  page_faults?: U64;
  major_page_faults?: U64;
}

export interface WireFilesystemUsage {
  timestamp?: Int64;
  fs_id?: { mountpoint?: string } | null;
  used_bytes?: U64;
  inodes_used?: U64;
}

export interface WireContainerStats {
  attributes?: {
    id?: string;
    metadata?: { name?: string; attempt?: number } | null;
    labels?: Labels;
    annotations?: Labels;
  } | null;
  cpu?: WireCpuUsage | null;
  memory?: WireMemoryUsage | null;
  writable_layer?: WireFilesystemUsage | null;
}

interface WireInterfaceUsage {
  name?: string;
  rx_bytes?: U64;
  rx_errors?: U64;
  tx_bytes?: U64;
  tx_errors?: U64;
}

export interface WirePodSandboxStats {
  attributes?: {
    id?: string;
    metadata?: { name?: string; uid?: string; namespace?: string; attempt?: number } | null;
    labels?: Labels;
    annotations?: Labels;
  } | null;
  linux?: {
    cpu?: WireCpuUsage | null;
    memory?: WireMemoryUsage | null;
    network?: {
      timestamp?: Int64;
      default_interface?: WireInterfaceUsage | null;
      interfaces?: WireInterfaceUsage[] | null;
    } | null;
    process?: { timestamp?: Int64; process_count?: U64 } | null;
    containers?: WireContainerStats[] | null;
  } | null;
}

/** A wrapped uint64 as a number (byte and nanosecond counts stay far below 2^53 in practice). */
function u64(v: U64): number | undefined {
  return v ? Number(v.value ?? 0) : undefined;
}

/** Sets `out[key]` only when the value was reported. */
function put<T extends object, K extends keyof T>(out: T, key: K, v: T[K] | undefined): void {
  if (v !== undefined) out[key] = v;
}

export function cpuFromWire(c: WireCpuUsage | null | undefined): CpuUsage | undefined {
  if (!c) return undefined;
  const out: CpuUsage = { timestamp: int64ToBigint(c.timestamp) };
  put(out, 'usageCoreNanoSeconds', u64(c.usage_core_nano_seconds));
  put(out, 'usageNanoCores', u64(c.usage_nano_cores));
  return out;
}

export function memoryFromWire(m: WireMemoryUsage | null | undefined): MemoryUsage | undefined {
  if (!m) return undefined;
  const out: MemoryUsage = { timestamp: int64ToBigint(m.timestamp) };
  put(out, 'workingSetBytes', u64(m.working_set_bytes));
  put(out, 'availableBytes', u64(m.available_bytes));
  put(out, 'usageBytes', u64(m.usage_bytes));
  put(out, 'rssBytes', u64(m.rss_bytes));
  put(out, 'pageFaults', u64(m.page_faults));
  put(out, 'majorPageFaults', u64(m.major_page_faults));
  return out;
}

export function filesystemFromWire(f: WireFilesystemUsage | null | undefined): FilesystemUsage | undefined {
  if (!f) return undefined;
  const out: FilesystemUsage = { timestamp: int64ToBigint(f.timestamp) };
  if (f.fs_id?.mountpoint) out.mountpoint = f.fs_id.mountpoint;
  put(out, 'usedBytes', u64(f.used_bytes));
  put(out, 'inodesUsed', u64(f.inodes_used));
  return out;
}

/** CRI ImageFsInfoResponse: the image filesystems, and the container ones (none from containerd 1.6). */
export function imageFsInfoFromWire(r: {
  image_filesystems?: WireFilesystemUsage[] | null;
  container_filesystems?: WireFilesystemUsage[] | null;
}): ImageFsInfo {
  const list = (l: WireFilesystemUsage[] | null | undefined): FilesystemUsage[] =>
    (l ?? []).flatMap((f) => {
      const out = filesystemFromWire(f);
      return out ? [out] : [];
    });
  return {
    imageFilesystems: list(r.image_filesystems),
    containerFilesystems: list(r.container_filesystems),
  };
}

export function containerStatsFromWire(s: WireContainerStats): ContainerStats {
  const out: ContainerStats = {};
  const a = s.attributes;
  if (a) {
    out.attributes = {
      id: a.id ?? '',
      metadata: { name: a.metadata?.name ?? '', attempt: a.metadata?.attempt ?? 0 },
      labels: { ...a.labels },
      annotations: { ...a.annotations },
    };
  }
  put(out, 'cpu', cpuFromWire(s.cpu));
  put(out, 'memory', memoryFromWire(s.memory));
  put(out, 'writableLayer', filesystemFromWire(s.writable_layer));
  return out;
}

function interfaceFromWire(i: WireInterfaceUsage): NetworkInterfaceUsage {
  const out: NetworkInterfaceUsage = { name: i.name ?? '' };
  put(out, 'rxBytes', u64(i.rx_bytes));
  put(out, 'rxErrors', u64(i.rx_errors));
  put(out, 'txBytes', u64(i.tx_bytes));
  put(out, 'txErrors', u64(i.tx_errors));
  return out;
}

export function podSandboxStatsFromWire(s: WirePodSandboxStats): PodSandboxStats {
  const a = s.attributes;
  const m = a?.metadata;
  const out: PodSandboxStats = {
    attributes: {
      id: a?.id ?? '',
      metadata: {
        name: m?.name ?? '',
        uid: m?.uid ?? '',
        namespace: m?.namespace ?? '',
        attempt: m?.attempt ?? 0,
      },
      labels: { ...a?.labels },
      annotations: { ...a?.annotations },
    },
    containers: (s.linux?.containers ?? []).map(containerStatsFromWire),
  };
  const l = s.linux;
  put(out, 'cpu', cpuFromWire(l?.cpu));
  put(out, 'memory', memoryFromWire(l?.memory));
  if (l?.network) {
    const n = l.network;
    out.network = {
      timestamp: int64ToBigint(n.timestamp),
      interfaces: (n.interfaces ?? []).map(interfaceFromWire),
    };
    if (n.default_interface) out.network.defaultInterface = interfaceFromWire(n.default_interface);
  }
  if (l?.process) {
    out.process = {
      timestamp: int64ToBigint(l.process.timestamp),
      processCount: u64(l.process.process_count) ?? 0,
    };
  }
  return out;
}

export function containerStatsFilterToWire(f: ContainerStatsFilter | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (f?.id) out.id = f.id;
  if (f?.podSandboxId) out.pod_sandbox_id = f.podSandboxId;
  if (f?.labelSelector) out.label_selector = { ...f.labelSelector };
  return out;
}

export function sandboxStatsFilterToWire(f: PodSandboxStatsFilter | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (f?.id) out.id = f.id;
  if (f?.labelSelector) out.label_selector = { ...f.labelSelector };
  return out;
}
