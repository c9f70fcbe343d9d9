/**
 * The device manager's decisions (kubelet: pkg/kubelet/cm/devicemanager manager.go and pod_devices.go),
 * without I/O: which devices a container gets, what the Node advertises, what a container's config gets from
 * its devices, how assignments are checkpointed, and the health a container status reports.
 *
 * Our nodes run the topology manager's `none` policy, so no device is NUMA-aligned: the kubelet then lets
 * the plugin's preferred allocation choose first and fills up from the free devices (here in sorted order,
 * where the kubelet takes a Go map's order).
 */
import type { ContainerStatus } from '../../../api/core.js';
import {
  Healthy,
  type ContainerAllocateResponse,
  type DeviceRunContainerOptions,
  type DevicePluginOptions,
  type PluginDevice,
} from './types.js';
import { fnv1a32 } from '../../../util/fnv.js';

/** What the manager knows of one resource (kubelet: healthyDevices, unhealthyDevices, allDevices, endpoints). */
export interface ResourceState {
  healthy: Set<string>;
  unhealthy: Set<string>;
  /** Every device of the last ListAndWatch answer, with its health. */
  all: Map<string, PluginDevice>;
  /** The connected plugin's options; absent: no plugin is connected (gone, or restored from the checkpoint). */
  options?: DevicePluginOptions;
  /** When the last plugin of the resource went away (its grace period runs from then); absent: connected. */
  stoppedAt?: number;
}

export function emptyResource(): ResourceState {
  return { healthy: new Set(), unhealthy: new Set(), all: new Map() };
}

/**
 * A ListAndWatch answer (kubelet genericDeviceUpdateCallback): the new healthy and unhealthy sets, and the
 * devices whose health changed or that are new (their pods' statuses must be generated again).
 */
export function applyDeviceList(
  r: ResourceState,
  devices: readonly PluginDevice[],
): { next: ResourceState; changed: string[] } {
  const next: ResourceState = { ...r, healthy: new Set(), unhealthy: new Set(), all: new Map() };
  const changed: string[] = [];
  for (const d of devices) {
    const old = r.all.get(d.ID);
    if (!old || old.health !== d.health) changed.push(d.ID);
    next.all.set(d.ID, d);
    if (d.health === Healthy) next.healthy.add(d.ID);
    else next.unhealthy.add(d.ID);
  }
  return { next, changed };
}

/** The last plugin of a resource went away (kubelet markResourceUnhealthy): nothing is allocatable. */
export function markResourceUnhealthy(r: ResourceState, now: number): ResourceState {
  const { options: _gone, ...rest } = r;
  return {
    ...rest,
    healthy: new Set(),
    unhealthy: new Set([...r.unhealthy, ...r.healthy]),
    stoppedAt: now,
  };
}

/**
 * The Node's device plugin resources (kubelet GetCapacity): capacity counts every device, allocatable the
 * healthy ones; a resource whose plugin has been gone longer than the grace period is `expired` (the caller
 * forgets it and the Node shows 0).
 */
export function deviceCapacity(
  resources: ReadonlyMap<string, ResourceState>,
  now: number,
  graceMs: number,
): { capacity: Record<string, string>; allocatable: Record<string, string>; expired: string[] } {
  const capacity: Record<string, string> = {};
  const allocatable: Record<string, string> = {};
  const expired: string[] = [];
  for (const [name, r] of resources) {
    if (r.stoppedAt !== undefined && now - r.stoppedAt > graceMs) {
      expired.push(name);
      continue;
    }
    capacity[name] = String(r.healthy.size + r.unhealthy.size);
    allocatable[name] = String(r.healthy.size);
  }
  return { capacity, allocatable, expired: expired.sort() };
}

/** Devices a container holds for one resource, and the plugin's answer for them. */
export interface ContainerResourceDevices {
  ids: string[];
  resp: ContainerAllocateResponse;
}

/** One assignment as the checkpoint holds it (kubelet checkpoint.PodDevicesEntry; the answer as JSON). */
export interface PodDevicesEntry {
  PodUID: string;
  ContainerName: string;
  ResourceName: string;
  DeviceIDs: Record<string, string[]>;
  AllocResp: ContainerAllocateResponse;
}

export interface CheckpointData {
  PodDeviceEntries: PodDevicesEntry[];
  RegisteredDevices: Record<string, string[]>;
}

/** The device id the kubelet files devices without NUMA topology under (nodeWithoutTopology). */
const NoTopology = '-1';

/** Device assignments per pod, container and resource (kubelet podDevices). */
export class PodDevices {
  private readonly devs = new Map<string, Map<string, Map<string, ContainerResourceDevices>>>();

  insert(podUID: string, container: string, resource: string, d: ContainerResourceDevices): void {
    let byContainer = this.devs.get(podUID);
    if (!byContainer) this.devs.set(podUID, (byContainer = new Map()));
    let byResource = byContainer.get(container);
    if (!byResource) byContainer.set(container, (byResource = new Map()));
    byResource.set(resource, { ids: [...d.ids].sort(), resp: d.resp });
  }

  containerDevices(podUID: string, container: string, resource: string): string[] | undefined {
    return this.devs.get(podUID)?.get(container)?.get(resource)?.ids;
  }

  /** A container's devices by resource (kubelet getContainerDevices). */
  containerResources(podUID: string, container: string): ReadonlyMap<string, ContainerResourceDevices> {
    return this.devs.get(podUID)?.get(container) ?? new Map();
  }

  hasPod(podUID: string): boolean {
    return this.devs.has(podUID);
  }

  pods(): string[] {
    return [...this.devs.keys()];
  }

  delete(podUIDs: Iterable<string>): void {
    for (const uid of podUIDs) this.devs.delete(uid);
  }

  /** Every assigned device by resource (kubelet podDevices.devices, the allocatedDevices). */
  devices(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const byContainer of this.devs.values())
      for (const byResource of byContainer.values())
        for (const [resource, d] of byResource) {
          let s = out.get(resource);
          if (!s) out.set(resource, (s = new Set()));
          for (const id of d.ids) s.add(id);
        }
    return out;
  }

  /** The pod and container a device is assigned to (kubelet getPodAndContainerForDevice). */
  ownerOf(resource: string, id: string): { podUID: string; container: string } | undefined {
    for (const [podUID, byContainer] of this.devs)
      for (const [container, byResource] of byContainer)
        if (byResource.get(resource)?.ids.includes(id)) return { podUID, container };
    return undefined;
  }

  /**
   * What a regular init container held may go to the containers after it (kubelet
   * addContainerAllocatedResources), and what a container took is no longer free for them
   * (removeContainerAllocatedResources).
   */
  addToReusable(podUID: string, container: string, reusable: Map<string, Set<string>>): void {
    for (const [resource, d] of this.containerResources(podUID, container)) {
      let s = reusable.get(resource);
      if (!s) reusable.set(resource, (s = new Set()));
      for (const id of d.ids) s.add(id);
    }
  }

  removeFromReusable(podUID: string, container: string, reusable: Map<string, Set<string>>): void {
    for (const [resource, d] of this.containerResources(podUID, container))
      for (const id of d.ids) reusable.get(resource)?.delete(id);
  }

  toCheckpoint(registered: ReadonlyMap<string, ResourceState>): CheckpointData {
    const entries: PodDevicesEntry[] = [];
    for (const [podUID, byContainer] of this.devs)
      for (const [container, byResource] of byContainer)
        for (const [resource, d] of byResource)
          entries.push({
            PodUID: podUID,
            ContainerName: container,
            ResourceName: resource,
            DeviceIDs: { [NoTopology]: [...d.ids] },
            AllocResp: d.resp,
          });
    const registeredDevices: Record<string, string[]> = {};
    for (const [name, r] of registered) registeredDevices[name] = [...r.healthy].sort();
    return { PodDeviceEntries: entries, RegisteredDevices: registeredDevices };
  }

  static fromCheckpoint(data: CheckpointData): PodDevices {
    const p = new PodDevices();
    for (const e of data.PodDeviceEntries) {
      const ids = Object.values(e.DeviceIDs ?? {}).flat();
      p.insert(e.PodUID, e.ContainerName, e.ResourceName, { ids: [...new Set(ids)], resp: e.AllocResp });
    }
    return p;
  }

  /**
   * What the container's config gets from its devices (kubelet deviceRunContainerOptions): per resource in
   * name order, each env, device node, mount and annotation once (the first setting wins; a conflicting one
   * is reported), CDI devices once. Undefined: the container holds no devices.
   */
  runContainerOptions(
    podUID: string,
    container: string,
    conflict: (what: string, key: string) => void = () => undefined,
  ): DeviceRunContainerOptions | undefined {
    const byResource = this.devs.get(podUID)?.get(container);
    if (!byResource) return undefined;
    const opts: DeviceRunContainerOptions = {
      envs: [],
      mounts: [],
      devices: [],
      annotations: [],
      cdiDevices: [],
    };
    const envs = new Map<string, string>();
    const devs = new Map<string, string>();
    const mounts = new Map<string, string>();
    const annotations = new Map<string, string>();
    const cdi = new Set<string>();
    for (const resource of [...byResource.keys()].sort()) {
      const resp = byResource.get(resource)!.resp;
      for (const [k, v] of Object.entries(resp.envs ?? {})) {
        if (envs.has(k)) {
          if (envs.get(k) !== v) conflict('environment variable', k);
          continue;
        }
        envs.set(k, v);
        opts.envs.push({ name: k, value: v });
      }
      for (const d of resp.devices ?? []) {
        if (devs.has(d.container_path)) {
          if (devs.get(d.container_path) !== d.host_path) conflict('device', d.container_path);
          continue;
        }
        devs.set(d.container_path, d.host_path);
        opts.devices.push({
          containerPath: d.container_path,
          hostPath: d.host_path,
          permissions: d.permissions,
        });
      }
      for (const m of resp.mounts ?? []) {
        if (mounts.has(m.container_path)) {
          if (mounts.get(m.container_path) !== m.host_path) conflict('mount', m.container_path);
          continue;
        }
        mounts.set(m.container_path, m.host_path);
        opts.mounts.push({ containerPath: m.container_path, hostPath: m.host_path, readOnly: m.read_only });
      }
      for (const [k, v] of Object.entries(resp.annotations ?? {})) {
        if (annotations.has(k)) {
          if (annotations.get(k) !== v) conflict('annotation', k);
          continue;
        }
        annotations.set(k, v);
        opts.annotations.push({ name: k, value: v });
      }
      for (const c of resp.cdi_devices ?? []) {
        if (cdi.has(c.name)) continue;
        cdi.add(c.name);
        opts.cdiDevices.push(c.name);
      }
    }
    return opts;
  }
}

/** The first step of choosing a container's devices for one resource (kubelet devicesToAllocate). */
export type AllocationPlan =
  | { kind: 'error'; message: string }
  /** Nothing to allocate: the container holds them already, or it runs since before a restart. */
  | { kind: 'none' }
  /** Chosen: from what the pod's init containers released (reuse) alone. */
  | { kind: 'done'; devices: string[] }
  /** `needed` more to choose from `available`, after `taken` (reused); the plugin may state a preference. */
  | { kind: 'choose'; taken: string[]; needed: number; available: string[]; required: number };

export interface AllocationInput {
  podUID: string;
  container: string;
  resource: string;
  /** The container's limit for the resource. */
  required: number;
  /** What the container holds already (a restart of it). */
  existing: readonly string[] | undefined;
  /** Undefined: no plugin ever registered the resource. */
  state: ResourceState | undefined;
  /** Every device of the resource assigned to a container. */
  inUse: ReadonlySet<string>;
  /** Devices the pod's earlier init containers held and gave back. */
  reusable: ReadonlySet<string>;
  /** The container runs already with `existing` (admitted again after a restart of the operator). */
  runningBeforeRestart: boolean;
}

export function planAllocation(i: AllocationInput): AllocationPlan {
  let needed = i.required;
  if (i.existing) {
    needed -= i.existing.length;
    if (needed !== 0)
      return {
        kind: 'error',
        message: `pod "${i.podUID}" container "${i.container}" changed request for resource "${i.resource}" from ${i.existing.length} to ${i.required}`,
      };
  }
  if (i.runningBeforeRestart) return { kind: 'none' };
  if (!i.state) return { kind: 'error', message: `cannot allocate unregistered device ${i.resource}` };
  if (i.state.healthy.size === 0)
    return {
      kind: 'error',
      message: `no healthy devices present; cannot allocate unhealthy devices ${i.resource}`,
    };
  if (i.existing && !i.existing.every((d) => i.state!.healthy.has(d)))
    return {
      kind: 'error',
      message: `previously allocated devices are no longer healthy; cannot allocate unhealthy devices ${i.resource}`,
    };
  if (needed === 0) return { kind: 'none' };
  const taken: string[] = [];
  for (const d of [...i.reusable].sort()) {
    taken.push(d);
    if (--needed === 0) return { kind: 'done', devices: taken };
  }
  const available = [...i.state.healthy].filter((d) => !i.inUse.has(d)).sort();
  if (available.length < needed)
    return {
      kind: 'error',
      message: `requested number of devices unavailable for ${i.resource}. Requested: ${needed}, Available: ${available.length}`,
    };
  return { kind: 'choose', taken, needed, available, required: i.required };
}

/**
 * The last step: the plugin's preferred devices first (those still free), then the free ones in order.
 * `preferred` undefined: the plugin offers no preference.
 */
export function completeAllocation(
  plan: Extract<AllocationPlan, { kind: 'choose' }>,
  preferred: readonly string[] | undefined,
): string[] {
  const out = [...plan.taken];
  let needed = plan.needed;
  const free = new Set(plan.available);
  for (const d of [...(preferred ?? []), ...plan.available]) {
    if (needed === 0) break;
    if (!free.has(d) || out.includes(d)) continue;
    out.push(d);
    needed--;
  }
  return out;
}

/**
 * The kubelet's sanitizeNodeAllocatable for admission: a device plugin resource's allocatable is at least
 * what is assigned already (after a restart, before the plugin is back, the pods holding devices still fit).
 */
export function sanitizeAllocatable(
  allocatable: ReadonlyMap<string, number>,
  allocated: ReadonlyMap<string, ReadonlySet<string>>,
): Map<string, number> | undefined {
  let out: Map<string, number> | undefined;
  for (const [resource, devices] of allocated) {
    const have = allocatable.get(resource);
    if (have !== undefined && have >= devices.size) continue;
    out ??= new Map(allocatable);
    out.set(resource, devices.size);
  }
  return out;
}

/**
 * containerStatuses[].allocatedResourcesStatus as the kubelet's UpdateAllocatedResourcesStatus fills it: for
 * each container holding devices, one entry per resource with each device's health as its plugin last
 * reported it (Healthy, else Unhealthy; a device the plugin no longer lists counts as Healthy, as the kubelet
 * counts it). Device plugins report no message, so no entry has one (ResourceHealthStatusMessage fills it
 * from DRA plugins only). Entries others set for other resources stay. Returns new statuses, or the same
 * array when no container holds devices.
 */
export function withAllocatedResourcesStatus(
  podUID: string,
  statuses: ContainerStatus[],
  podDevices: PodDevices,
  resources: ReadonlyMap<string, ResourceState>,
): ContainerStatus[] {
  if (!podDevices.hasPod(podUID)) return statuses;
  return statuses.map((cs) => {
    const held = podDevices.containerResources(podUID, cs.name);
    if (held.size === 0) return cs;
    const list = [...(cs.allocatedResourcesStatus ?? [])];
    for (const resource of [...held.keys()].sort()) {
      const all = resources.get(resource)?.all;
      const entry = {
        name: resource,
        resources: held.get(resource)!.ids.map((id) => {
          const health = all?.get(id)?.health ?? Healthy;
          return { resourceID: id, health: health === Healthy ? 'Healthy' : 'Unhealthy' };
        }),
      };
      const at = list.findIndex((e) => e.name === resource);
      if (at >= 0) list[at] = entry;
      else list.push(entry);
    }
    return { ...cs, allocatedResourcesStatus: list };
  });
}

/** The checkpoint file's content: the data and a checksum of it (kubelet checkpoint.Data). */
export function encodeCheckpoint(data: CheckpointData): string {
  return JSON.stringify({ Data: data, Checksum: checksumOf(data) });
}

/** The checkpoint's data, or an error message (a corrupt or foreign file). */
export function decodeCheckpoint(text: string): { data: CheckpointData } | { error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return { error: `checkpoint is not JSON: ${(err as Error).message}` };
  }
  const p = parsed as { Data?: CheckpointData; Checksum?: string };
  if (!p || typeof p !== 'object' || !p.Data || !Array.isArray(p.Data.PodDeviceEntries))
    return { error: 'checkpoint has no PodDeviceEntries' };
  if (p.Checksum !== checksumOf(p.Data)) return { error: 'checkpoint is corrupted' };
  return {
    data: { PodDeviceEntries: p.Data.PodDeviceEntries, RegisteredDevices: p.Data.RegisteredDevices ?? {} },
  };
}

/** FNV-1a (32 bits) of the data's JSON, as the kubelet's checkpoint checksum is an FNV-32a of its data. */
function checksumOf(data: CheckpointData): string {
  return String(fnv1a32(JSON.stringify(data)));
}
