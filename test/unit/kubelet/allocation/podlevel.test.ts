// In-place resize of pod-level resources in the allocation (InPlacePodLevelResourcesVerticalScaling): the
// allocation carries spec.resources, the pod as allocated takes them, a restart reads them back from the status,
// and the allocation manager allocates, defers or finds infeasible a pod-level resize. Pure, fake clock.
import { expect } from 'chai';
import type { Pod, ResourceRequirements } from '../../../../src/api/core.js';
import {
  allocationFromPod,
  allocationFromStatus,
  resizeIncreasesRequests,
  updatePodFromAllocation,
} from '../../../../src/kubelet/allocation/allocation.js';
import { AllocationManager } from '../../../../src/kubelet/allocation/manager.js';
import { PodResizeConditions } from '../../../../src/kubelet/status/resizeconditions.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { admissionNode } from '../lifecycle/admission-fixtures.js';

function plr(uid: string, resources: ResourceRequirements | undefined, generation = 1): Pod {
  return {
    metadata: { name: uid, namespace: 'ns', uid, generation },
    spec: {
      containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu: '100m' } } }],
      ...(resources ? { resources } : {}),
    },
  };
}

const res = (cpu: string, memory: string): ResourceRequirements => ({
  requests: { cpu, memory },
  limits: { cpu, memory },
});

describe('pod-level resources in the allocation', () => {
  it('allocates spec.resources with the containers, and only when the pod has them', () => {
    expect(allocationFromPod(plr('a', res('1', '128Mi'))).podLevel).to.deep.equal(res('1', '128Mi'));
    expect(allocationFromPod(plr('a', undefined))).to.not.have.property('podLevel');
  });

  const cases: {
    name: string;
    allocated: ResourceRequirements | undefined;
    spec: ResourceRequirements | undefined;
    updated: boolean;
  }[] = [
    { name: 'same resources', allocated: res('1', '128Mi'), spec: res('1', '128Mi'), updated: false },
    {
      name: 'same in other words',
      allocated: res('1', '128Mi'),
      spec: res('1000m', '131072Ki'),
      updated: false,
    },
    { name: 'cpu resized', allocated: res('1', '128Mi'), spec: res('2', '128Mi'), updated: true },
    { name: 'memory resized', allocated: res('1', '128Mi'), spec: res('1', '256Mi'), updated: true },
    { name: 'neither has them', allocated: undefined, spec: undefined, updated: false },
  ];
  for (const c of cases) {
    it(`the pod as allocated: ${c.name}`, () => {
      const alloc = allocationFromPod(plr('a', c.allocated));
      const { pod, updated } = updatePodFromAllocation(plr('a', c.spec, 2), alloc);
      expect(updated).to.equal(c.updated);
      if (c.updated) expect(pod.spec.resources).to.deep.equal(c.allocated);
      else expect(pod.spec.resources).to.deep.equal(c.spec);
    });
  }

  it('a pod-level resize that grows requests is told from one that shrinks them', () => {
    expect(resizeIncreasesRequests(plr('a', res('2', '128Mi')), plr('a', res('1', '128Mi')))).to.equal(true);
    expect(resizeIncreasesRequests(plr('a', res('1', '64Mi')), plr('a', res('1', '128Mi')))).to.equal(false);
  });

  it('reads the pod-level allocation back from the status after a restart', () => {
    const p = plr('a', res('2', '256Mi'), 3);
    p.status = {
      phase: 'Running',
      allocatedResources: { cpu: '1', memory: '128Mi' },
      resources: { requests: { cpu: '1', memory: '128Mi' }, limits: { cpu: '1', memory: '128Mi' } },
      containerStatuses: [
        {
          name: 'app',
          ready: true,
          restartCount: 0,
          allocatedResources: { cpu: '100m' },
          resources: { requests: { cpu: '100m' } },
        },
      ],
    };
    const alloc = allocationFromStatus(p)!;
    expect(alloc.podLevel).to.deep.equal(res('1', '128Mi'));
    expect(updatePodFromAllocation(p, alloc).pod.spec.resources).to.deep.equal(res('1', '128Mi'));
    // A status with nothing at pod level: the spec's own.
    const q = plr('b', res('1', '64Mi'));
    q.status = { containerStatuses: p.status.containerStatuses! };
    expect(allocationFromStatus(q)!.podLevel).to.deep.equal(res('1', '64Mi'));
  });
});

describe('AllocationManager: pod-level resize', () => {
  function harness() {
    const clock = new FakeClock();
    const conditions = new PodResizeConditions(clock);
    const pods = new Map<string, Pod>();
    const events: string[] = [];
    const node = admissionNode({ cpu: 4000, memory: 1 << 30, pods: 110 });
    const m = new AllocationManager({
      conditions,
      node: () => node,
      getPodByUID: (uid) => pods.get(uid),
      activePods: () => [...pods.values()],
      record: (p, type, reason) => events.push(`${p.metadata.name} ${type} ${reason}`),
      triggerPodSync: () => undefined,
      logger: { info: () => undefined },
    });
    const admit = (p: Pod) => {
      pods.set(p.metadata.uid!, p);
      m.setAllocated(m.podForAdmission(p));
    };
    const update = (p: Pod) => {
      pods.set(p.metadata.uid!, p);
      m.handlePodUpdate(p);
    };
    return { conditions, events, m, admit, update, pods };
  }

  const cases: {
    name: string;
    to: ResourceRequirements;
    allocated: ResourceRequirements;
    pending?: string;
    event: string;
  }[] = [
    {
      name: 'fits: allocated at once, in progress',
      to: res('2', '256Mi'),
      allocated: res('2', '256Mi'),
      event: 'a Normal ResizeStarted',
    },
    {
      name: 'fits the node but not beside the other pod: Deferred',
      to: res('3', '256Mi'),
      allocated: res('1', '128Mi'),
      pending: 'Deferred',
      event: 'a Warning ResizeDeferred',
    },
    {
      name: 'more than the node has: Infeasible',
      to: res('5', '256Mi'),
      allocated: res('1', '128Mi'),
      pending: 'Infeasible',
      event: 'a Warning ResizeInfeasible',
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const h = harness();
      h.admit(plr('a', res('1', '128Mi')));
      h.admit(plr('b', res('1500m', '128Mi')));
      h.update(plr('a', c.to, 2));
      const asAllocated = h.m.updatePodFromAllocation(plr('a', c.to, 2));
      expect(asAllocated.pod.spec.resources).to.deep.equal(c.allocated);
      expect(h.conditions.pending('a')?.reason).to.equal(c.pending);
      expect(h.conditions.inProgress('a') !== undefined).to.equal(c.pending === undefined);
      expect(h.events).to.deep.equal([c.event]);
      expect(h.m.pendingResizeUIDs()).to.deep.equal(c.pending === 'Deferred' ? ['a'] : []);
    });
  }

  it('a deferred pod-level resize is allocated once the other pod is gone', () => {
    const h = harness();
    h.admit(plr('a', res('1', '128Mi')));
    h.admit(plr('b', res('1500m', '128Mi')));
    h.update(plr('a', res('3', '256Mi'), 2));
    expect(h.conditions.pending('a')?.reason).to.equal('Deferred');
    h.pods.delete('b');
    h.m.removePod('b');
    h.m.retryPendingResizes('pod_terminated');
    expect(h.m.updatePodFromAllocation(plr('a', res('3', '256Mi'), 2)).updated).to.equal(false);
    expect(h.conditions.pending('a')).to.equal(undefined);
  });
});
