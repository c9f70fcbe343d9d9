/**
 * A DRA driver's kubelet plugin in the test process, for what Kubernetes' own test driver cannot be told from
 * outside its process: the health of its devices. It registers through the node root's plugins_registry/
 * (pluginregistration v1, DRAPlugin, services v1.DRAPlugin and v1alpha1.DRAResourceHealth), publishes one
 * ResourceSlice of the node with its devices, prepares a claim by answering with the claim's allocated devices
 * of this driver (no CDI devices), and serves NodeWatchResources: the current health of every device at once
 * and every 2 s (the upstream test driver's ticker), and at once after `setHealth`.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { KubeClient } from '../../src/kube/client.js';
import { REPO_ROOT } from './controlplane.js';

type Health = 'HEALTHY' | 'UNHEALTHY' | 'UNKNOWN';

export interface TestDRAPlugin {
  /** Resolves when the kubelet has told the plugin it is registered. */
  registered: Promise<void>;
  /** Creates (or replaces) the node's ResourceSlice of the driver. */
  publish(): Promise<void>;
  /** A device's health from now on, sent to every open stream at once. */
  setHealth(device: string, health: Health, message?: string): void;
  /** How many NodeWatchResources streams were opened. */
  streamsOpened(): number;
  stop(): Promise<void>;
}

function load(rel: string): grpc.GrpcObject {
  return grpc.loadPackageDefinition(
    protoLoader.loadSync(path.join(REPO_ROOT, rel), {
      keepCase: true,
      longs: String,
      enums: String,
      defaults: true,
    }),
  );
}

async function serve(socket: string, add: (s: grpc.Server) => void): Promise<grpc.Server> {
  await rm(socket, { force: true });
  const server = new grpc.Server();
  add(server);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  return server;
}

interface ClaimRef {
  namespace: string;
  uid: string;
  name: string;
}

export async function startTestDRAPlugin(o: {
  client: KubeClient;
  driver: string;
  nodeName: string;
  /** The node's kubelet root. */
  root: string;
  devices: string[];
}): Promise<TestDRAPlugin> {
  const pool = o.nodeName;
  const health = new Map<string, { health: Health; message: string }>(
    o.devices.map((d) => [d, { health: 'HEALTHY', message: '' }]),
  );
  const streams = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  let opened = 0;
  const report = () => ({
    devices: [...health].map(([device, h]) => ({
      device: { pool_name: pool, device_name: device },
      health: h.health,
      last_updated_time: String(Math.floor(Date.now() / 1000)),
      message: h.message,
    })),
  });
  const broadcast = () => {
    for (const s of streams) s.write(report());
  };
  const ticker = setInterval(broadcast, 2_000);

  const draDir = path.join(o.root, 'plugins', o.driver);
  await mkdir(draDir, { recursive: true });
  const draSocket = path.join(draDir, 'dra.sock');
  const dra = load('src/kubelet/cm/dra/proto/dra_v1.proto') as unknown as {
    k8s: {
      io: { kubelet: { pkg: { apis: { dra: { v1: { DRAPlugin: grpc.ServiceClientConstructor } } } } } };
    };
  };
  const healthPkg = load('src/kubelet/cm/dra/proto/dra_health_v1alpha1.proto') as unknown as {
    v1alpha1: { DRAResourceHealth: grpc.ServiceClientConstructor };
  };
  const draServer = await serve(draSocket, (s) => {
    s.addService(dra.k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin.service, {
      NodePrepareResources: (
        call: grpc.ServerUnaryCall<{ claims: ClaimRef[] }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        void Promise.all(
          call.request.claims.map(async (c) => {
            const claim = await o.client.request<{
              status?: {
                allocation?: {
                  devices?: { results?: { request: string; driver: string; pool: string; device: string }[] };
                };
              };
            }>({
              method: 'GET',
              path: `/apis/resource.k8s.io/v1/namespaces/${c.namespace}/resourceclaims/${c.name}`,
            });
            const devices = (claim.status?.allocation?.devices?.results ?? [])
              .filter((r) => r.driver === o.driver)
              .map((r) => ({
                request_names: [r.request],
                pool_name: r.pool,
                device_name: r.device,
                cdi_device_ids: [],
              }));
            return [c.uid, { devices }] as const;
          }),
        ).then(
          (answers) => cb(null, { claims: Object.fromEntries(answers) }),
          (err: Error) => cb({ code: grpc.status.INTERNAL, details: err.message }),
        );
      },
      NodeUnprepareResources: (
        call: grpc.ServerUnaryCall<{ claims: ClaimRef[] }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => cb(null, { claims: Object.fromEntries(call.request.claims.map((c) => [c.uid, {}])) }),
    });
    s.addService(healthPkg.v1alpha1.DRAResourceHealth.service, {
      NodeWatchResources: (call: grpc.ServerWritableStream<unknown, unknown>) => {
        opened++;
        streams.add(call);
        call.on('cancelled', () => streams.delete(call));
        call.write(report());
      },
    });
  });

  let onRegistered: () => void = () => undefined;
  const registered = new Promise<void>((r) => (onRegistered = r));
  const reg = load('src/kubelet/pluginmanager/proto/pluginregistration_v1.proto') as unknown as {
    pluginregistration: { Registration: grpc.ServiceClientConstructor };
  };
  const regSocket = path.join(o.root, 'plugins_registry', `${o.driver}-reg.sock`);
  await mkdir(path.dirname(regSocket), { recursive: true });
  const regServer = await serve(regSocket, (s) => {
    s.addService(reg.pluginregistration.Registration.service, {
      GetInfo: (_call: unknown, cb: grpc.sendUnaryData<unknown>) =>
        cb(null, {
          type: 'DRAPlugin',
          name: o.driver,
          endpoint: draSocket,
          supported_versions: ['v1.DRAPlugin', 'v1alpha1.DRAResourceHealth'],
        }),
      NotifyRegistrationStatus: (
        call: grpc.ServerUnaryCall<{ plugin_registered: boolean }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        if (call.request.plugin_registered) onRegistered();
        cb(null, {});
      },
    });
  });

  return {
    registered,
    async publish() {
      const name = `${o.nodeName}-${o.driver}`;
      const body = {
        apiVersion: 'resource.k8s.io/v1',
        kind: 'ResourceSlice',
        metadata: { name },
        spec: {
          driver: o.driver,
          nodeName: o.nodeName,
          pool: { name: pool, generation: 1, resourceSliceCount: 1 },
          devices: o.devices.map((d) => ({ name: d })),
        },
      };
      await o.client
        .request({
          method: 'DELETE',
          path: `/apis/resource.k8s.io/v1/resourceslices/${name}`,
          ignoreAnswer: true,
        })
        .catch(() => undefined);
      await o.client.request({ method: 'POST', path: '/apis/resource.k8s.io/v1/resourceslices', body });
    },
    setHealth(device, h, message = '') {
      health.set(device, { health: h, message });
      broadcast();
    },
    streamsOpened: () => opened,
    async stop() {
      clearInterval(ticker);
      // The registration socket first: the kubelet deregisters the plugin and cancels its stream.
      regServer.forceShutdown();
      await rm(regSocket, { force: true });
      draServer.forceShutdown();
      await rm(draSocket, { force: true });
    },
  };
}
