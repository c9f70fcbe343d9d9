/**
 * DRA device health (kubelet: pkg/kubelet/cm/dra healthinfo.go and manager.go's health half, features
 * ResourceHealthStatus and ResourceHealthStatusMessage): the health cache a driver's NodeWatchResources stream
 * fills (driver, pool/device -> Healthy/Unhealthy/Unknown, message, when heard, timeout), its checkpoint
 * (`<root>/dra_health_state`), which pods a change concerns, and the `claim:<name>[/<request>]` entries of
 * containerStatuses[].allocatedResourcesStatus. Pure: time comes in as milliseconds; shell/healthstream.ts reads
 * the streams and shell/manager.ts writes the file and asks for the pods' syncs.
 */
import type { ContainerStatus, Pod } from '../../../api/core.js';
import {
  containerResourceClaims,
  podClaimName,
  podResourceClaims,
  type ClaimInfoState,
  type PodResourceClaimStatus,
} from './claiminfo.js';

/** A device's health as long as its driver keeps reporting it (DefaultHealthTimeout). */
export const DefaultHealthTimeoutMs = 30_000;
/** How many devices the cache keeps per driver: a driver inventing names cannot grow it without end. */
export const MaxDevicesPerDriver = 16_384;
/** core/v1 ResourceHealthMessageMaxLength (bytes, as Go counts a string). */
export const ResourceHealthMessageMaxLength = 1024;
/** The health cache's file under the node's kubelet root. */
export const DRAHealthCheckpointFile = 'dra_health_state';

export type DeviceHealthStatus = 'Healthy' | 'Unhealthy' | 'Unknown';

/** One device's health as the cache holds it (state.DeviceHealth). */
export interface DeviceHealth {
  poolName: string;
  deviceName: string;
  health: DeviceHealthStatus;
  /** When the kubelet last heard of it (ms since the epoch); the driver's own time is not used. */
  lastUpdated: number;
  /** How long the report holds; 0 means DefaultHealthTimeoutMs (an old checkpoint's entries). */
  healthCheckTimeoutMs: number;
  message: string;
}

/** A DeviceHealth of NodeWatchResourcesResponse as the proto loader gives it (int64 as strings). */
export interface WireDeviceHealth {
  device?: { pool_name?: string; device_name?: string };
  health?: string;
  last_updated_time?: string | number;
  health_check_timeout_seconds?: string | number;
  message?: string;
}

/**
 * truncateHealthMessage: a message longer than the API allows keeps its first 1021 bytes and gets "...". A
 * multi-byte character cut in two becomes U+FFFD, as Go's JSON encoding of the cut string writes it.
 */
export function truncateHealthMessage(message: string): string {
  const bytes = new TextEncoder().encode(message);
  if (bytes.length <= ResourceHealthMessageMaxLength) return message;
  return `${new TextDecoder().decode(bytes.subarray(0, ResourceHealthMessageMaxLength - 3))}...`;
}

/**
 * buildDeviceHealth: a reported device as the cache keeps it. A missing, zero or negative timeout is the
 * default (`negativeTimeout` says the driver sent a negative one, which the kubelet logs).
 */
export function deviceHealthFromWire(
  d: WireDeviceHealth,
  now: number,
): { device: DeviceHealth; negativeTimeout: boolean } {
  const seconds = Number(d.health_check_timeout_seconds ?? 0);
  const health: DeviceHealthStatus =
    d.health === 'HEALTHY' ? 'Healthy' : d.health === 'UNHEALTHY' ? 'Unhealthy' : 'Unknown';
  return {
    device: {
      poolName: d.device?.pool_name ?? '',
      deviceName: d.device?.device_name ?? '',
      health,
      lastUpdated: now,
      healthCheckTimeoutMs: seconds > 0 ? seconds * 1000 : DefaultHealthTimeoutMs,
      message: truncateHealthMessage(d.message ?? ''),
    },
    negativeTimeout: seconds < 0,
  };
}

function timeoutOf(d: DeviceHealth): number {
  return d.healthCheckTimeoutMs > 0 ? d.healthCheckTimeoutMs : DefaultHealthTimeoutMs;
}

/** What one report did to the cache. */
export interface HealthUpdate {
  /** Devices whose health, message or timeout changed, new ones, and reported ones gone stale (as Unknown). */
  changed: DeviceHealth[];
  /** New devices beyond MaxDevicesPerDriver, not kept. */
  ignored: number;
  /** The cache changed: its checkpoint is to be written. */
  dirty: boolean;
}

/** The health cache (healthInfoCache): by driver, by `<pool>/<device>`. */
export class HealthInfoCache {
  private readonly drivers = new Map<string, Map<string, DeviceHealth>>();

  constructor(entries: Iterable<[string, Iterable<DeviceHealth>]> = []) {
    for (const [driver, devices] of entries) {
      const m = new Map<string, DeviceHealth>();
      for (const d of devices) m.set(`${d.poolName}/${d.deviceName}`, d);
      this.drivers.set(driver, m);
    }
  }

  /**
   * getHealthInfo: a device's health now. Never heard of, or not heard of within its timeout: Unknown, with no
   * message.
   */
  get(
    driver: string,
    poolName: string,
    deviceName: string,
    now: number,
  ): { health: DeviceHealthStatus; message: string } {
    const d = this.drivers.get(driver)?.get(`${poolName}/${deviceName}`);
    if (!d || now - d.lastUpdated > timeoutOf(d)) return { health: 'Unknown', message: '' };
    return { health: d.health, message: d.message };
  }

  /**
   * updateHealthInfo: one report of a driver. Reported devices are stored as heard now; a device the report
   * leaves out is dropped once its timeout has passed, announced as Unknown unless it was Unknown already.
   */
  update(driver: string, reported: readonly DeviceHealth[], now: number): HealthUpdate {
    let devices = this.drivers.get(driver);
    if (!devices) {
      devices = new Map();
      this.drivers.set(driver, devices);
    }
    const changed: DeviceHealth[] = [];
    const seen = new Set<string>();
    let ignored = 0;
    for (const r of reported) {
      const d = { ...r, lastUpdated: now };
      const key = `${d.poolName}/${d.deviceName}`;
      seen.add(key);
      const old = devices.get(key);
      if (!old && devices.size >= MaxDevicesPerDriver) {
        ignored++;
        continue;
      }
      if (
        !old ||
        old.health !== d.health ||
        old.message !== d.message ||
        old.healthCheckTimeoutMs !== d.healthCheckTimeoutMs
      ) {
        changed.push(d);
      }
      devices.set(key, d);
    }
    let dropped = false;
    for (const [key, d] of devices) {
      if (seen.has(key) || now - d.lastUpdated <= timeoutOf(d)) continue;
      if (d.health !== 'Unknown') changed.push({ ...d, health: 'Unknown', message: '', lastUpdated: now });
      devices.delete(key);
      dropped = true;
    }
    return { changed, ignored, dirty: changed.length > 0 || dropped };
  }

  /** clearDriver: the driver's stream ended; its devices read Unknown until it reports again. */
  clearDriver(driver: string): boolean {
    return this.drivers.delete(driver);
  }

  /** The checkpoint's text: the kubelet's DevicesHealthMap as Go's JSON writes it (times RFC 3339, durations ns). */
  encode(): string {
    const out: Record<string, { Devices: Record<string, unknown> }> = {};
    for (const [driver, devices] of this.drivers) {
      const ds: Record<string, unknown> = {};
      for (const [key, d] of devices) {
        ds[key] = {
          PoolName: d.poolName,
          DeviceName: d.deviceName,
          Health: d.health,
          LastUpdated: new Date(d.lastUpdated).toISOString(),
          HealthCheckTimeout: d.healthCheckTimeoutMs * 1_000_000,
          Message: d.message,
        };
      }
      out[driver] = { Devices: ds };
    }
    return JSON.stringify(out);
  }

  /** A cache from the checkpoint's text (the kubelet's loadFromCheckpoint), or why it cannot be read. */
  static decode(text: string): { ok: true; cache: HealthInfoCache } | { ok: false; error: string } {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      return { ok: false, error: `health checkpoint is not JSON: ${(err as Error).message}` };
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      return { ok: false, error: 'health checkpoint is not an object of drivers' };
    const entries: [string, DeviceHealth[]][] = [];
    for (const [driver, state] of Object.entries(parsed as Record<string, unknown>)) {
      const devices = (state as { Devices?: Record<string, Record<string, unknown>> } | null)?.Devices ?? {};
      const list: DeviceHealth[] = [];
      for (const d of Object.values(devices)) {
        const health = d.Health === 'Healthy' || d.Health === 'Unhealthy' ? d.Health : 'Unknown';
        const at = Date.parse(String(d.LastUpdated ?? ''));
        list.push({
          poolName: String(d.PoolName ?? ''),
          deviceName: String(d.DeviceName ?? ''),
          health,
          lastUpdated: Number.isNaN(at) ? 0 : at,
          healthCheckTimeoutMs: Math.floor(Number(d.HealthCheckTimeout ?? 0) / 1_000_000) || 0,
          message: String(d.Message ?? ''),
        });
      }
      entries.push([driver, list]);
    }
    return { ok: true, cache: new HealthInfoCache(entries) };
  }
}

/**
 * The pods to sync again after a driver's report (HandleWatchResourcesStream): those whose cached claims hold
 * one of the changed devices of that driver. Sorted, each once.
 */
export function podsUsingDevices(
  claims: readonly ClaimInfoState[],
  driver: string,
  changed: readonly Pick<DeviceHealth, 'poolName' | 'deviceName'>[],
): string[] {
  const keys = new Set(changed.map((d) => `${d.poolName}/${d.deviceName}`));
  const pods = new Set<string>();
  for (const c of claims) {
    for (const dev of c.driverState[driver]?.devices ?? []) {
      if (keys.has(`${dev.poolName}/${dev.deviceName}`)) for (const u of c.podUIDs) pods.add(u);
    }
  }
  return [...pods].sort();
}

/** What the status merge reads: the claim cache and the health cache. */
export interface ClaimHealthView {
  claimInfo(namespace: string, claimName: string): ClaimInfoState | undefined;
  health(
    driver: string,
    poolName: string,
    deviceName: string,
  ): { health: DeviceHealthStatus; message: string };
}

/**
 * UpdateAllocatedResourcesStatus (DRA half): each regular container that references claims gets, per claim
 * reference, an entry `claim:<name>` (`claim:<name>/<request>` for a reference to one request) listing the
 * claim's prepared devices (of that request; a subrequest counts as its request) with their health, the
 * device's first CDI ID as its resourceID or else `<driver>/<pool>/<device>`, each ID once; a message only
 * with ResourceHealthStatusMessage and when there is one. A claim not prepared (not in the cache) or whose
 * ResourceClaim name is not known yet adds nothing. In a container that references claims, entries left
 * without devices are dropped (the kubelet rebuilds the list); others are untouched. Returns the same array
 * when no container references a claim.
 */
export function withClaimsAllocatedResourcesStatus(
  pod: Pod,
  statuses: ContainerStatus[],
  view: ClaimHealthView,
  enableMessage: boolean,
): ContainerStatus[] {
  const refsOf = new Map(pod.spec.containers.map((c) => [c.name, containerResourceClaims(c)]));
  if (!statuses.some((cs) => (refsOf.get(cs.name)?.length ?? 0) > 0)) return statuses;
  const namespace = pod.metadata.namespace ?? '';
  const generated = new Map<string, string>();
  for (const s of (pod.status?.resourceClaimStatuses ?? []) as PodResourceClaimStatus[]) {
    if (s?.resourceClaimName) generated.set(s.name, s.resourceClaimName);
  }
  const claimNameOf = (podClaim: string): string | undefined => {
    const g = generated.get(podClaim);
    if (g) return g;
    // The pod's status may not name a generated claim yet when a health change syncs it early.
    const pc = podResourceClaims(pod).find((c) => c.name === podClaim);
    if (!pc) return undefined;
    const n = podClaimName(pod, pc);
    return n.ok ? n.name : undefined;
  };
  return statuses.map((cs) => {
    const refs = refsOf.get(cs.name) ?? [];
    if (refs.length === 0) return cs;
    const list = (cs.allocatedResourcesStatus ?? []).map((e) => ({ ...e }));
    for (const ref of refs) {
      const claimName = claimNameOf(ref.name);
      if (!claimName) continue;
      const info = view.claimInfo(namespace, claimName);
      if (!info) continue;
      const name = ref.request ? `claim:${ref.name}/${ref.request}` : `claim:${ref.name}`;
      const baseRequest = ref.request?.split('/')[0];
      const resources: { resourceID: string; health: string; message?: string }[] = [];
      const seen = new Set<string>();
      for (const driver of Object.keys(info.driverState).sort()) {
        for (const dev of info.driverState[driver]!.devices) {
          if (baseRequest && dev.requestNames.length > 0 && !dev.requestNames.includes(baseRequest)) continue;
          const h = view.health(driver, dev.poolName, dev.deviceName);
          const resourceID = dev.cdiDeviceIDs[0] ?? `${driver}/${dev.poolName}/${dev.deviceName}`;
          if (seen.has(resourceID)) continue;
          seen.add(resourceID);
          resources.push({
            resourceID,
            health: h.health,
            ...(enableMessage && h.message ? { message: h.message } : {}),
          });
        }
      }
      const at = list.findIndex((e) => e.name === name);
      if (at >= 0) list[at] = { name, resources };
      else list.push({ name, resources });
    }
    const kept = list.filter((e) => (e.resources?.length ?? 0) > 0);
    const { allocatedResourcesStatus: _dropped, ...rest } = cs;
    return kept.length > 0 ? { ...rest, allocatedResourcesStatus: kept } : rest;
  });
}
