/**
 * The device plugin API's messages as @grpc/proto-loader hands them over (keepCase, defaults), and the
 * seam between the device manager and one plugin (kubelet: plugin.DevicePlugin / endpoint): a gRPC client of
 * a plugin's socket (endpoint.ts), or the simulated plugin of a sim VirtualNode (simplugin.ts).
 */
import type { Container, Pod } from '../../../api/core.js';

/** The API version a plugin registers with (deviceplugin v1beta1 Version). */
export const DevicePluginVersion = 'v1beta1';
/** A device's health as ListAndWatch reports it (pluginapi.Healthy, pluginapi.Unhealthy). */
export const Healthy = 'Healthy';
export const Unhealthy = 'Unhealthy';
/** The kubelet's checkpoint file in device-plugins/ (kubeletDeviceManagerCheckpoint). */
export const DeviceManagerCheckpointFile = 'kubelet_internal_checkpoint';
/** How long a gone plugin's resource stays on the Node before it is removed (endpointStopGracePeriod). */
export const EndpointStopGracePeriodMs = 5 * 60_000;

export interface DevicePluginOptions {
  pre_start_required: boolean;
  get_preferred_allocation_available: boolean;
}

export interface PluginDevice {
  ID: string;
  health: string;
  topology?: { nodes: { ID: string }[] } | null;
}

export interface ContainerAllocateResponse {
  envs: Record<string, string>;
  mounts: { container_path: string; host_path: string; read_only: boolean }[];
  devices: { container_path: string; host_path: string; permissions: string }[];
  annotations: Record<string, string>;
  cdi_devices: { name: string }[];
}

/** One plugin as the manager talks to it; every call rejects with the plugin's error. */
export interface DevicePluginEndpoint {
  /** Where it is served (a socket path; `sim://<resource>` for the simulated plugin). */
  readonly socketPath: string;
  getDevicePluginOptions(): Promise<DevicePluginOptions>;
  /**
   * Streams the plugin's device lists to `onDevices` until the stream ends or `close()`; `onEnd` is called
   * once when it ends (the plugin went away).
   */
  listAndWatch(onDevices: (devices: PluginDevice[]) => void, onEnd: (err?: Error) => void): void;
  getPreferredAllocation(available: string[], mustInclude: string[], size: number): Promise<string[]>;
  allocate(deviceIds: string[]): Promise<ContainerAllocateResponse[]>;
  preStartContainer(deviceIds: string[]): Promise<void>;
  close(): void;
}

/**
 * What a container gets from its devices (kubelet DeviceRunContainerOptions): environment first, mounts and
 * device nodes, annotations and CDI devices, merged over the container's resources without duplicates.
 */
export interface DeviceRunContainerOptions {
  envs: { name: string; value: string }[];
  mounts: { containerPath: string; hostPath: string; readOnly: boolean }[];
  devices: { containerPath: string; hostPath: string; permissions: string }[];
  annotations: { name: string; value: string }[];
  cdiDevices: string[];
}

/** What the runtime manager asks of the device manager when it creates a container. */
export interface DeviceRunContainerOptionsSource {
  /** Rejects with the kubelet's message (the container then waits with CreateContainerConfigError). */
  runContainerOptions(pod: Pod, container: Container): Promise<DeviceRunContainerOptions | undefined>;
}
