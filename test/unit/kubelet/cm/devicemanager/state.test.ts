import { expect } from 'chai';
import {
  applyDeviceList,
  completeAllocation,
  decodeCheckpoint,
  deviceCapacity,
  emptyResource,
  encodeCheckpoint,
  markResourceUnhealthy,
  PodDevices,
  planAllocation,
  sanitizeAllocatable,
  withAllocatedResourcesStatus,
  type AllocationInput,
  type ResourceState,
} from '../../../../../src/kubelet/cm/devicemanager/state.js';
import type { ContainerAllocateResponse } from '../../../../../src/kubelet/cm/devicemanager/types.js';

const R = 'example.com/gpu';
const resp = (envs: Record<string, string> = {}, more: Partial<ContainerAllocateResponse> = {}) => ({
  envs,
  mounts: [],
  devices: [],
  annotations: {},
  cdi_devices: [],
  ...more,
});
const resource = (healthy: string[], unhealthy: string[] = [], stoppedAt?: number): ResourceState => {
  const all = new Map(
    [...healthy.map((id) => [id, 'Healthy']), ...unhealthy.map((id) => [id, 'Unhealthy'])].map(
      ([ID, health]) => [ID!, { ID: ID!, health: health! }],
    ),
  );
  return {
    healthy: new Set(healthy),
    unhealthy: new Set(unhealthy),
    all,
    ...(stoppedAt === undefined
      ? { options: { pre_start_required: false, get_preferred_allocation_available: false } }
      : { stoppedAt }),
  };
};

describe('devicemanager/state', () => {
  describe('planAllocation (kubelet devicesToAllocate, topology policy none)', () => {
    const base: AllocationInput = {
      podUID: 'u1',
      container: 'c',
      resource: R,
      required: 1,
      existing: undefined,
      state: resource(['gpu-0', 'gpu-1']),
      inUse: new Set(),
      reusable: new Set(),
      runningBeforeRestart: false,
    };
    const table: [string, Partial<AllocationInput>, ReturnType<typeof planAllocation>][] = [
      [
        'free devices: choose among them, sorted',
        { required: 1, state: resource(['gpu-1', 'gpu-0']) },
        { kind: 'choose', taken: [], needed: 1, available: ['gpu-0', 'gpu-1'], required: 1 },
      ],
      [
        'devices in use are not available',
        { required: 1, inUse: new Set(['gpu-0']) },
        { kind: 'choose', taken: [], needed: 1, available: ['gpu-1'], required: 1 },
      ],
      [
        'more than free: the kubelet message',
        { required: 2, inUse: new Set(['gpu-0']) },
        {
          kind: 'error',
          message: `requested number of devices unavailable for ${R}. Requested: 2, Available: 1`,
        },
      ],
      [
        'a resource nobody registered',
        { state: undefined },
        { kind: 'error', message: `cannot allocate unregistered device ${R}` },
      ],
      [
        'only unhealthy devices',
        { state: resource([], ['gpu-0']) },
        { kind: 'error', message: `no healthy devices present; cannot allocate unhealthy devices ${R}` },
      ],
      ['the container holds them already', { existing: ['gpu-1'] }, { kind: 'none' }],
      [
        'held devices turned unhealthy',
        { existing: ['gpu-1'], state: resource(['gpu-0'], ['gpu-1']) },
        {
          kind: 'error',
          message: `previously allocated devices are no longer healthy; cannot allocate unhealthy devices ${R}`,
        },
      ],
      [
        'a changed request',
        { existing: ['gpu-1'], required: 2 },
        { kind: 'error', message: `pod "u1" container "c" changed request for resource "${R}" from 1 to 2` },
      ],
      [
        'running since before a restart, plugin not back: nothing to do',
        { existing: ['gpu-1'], state: resource([], [], 5), runningBeforeRestart: true },
        { kind: 'none' },
      ],
      [
        'what an init container released is reused first',
        { required: 1, reusable: new Set(['gpu-1']), inUse: new Set(['gpu-1']) },
        { kind: 'done', devices: ['gpu-1'] },
      ],
      [
        'reuse, then free ones',
        { required: 2, reusable: new Set(['gpu-1']), inUse: new Set(['gpu-1']) },
        { kind: 'choose', taken: ['gpu-1'], needed: 1, available: ['gpu-0'], required: 2 },
      ],
    ];
    for (const [name, input, want] of table)
      it(name, () => expect(planAllocation({ ...base, ...input })).to.deep.equal(want));
  });

  describe('completeAllocation', () => {
    const plan = {
      kind: 'choose' as const,
      taken: ['a'],
      needed: 2,
      available: ['b', 'c', 'd'],
      required: 3,
    };
    const table: [string, string[] | undefined, string[]][] = [
      ['no preference: in order', undefined, ['a', 'b', 'c']],
      ['the preferred ones first', ['d', 'c'], ['a', 'd', 'c']],
      ['preferred but not free is skipped, filled up in order', ['x', 'd'], ['a', 'd', 'b']],
      ['a preference repeating the taken one', ['a', 'c'], ['a', 'c', 'b']],
    ];
    for (const [name, preferred, want] of table)
      it(name, () => expect(completeAllocation(plan, preferred)).to.deep.equal(want));
  });

  describe('ListAndWatch answers and capacity (kubelet GetCapacity)', () => {
    it('healthy devices are capacity and allocatable, unhealthy only capacity', () => {
      const { next, changed } = applyDeviceList(emptyResource(), [
        { ID: 'gpu-0', health: 'Healthy' },
        { ID: 'gpu-1', health: 'Unhealthy' },
      ]);
      expect(changed).to.deep.equal(['gpu-0', 'gpu-1']);
      const c = deviceCapacity(new Map([[R, next]]), 0, 300_000);
      expect(c).to.deep.equal({ capacity: { [R]: '2' }, allocatable: { [R]: '1' }, expired: [] });
    });

    it('only devices whose health changed are reported changed', () => {
      const { next } = applyDeviceList(emptyResource(), [
        { ID: 'a', health: 'Healthy' },
        { ID: 'b', health: 'Healthy' },
      ]);
      const again = applyDeviceList(next, [
        { ID: 'a', health: 'Healthy' },
        { ID: 'b', health: 'Unhealthy' },
      ]);
      expect(again.changed).to.deep.equal(['b']);
    });

    it('a gone plugin: nothing allocatable, capacity kept until the grace period ends', () => {
      const gone = markResourceUnhealthy(resource(['a', 'b'], ['c']), 1_000);
      expect(gone.options).to.equal(undefined);
      const table: [number, ReturnType<typeof deviceCapacity>][] = [
        [1_000 + 300_000, { capacity: { [R]: '3' }, allocatable: { [R]: '0' }, expired: [] }],
        [1_000 + 300_001, { capacity: {}, allocatable: {}, expired: [R] }],
      ];
      for (const [now, want] of table)
        expect(deviceCapacity(new Map([[R, gone]]), now, 300_000)).to.deep.equal(want);
    });
  });

  describe('PodDevices', () => {
    it('run container options: per resource, first setting wins, conflicts reported', () => {
      const p = new PodDevices();
      p.insert('u', 'c', 'b.com/x', {
        ids: ['x0'],
        resp: resp(
          { SHARED: 'from-b', B: '1' },
          {
            mounts: [{ container_path: '/m', host_path: '/hb', read_only: true }],
            devices: [{ container_path: '/dev/x', host_path: '/dev/x0', permissions: 'rw' }],
            annotations: { note: 'b' },
            cdi_devices: [{ name: 'b.com/x=x0' }],
          },
        ),
      });
      p.insert('u', 'c', 'a.com/y', {
        ids: ['y0'],
        resp: resp(
          { SHARED: 'from-a' },
          { mounts: [{ container_path: '/m', host_path: '/ha', read_only: false }] },
        ),
      });
      const conflicts: string[] = [];
      const opts = p.runContainerOptions('u', 'c', (what, key) => conflicts.push(`${what}:${key}`));
      expect(opts).to.deep.equal({
        envs: [
          { name: 'SHARED', value: 'from-a' },
          { name: 'B', value: '1' },
        ],
        mounts: [{ containerPath: '/m', hostPath: '/ha', readOnly: false }],
        devices: [{ containerPath: '/dev/x', hostPath: '/dev/x0', permissions: 'rw' }],
        annotations: [{ name: 'note', value: 'b' }],
        cdiDevices: ['b.com/x=x0'],
      });
      expect(conflicts).to.deep.equal(['environment variable:SHARED', 'mount:/m']);
      expect(p.runContainerOptions('u', 'other')).to.equal(undefined);
    });

    it('reuse: a regular init container gives its devices to the containers after it', () => {
      const p = new PodDevices();
      p.insert('u', 'init', R, { ids: ['gpu-0'], resp: resp() });
      const reuse = new Map<string, Set<string>>();
      p.addToReusable('u', 'init', reuse);
      expect([...reuse.get(R)!]).to.deep.equal(['gpu-0']);
      p.insert('u', 'app', R, { ids: ['gpu-0'], resp: resp() });
      p.removeFromReusable('u', 'app', reuse);
      expect([...reuse.get(R)!]).to.deep.equal([]);
    });

    it('devices, owners, deletion', () => {
      const p = new PodDevices();
      p.insert('u1', 'c', R, { ids: ['gpu-1', 'gpu-0'], resp: resp() });
      p.insert('u2', 'c', R, { ids: ['gpu-2'], resp: resp() });
      expect([...p.devices().get(R)!].sort()).to.deep.equal(['gpu-0', 'gpu-1', 'gpu-2']);
      expect(p.ownerOf(R, 'gpu-2')).to.deep.equal({ podUID: 'u2', container: 'c' });
      p.delete(['u2']);
      expect(p.ownerOf(R, 'gpu-2')).to.equal(undefined);
      expect(p.containerDevices('u1', 'c', R)).to.deep.equal(['gpu-0', 'gpu-1']);
    });

    it('checkpoint round trip; a corrupted file is refused', () => {
      const p = new PodDevices();
      p.insert('u1', 'c', R, { ids: ['gpu-0'], resp: resp({ A: '1' }) });
      const text = encodeCheckpoint(p.toCheckpoint(new Map([[R, resource(['gpu-0', 'gpu-1'])]])));
      const back = decodeCheckpoint(text);
      expect(back).to.have.property('data');
      const data = (back as { data: ReturnType<PodDevices['toCheckpoint']> }).data;
      expect(data.RegisteredDevices).to.deep.equal({ [R]: ['gpu-0', 'gpu-1'] });
      const q = PodDevices.fromCheckpoint(data);
      expect(q.containerDevices('u1', 'c', R)).to.deep.equal(['gpu-0']);
      expect(q.runContainerOptions('u1', 'c')?.envs).to.deep.equal([{ name: 'A', value: '1' }]);
      expect(decodeCheckpoint(text.replace('gpu-0', 'gpu-9'))).to.deep.equal({
        error: 'checkpoint is corrupted',
      });
      expect(decodeCheckpoint('{')).to.have.property('error');
    });
  });

  it('sanitizeAllocatable: at least what is assigned', () => {
    const allocated = new Map([[R, new Set(['gpu-0', 'gpu-1'])]]);
    expect(sanitizeAllocatable(new Map([[R, 2]]), allocated)).to.equal(undefined);
    expect(sanitizeAllocatable(new Map([[R, 1]]), allocated)?.get(R)).to.equal(2);
    expect(sanitizeAllocatable(new Map(), allocated)?.get(R)).to.equal(2);
  });

  describe('withAllocatedResourcesStatus (kubelet UpdateAllocatedResourcesStatus)', () => {
    const p = new PodDevices();
    p.insert('u', 'c', R, { ids: ['gpu-0', 'gpu-1', 'gpu-9'], resp: resp() });
    const resources = new Map([[R, resource(['gpu-0'], ['gpu-1'])]]);
    it('each held device with its health; one the plugin no longer lists counts Healthy; no message', () => {
      const out = withAllocatedResourcesStatus(
        'u',
        [
          { name: 'c', ready: true, restartCount: 0 },
          { name: 'other', ready: true, restartCount: 0 },
        ],
        p,
        resources,
      );
      expect(out[0]!.allocatedResourcesStatus).to.deep.equal([
        {
          name: R,
          resources: [
            { resourceID: 'gpu-0', health: 'Healthy' },
            { resourceID: 'gpu-1', health: 'Unhealthy' },
            { resourceID: 'gpu-9', health: 'Healthy' },
          ],
        },
      ]);
      expect(out[1]).to.not.have.property('allocatedResourcesStatus');
    });
    it("others' entries stay, the resource's own is replaced", () => {
      const out = withAllocatedResourcesStatus(
        'u',
        [
          {
            name: 'c',
            ready: true,
            restartCount: 0,
            allocatedResourcesStatus: [
              { name: 'claim:x', resources: [] },
              { name: R, resources: [{ resourceID: 'old', health: 'Unknown' }] },
            ],
          },
        ],
        p,
        resources,
      );
      expect(out[0]!.allocatedResourcesStatus!.map((e) => e.name)).to.deep.equal(['claim:x', R]);
      expect(out[0]!.allocatedResourcesStatus![1]!.resources!.map((r) => r.resourceID)).to.deep.equal([
        'gpu-0',
        'gpu-1',
        'gpu-9',
      ]);
    });
    it('a pod without devices: the same array', () => {
      const statuses = [{ name: 'c', ready: true, restartCount: 0 }];
      expect(withAllocatedResourcesStatus('nobody', statuses, p, resources)).to.equal(statuses);
    });
  });
});
