/**
 * The simulated device plugin of a sim VirtualNode: one per resource of `spec.devices`, served in process
 * through the same DevicePluginEndpoint seam as a real plugin's socket, so the node's device manager treats
 * its devices exactly as a real plugin's (capacity, admission, Allocate, health in pod statuses).
 *
 * Devices are `<type>-<i>` (`example.com/gpu` count 2: gpu-0, gpu-1); the last `unhealthy` are Unhealthy.
 * Allocate answers one environment variable, `<RESOURCE>_DEVICES` (the resource name upper-cased, every
 * other character `_`: EXAMPLE_COM_GPU_DEVICES=gpu-0,gpu-1), as a real plugin tells a container its devices.
 */
import {
  Healthy,
  Unhealthy,
  type ContainerAllocateResponse,
  type DevicePluginEndpoint,
  type DevicePluginOptions,
  type PluginDevice,
} from './types.js';

export interface SimDevices {
  resource: string;
  count: number;
  unhealthy: number;
}

/** The simulated devices of one resource. */
export function simDeviceList(d: SimDevices): PluginDevice[] {
  const type = d.resource.slice(d.resource.indexOf('/') + 1);
  const healthyCount = Math.max(0, d.count - d.unhealthy);
  return Array.from({ length: d.count }, (_, i) => ({
    ID: `${type}-${i}`,
    health: i < healthyCount ? Healthy : Unhealthy,
  }));
}

/** The environment variable the simulated plugin answers Allocate with. */
export function simDevicesEnvName(resource: string): string {
  return `${resource.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_DEVICES`;
}

export class SimDevicePlugin implements DevicePluginEndpoint {
  readonly socketPath: string;
  private onDevices: ((devices: PluginDevice[]) => void) | undefined;
  private onEnd: ((err?: Error) => void) | undefined;

  constructor(private spec: SimDevices) {
    this.socketPath = `sim://${spec.resource}`;
  }

  get resource(): string {
    return this.spec.resource;
  }

  /** A changed spec: the watcher hears the new list (a health change, more or fewer devices). */
  update(spec: SimDevices): void {
    const changed = JSON.stringify(spec) !== JSON.stringify(this.spec);
    this.spec = spec;
    if (changed) this.onDevices?.(simDeviceList(spec));
  }

  getDevicePluginOptions(): Promise<DevicePluginOptions> {
    return Promise.resolve({ pre_start_required: false, get_preferred_allocation_available: false });
  }

  listAndWatch(onDevices: (devices: PluginDevice[]) => void, onEnd: (err?: Error) => void): void {
    this.onDevices = onDevices;
    this.onEnd = onEnd;
    // As a stream's first message: after the caller has returned.
    queueMicrotask(() => this.onDevices?.(simDeviceList(this.spec)));
  }

  getPreferredAllocation(): Promise<string[]> {
    return Promise.resolve([]);
  }

  allocate(deviceIds: string[]): Promise<ContainerAllocateResponse[]> {
    const known = new Set(simDeviceList(this.spec).map((d) => d.ID));
    const unknown = deviceIds.filter((id) => !known.has(id));
    if (unknown.length > 0)
      return Promise.reject(new Error(`unknown devices ${unknown.join(',')} of ${this.spec.resource}`));
    return Promise.resolve([
      {
        envs: { [simDevicesEnvName(this.spec.resource)]: [...deviceIds].sort().join(',') },
        mounts: [],
        devices: [],
        annotations: {},
        cdi_devices: [],
      },
    ]);
  }

  preStartContainer(): Promise<void> {
    return Promise.resolve();
  }

  /** The plugin goes away: its stream ends. */
  close(): void {
    const end = this.onEnd;
    this.onDevices = undefined;
    this.onEnd = undefined;
    end?.();
  }
}
