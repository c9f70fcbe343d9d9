// The pod's own resources and allocatedResources in its status (src/kubelet/status/resources.ts
// podLevelResourcesStatus; kubelet convertToAPIPodLevelResourcesStatus, InPlacePodLevelResourcesVerticalScaling).
import { expect } from 'chai';
import type { Pod, PodPhase, PodStatus, ResourceRequirements } from '../../../../src/api/core.js';
import type { PodResourceConfig } from '../../../../src/kubelet/cm/resourceconfig.js';
import { podLevelResourcesStatus } from '../../../../src/kubelet/status/resources.js';

const MiB = 1024 * 1024;

function pod(phase: PodPhase | undefined, podLevel?: ResourceRequirements): Pick<Pod, 'spec' | 'status'> {
  return {
    spec: {
      containers: [
        { name: 'a', image: 'i', resources: { requests: { cpu: '100m', memory: '32Mi' } } },
        { name: 'b', image: 'i', resources: { requests: { cpu: '200m' }, limits: { cpu: '300m' } } },
      ],
      ...(podLevel ? { resources: podLevel } : {}),
    },
    ...(phase ? { status: { phase } } : {}),
  };
}

const cgroup = (milliReq: number, milliLim: number, mib: number): Partial<PodResourceConfig> => ({
  cpuShares: Math.floor((milliReq * 1024) / 1000),
  cpuQuota: milliLim * 100,
  cpuPeriod: 100_000,
  memoryLimitBytes: mib * MiB,
});

describe('pod status: pod-level resources', () => {
  const pl: ResourceRequirements = {
    requests: { cpu: '1', memory: '128Mi' },
    limits: { cpu: '2', memory: '256Mi' },
  };
  const cases: {
    name: string;
    pod: Pick<Pod, 'spec' | 'status'>;
    applied?: Partial<PodResourceConfig>;
    old?: Pick<PodStatus, 'phase' | 'resources'>;
    resources: ResourceRequirements;
    allocated: Record<string, string>;
  }[] = [
    {
      name: 'pending, no pod-level resources: the containers summed',
      pod: pod('Pending'),
      resources: { requests: { cpu: '300m', memory: '32Mi' }, limits: { cpu: '300m' } },
      allocated: { cpu: '300m', memory: '32Mi' },
    },
    {
      name: 'pending, pod-level resources: they replace the sums',
      pod: pod('Pending', pl),
      resources: { requests: { cpu: '1', memory: '128Mi' }, limits: { cpu: '2', memory: '256Mi' } },
      allocated: { cpu: '1', memory: '128Mi' },
    },
    {
      name: 'running: cpu request, cpu limit and memory limit from the pod cgroup (mid-resize)',
      pod: pod('Running', pl),
      applied: cgroup(500, 1000, 192),
      resources: { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '1', memory: '192Mi' } },
      allocated: { cpu: '1', memory: '128Mi' },
    },
    {
      name: 'running, the cgroup as allocated',
      pod: pod('Running', pl),
      applied: cgroup(1000, 2000, 256),
      resources: pl,
      allocated: { cpu: '1', memory: '128Mi' },
    },
    {
      name: 'running, nothing known of the cgroup: the last report of the running pod stands',
      pod: pod('Running', pl),
      old: {
        phase: 'Running',
        resources: { requests: { cpu: '700m' }, limits: { cpu: '3', memory: '1Gi' } },
      },
      resources: { requests: { cpu: '700m', memory: '128Mi' }, limits: { cpu: '3', memory: '1Gi' } },
      allocated: { cpu: '1', memory: '128Mi' },
    },
    {
      name: 'running, no pod-level resources, cgroup without quota or memory limit',
      pod: pod('Running'),
      applied: { cpuShares: 307 },
      resources: { requests: { cpu: '300m', memory: '32Mi' } },
      allocated: { cpu: '300m', memory: '32Mi' },
    },
    {
      name: 'quantities below a unit are reported exactly (a 10m memory request is not one byte)',
      pod: {
        spec: {
          containers: [{ name: 'a', image: 'i', resources: { requests: { cpu: '2m', memory: '10m' } } }],
          resources: { requests: { cpu: '4m' } },
        },
        status: { phase: 'Pending' },
      },
      resources: { requests: { cpu: '4m', memory: '10m' } },
      allocated: { cpu: '4m', memory: '10m' },
    },
    {
      name: 'running, BestEffort (minimum shares): no cpu request',
      pod: { spec: { containers: [{ name: 'a', image: 'i' }] }, status: { phase: 'Running' } },
      applied: { cpuShares: 2 },
      resources: {},
      allocated: {},
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = podLevelResourcesStatus(c.pod, c.applied, c.old);
      expect(got.resources).to.deep.equal(c.resources);
      expect(got.allocatedResources).to.deep.equal(c.allocated);
    });
  }
});
