import { expect } from 'chai';
import type { Pod } from '../../../../../src/api/core.js';
import { containerResources } from '../../../../../src/kubelet/kuberuntime/containerconfig.js';
import { isPodResizeInProgress } from '../../../../../src/kubelet/kuberuntime/resize.js';
import { sandboxResources, type CPUAffinity } from '../../../../../src/kubelet/kuberuntime/sandboxconfig.js';
import { toKubeContainerResources } from '../../../../../src/kubelet/kuberuntime/containerconfig.js';
import type { RuntimePodStatus } from '../../../../../src/kubelet/container/types.js';
import { cpuCap } from '../../../../../src/runtime/sim/usage.js';

const pod: Pod = {
  metadata: { name: 'g', namespace: 'default', uid: 'u1' },
  spec: {
    containers: [
      { name: 'pinned', image: 'busybox', resources: { requests: { cpu: '1' }, limits: { cpu: '1' } } },
      { name: 'shared', image: 'busybox', resources: { requests: { cpu: '500m' }, limits: { cpu: '500m' } } },
    ],
  },
} as Pod;

const affinity: CPUAffinity = {
  cpusetFor: (_uid, name) => (name === 'pinned' ? '1' : '0,2-3'),
  hasExclusiveCPUs: (_uid, name) => name === 'pinned',
  podHasExclusiveCPUs: () => true,
};

describe('the CPU manager applied to container and sandbox configs', () => {
  it('gives a container with exclusive CPUs its cpuset and no CFS quota (DisableCPUQuotaWithExclusiveCPUs)', () => {
    const r = containerResources(pod, pod.spec.containers[0]!, { cpuAffinity: affinity });
    expect(r).to.include({ cpusetCpus: '1', cpuQuota: -1, cpuShares: 1024, cpuPeriod: 100_000 });
  });

  it('gives a shared-pool container the pool and keeps its quota', () => {
    const r = containerResources(pod, pod.spec.containers[1]!, { cpuAffinity: affinity });
    expect(r).to.include({ cpusetCpus: '0,2-3', cpuQuota: 50_000 });
  });

  it('sets neither without a CPU manager (policy none)', () => {
    const r = containerResources(pod, pod.spec.containers[0]!);
    expect(r.cpusetCpus).to.equal(undefined);
    expect(r.cpuQuota).to.equal(100_000);
  });

  it('drops the sandbox quota of a pod with exclusive CPUs only', () => {
    expect(sandboxResources(pod, 100_000, true).cpuQuota).to.equal(-1);
    expect(sandboxResources(pod, 100_000, false).cpuQuota).to.equal(150_000);
  });

  it('does not count the dropped quota as a resize in progress', () => {
    const applied = containerResources(pod, pod.spec.containers[0]!, { cpuAffinity: affinity });
    const status = {
      uid: 'u1',
      name: 'g',
      namespace: 'default',
      sandboxes: [],
      ips: [],
      containers: [
        {
          id: 'c1',
          name: 'pinned',
          state: 'running',
          restartCount: 0,
          hash: '',
          resources: toKubeContainerResources(applied),
        },
      ],
    } as unknown as RuntimePodStatus;
    expect(isPodResizeInProgress(pod, status, { cpuAffinity: affinity })).to.equal(false);
  });

  it('caps a simulated container at its cpuset', () => {
    expect(cpuCap({ cpusetCpus: '1' })).to.equal(1);
    expect(cpuCap({ cpusetCpus: '0-3', cpuQuota: 200_000, cpuPeriod: 100_000 })).to.equal(2);
    expect(cpuCap({ cpusetCpus: '0-3,8', cpuQuota: -1 })).to.equal(5);
    expect(cpuCap({})).to.equal(Infinity);
  });
});
