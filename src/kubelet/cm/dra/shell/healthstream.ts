/**
 * The DRA plugins' health streams (kubelet: dra_plugin_manager.go's health goroutine, dra_plugin.go
 * NodeWatchResources, manager.go HandleWatchResourcesStream): for each registered plugin that offers a
 * DRAResourceHealth service (v1 or v1alpha1, chosen at registration), NodeWatchResources is opened on the
 * plugin's socket and every report handed on. When a stream ends the driver's health is forgotten and the
 * stream opened again 5 s later, until the plugin goes; a plugin that answers UNIMPLEMENTED is not asked again
 * (it registers anew if it gains the service), which is normal and logged at debug level only.
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { errorMessage } from '../../../../util/errors.js';
import { loadProtoPackage } from '../../../../util/grpcmodules.js';
import type { Logger } from '../../../../util/logger.js';
import type { DRAPlugin } from '../../../pluginmanager/dradrivers.js';
import { dialUnix } from '../../../pluginmanager/shell/manager.js';
import type { WireDeviceHealth } from '../healthinfo.js';

/** How long after a stream ends (or failed to open) it is opened again (wait.UntilWithContext's period). */
export const HealthStreamRetryMs = 5_000;
/** gRPC status codes the loop tells apart. */
const CANCELLED = 1;
const UNIMPLEMENTED = 12;

/** One open NodeWatchResources stream. */
export interface HealthStream {
  cancel(): void;
}

/** How a stream ended: its gRPC status code and message; none when the plugin closed it cleanly. */
export interface HealthStreamEnd {
  code?: number;
  message?: string;
}

/** Opens NodeWatchResources on a plugin; rejects when it cannot be dialled. */
export type OpenHealthStream = (
  plugin: DRAPlugin,
  on: { report(devices: WireDeviceHealth[]): void; end(end: HealthStreamEnd): void },
) => Promise<HealthStream>;

export interface DRAHealthStreamsDeps {
  logger: Logger;
  /** One NodeWatchResourcesResponse of a driver. */
  onReport(driver: string, devices: WireDeviceHealth[]): void;
  /** A driver's stream ended (clearDriver). */
  onStreamEnd(driver: string): void;
  /** Default HealthStreamRetryMs. */
  retryMs?: number;
  /** Default over gRPC. */
  open?: OpenHealthStream;
}

interface Watch {
  stopped: boolean;
  stream?: HealthStream;
  wake?: () => void;
  done: Promise<void>;
}

export class DRAHealthStreams {
  private readonly watches = new Map<string, Watch>();
  private readonly log: Logger;

  constructor(private readonly d: DRAHealthStreamsDeps) {
    this.log = d.logger.child({ component: 'dra_health' });
  }

  /** Starts watching a newly registered plugin's health, when it offers a health service. */
  watch(plugin: DRAPlugin): void {
    if (!plugin.chosenHealthService) return;
    const key = watchKey(plugin.driverName, plugin.endpoint);
    if (this.watches.has(key)) return;
    const w: Watch = { stopped: false, done: Promise.resolve() };
    this.watches.set(key, w);
    w.done = this.run(plugin, w);
  }

  /** The plugin deregistered: its stream is cancelled. */
  unwatch(driverName: string, endpoint: string): Promise<void> {
    const key = watchKey(driverName, endpoint);
    const w = this.watches.get(key);
    if (!w) return Promise.resolve();
    this.watches.delete(key);
    cancel(w);
    return w.done;
  }

  async stop(): Promise<void> {
    const all = [...this.watches.values()];
    this.watches.clear();
    for (const w of all) cancel(w);
    await Promise.all(all.map((w) => w.done));
  }

  /** How many plugins are watched (tests). */
  watching(): number {
    return this.watches.size;
  }

  private async run(plugin: DRAPlugin, w: Watch): Promise<void> {
    const open = this.d.open ?? grpcOpenHealthStream;
    const meta = { driverName: plugin.driverName, endpoint: plugin.endpoint };
    while (!w.stopped) {
      let end: HealthStreamEnd;
      try {
        end = await new Promise<HealthStreamEnd>((resolve, reject) => {
          open(plugin, {
            report: (devices) => {
              if (!w.stopped) this.d.onReport(plugin.driverName, devices);
            },
            end: resolve,
          }).then((s) => {
            w.stream = s;
            if (w.stopped) s.cancel();
          }, reject);
        });
      } catch (err) {
        this.log.debug('Failed to establish WatchResources stream, will retry', {
          ...meta,
          err: errorMessage(err),
        });
        await this.pause(w);
        continue;
      }
      w.stream = undefined;
      this.d.onStreamEnd(plugin.driverName);
      if (w.stopped || end.code === CANCELLED) break;
      if (end.code === UNIMPLEMENTED) {
        this.log.debug('Driver does not support WatchResources health stream, stopping', meta);
        this.watches.delete(watchKey(plugin.driverName, plugin.endpoint));
        break;
      }
      if (end.code === undefined) this.log.debug('WatchResources health stream ended', meta);
      else this.log.error('Error receiving from WatchResources stream', { ...meta, err: end.message });
      await this.pause(w);
    }
  }

  private pause(w: Watch): Promise<void> {
    if (w.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        w.wake = undefined;
        resolve();
      }, this.d.retryMs ?? HealthStreamRetryMs);
      t.unref();
      w.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
}

function watchKey(driverName: string, endpoint: string): string {
  return `${driverName}\u0000${endpoint}`;
}

function cancel(w: Watch): void {
  w.stopped = true;
  w.stream?.cancel();
  w.wake?.();
}

/** The client constructor of a health service the kubelet speaks (`v1.DRAResourceHealth`, `v1alpha1...`). */
function healthClientCtor(service: string): grpc.ServiceClientConstructor {
  const version = service.split('.')[0];
  if (version !== 'v1' && version !== 'v1alpha1') {
    throw new Error(`internal error: unsupported chosen health service: ${JSON.stringify(service)}`);
  }
  const pkg = loadProtoPackage(
    fileURLToPath(new URL(`../proto/dra_health_${version}.proto`, import.meta.url)),
  ) as unknown as Record<string, { DRAResourceHealth: grpc.ServiceClientConstructor }>;
  return pkg[version]!.DRAResourceHealth;
}

/** NodeWatchResources over the plugin's socket, the same one its DRA service is on. */
const grpcOpenHealthStream: OpenHealthStream = async (plugin, on) => {
  const socket = plugin.endpoint.replace(/^unix:\/\//, '');
  const client = await dialUnix(healthClientCtor(plugin.chosenHealthService), socket, 10_000);
  const call = (
    client as unknown as { NodeWatchResources(req: object): grpc.ClientReadableStream<unknown> }
  ).NodeWatchResources({});
  let ended = false;
  const finish = (e: HealthStreamEnd): void => {
    if (ended) return;
    ended = true;
    client.close();
    on.end(e);
  };
  call.on('data', (m: { devices?: WireDeviceHealth[] }) => on.report([...(m.devices ?? [])]));
  call.on('error', (err: grpc.ServiceError) =>
    finish({ code: err.code, message: err.details || err.message }),
  );
  // A clean end: the status event comes after the last message; 'end' alone may precede an error's status.
  call.on('status', (s: grpc.StatusObject) => {
    finish(s.code === 0 ? {} : { code: s.code, message: s.details });
  });
  return { cancel: () => call.cancel() };
};
