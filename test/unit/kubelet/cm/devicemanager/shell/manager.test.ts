import { expect } from 'chai';
import type { Container, Pod } from '../../../../../../src/api/core.js';
import { DeviceManager } from '../../../../../../src/kubelet/cm/devicemanager/shell/manager.js';
import type {
  ContainerAllocateResponse,
  DevicePluginEndpoint,
  DevicePluginOptions,
  PluginDevice,
} from '../../../../../../src/kubelet/cm/devicemanager/types.js';
import { FakeClock } from '../../../../../../src/util/clock.js';
import { silentLogger } from '../../../../../../src/util/logger.js';

const R = 'example.com/gpu';

/** A plugin in memory: records calls, reports what the test says. */
class FakePlugin implements DevicePluginEndpoint {
  readonly calls: string[] = [];
  private push: ((d: PluginDevice[]) => void) | undefined;
  private end: (() => void) | undefined;
  constructor(
    readonly socketPath: string,
    private readonly options: DevicePluginOptions,
    private devices: PluginDevice[],
    private readonly preferred: string[] = [],
  ) {}
  getDevicePluginOptions(): Promise<DevicePluginOptions> {
    return Promise.resolve(this.options);
  }
  listAndWatch(onDevices: (d: PluginDevice[]) => void, onEnd: () => void): void {
    this.push = onDevices;
    this.end = onEnd;
    onDevices(this.devices);
  }
  report(devices: PluginDevice[]): void {
    this.devices = devices;
    this.push?.(devices);
  }
  getPreferredAllocation(available: string[], mustInclude: string[], size: number): Promise<string[]> {
    this.calls.push(`preferred ${available.join(',')} must=${mustInclude.join(',')} size=${size}`);
    return Promise.resolve(this.preferred);
  }
  allocate(ids: string[]): Promise<ContainerAllocateResponse[]> {
    this.calls.push(`allocate ${ids.join(',')}`);
    return Promise.resolve([
      { envs: { GPUS: ids.join(',') }, mounts: [], devices: [], annotations: {}, cdi_devices: [] },
    ]);
  }
  preStartContainer(ids: string[]): Promise<void> {
    this.calls.push(`prestart ${ids.join(',')}`);
    return Promise.resolve();
  }
  close(): void {
    const e = this.end;
    this.end = undefined;
    e?.();
  }
}

const healthy = (...ids: string[]): PluginDevice[] => ids.map((ID) => ({ ID, health: 'Healthy' }));
const container = (name: string, gpus?: number): Container => ({
  name,
  image: 'x',
  ...(gpus === undefined
    ? {}
    : { resources: { limits: { [R]: String(gpus) }, requests: { [R]: String(gpus) } } }),
});
const pod = (uid: string, containers: Container[], initContainers: Container[] = []): Pod => ({
  metadata: { name: uid, namespace: 'default', uid },
  spec: { containers, ...(initContainers.length ? { initContainers } : {}) },
});

/** A manager with `plugin` registered through the Registration service's path (dial). */
async function managerWith(plugin: FakePlugin, active: Pod[] = []) {
  const clock = new FakeClock();
  const synced: string[][] = [];
  const m = new DeviceManager({
    clock,
    logger: silentLogger,
    activePods: () => active,
    onPodsNeedSync: (uids) => synced.push(uids),
  });
  // Registration as the gRPC Register handler does it, without a socket.
  await (m as unknown as { connect(r: string, e: DevicePluginEndpoint): Promise<void> }).connect(R, plugin);
  return { m, clock, synced, active };
}

const opts = (o: Partial<DevicePluginOptions> = {}): DevicePluginOptions => ({
  pre_start_required: false,
  get_preferred_allocation_available: false,
  ...o,
});

describe('devicemanager/manager', () => {
  it('capacity and allocatable from ListAndWatch; a gone plugin leaves after 5 minutes, then 0', async () => {
    const plugin = new FakePlugin('/dp/a.sock', opts(), [
      ...healthy('gpu-0'),
      { ID: 'gpu-1', health: 'Unhealthy' },
    ]);
    const { m, clock } = await managerWith(plugin);
    expect(m.capacity()).to.deep.equal({ capacity: { [R]: '2' }, allocatable: { [R]: '1' }, removed: [] });
    plugin.close();
    expect(m.capacity()).to.deep.equal({ capacity: { [R]: '2' }, allocatable: { [R]: '0' }, removed: [] });
    clock.advance(5 * 60_000 + 1);
    expect(m.capacity()).to.deep.equal({ capacity: {}, allocatable: {}, removed: [R] });
  });

  it('admission: allocates per container; beyond the count the kubelet message', async () => {
    const plugin = new FakePlugin('/dp/a.sock', opts(), healthy('gpu-0', 'gpu-1'));
    const { m, active } = await managerWith(plugin);
    const p1 = pod('u1', [container('a', 2)]);
    expect(await m.admit(p1)).to.deep.equal({ admit: true });
    active.push(p1);
    expect(plugin.calls).to.deep.equal(['allocate gpu-0,gpu-1']);
    expect(await m.admit(pod('u2', [container('b', 1)]))).to.deep.equal({
      admit: false,
      reason: 'UnexpectedAdmissionError',
      message: `Allocate failed due to requested number of devices unavailable for ${R}. Requested: 1, Available: 0, which is unexpected`,
    });
    expect(await m.admit(pod('u3', [container('nothing')]))).to.deep.equal({ admit: true });
    // The first pod ends: its devices are free at the next allocation.
    active.splice(0);
    expect(await m.admit(pod('u4', [container('c', 1)]))).to.deep.equal({ admit: true });
    expect(m.containerDevices('u4', 'c')).to.deep.equal([{ resource: R, ids: ['gpu-0'] }]);
  });

  it("skips a resource the pod's DRA extended resource claim serves (DRAExtendedResource)", async () => {
    const plugin = new FakePlugin('/dp/a.sock', opts(), healthy('gpu-0'));
    const { m } = await managerWith(plugin);
    const p = pod('u1', [container('a', 5), container('b', 1)]);
    p.status = {
      extendedResourceClaimStatus: {
        resourceClaimName: 'u1-extended-resources-x',
        requestMappings: [{ containerName: 'a', resourceName: R, requestName: 'container-0-request-0' }],
      },
    };
    // Five for `a` would not fit the plugin's one device: the claim serves them; `b` still gets the plugin's.
    expect(await m.admit(p)).to.deep.equal({ admit: true });
    expect(plugin.calls).to.deep.equal(['allocate gpu-0']);
    expect(m.containerDevices('u1', 'a')).to.deep.equal([]);
    expect(m.containerDevices('u1', 'b')).to.deep.equal([{ resource: R, ids: ['gpu-0'] }]);
  });

  it('the preferred allocation is asked when offered and followed', async () => {
    const plugin = new FakePlugin(
      '/dp/a.sock',
      opts({ get_preferred_allocation_available: true }),
      healthy('gpu-0', 'gpu-1', 'gpu-2'),
      ['gpu-2'],
    );
    const { m } = await managerWith(plugin);
    expect((await m.admit(pod('u1', [container('a', 1)]))).admit).to.equal(true);
    expect(plugin.calls).to.deep.equal(['preferred gpu-0,gpu-1,gpu-2 must= size=1', 'allocate gpu-2']);
  });

  it('an init container hands its devices on to the app container', async () => {
    const plugin = new FakePlugin('/dp/a.sock', opts(), healthy('gpu-0', 'gpu-1'));
    const { m } = await managerWith(plugin);
    const p = pod('u1', [container('app', 1)], [container('init', 1)]);
    expect((await m.admit(p)).admit).to.equal(true);
    expect(m.containerDevices('u1', 'init')).to.deep.equal([{ resource: R, ids: ['gpu-0'] }]);
    expect(m.containerDevices('u1', 'app')).to.deep.equal([{ resource: R, ids: ['gpu-0'] }]);
  });

  it('container creation: PreStartContainer when asked, then the Allocate answer as options', async () => {
    const plugin = new FakePlugin('/dp/a.sock', opts({ pre_start_required: true }), healthy('gpu-0'));
    const { m, active } = await managerWith(plugin);
    const p = pod('u1', [container('a', 1), container('plain')]);
    await m.admit(p);
    active.push(p);
    const o = await m.runContainerOptions(p, p.spec.containers[0]!);
    expect(o?.envs).to.deep.equal([{ name: 'GPUS', value: 'gpu-0' }]);
    expect(plugin.calls).to.deep.equal(['allocate gpu-0', 'prestart gpu-0']);
    expect(await m.runContainerOptions(p, p.spec.containers[1]!)).to.equal(undefined);
  });

  it('a health change of an assigned device syncs its pod; the status shows it', async () => {
    const plugin = new FakePlugin('/dp/a.sock', opts(), healthy('gpu-0', 'gpu-1'));
    const { m, synced, active } = await managerWith(plugin);
    const p = pod('u1', [container('a', 1)]);
    await m.admit(p);
    active.push(p);
    plugin.report([{ ID: 'gpu-0', health: 'Unhealthy' }, ...healthy('gpu-1')]);
    expect(synced).to.deep.equal([['u1']]);
    // A change of a device nobody holds syncs nothing.
    plugin.report([
      { ID: 'gpu-0', health: 'Unhealthy' },
      { ID: 'gpu-1', health: 'Unhealthy' },
    ]);
    expect(synced).to.have.length(1);
    const statuses = m.allocatedResourcesStatus(p, [{ name: 'a', ready: true, restartCount: 0 }]);
    expect(statuses[0]!.allocatedResourcesStatus).to.deep.equal([
      { name: R, resources: [{ resourceID: 'gpu-0', health: 'Unhealthy' }] },
    ]);
    expect(m.allocatableDevices()).to.deep.equal([]);
  });

  it('simulated devices from the spec go through the same manager', async () => {
    const clock = new FakeClock();
    const synced: string[][] = [];
    const active: Pod[] = [];
    const m = new DeviceManager({
      clock,
      logger: silentLogger,
      activePods: () => active,
      onPodsNeedSync: (u) => synced.push(u),
    });
    m.setSimDevices([{ resource: R, count: 2, unhealthy: 0 }]);
    await Promise.resolve();
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect(m.capacity()).to.deep.equal({ capacity: { [R]: '2' }, allocatable: { [R]: '2' }, removed: [] });
    const p = pod('u1', [container('a', 2)]);
    expect((await m.admit(p)).admit).to.equal(true);
    active.push(p);
    expect((await m.runContainerOptions(p, p.spec.containers[0]!))?.envs).to.deep.equal([
      { name: 'EXAMPLE_COM_GPU_DEVICES', value: 'gpu-0,gpu-1' },
    ]);
    m.setSimDevices([{ resource: R, count: 2, unhealthy: 1 }]);
    expect(synced).to.deep.equal([['u1']]);
    expect(m.capacity().allocatable).to.deep.equal({ [R]: '1' });
    m.setSimDevices([]);
    expect(m.capacity().allocatable).to.deep.equal({ [R]: '0' });
    await m.stop();
  });
});
