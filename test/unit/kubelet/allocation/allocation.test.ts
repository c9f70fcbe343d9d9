// The allocation of a pod (src/kubelet/allocation/allocation.ts) and resize admission (resizeadmission.ts):
// pure data in, data out.
import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import {
  allocationFromPod,
  allocationFromStatus,
  resizeIncreasesRequests,
  sameRequirements,
  updatePodFromAllocation,
} from '../../../../src/kubelet/allocation/allocation.js';
import { admitResize } from '../../../../src/kubelet/allocation/resizeadmission.js';
import type { AdmissionNode } from '../../../../src/kubelet/lifecycle/admission.js';

function ctr(name: string, cpu?: string, memory?: string, extra: Partial<Container> = {}): Container {
  const requests: Record<string, string> = {};
  if (cpu) requests.cpu = cpu;
  if (memory) requests.memory = memory;
  return { name, image: 'busybox', resources: { requests, limits: { ...requests } }, ...extra };
}

function pod(uid: string, containers: Container[], initContainers?: Container[]): Pod {
  return {
    metadata: { name: uid, namespace: 'ns', uid, generation: 1 },
    spec: { containers, ...(initContainers ? { initContainers } : {}) },
  };
}

const node: AdmissionNode = {
  name: 'n',
  labels: {},
  taints: [],
  allocatable: new Map([
    ['cpu', 2000],
    ['memory', 4 * 1024 ** 3],
    ['pods', 110],
  ]),
};

describe('pod allocation', () => {
  it('allocates every init container, sidecar or not, then the regular ones (InPlacePodVerticalScalingInitContainers)', () => {
    const p = pod(
      'a',
      [ctr('app', '100m')],
      [ctr('init', '50m'), ctr('side', '20m', undefined, { restartPolicy: 'Always' })],
    );
    expect([...allocationFromPod(p).containers.keys()]).to.deep.equal(['init', 'side', 'app']);
  });

  it('syncs a run-to-completion init container with its allocation, as a regular one', () => {
    const admitted = pod('a', [ctr('app', '100m')], [ctr('init', '50m', '32Mi')]);
    const alloc = allocationFromPod(admitted);
    const resized = pod('a', [ctr('app', '100m')], [ctr('init', '200m', '32Mi')]);
    const { pod: synced, updated } = updatePodFromAllocation(resized, alloc);
    expect(updated).to.equal(true);
    expect(synced.spec.initContainers![0]!.resources?.requests?.cpu).to.equal('50m');
    expect(synced.spec.containers, 'regular list kept').to.equal(resized.spec.containers);
  });

  it('compares quantities by value', () => {
    expect(sameRequirements({ requests: { cpu: '1' } }, { requests: { cpu: '1000m' } })).to.equal(true);
    expect(sameRequirements({ limits: { memory: '1Gi' } }, { limits: { memory: '1073741824' } })).to.equal(
      true,
    );
    expect(sameRequirements({ requests: { cpu: '1' } }, { requests: { cpu: '1', memory: '1Mi' } })).to.equal(
      false,
    );
  });

  it('syncs the allocation, not the spec, and copies only when they differ', () => {
    const admitted = pod('a', [ctr('app', '100m', '64Mi')]);
    const alloc = allocationFromPod(admitted);
    const resized = pod('a', [ctr('app', '500m', '64Mi')]);
    const { pod: synced, updated } = updatePodFromAllocation(resized, alloc);
    expect(updated).to.equal(true);
    expect(synced.spec.containers[0]!.resources?.requests?.cpu).to.equal('100m');
    expect(resized.spec.containers[0]!.resources?.requests?.cpu, 'input untouched').to.equal('500m');
    const same = updatePodFromAllocation(admitted, alloc);
    expect(same.updated).to.equal(false);
    expect(same.pod).to.equal(admitted);
  });

  it("keeps each pod's allocated spec when pods share one spec object (the informer interns specs)", () => {
    const spec = pod('shared', [ctr('app', '500m', '64Mi')]).spec;
    const a: Pod = { metadata: { name: 'a', namespace: 'ns', uid: 'a' }, spec };
    const b: Pod = { metadata: { name: 'b', namespace: 'ns', uid: 'b' }, spec };
    const allocA = allocationFromPod(pod('a', [ctr('app', '100m', '64Mi')]));
    const allocB = allocationFromPod(pod('b', [ctr('app', '200m', '64Mi')]));
    const firstA = updatePodFromAllocation(a, allocA).pod.spec;
    const firstB = updatePodFromAllocation(b, allocB).pod.spec;
    expect(firstA.containers[0]!.resources?.requests?.cpu).to.equal('100m');
    expect(firstB.containers[0]!.resources?.requests?.cpu).to.equal('200m');
    // Asked again in turn, as every sync asks: each pod's allocated spec is found, not built again.
    expect(updatePodFromAllocation(a, allocA).pod.spec).to.equal(firstA);
    expect(updatePodFromAllocation(b, allocB).pod.spec).to.equal(firstB);
  });

  it('reads the allocation back from the status a previous process wrote', () => {
    const p = pod('a', [ctr('app', '500m', '128Mi'), ctr('new', '10m')]);
    p.status = {
      containerStatuses: [
        {
          name: 'app',
          ready: true,
          restartCount: 0,
          allocatedResources: { cpu: '200m', memory: '64Mi' },
          resources: { requests: { cpu: '200m', memory: '64Mi' }, limits: { cpu: '200m', memory: '64Mi' } },
        },
      ],
    };
    const alloc = allocationFromStatus(p)!;
    expect(alloc.containers.get('app')).to.deep.equal({
      requests: { cpu: '200m', memory: '64Mi' },
      limits: { cpu: '200m', memory: '64Mi' },
    });
    expect(alloc.containers.get('new'), 'no status: its spec').to.deep.equal({
      requests: { cpu: '10m' },
      limits: { cpu: '10m' },
    });
    expect(allocationFromStatus(pod('b', [ctr('app', '1')])), 'never reported').to.equal(undefined);
  });

  it('tells a growing resize from a shrinking one', () => {
    const small = pod('a', [ctr('app', '100m', '64Mi')]);
    const big = pod('a', [ctr('app', '200m', '64Mi')]);
    expect(resizeIncreasesRequests(big, small)).to.equal(true);
    expect(resizeIncreasesRequests(small, big)).to.equal(false);
  });
});

describe('resize admission', () => {
  const cases: { name: string; want: string; others: Pod[]; message?: string }[] = [
    { name: 'fits next to the others', want: '1', others: [pod('o', [ctr('x', '500m')])] },
    {
      name: 'fits the node, not the room left: Deferred',
      want: '1600m',
      others: [pod('o', [ctr('x', '500m')])],
      message: "Deferred: Node didn't have enough resource: cpu, requested: 1600, used: 500, capacity: 2000",
    },
    {
      name: 'beyond allocatable: Infeasible',
      want: '3',
      others: [],
      message: "Infeasible: Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const v = admitResize(pod('a', [ctr('app', c.want)]), c.others, node);
      if (!c.message) expect(v).to.deep.equal({ fit: true });
      else expect(v.fit ? 'fit' : `${v.reason}: ${v.message}`).to.equal(c.message);
    });
  }

  it('names memory first when both are beyond the node, and ignores the pod itself among the others', () => {
    const v = admitResize(pod('a', [ctr('app', '3', '8Gi')]), [], node);
    expect(v.fit ? '' : v.message).to.equal(
      `Node didn't have enough capacity: memory, requested: ${8 * 1024 ** 3}, capacity: ${4 * 1024 ** 3}`,
    );
    const self = pod('a', [ctr('app', '1500m')]);
    expect(admitResize(pod('a', [ctr('app', '1800m')]), [self], node)).to.deep.equal({ fit: true });
  });
});
