import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import {
  allocatableResources,
  getPodResources,
  listPodResources,
  listPodResourcesV1alpha1,
  type KubeletPodsView,
} from '../../../../src/kubelet/apis/podresources/answers.js';

const R = 'example.com/gpu';
const pod: Pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: {
    containers: [
      { name: 'gpu', image: 'busybox' },
      { name: 'plain', image: 'busybox' },
    ],
  },
};
const held: Record<string, { resource: string; ids: string[] }[]> = {
  'u1/gpu': [{ resource: R, ids: ['gpu-0', 'gpu-1'] }],
};
const view: KubeletPodsView = {
  pods: () => [pod],
  podByName: (ns, name) => (ns === 'ns' && name === 'p' ? pod : undefined),
  workerState: () => 'syncing',
  statusPhase: () => 'Running',
  devices: {
    containerDevices: (uid, c) => held[`${uid}/${c}`] ?? [],
    allocatableDevices: () => [{ resource: R, ids: ['gpu-0', 'gpu-1', 'gpu-2'] }],
  },
};
const gpu = [{ resource_name: R, device_ids: ['gpu-0', 'gpu-1'] }];

describe('podresources answers with the device manager', () => {
  it('List and Get report each container its devices', () => {
    const listed = listPodResources(view).pod_resources[0]!;
    expect(listed.containers.map((c) => [c.name, c.devices])).to.deep.equal([
      ['gpu', gpu],
      ['plain', []],
    ]);
    const got = getPodResources(view, { pod_name: 'p', pod_namespace: 'ns' });
    expect('ok' in got && got.ok.pod_resources.containers[0]!.devices).to.deep.equal(gpu);
    expect(listPodResourcesV1alpha1(view).pod_resources[0]!.containers[0]!.devices).to.deep.equal(gpu);
  });
  it('GetAllocatableResources: the healthy devices', () => {
    expect(allocatableResources(view)).to.deep.equal({
      devices: [{ resource_name: R, device_ids: ['gpu-0', 'gpu-1', 'gpu-2'] }],
      cpu_ids: [],
      memory: [],
    });
    expect(allocatableResources({}).devices).to.deep.equal([]);
  });
});
