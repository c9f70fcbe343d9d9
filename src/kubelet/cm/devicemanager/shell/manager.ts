/**
 * One VirtualNode's device manager (kubelet: pkg/kubelet/cm/devicemanager ManagerImpl and its v1beta1 plugin
 * server): the Registration service on `<node root>/device-plugins/kubelet.sock`, a client per registered
 * plugin reading its ListAndWatch stream, and the node's device assignments, checkpointed in
 * `device-plugins/kubelet_internal_checkpoint` so that a restart keeps them. The decisions are state.ts's.
 *
 * - Node status: `capacity()` gives every device of a resource as capacity and the healthy ones as
 *   allocatable; a resource whose plugin has been gone 5 minutes is removed (shown as 0 from then on).
 * - Admission (`admit`): each container's device limits are allocated, init containers first, with the
 *   plugin's GetPreferredAllocation when it offers one and its Allocate; a pod asking for more than is free
 *   is refused with UnexpectedAdmissionError and the kubelet's message.
 * - Container creation (`runContainerOptions`): PreStartContainer when the plugin asks for it, then the
 *   environment, mounts, device nodes, annotations and CDI devices of the container's Allocate answers.
 * - Pod status (`allocatedResourcesStatus`): the health of each device a container holds; a health change of
 *   an assigned device has the pod synced again (`onPodsNeedSync`).
 *
 * Devices of pods no longer active are freed before each allocation (kubelet UpdateAllocatedDevices).
 */
import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import {
  isRestartableInitContainer,
  type Container,
  type ContainerStatus,
  type Pod,
} from '../../../../api/core.js';
import { isExtendedResourceName, type DevicePluginResources } from '../../../../node/setters.js';
import type { Clock } from '../../../../util/clock.js';
import { errorMessage } from '../../../../util/errors.js';
import { grpcJs } from '../../../../util/grpcmodules.js';
import type { Logger } from '../../../../util/logger.js';
import { quantityValue } from '../../../../util/quantity.js';
import type { AdmitResult } from '../../../lifecycle/admission.js';
import { DevicePluginKubeletSocket } from '../../../rootdir.js';
import { isDRAExtendedResource } from '../../dra/extendedresource.js';
import { devicePluginServices, GrpcDevicePluginEndpoint } from './endpoint.js';
import { SimDevicePlugin, type SimDevices } from '../simplugin.js';
import {
  applyDeviceList,
  completeAllocation,
  decodeCheckpoint,
  deviceCapacity,
  emptyResource,
  encodeCheckpoint,
  markResourceUnhealthy,
  PodDevices,
  planAllocation,
  sanitizeAllocatable,
  withAllocatedResourcesStatus,
  type ResourceState,
} from '../state.js';
import {
  DeviceManagerCheckpointFile,
  DevicePluginVersion,
  EndpointStopGracePeriodMs,
  type ContainerAllocateResponse,
  type DevicePluginEndpoint,
  type DeviceRunContainerOptions,
  type PluginDevice,
} from '../types.js';
import { replaceFile } from '../../../../util/replacefile.js';

export interface DeviceManagerDeps {
  /** The node's `device-plugins/` (src/kubelet/rootdir.ts); absent: no socket and no checkpoint (tests). */
  dir?: string;
  /** Serve the Registration socket (real plugins); default true when `dir` is set. */
  serveRegistration?: boolean;
  clock: Clock;
  logger: Logger;
  /** The kubelet's active pods (GetActivePods): devices of any other pod are freed. */
  activePods: () => readonly Pod[];
  /** Whether the runtime runs the container now (a restart of the operator finds it running). */
  containerRunning?: (podUID: string, container: string) => boolean;
  /** The pods whose device health changed: their statuses must be generated again. */
  onPodsNeedSync?: (podUIDs: string[]) => void;
  /** A resource's devices changed (the node status may write the new capacity sooner). */
  onCapacityChanged?: () => void;
  /** Dials a plugin's socket; default gRPC. */
  dial?: (socketPath: string) => Promise<DevicePluginEndpoint>;
}

export class DeviceManager {
  private readonly resources = new Map<string, ResourceState>();
  /** Connected plugins by resource, then socket (kubelet endpointStore). */
  private readonly endpoints = new Map<string, Map<string, DevicePluginEndpoint>>();
  /** Resources removed after their grace period: the Node shows them at 0 (kubelet removedDevicePlugins). */
  private readonly removed = new Set<string>();
  private podDevices = new PodDevices();
  private readonly sims = new Map<string, SimDevicePlugin>();
  /** What a pod's regular init containers released, for the containers after them (kubelet devicesToReuse). */
  private readonly reuse = new Map<string, Map<string, Set<string>>>();
  private server: grpc.Server | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private writes: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly log: Logger;

  constructor(private readonly d: DeviceManagerDeps) {
    this.log = d.logger.child({ component: 'device_manager' });
  }

  private get socketPath(): string | undefined {
    return this.d.dir && path.join(this.d.dir, DevicePluginKubeletSocket);
  }

  /**
   * Reads the checkpoint (assignments, and the resources registered before: they show 0 until their plugin
   * is back), removes stale sockets and serves the Registration socket. Never throws: what fails is logged.
   */
  async start(): Promise<void> {
    const dir = this.d.dir;
    if (!dir) return;
    try {
      await mkdir(dir, { recursive: true, mode: 0o750 });
    } catch (err) {
      this.log.warn('Failed to create the device plugin socket directory', {
        directory: dir,
        err: errorMessage(err),
      });
      return;
    }
    await this.readCheckpoint(dir);
    if (this.d.serveRegistration === false) return;
    await this.cleanupPluginDirectory(dir);
    try {
      const g = grpcJs();
      const server = new g.Server();
      server.addService(devicePluginServices().Registration.service, {
        Register: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
          this.register(call.request as RegisterRequest).then(
            () => cb(null, {}),
            (err: unknown) => cb({ code: g.status.UNKNOWN, details: errorMessage(err) } as grpc.ServiceError),
          );
        },
      });
      await new Promise<void>((resolve, reject) =>
        server.bindAsync(`unix:${this.socketPath}`, g.ServerCredentials.createInsecure(), (err) =>
          err ? reject(err) : resolve(),
        ),
      );
      if (this.stopped) {
        server.forceShutdown();
        return;
      }
      this.server = server;
      this.log.info('Starting device plugin registration server', { socket: this.socketPath });
    } catch (err) {
      this.log.warn('Failed to serve the device plugin registration socket', {
        socket: this.socketPath,
        err: errorMessage(err),
      });
    }
  }

  /** Closes the socket and every plugin connection; assignments stay in the checkpoint. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.server?.forceShutdown();
    this.server = undefined;
    for (const byPath of this.endpoints.values()) for (const e of byPath.values()) e.close();
    this.endpoints.clear();
    for (const s of this.sims.values()) s.close();
    this.sims.clear();
    if (this.socketPath) await rm(this.socketPath, { force: true }).catch(() => undefined);
    await this.writes;
  }

  /**
   * The simulated plugins of a sim node's `spec.devices`: new resources register, changed ones report their
   * new list, removed ones go away (their resource leaves after the grace period, as a real plugin's).
   */
  setSimDevices(devices: readonly SimDevices[]): void {
    if (this.stopped) return;
    const want = new Map(devices.map((d) => [d.resource, d]));
    for (const [resource, sim] of this.sims) {
      if (want.has(resource)) continue;
      this.sims.delete(resource);
      sim.close();
    }
    for (const d of want.values()) {
      const sim = this.sims.get(d.resource);
      if (sim) {
        sim.update(d);
        continue;
      }
      const fresh = new SimDevicePlugin(d);
      this.sims.set(d.resource, fresh);
      void this.connect(d.resource, fresh).catch((err: unknown) =>
        this.log.warn('simulated device plugin failed to connect', {
          resource: d.resource,
          err: errorMessage(err),
        }),
      );
    }
  }

  // ---- registration and plugins ----

  /** The Registration service's Register (kubelet server.Register). Rejects with the kubelet's message. */
  private async register(r: RegisterRequest): Promise<void> {
    this.log.info('Got registration request from device plugin with resource', {
      resourceName: r.resource_name,
    });
    if (r.version !== DevicePluginVersion)
      throw new Error(
        `requested API version "${r.version}" is not supported by kubelet. Supported version is "[${DevicePluginVersion}]"`,
      );
    if (!isExtendedResourceName(r.resource_name))
      throw new Error(`the ResourceName "${r.resource_name}" is invalid`);
    const socket = path.join(this.d.dir!, r.endpoint);
    let endpoint: DevicePluginEndpoint;
    try {
      endpoint = await (this.d.dial ?? GrpcDevicePluginEndpoint.dial)(socket);
    } catch (err) {
      throw new Error(`failed to dial device plugin: ${errorMessage(err)}`);
    }
    await this.connect(r.resource_name, endpoint);
  }

  /** PluginConnected, then the ListAndWatch stream until it ends (PluginDisconnected). */
  private async connect(resource: string, e: DevicePluginEndpoint): Promise<void> {
    let options;
    try {
      options = await e.getDevicePluginOptions();
    } catch (err) {
      e.close();
      throw new Error(`failed to get device plugin options: ${errorMessage(err)}`);
    }
    if (this.stopped) {
      e.close();
      return;
    }
    let byPath = this.endpoints.get(resource);
    if (!byPath) this.endpoints.set(resource, (byPath = new Map()));
    // The same socket registering again (a restarted plugin): the old connection is replaced.
    const old = byPath.get(e.socketPath);
    byPath.set(e.socketPath, e);
    old?.close();
    const r = this.resources.get(resource) ?? emptyResource();
    const { stoppedAt: _was, ...connected } = r;
    this.resources.set(resource, { ...connected, options });
    this.removed.delete(resource);
    this.log.info('Device plugin connected', { resourceName: resource, socket: e.socketPath });
    e.listAndWatch(
      (devices) => {
        if (this.endpoints.get(resource)?.get(e.socketPath) === e) this.devicesReported(resource, devices);
      },
      (err) => this.disconnected(resource, e, err),
    );
  }

  private disconnected(resource: string, e: DevicePluginEndpoint, err?: Error): void {
    const byPath = this.endpoints.get(resource);
    if (byPath?.get(e.socketPath) !== e) return;
    if (err)
      this.log.warn('ListAndWatch ended unexpectedly for device plugin', { resource, err: err.message });
    e.close();
    byPath.delete(e.socketPath);
    if (byPath.size > 0) return;
    this.endpoints.delete(resource);
    const r = this.resources.get(resource);
    if (r) this.resources.set(resource, markResourceUnhealthy(r, this.d.clock.now()));
    this.log.info('Last device plugin for this resource disconnected', { resource });
    this.d.onCapacityChanged?.();
  }

  /** genericDeviceUpdateCallback: new device sets; pods holding a device whose health changed get synced. */
  private devicesReported(resource: string, devices: PluginDevice[]): void {
    const r = this.resources.get(resource) ?? emptyResource();
    const { next, changed } = applyDeviceList(r, devices);
    this.resources.set(resource, next);
    const pods = new Set<string>();
    for (const id of changed) {
      const owner = this.podDevices.ownerOf(resource, id);
      if (owner) pods.add(owner.podUID);
    }
    this.log.info('Processed device updates for resource', {
      resourceName: resource,
      totalCount: devices.length,
      healthyCount: next.healthy.size,
    });
    this.writeCheckpoint();
    this.d.onCapacityChanged?.();
    if (pods.size > 0) this.d.onPodsNeedSync?.([...pods]);
  }

  // ---- what the node and the pods see ----

  /** GetCapacity, for the node status (resources past their grace period are forgotten here). */
  capacity(): DevicePluginResources {
    const c = deviceCapacity(this.resources, this.d.clock.now(), EndpointStopGracePeriodMs);
    for (const name of c.expired) {
      this.resources.delete(name);
      this.removed.add(name);
    }
    if (c.expired.length > 0) this.writeCheckpoint();
    return { capacity: c.capacity, allocatable: c.allocatable, removed: [...this.removed].sort() };
  }

  /**
   * Admission's allocatable with the device resources as the Node will show them (the healthy devices,
   * whatever the Node last published) and at least the devices assigned already (sanitizeNodeAllocatable).
   */
  sanitizeAllocatable(allocatable: ReadonlyMap<string, number>): ReadonlyMap<string, number> {
    let out: Map<string, number> | undefined;
    const now = this.d.clock.now();
    for (const [name, r] of this.resources) {
      if (r.stoppedAt !== undefined && now - r.stoppedAt > EndpointStopGracePeriodMs) continue;
      if (allocatable.get(name) === r.healthy.size) continue;
      out ??= new Map(allocatable);
      out.set(name, r.healthy.size);
    }
    const base = out ?? allocatable;
    return sanitizeAllocatable(base, this.podDevices.devices()) ?? base;
  }

  /** Whether `resource` is the device manager's (registered, or assigned to a pod: isDevicePluginResource). */
  isDevicePluginResource(resource: string): boolean {
    return this.resources.has(resource) || this.podDevices.devices().has(resource);
  }

  /**
   * The device manager's admission (the topology manager's admit handler with the `none` policy): each
   * container's devices allocated in order, init containers first. Serialized: one pod at a time.
   */
  admit(pod: Pod): Promise<AdmitResult> {
    const run = this.queue.then(() => this.allocatePod(pod));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async allocatePod(pod: Pod): Promise<AdmitResult> {
    if (!this.needsDevices(pod)) return { admit: true };
    const uid = pod.metadata.uid ?? '';
    try {
      for (const c of pod.spec.initContainers ?? []) await this.allocate(pod, c, true);
      for (const c of pod.spec.containers ?? []) await this.allocate(pod, c, false);
    } catch (err) {
      return {
        admit: false,
        reason: 'UnexpectedAdmissionError',
        message: `Allocate failed due to ${errorMessage(err)}, which is unexpected`,
      };
    } finally {
      this.reuse.delete(uid);
    }
    return { admit: true };
  }

  private needsDevices(pod: Pod): boolean {
    for (const c of [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])])
      for (const k of Object.keys(c.resources?.limits ?? {}))
        if (!isDRAExtendedResource(pod, c.name, k) && this.isDevicePluginResource(k)) return true;
    return false;
  }

  /** Allocate for one container (kubelet Allocate + allocateContainerResources). Throws the kubelet's error. */
  private async allocate(pod: Pod, container: Container, isInit: boolean): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    let reuse = this.reuse.get(uid);
    if (!reuse) {
      this.reuse.clear();
      this.reuse.set(uid, (reuse = new Map()));
    }
    let freed = false;
    let wrote = false;
    for (const [resource, q] of Object.entries(container.resources?.limits ?? {})) {
      // Served by the pod's DRA extended resource claim (DRAExtendedResource), not by a device plugin.
      if (isDRAExtendedResource(pod, container.name, resource)) continue;
      if (!this.isDevicePluginResource(resource)) continue;
      const required = quantityValue(q);
      if (!freed) {
        this.updateAllocatedDevices(pod);
        freed = true;
      }
      const state = this.resources.get(resource);
      const existing = this.podDevices.containerDevices(uid, container.name, resource);
      const plan = planAllocation({
        podUID: uid,
        container: container.name,
        resource,
        required,
        existing,
        state,
        inUse: this.podDevices.devices().get(resource) ?? new Set(),
        reusable: reuse.get(resource) ?? new Set(),
        // Admitted again after a restart of the operator while the container runs with its checkpointed
        // devices (the kubelet's "sources not ready, container running" case): nothing to do.
        runningBeforeRestart:
          existing !== undefined && (this.d.containerRunning?.(uid, container.name) ?? false),
      });
      if (plan.kind === 'error') throw new Error(plan.message);
      if (plan.kind === 'none') continue;
      const endpoint = this.primaryEndpoint(resource);
      if (!endpoint) throw new Error(`unknown Device Plugin ${resource}`);
      let devices: string[];
      if (plan.kind === 'done') devices = plan.devices;
      else {
        let preferred: string[] | undefined;
        if (this.resources.get(resource)?.options?.get_preferred_allocation_available) {
          try {
            preferred = await endpoint.getPreferredAllocation(
              [...plan.taken, ...plan.available],
              plan.taken,
              plan.required,
            );
          } catch (err) {
            throw new Error(`device plugin GetPreferredAllocation rpc failed with err: ${errorMessage(err)}`);
          }
        }
        devices = completeAllocation(plan, preferred);
      }
      const responses = await endpoint.allocate(devices);
      if (responses.length === 0) throw new Error('no containers return in allocation response');
      this.podDevices.insert(uid, container.name, resource, {
        ids: devices,
        resp: normalizeResponse(responses[0]!),
      });
      wrote = true;
    }
    if (wrote) this.writeCheckpoint();
    if (isInit && !isRestartableInitContainer(container))
      this.podDevices.addToReusable(uid, container.name, reuse);
    else this.podDevices.removeFromReusable(uid, container.name, reuse);
  }

  private primaryEndpoint(resource: string): DevicePluginEndpoint | undefined {
    const byPath = this.endpoints.get(resource);
    return byPath ? [...byPath.values()].at(-1) : undefined;
  }

  /** UpdateAllocatedDevices: devices of pods that are no longer active are free again. */
  private updateAllocatedDevices(current?: Pod): void {
    const active = new Set(this.d.activePods().map((p) => p.metadata.uid ?? ''));
    if (current) active.add(current.metadata.uid ?? '');
    const gone = this.podDevices.pods().filter((uid) => !active.has(uid));
    if (gone.length === 0) return;
    this.log.info('Pods to be removed', { podUIDs: gone });
    this.podDevices.delete(gone);
    this.writeCheckpoint();
  }

  /** Frees the devices of pods no longer active (housekeeping; the kubelet does it at each allocation). */
  freeInactive(): void {
    this.updateAllocatedDevices();
  }

  /**
   * GetDeviceRunContainerOptions: PreStartContainer where the plugin asks for it, a new Allocate where the
   * assignment was lost (a restart without checkpoint), then what the container's config gets.
   */
  async runContainerOptions(pod: Pod, container: Container): Promise<DeviceRunContainerOptions | undefined> {
    const uid = pod.metadata.uid ?? '';
    let reallocate = false;
    for (const [resource, q] of Object.entries(container.resources?.limits ?? {})) {
      if (!this.isDevicePluginResource(resource) || quantityValue(q) === 0) continue;
      const r = this.resources.get(resource);
      const endpoint = this.primaryEndpoint(resource);
      if (!r || !endpoint)
        throw new Error(`endpoint not found in cache for a registered resource: ${resource}`);
      const held = this.podDevices.containerDevices(uid, container.name, resource);
      if (r.options?.pre_start_required) {
        if (!held)
          throw new Error(
            `no devices found allocated in local cache for pod ${uid}, container ${container.name}, resource ${resource}`,
          );
        try {
          await endpoint.preStartContainer([...held]);
        } catch (err) {
          throw new Error(`device plugin PreStartContainer rpc failed with err: ${errorMessage(err)}`);
        }
      }
      if (!held) reallocate = true;
    }
    if (reallocate) {
      const verdict = await this.admit(pod);
      if (!verdict.admit) throw new Error(verdict.message);
    }
    return this.podDevices.runContainerOptions(uid, container.name, (what, key) =>
      this.log.warn(`${what} has conflicting setting`, { pod: uid, container: container.name, key }),
    );
  }

  /** UpdateAllocatedResourcesStatus over the generated container statuses. */
  allocatedResourcesStatus(pod: Pod, statuses: ContainerStatus[]): ContainerStatus[] {
    return withAllocatedResourcesStatus(pod.metadata.uid ?? '', statuses, this.podDevices, this.resources);
  }

  /** A container's devices by resource, for the pod-resources API (GetDevices). */
  containerDevices(podUID: string, container: string): { resource: string; ids: string[] }[] {
    return [...this.podDevices.containerResources(podUID, container)]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([resource, d]) => ({ resource, ids: [...d.ids] }));
  }

  /** Every healthy device by resource, for GetAllocatableResources (GetAllocatableDevices). */
  allocatableDevices(): { resource: string; ids: string[] }[] {
    return [...this.resources]
      .filter(([, r]) => r.healthy.size > 0)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([resource, r]) => ({ resource, ids: [...r.healthy].sort() }));
  }

  // ---- checkpoint ----

  private async readCheckpoint(dir: string): Promise<void> {
    const file = path.join(dir, DeviceManagerCheckpointFile);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      return; // None yet: a fresh node.
    }
    const decoded = decodeCheckpoint(text);
    if ('error' in decoded) {
      this.log.warn(
        'Continue after failing to read checkpoint file. Device allocation info may NOT be up-to-date',
        {
          checkpoint: file,
          err: decoded.error,
        },
      );
      return;
    }
    this.podDevices = PodDevices.fromCheckpoint(decoded.data);
    const now = this.d.clock.now();
    // Registered before: the resource stays at zero until its plugin registers again (a stopped endpoint).
    for (const resource of Object.keys(decoded.data.RegisteredDevices))
      if (!this.resources.has(resource)) this.resources.set(resource, { ...emptyResource(), stoppedAt: now });
  }

  /** Writes the checkpoint (in order, atomically by rename); a failure is logged. */
  private writeCheckpoint(): void {
    const dir = this.d.dir;
    if (!dir) return;
    const text = encodeCheckpoint(this.podDevices.toCheckpoint(this.resources));
    this.writes = this.writes.then(async () => {
      const file = path.join(dir, DeviceManagerCheckpointFile);
      try {
        await replaceFile(file, text, 0o600);
      } catch (err) {
        this.log.warn('Failed to write checkpoint file', { checkpoint: file, err: errorMessage(err) });
      }
    });
  }

  /** CleanupPluginDirectory: sockets left by an earlier run go (their plugins register again). */
  private async cleanupPluginDirectory(dir: string): Promise<void> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const p = path.join(dir, name);
      const st = await stat(p).catch(() => undefined);
      if (st?.isSocket()) await rm(p, { force: true }).catch(() => undefined);
    }
  }
}

interface RegisterRequest {
  version: string;
  endpoint: string;
  resource_name: string;
}

/** An Allocate answer with every field present (a plugin may leave any out). */
function normalizeResponse(r: Partial<ContainerAllocateResponse>): ContainerAllocateResponse {
  return {
    envs: { ...(r.envs ?? {}) },
    mounts: [...(r.mounts ?? [])],
    devices: [...(r.devices ?? [])],
    annotations: { ...(r.annotations ?? {}) },
    cdi_devices: [...(r.cdi_devices ?? [])],
  };
}
