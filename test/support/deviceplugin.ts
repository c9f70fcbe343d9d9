/**
 * A small device plugin of our own for the device manager's e2e tests: a real gRPC server speaking the
 * device plugin API v1beta1 on a socket in a node's `device-plugins/` directory, which registers with the
 * node's `kubelet.sock` (and again whenever that socket is made anew, as real plugins do).
 *
 * It serves `count` devices `<prefix>-<i>` of one resource. Allocate answers the env `EXAMPLE_DEVICE_IDS`
 * (the ids, comma-separated), and per device a device node `/dev/<prefix>-<i>` backed by the host's
 * /dev/null and an annotation; GetPreferredAllocation prefers the highest ids; PreStartContainer is asked
 * for and counted. Health changes with `setHealth`.
 *
 * Run as a process: `node --import tsx test/support/deviceplugin.ts <dir> <resource> <count>`; it then reads
 * commands on stdin, one a line: `health <id> Healthy|Unhealthy`, and prints `registered` on each
 * registration and `prestart <ids>` on each PreStartContainer.
 */
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { grpcJs, loadProtoPackage } from '../../src/util/grpcmodules.js';

const PROTO = fileURLToPath(
  new URL('../../src/kubelet/cm/devicemanager/proto/deviceplugin_v1beta1.proto', import.meta.url),
);

interface Services {
  Registration: grpc.ServiceClientConstructor;
  DevicePlugin: grpc.ServiceClientConstructor;
}

function services(): Services {
  return (loadProtoPackage(PROTO) as unknown as { v1beta1: Services }).v1beta1;
}

export class TestDevicePlugin {
  private readonly health = new Map<string, string>();
  private readonly watchers = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  private server: grpc.Server | undefined;
  private dirWatch: FSWatcher | undefined;
  readonly socket: string;
  readonly preStarts: string[][] = [];
  registrations = 0;
  onEvent: (line: string) => void = () => undefined;

  constructor(
    readonly dir: string,
    readonly resource: string,
    count: number,
    readonly prefix = 'gpu',
  ) {
    this.socket = path.join(dir, `test-${prefix}.sock`);
    for (let i = 0; i < count; i++) this.health.set(`${prefix}-${i}`, 'Healthy');
  }

  /** Serves the plugin socket and registers; serves and registers again when kubelet.sock is made anew. */
  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await this.serve();
    await this.registerUntilDone();
    // The kubelet removes plugin sockets and makes kubelet.sock anew when it restarts: serve and register again.
    let again: Promise<void> = Promise.resolve();
    this.dirWatch = watch(this.dir, (_event, name) => {
      if (name !== 'kubelet.sock') return;
      again = again
        .then(async () => {
          await new Promise((r) => setTimeout(r, 200));
          await this.serve();
          await this.registerUntilDone();
        })
        .catch((err: unknown) => this.onEvent(`re-registration failed: ${String(err)}`));
    });
  }

  private async serve(): Promise<void> {
    const g = grpcJs();
    for (const w of this.watchers) w.end();
    this.watchers.clear();
    this.server?.forceShutdown();
    await rm(this.socket, { force: true });
    const server = new g.Server();
    server.addService(services().DevicePlugin.service, {
      GetDevicePluginOptions: (_c: unknown, cb: grpc.sendUnaryData<unknown>) =>
        cb(null, { pre_start_required: true, get_preferred_allocation_available: true }),
      ListAndWatch: (call: grpc.ServerWritableStream<unknown, unknown>) => {
        this.watchers.add(call);
        call.write(this.list());
        call.on('cancelled', () => this.watchers.delete(call));
        call.on('close', () => this.watchers.delete(call));
      },
      GetPreferredAllocation: (
        call: grpc.ServerUnaryCall<
          { container_requests: { available_deviceIDs: string[]; allocation_size: number }[] },
          unknown
        >,
        cb: grpc.sendUnaryData<unknown>,
      ) =>
        cb(null, {
          container_responses: call.request.container_requests.map((r) => ({
            deviceIDs: [...r.available_deviceIDs].sort().reverse().slice(0, r.allocation_size),
          })),
        }),
      Allocate: (
        call: grpc.ServerUnaryCall<{ container_requests: { devices_ids: string[] }[] }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) =>
        cb(null, {
          container_responses: call.request.container_requests.map((r) => ({
            envs: { EXAMPLE_DEVICE_IDS: [...r.devices_ids].sort().join(',') },
            devices: r.devices_ids.map((id) => ({
              container_path: `/dev/${id}`,
              host_path: '/dev/null',
              permissions: 'rw',
            })),
            annotations: { 'example.com/devices': r.devices_ids.join(',') },
            mounts: [],
            cdi_devices: [],
          })),
        }),
      PreStartContainer: (
        call: grpc.ServerUnaryCall<{ devices_ids: string[] }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        this.preStarts.push([...call.request.devices_ids]);
        this.onEvent(`prestart ${call.request.devices_ids.join(',')}`);
        cb(null, {});
      },
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${this.socket}`, g.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    this.server = server;
  }

  setHealth(id: string, health: 'Healthy' | 'Unhealthy'): void {
    this.health.set(id, health);
    for (const w of this.watchers) w.write(this.list());
  }

  async stop(): Promise<void> {
    this.dirWatch?.close();
    for (const w of this.watchers) w.end();
    this.server?.forceShutdown();
    await rm(this.socket, { force: true });
  }

  private list(): { devices: { ID: string; health: string }[] } {
    return { devices: [...this.health].map(([ID, health]) => ({ ID, health })) };
  }

  private async registerUntilDone(): Promise<void> {
    const g = grpcJs();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const client = new (services().Registration)(
        `unix://${path.join(this.dir, 'kubelet.sock')}`,
        g.credentials.createInsecure(),
      );
      try {
        await new Promise<void>((resolve, reject) =>
          (
            client as unknown as {
              Register(req: unknown, opts: grpc.CallOptions, cb: (err: Error | null) => void): void;
            }
          ).Register(
            {
              version: 'v1beta1',
              endpoint: path.basename(this.socket),
              resource_name: this.resource,
              options: {},
            },
            { deadline: Date.now() + 5_000 },
            (err) => (err ? reject(err) : resolve()),
          ),
        );
        this.registrations++;
        this.onEvent('registered');
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
      } finally {
        client.close();
      }
    }
  }
}

// As a process: the e2e test runs the plugin beside the operator, as a node's DaemonSet would.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [dir, resource, count] = process.argv.slice(2);
  const plugin = new TestDevicePlugin(dir!, resource!, Number(count ?? '2'));
  plugin.onEvent = (line) => process.stdout.write(`${line}\n`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    const [cmd, id, health] = line.trim().split(/\s+/);
    if (cmd === 'health' && id && (health === 'Healthy' || health === 'Unhealthy'))
      plugin.setHealth(id, health);
  });
  process.on('SIGTERM', () => void plugin.stop().finally(() => process.exit(0)));
  plugin.start().catch((err: unknown) => {
    process.stderr.write(`device plugin failed: ${String(err)}\n`);
    process.exit(1);
  });
}
