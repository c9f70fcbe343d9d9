/**
 * The DRA manager's shell on a fake API and fake plugin calls, with its checkpoint in a temporary directory;
 * one case talks gRPC to a plugin server of ours on a unix socket, for each DRA service version.
 */
import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { Container, Pod } from '../../../../../../src/api/core.js';
import type { ResourceClaim } from '../../../../../../src/kubelet/cm/dra/claiminfo.js';
import { DRAManager, type DRAPluginCalls } from '../../../../../../src/kubelet/cm/dra/shell/manager.js';
import type { DRAPlugin } from '../../../../../../src/kubelet/pluginmanager/dradrivers.js';
import { silentLogger } from '../../../../../../src/util/logger.js';

const DRIVER = 'test-driver.cdi.k8s.io';

function pod(uid: string, name = `p-${uid}`): Pod {
  return {
    metadata: { name, namespace: 'ns', uid },
    spec: { containers: [], resourceClaims: [{ name: 'gpu', resourceClaimName: 'c' }] },
    status: {},
  } as unknown as Pod;
}

const container = { name: 'a', resources: { claims: [{ name: 'gpu' }] } } as unknown as Container;

function claim(reservedFor: string[]): ResourceClaim {
  return {
    metadata: { name: 'c', namespace: 'ns', uid: 'claim-uid' },
    status: {
      allocation: {
        devices: { results: [{ driver: DRIVER, request: 'r', pool: 'n', device: 'device-00' }] },
      },
      reservedFor: reservedFor.map((uid) => ({ resource: 'pods', uid })),
    },
  };
}

const plugin: DRAPlugin = {
  driverName: DRIVER,
  endpoint: '/unused',
  chosenService: 'v1.DRAPlugin',
  chosenHealthService: '',
  registeredAt: 0,
};

class FakeCalls implements DRAPluginCalls {
  prepared: string[] = [];
  unprepared: string[] = [];
  fail = '';
  prepare(_p: DRAPlugin, batch: { claims: { uid: string }[] }) {
    this.prepared.push(...batch.claims.map((c) => c.uid));
    return Promise.resolve(
      Object.fromEntries(
        batch.claims.map((c) => [
          c.uid,
          this.fail
            ? { error: this.fail }
            : {
                devices: [
                  {
                    requestNames: ['r'],
                    poolName: 'n',
                    deviceName: 'device-00',
                    cdiDeviceIDs: [`${DRIVER}/test=${c.uid}`],
                  },
                ],
              },
        ]),
      ),
    );
  }
  unprepare(_p: DRAPlugin, batch: { claims: { uid: string }[] }) {
    this.unprepared.push(...batch.claims.map((c) => c.uid));
    return Promise.resolve(Object.fromEntries(batch.claims.map((c) => [c.uid, {}])));
  }
}

describe('cm/dra/manager', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'dra-manager-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  function manager(o: { claim?: ResourceClaim; calls: DRAPluginCalls; registered?: boolean }): DRAManager {
    return new DRAManager({
      client: {
        request: <T>() =>
          o.claim ? Promise.resolve(o.claim as T) : Promise.reject(new Error('resourceclaims "c" not found')),
      },
      rootDir: dir,
      plugin: (d) => (o.registered === false || d !== DRIVER ? undefined : plugin),
      logger: silentLogger,
      cdiSpecDirs: [path.join(dir, 'cdi')],
      calls: o.calls,
    });
  }

  it('prepares once, survives a restart, shares, and unprepares after the last pod', async () => {
    const calls = new FakeCalls();
    const m = manager({ claim: claim(['u1', 'u2']), calls });
    await m.start();
    await m.prepareResources(pod('u1'));
    expect(calls.prepared).to.deep.equal(['claim-uid']);
    expect((await m.containerResources(pod('u1'), container, false)).cdiDevices).to.deep.equal([
      `${DRIVER}/test=claim-uid`,
    ]);

    // A new process reads the checkpoint: the claim is prepared already, for the same pod or a second one.
    const calls2 = new FakeCalls();
    const m2 = manager({ claim: claim(['u1', 'u2']), calls: calls2 });
    await m2.start();
    await m2.prepareResources(pod('u1'));
    await m2.prepareResources(pod('u2'));
    expect(calls2.prepared).to.deep.equal([]);
    expect(m2.claimInfos()[0]!.podUIDs).to.deep.equal(['u1', 'u2']);

    await m2.unprepareResources(pod('u1'));
    expect(calls2.unprepared).to.deep.equal([]);
    await m2.unprepareResources(pod('u2'));
    expect(calls2.unprepared).to.deep.equal(['claim-uid']);
    expect(m2.podMightNeedToUnprepareResources('u2')).to.equal(false);
    const cp = JSON.parse(await readFile(path.join(dir, 'dra_manager_state'), 'utf8')) as {
      entries: unknown[];
    };
    expect(cp.entries).to.deep.equal([]);
  });

  const failures: [string, { claim?: ResourceClaim; registered?: boolean; fail?: string }, string][] = [
    [
      'the claim cannot be read',
      {},
      'prepare dynamic resources: fetch ResourceClaim c: resourceclaims "c" not found',
    ],
    [
      'the claim is not reserved for the pod',
      { claim: claim(['other']) },
      'prepare dynamic resources: pod p-u1 (u1) is not allowed to use ResourceClaim c (claim-uid)',
    ],
    [
      'the driver is not registered',
      { claim: claim(['u1']), registered: false },
      `prepare dynamic resources: DRA driver ${DRIVER} is not registered`,
    ],
    [
      'the driver fails the claim',
      { claim: claim(['u1']), fail: 'out of devices' },
      'prepare dynamic resources: NodePrepareResources failed for ResourceClaim c: out of devices',
    ],
  ];
  for (const [name, o, want] of failures) {
    it(`refuses when ${name}`, async () => {
      const calls = new FakeCalls();
      calls.fail = o.fail ?? '';
      const m = manager({ ...o, calls });
      await m.start();
      let err: Error | undefined;
      await m.prepareResources(pod('u1')).catch((e: Error) => (err = e));
      expect(err?.message).to.equal(want);
    });
  }

  it("prepares the pod's extended resource claim, gives its mapped container the devices, unprepares it", async () => {
    const calls = new FakeCalls();
    const paths: string[] = [];
    const ext = { ...claim(['u1']), metadata: { name: 'p-ext', namespace: 'ns', uid: 'ext-uid' } };
    const m = new DRAManager({
      client: {
        request: <T>(r: { path: string }) => {
          paths.push(r.path);
          return Promise.resolve(ext as T);
        },
      },
      rootDir: dir,
      plugin: () => plugin,
      logger: silentLogger,
      calls,
    });
    await m.start();
    const p = {
      metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
      spec: { containers: [] },
      status: {
        extendedResourceClaimStatus: {
          resourceClaimName: 'p-ext',
          requestMappings: [{ containerName: 'a', resourceName: 'example.com/gpu', requestName: 'r' }],
        },
      },
    } as unknown as Pod;
    await m.prepareResources(p);
    expect(paths).to.deep.equal(['/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/p-ext']);
    expect(calls.prepared).to.deep.equal(['ext-uid']);
    const asking = { name: 'a', resources: { requests: { 'example.com/gpu': '1' } } } as unknown as Container;
    const other = { name: 'b', resources: { requests: { 'example.com/gpu': '1' } } } as unknown as Container;
    expect((await m.containerResources(p, asking, false)).cdiDevices).to.deep.equal([
      `${DRIVER}/test=ext-uid`,
    ]);
    expect((await m.containerResources(p, other, false)).cdiDevices).to.deep.equal([]);
    // A restarted process unprepares it from its checkpoint.
    const m2 = new DRAManager({
      client: { request: <T>() => Promise.resolve(ext as T) },
      rootDir: dir,
      plugin: () => plugin,
      logger: silentLogger,
      calls,
    });
    await m2.start();
    expect(m2.podMightNeedToUnprepareResources('u1')).to.equal(true);
    await m2.unprepareResources(p);
    expect(calls.unprepared).to.deep.equal(['ext-uid']);
    expect(m2.podMightNeedToUnprepareResources('u1')).to.equal(false);
  });

  it('a failed validation leaves nothing to unprepare', async () => {
    const calls = new FakeCalls();
    const m = manager({ claim: claim(['other']), calls });
    await m.start();
    await m.prepareResources(pod('u1')).catch(() => undefined);
    expect(m.podMightNeedToUnprepareResources('u1')).to.equal(false);
    await m.unprepareResources(pod('u1'));
    expect(calls.unprepared).to.deep.equal([]);
  });

  it('applies the CDI spec when asked, and fails a device no spec defines', async () => {
    const calls = new FakeCalls();
    const m = manager({ claim: claim(['u1']), calls });
    await m.start();
    await m.prepareResources(pod('u1'));
    let err: Error | undefined;
    await m.containerResources(pod('u1'), container, true).catch((e: Error) => (err = e));
    expect(err?.message).to.equal(`unresolvable CDI devices ${DRIVER}/test=claim-uid`);
    await mkdir(path.join(dir, 'cdi'));
    await writeFile(
      path.join(dir, 'cdi', 'claim.json'),
      JSON.stringify({
        kind: `${DRIVER}/test`,
        devices: [{ name: 'claim-uid', containerEdits: { env: ['user_a=b'] } }],
      }),
    );
    const got = await m.containerResources(pod('u1'), container, true);
    expect(got.edits?.env).to.deep.equal([{ key: 'user_a', value: 'b' }]);
  });

  it('reconcile unprepares the claims of pods no longer active', async () => {
    const calls = new FakeCalls();
    const m = manager({ claim: claim(['u1']), calls });
    await m.start();
    await m.prepareResources(pod('u1'));
    await m.reconcile(undefined);
    await m.reconcile(new Set(['u1']));
    expect(calls.unprepared).to.deep.equal([]);
    await m.reconcile(new Set());
    expect(calls.unprepared).to.deep.equal(['claim-uid']);
  });

  it('a corrupt checkpoint is set aside', async () => {
    await writeFile(path.join(dir, 'dra_manager_state'), '{"version":"kubelet-operator/dra/v1"');
    const m = manager({ claim: claim(['u1']), calls: new FakeCalls() });
    await m.start();
    expect(m.claimInfos()).to.deep.equal([]);
    expect(await readFile(path.join(dir, 'dra_manager_state.corrupt'), 'utf8')).to.contain('version');
  });

  for (const version of ['v1', 'v1beta1'] as const) {
    it(`calls a plugin over gRPC (${version}.DRAPlugin)`, async () => {
      const protoPath = fileURLToPath(
        new URL(`../../../../../../src/kubelet/cm/dra/proto/dra_${version}.proto`, import.meta.url),
      );
      const def = protoLoader.loadSync(protoPath, {
        keepCase: true,
        longs: String,
        enums: String,
        defaults: true,
      });
      const pkg = grpc.loadPackageDefinition(def) as unknown as {
        k8s: {
          io: {
            kubelet: { pkg: { apis: { dra: Record<string, { DRAPlugin: grpc.ServiceClientConstructor }> } } };
          };
        };
      };
      const seen: string[] = [];
      const server = new grpc.Server();
      server.addService(pkg.k8s.io.kubelet.pkg.apis.dra[version]!.DRAPlugin.service, {
        NodePrepareResources: (
          call: grpc.ServerUnaryCall<{ claims: { uid: string; name: string }[] }, unknown>,
          cb: grpc.sendUnaryData<unknown>,
        ) => {
          seen.push(`prepare ${call.request.claims.map((c) => c.name).join(',')}`);
          cb(null, {
            claims: Object.fromEntries(
              call.request.claims.map((c) => [
                c.uid,
                {
                  devices: [
                    { request_names: ['r'], pool_name: 'n', device_name: 'd', cdi_device_ids: ['v.io/c=d'] },
                  ],
                },
              ]),
            ),
          });
        },
        NodeUnprepareResources: (
          call: grpc.ServerUnaryCall<{ claims: { uid: string; name: string }[] }, unknown>,
          cb: grpc.sendUnaryData<unknown>,
        ) => {
          seen.push(`unprepare ${call.request.claims.map((c) => c.name).join(',')}`);
          cb(null, { claims: Object.fromEntries(call.request.claims.map((c) => [c.uid, {}])) });
        },
      });
      const socket = path.join(dir, 'dra.sock');
      await new Promise<void>((resolve, reject) =>
        server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
          err ? reject(err) : resolve(),
        ),
      );
      try {
        const m = new DRAManager({
          client: { request: <T>() => Promise.resolve(claim(['u1']) as T) },
          rootDir: dir,
          plugin: () => ({ ...plugin, endpoint: socket, chosenService: `${version}.DRAPlugin` }),
          logger: silentLogger,
        });
        await m.start();
        await m.prepareResources(pod('u1'));
        expect((await m.containerResources(pod('u1'), container, false)).cdiDevices).to.deep.equal([
          'v.io/c=d',
        ]);
        await m.unprepareResources(pod('u1'));
        expect(seen).to.deep.equal(['prepare c', 'unprepare c']);
      } finally {
        server.forceShutdown();
      }
    });
  }
});
