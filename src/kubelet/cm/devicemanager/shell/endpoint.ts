/**
 * A device plugin's gRPC service on its socket (kubelet: devicemanager endpoint.go and plugin/v1beta1
 * client.go): dialled when the plugin registers, its ListAndWatch stream read until it ends.
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { loadProtoPackage } from '../../../../util/grpcmodules.js';
import { dialUnix, unary } from '../../../pluginmanager/shell/manager.js';
import type {
  ContainerAllocateResponse,
  DevicePluginEndpoint,
  DevicePluginOptions,
  PluginDevice,
} from '../types.js';

/** The deadline of the kubelet's calls to a plugin (pluginapi / devicemanager connection timeout: 10 s). */
const CALL_TIMEOUT_MS = 10_000;

interface DevicePluginPackage {
  v1beta1: { Registration: grpc.ServiceClientConstructor; DevicePlugin: grpc.ServiceClientConstructor };
}

/** The device plugin API's services, loaded once. */
export function devicePluginServices(): DevicePluginPackage['v1beta1'] {
  const p = fileURLToPath(new URL('../proto/deviceplugin_v1beta1.proto', import.meta.url));
  return (loadProtoPackage(p) as unknown as DevicePluginPackage).v1beta1;
}

export class GrpcDevicePluginEndpoint implements DevicePluginEndpoint {
  private stream: grpc.ClientReadableStream<unknown> | undefined;
  private closed = false;

  private constructor(
    readonly socketPath: string,
    private readonly client: grpc.Client,
  ) {}

  /** Dials the plugin's socket (the kubelet's blocking dial with its 10 s timeout). */
  static async dial(socketPath: string): Promise<GrpcDevicePluginEndpoint> {
    const client = await dialUnix(devicePluginServices().DevicePlugin, socketPath, CALL_TIMEOUT_MS);
    return new GrpcDevicePluginEndpoint(socketPath, client);
  }

  getDevicePluginOptions(): Promise<DevicePluginOptions> {
    return unary(this.client, 'GetDevicePluginOptions', {}, CALL_TIMEOUT_MS);
  }

  listAndWatch(onDevices: (devices: PluginDevice[]) => void, onEnd: (err?: Error) => void): void {
    const call = (
      this.client as unknown as { ListAndWatch(req: unknown): grpc.ClientReadableStream<unknown> }
    ).ListAndWatch({});
    this.stream = call;
    let ended = false;
    const end = (err?: Error): void => {
      if (ended) return;
      ended = true;
      onEnd(err);
    };
    call.on('data', (m: { devices?: PluginDevice[] }) => onDevices([...(m.devices ?? [])]));
    call.on('error', (err: Error) => end(this.closed ? undefined : err));
    call.on('end', () => end());
    call.on('close', () => end());
  }

  async getPreferredAllocation(available: string[], mustInclude: string[], size: number): Promise<string[]> {
    const resp = await unary<{ container_responses?: { deviceIDs?: string[] }[] }>(
      this.client,
      'GetPreferredAllocation',
      {
        container_requests: [
          { available_deviceIDs: available, must_include_deviceIDs: mustInclude, allocation_size: size },
        ],
      },
      CALL_TIMEOUT_MS,
    );
    return [...(resp.container_responses?.[0]?.deviceIDs ?? [])];
  }

  async allocate(deviceIds: string[]): Promise<ContainerAllocateResponse[]> {
    const resp = await unary<{ container_responses?: ContainerAllocateResponse[] }>(
      this.client,
      'Allocate',
      { container_requests: [{ devices_ids: deviceIds }] },
      CALL_TIMEOUT_MS,
    );
    return resp.container_responses ?? [];
  }

  async preStartContainer(deviceIds: string[]): Promise<void> {
    await unary(this.client, 'PreStartContainer', { devices_ids: deviceIds }, CALL_TIMEOUT_MS);
  }

  close(): void {
    this.closed = true;
    this.stream?.cancel();
    this.client.close();
  }
}
