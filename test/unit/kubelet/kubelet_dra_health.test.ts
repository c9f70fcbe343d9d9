// DRA device health inside a Kubelet on the simulated runtime (fake clock): the DRA manager prepares a pod's
// claim through fake plugin calls, a fake health stream reports the claim's device, and the report reaches the
// container's allocatedResourcesStatus through a sync of the pod (kubelet HandlePodSyncs), Healthy, then
// Unhealthy with the driver's message; a device not heard of within its timeout reads Unknown.
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../../src/api/core.js';
import type { ResourceClaim } from '../../../src/kubelet/cm/dra/claiminfo.js';
import type { WireDeviceHealth } from '../../../src/kubelet/cm/dra/healthinfo.js';
import { DRAManager } from '../../../src/kubelet/cm/dra/shell/manager.js';
import type { DRAPlugin } from '../../../src/kubelet/pluginmanager/dradrivers.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { silentLogger } from '../../../src/util/logger.js';
import { advance, mkPod, setup, start } from './kubelet-fixtures.js';

const DRIVER = 'gpu.example.com';

/**
 * Fake time forward until `cond`, letting real time pass too: the DRA manager's checkpoint writes are real file
 * I/O, which a fake clock's step does not wait for.
 */
async function advanceUntil(
  clock: Parameters<typeof advance>[0],
  cond: () => boolean,
  what: string,
): Promise<void> {
  for (let i = 0; i < 300 && !cond(); i++) {
    await advance(clock, 100);
    await new Promise((r) => setTimeout(r, 2));
  }
  if (!cond()) throw new Error(`never happened: ${what}`);
}

describe('Kubelet with DRA device health', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'kubelet-dra-health-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a driver's report re-syncs the pod: its container's claim entry goes Healthy, then Unhealthy with the message", async () => {
    const { clock, api, deps } = setup();
    const plugin: DRAPlugin = {
      driverName: DRIVER,
      endpoint: '/fake',
      chosenService: 'v1.DRAPlugin',
      chosenHealthService: 'v1.DRAResourceHealth',
      registeredAt: 0,
    };
    const claim: ResourceClaim = {
      metadata: { name: 'claim', namespace: 'ns', uid: 'claim-uid' },
      status: {
        allocation: {
          devices: { results: [{ driver: DRIVER, request: 'r', pool: 'node', device: 'gpu-0' }] },
        },
        reservedFor: [{ resource: 'pods', uid: 'a' }],
      },
    };
    let report: ((devices: WireDeviceHealth[]) => void) | undefined;
    const ref: { k?: Kubelet } = {};
    const dra = new DRAManager({
      client: { request: <T>() => Promise.resolve(claim as T) },
      rootDir: dir,
      plugin: () => plugin,
      logger: silentLogger,
      calls: {
        prepare: (_p, b) =>
          Promise.resolve(
            Object.fromEntries(
              b.claims.map((c) => [
                c.uid,
                {
                  devices: [{ requestNames: ['r'], poolName: 'node', deviceName: 'gpu-0', cdiDeviceIDs: [] }],
                },
              ]),
            ),
          ),
        unprepare: (_p, b) => Promise.resolve(Object.fromEntries(b.claims.map((c) => [c.uid, {}]))),
      },
      openHealthStream: (_p, on) => {
        report = on.report;
        return Promise.resolve({ cancel: () => on.end({ code: 1 }) });
      },
      onPodsNeedSync: (uids) => ref.k?.resourceHealthChanged(uids),
      now: () => clock.now(),
    });
    await dra.start();
    const k = (ref.k = new Kubelet({ ...deps(), dynamicResources: dra }));
    await start(k, clock);
    const a: Pod = mkPod('a', {
      resourceClaims: [{ name: 'gpu', resourceClaimName: 'claim' }],
      containers: [
        { name: 'app', image: 'img:1', resources: { claims: [{ name: 'gpu' }] } },
        { name: 'side', image: 'img:1' },
      ],
    } as Partial<Pod['spec']>);
    api.pods.set('p-a', a);
    k.handlePodAdd(a);
    const healthOf = (c = 0): unknown =>
      k.statusManager.peekPodStatus('a' as never)?.containerStatuses?.[c]?.allocatedResourcesStatus;
    const entry = (health: string, message?: string) => [
      {
        name: 'claim:gpu',
        resources: [{ resourceID: `${DRIVER}/node/gpu-0`, health, ...(message ? { message } : {}) }],
      },
    ];
    const same = (want: unknown) => () => JSON.stringify(healthOf()) === JSON.stringify(want);
    // Prepared, not heard of: Unknown. The container without the claim gets nothing.
    await advanceUntil(clock, same(entry('Unknown')), 'the claim entry, Unknown');
    expect(healthOf(1)).to.equal(undefined);

    dra.watchHealth(plugin);
    await advance(clock, 10);
    report!([{ device: { pool_name: 'node', device_name: 'gpu-0' }, health: 'HEALTHY' }]);
    await advanceUntil(clock, same(entry('Healthy')), 'Healthy');
    report!([
      { device: { pool_name: 'node', device_name: 'gpu-0' }, health: 'UNHEALTHY', message: 'XID 79' },
    ]);
    // Within a second of fake time: the report synced the pod, no periodic resync did.
    const at = clock.now();
    await advanceUntil(clock, same(entry('Unhealthy', 'XID 79')), 'Unhealthy');
    expect(clock.now() - at).to.be.at.most(1_000);
    expect(healthOf(1)).to.equal(undefined);

    await k.stop(0);
    await dra.stop();
  });
});
