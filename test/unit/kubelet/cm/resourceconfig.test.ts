// The pod cgroup's limits (src/kubelet/cm/resourceconfig.ts; kubelet cm ResourceConfigForPod).
import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { resourceConfigForPod, type PodResourceConfig } from '../../../../src/kubelet/cm/resourceconfig.js';

const MiB = 1024 * 1024;
const pod = (containers: Container[], resources?: Pod['spec']['resources'], init: Container[] = []): Pod => ({
  metadata: { name: 'p' },
  spec: { containers, initContainers: init, ...(resources ? { resources } : {}) },
});
const c = (name: string, requests?: Record<string, string>, limits?: Record<string, string>): Container => ({
  name,
  resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) },
});

describe('resourceConfigForPod', () => {
  it('sizes the pod cgroup by QoS class, pod-level resources first', () => {
    const table: [string, Pod, PodResourceConfig][] = [
      [
        'pod-level Guaranteed, containers unset: everything from the pod level',
        pod([{ name: 'a' }, { name: 'b' }], {
          requests: { cpu: '500m', memory: '128Mi' },
          limits: { cpu: '500m', memory: '128Mi' },
        }),
        { cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimitBytes: 128 * MiB },
      ],
      [
        'pod-level Burstable with both limits: the limits declared by the pod count for every container',
        pod([{ name: 'a' }, c('b', { cpu: '100m' })], {
          requests: { cpu: '250m', memory: '64Mi' },
          limits: { cpu: '1', memory: '256Mi' },
        }),
        { cpuShares: 256, cpuQuota: 100000, cpuPeriod: 100000, memoryLimitBytes: 256 * MiB },
      ],
      [
        'pod-level cpu limit only: quota, no memory limit (a container lacks one)',
        pod([{ name: 'a' }], { requests: { cpu: '250m' }, limits: { cpu: '1' } }),
        { cpuShares: 256, cpuQuota: 100000, cpuPeriod: 100000 },
      ],
      [
        'pod-level memory limit while every container limits cpu: both',
        pod([c('a', { cpu: '100m' }, { cpu: '200m' })], {
          requests: { memory: '64Mi' },
          limits: { memory: '1Gi' },
        }),
        { cpuShares: 102, cpuQuota: 20000, cpuPeriod: 100000, memoryLimitBytes: 1024 * MiB },
      ],
      [
        'no pod-level resources, Burstable: the containers sum, no quota unless every container limits cpu',
        pod([c('a', { cpu: '100m' }, { cpu: '200m', memory: '64Mi' }), c('b', { cpu: '100m' })]),
        { cpuShares: 204 },
      ],
      [
        'no pod-level resources, Guaranteed: the sums',
        pod([
          c('a', { cpu: '100m', memory: '64Mi' }, { cpu: '100m', memory: '64Mi' }),
          c('b', { cpu: '200m', memory: '64Mi' }, { cpu: '200m', memory: '64Mi' }),
        ]),
        { cpuShares: 307, cpuQuota: 30000, cpuPeriod: 100000, memoryLimitBytes: 128 * MiB },
      ],
      ['BestEffort: minimum shares alone', pod([{ name: 'a' }]), { cpuShares: 2 }],
    ];
    for (const [what, p, want] of table) expect(resourceConfigForPod(p), what).to.deep.equal(want);
  });

  it('init containers raise the pod limits as they raise requests', () => {
    const p = pod([{ name: 'a' }], { limits: { cpu: '1' }, requests: { cpu: '1' } }, [
      c('init', { cpu: '2' }, { cpu: '2' }),
    ]);
    // The pod-level value replaces the containers' aggregate (init floor included).
    expect(resourceConfigForPod(p)).to.deep.equal({ cpuShares: 1024, cpuQuota: 100000, cpuPeriod: 100000 });
    // Over the node's cpuCFSQuotaPeriod.
    expect(resourceConfigForPod(p, 20_000)).to.deep.equal({
      cpuShares: 1024,
      cpuQuota: 20_000,
      cpuPeriod: 20_000,
    });
  });
});
