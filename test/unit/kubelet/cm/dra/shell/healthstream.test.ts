/**
 * DRA device health end to end inside the DRA manager: a plugin server of ours on a unix socket serves
 * DRAResourceHealth (v1 and v1alpha1), the manager prepares a claim through fake calls, and the reports reach
 * the pod's sync, its container statuses and the health checkpoint; a stream that ends is opened again, a
 * driver without the service (UNIMPLEMENTED) is asked once.
 */
import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ContainerStatus, Pod } from '../../../../../../src/api/core.js';
import type { ResourceClaim } from '../../../../../../src/kubelet/cm/dra/claiminfo.js';
import { DRAHealthStreams } from '../../../../../../src/kubelet/cm/dra/shell/healthstream.js';
import { DRAManager, type DRAPluginCalls } from '../../../../../../src/kubelet/cm/dra/shell/manager.js';
import type { DRAPlugin } from '../../../../../../src/kubelet/pluginmanager/dradrivers.js';
import { MemoryLogger, silentLogger } from '../../../../../../src/util/logger.js';

const DRIVER = 'gpu.example.com';

const pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: {
    containers: [{ name: 'c', image: 'i', resources: { claims: [{ name: 'gpu' }] } }],
    resourceClaims: [{ name: 'gpu', resourceClaimName: 'claim' }],
  },
  status: {},
} as unknown as Pod;

const claim: ResourceClaim = {
  metadata: { name: 'claim', namespace: 'ns', uid: 'claim-uid' },
  status: {
    allocation: { devices: { results: [{ driver: DRIVER, request: 'r', pool: 'node', device: 'gpu-0' }] } },
    reservedFor: [{ resource: 'pods', uid: 'u1' }],
  },
};

const calls: DRAPluginCalls = {
  prepare: (_p, batch) =>
    Promise.resolve(
      Object.fromEntries(
        batch.claims.map((c) => [
          c.uid,
          { devices: [{ requestNames: ['r'], poolName: 'node', deviceName: 'gpu-0', cdiDeviceIDs: [] }] },
        ]),
      ),
    ),
  unprepare: (_p, batch) => Promise.resolve(Object.fromEntries(batch.claims.map((c) => [c.uid, {}]))),
};

type Stream = grpc.ServerWritableStream<unknown, unknown>;

/** A health server: the streams it has open, and how many were ever opened. */
async function healthServer(
  socket: string,
  version: 'v1' | 'v1alpha1' | 'none',
): Promise<{ server: grpc.Server; streams: Stream[]; opened: () => number }> {
  const server = new grpc.Server();
  const streams: Stream[] = [];
  let opened = 0;
  if (version !== 'none') {
    const def = protoLoader.loadSync(
      fileURLToPath(
        new URL(`../../../../../../src/kubelet/cm/dra/proto/dra_health_${version}.proto`, import.meta.url),
      ),
      { keepCase: true, longs: String, enums: String, defaults: true },
    );
    const pkg = grpc.loadPackageDefinition(def) as unknown as Record<
      string,
      { DRAResourceHealth: grpc.ServiceClientConstructor }
    >;
    server.addService(pkg[version]!.DRAResourceHealth.service, {
      NodeWatchResources: (call: Stream) => {
        opened++;
        streams.push(call);
      },
    });
  }
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  return { server, streams, opened: () => opened };
}

async function until<T>(f: () => T | undefined | false, what: string, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function untilAsync(f: () => Promise<boolean>, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('cm/dra/shell/healthstream: device health from a plugin', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'dra-health-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  for (const version of ['v1', 'v1alpha1'] as const) {
    it(`${version}.DRAResourceHealth: reports re-sync the pod and fill its status; an ended stream is opened again`, async () => {
      const socket = path.join(dir, 'dra.sock');
      const srv = await healthServer(socket, version);
      const synced: string[][] = [];
      const plugin: DRAPlugin = {
        driverName: DRIVER,
        endpoint: socket,
        chosenService: 'v1.DRAPlugin',
        chosenHealthService: `${version}.DRAResourceHealth`,
        registeredAt: 0,
      };
      const m = new DRAManager({
        client: { request: <T>() => Promise.resolve(claim as T) },
        rootDir: dir,
        plugin: () => plugin,
        logger: silentLogger,
        calls,
        onPodsNeedSync: (uids) => synced.push(uids),
        healthRetryMs: 20,
      });
      const statuses = (): ContainerStatus['allocatedResourcesStatus'] =>
        m.allocatedResourcesStatus(pod, [{ name: 'c' } as ContainerStatus])[0]!.allocatedResourcesStatus;
      try {
        await m.start();
        await m.prepareResources(pod);
        // Prepared, nothing heard yet: Unknown.
        expect(statuses()).to.deep.equal([
          { name: 'claim:gpu', resources: [{ resourceID: `${DRIVER}/node/gpu-0`, health: 'Unknown' }] },
        ]);
        m.watchHealth(plugin);
        const first = await until(() => srv.streams[0], 'the stream');
        const report = (health: string, message = '') =>
          first.write({
            devices: [{ device: { pool_name: 'node', device_name: 'gpu-0' }, health, message }],
          });
        report('HEALTHY');
        await until(() => synced.length === 1, 'the first sync');
        expect(synced).to.deep.equal([['u1']]);
        expect(statuses()![0]!.resources).to.deep.equal([
          { resourceID: `${DRIVER}/node/gpu-0`, health: 'Healthy' },
        ]);
        // The same again: no sync.
        report('HEALTHY');
        report('UNHEALTHY', 'XID 79: fallen off the bus');
        await until(() => synced.length === 2, 'the second sync');
        expect(statuses()![0]!.resources).to.deep.equal([
          { resourceID: `${DRIVER}/node/gpu-0`, health: 'Unhealthy', message: 'XID 79: fallen off the bus' },
        ]);
        const file = path.join(dir, 'dra_health_state');
        await untilAsync(
          async () => (await readFile(file, 'utf8').catch(() => '')).includes('XID 79'),
          'the checkpoint',
        );
        // The plugin ends the stream: its health is forgotten, and the stream opened again.
        first.end();
        await until(() => statuses()![0]!.resources![0]!.health === 'Unknown', 'the health forgotten');
        await until(() => srv.opened() === 2, 'the stream opened again');
        expect(synced).to.have.length(2);
        await m.stop();
        await until(
          () => srv.streams.every((c) => c.cancelled || c.writableEnded),
          'the stop cancels the stream',
        );
        expect(srv.streams[1]!.cancelled).to.equal(true);
        const saved = JSON.parse(await readFile(file, 'utf8')) as object;
        expect(saved, 'the cleared driver is cleared in the checkpoint too').to.deep.equal({});
      } finally {
        await m.stop();
        srv.server.forceShutdown();
      }
    });
  }

  it('a restarted manager reads the health checkpoint', async () => {
    const socket = path.join(dir, 'dra.sock');
    const srv = await healthServer(socket, 'v1');
    const plugin: DRAPlugin = {
      driverName: DRIVER,
      endpoint: socket,
      chosenService: 'v1.DRAPlugin',
      chosenHealthService: 'v1.DRAResourceHealth',
      registeredAt: 0,
    };
    const make = () =>
      new DRAManager({
        client: { request: <T>() => Promise.resolve(claim as T) },
        rootDir: dir,
        plugin: () => plugin,
        logger: silentLogger,
        calls,
      });
    const m = make();
    try {
      await m.start();
      await m.prepareResources(pod);
      m.watchHealth(plugin);
      const s = await until(() => srv.streams[0], 'the stream');
      s.write({
        devices: [
          { device: { pool_name: 'node', device_name: 'gpu-0' }, health: 'UNHEALTHY', message: 'hot' },
        ],
      });
      await until(
        () =>
          m.allocatedResourcesStatus(pod, [{ name: 'c' } as ContainerStatus])[0]!
            .allocatedResourcesStatus?.[0]?.resources?.[0]?.health === 'Unhealthy',
        'the report',
      );
      const file = path.join(dir, 'dra_health_state');
      await untilAsync(
        async () => (await readFile(file, 'utf8').catch(() => '')).includes('hot'),
        'the checkpoint',
      );
      // A new process while the first still streams (as after a crash): the report is read back.
      const m2 = make();
      await m2.start();
      expect(
        m2.allocatedResourcesStatus(pod, [{ name: 'c' } as ContainerStatus])[0]!.allocatedResourcesStatus,
      ).to.deep.equal([
        {
          name: 'claim:gpu',
          resources: [{ resourceID: `${DRIVER}/node/gpu-0`, health: 'Unhealthy', message: 'hot' }],
        },
      ]);
      await m2.stop();
    } finally {
      await m.stop();
      srv.server.forceShutdown();
    }
  });

  it('an unreadable health checkpoint is logged and the cache starts empty', async () => {
    await writeFile(path.join(dir, 'dra_health_state'), '{"gpu.example.com": {"Devices": ');
    const log = new MemoryLogger();
    const m = new DRAManager({
      client: { request: <T>() => Promise.resolve(claim as T) },
      rootDir: dir,
      plugin: () => ({
        driverName: DRIVER,
        endpoint: '/unused',
        chosenService: 'v1.DRAPlugin',
        chosenHealthService: '',
        registeredAt: 0,
      }),
      logger: log,
      calls,
    });
    await m.start();
    await m.prepareResources(pod);
    expect(
      m.allocatedResourcesStatus(pod, [{ name: 'c' } as ContainerStatus])[0]!.allocatedResourcesStatus,
    ).to.deep.equal([
      { name: 'claim:gpu', resources: [{ resourceID: `${DRIVER}/node/gpu-0`, health: 'Unknown' }] },
    ]);
    expect(log.lines.filter((l) => l.level === 'error').map((l) => l.msg)).to.deep.equal([
      'Failed to load health checkpoint, proceeding with empty cache',
    ]);
    await m.stop();
  });

  it('a plugin without the service (UNIMPLEMENTED): asked once, one debug line, nothing else', async () => {
    const socket = path.join(dir, 'dra.sock');
    const srv = await healthServer(socket, 'none');
    const log = new MemoryLogger();
    let reports = 0;
    let ends = 0;
    const streams = new DRAHealthStreams({
      logger: log,
      onReport: () => reports++,
      onStreamEnd: () => ends++,
      retryMs: 10,
    });
    try {
      streams.watch({
        driverName: DRIVER,
        endpoint: socket,
        chosenService: 'v1.DRAPlugin',
        chosenHealthService: 'v1.DRAResourceHealth',
        registeredAt: 0,
      });
      await until(() => streams.watching() === 0, 'the watch given up');
      await new Promise((r) => setTimeout(r, 100));
      expect(log.lines.map((l) => [l.level, l.msg])).to.deep.equal([
        ['debug', 'Driver does not support WatchResources health stream, stopping'],
      ]);
      expect(reports).to.equal(0);
      expect(ends).to.equal(1);
    } finally {
      await streams.stop();
      srv.server.forceShutdown();
    }
  });

  it('a plugin that offers no health service is not watched; one not listening yet is retried', async () => {
    const log = new MemoryLogger();
    let opens = 0;
    const streams = new DRAHealthStreams({
      logger: log,
      onReport: () => undefined,
      onStreamEnd: () => undefined,
      retryMs: 10,
      open: () => {
        opens++;
        return Promise.reject(new Error('failed to dial'));
      },
    });
    const p: DRAPlugin = {
      driverName: DRIVER,
      endpoint: '/nowhere',
      chosenService: 'v1.DRAPlugin',
      chosenHealthService: '',
      registeredAt: 0,
    };
    streams.watch(p);
    expect(streams.watching()).to.equal(0);
    streams.watch({ ...p, chosenHealthService: 'v1.DRAResourceHealth' });
    await until(() => opens >= 3, 'the retries');
    await streams.unwatch(DRIVER, '/nowhere');
    const after = opens;
    await new Promise((r) => setTimeout(r, 50));
    expect(opens, 'no retry after the plugin went').to.equal(after);
    expect(log.lines.every((l) => l.level === 'debug')).to.equal(true);
  });
});
