import { expect } from 'chai';
import type { Container, Pod } from '../../../src/api/core.js';
import { computePodQOS, getPodQOS } from '../../../src/kubelet/qos.js';
import { isInvalidArgument } from '../../../src/util/errors.js';

const pod = (containers: Container[], initContainers: Container[] = []): Pod => ({
  metadata: {},
  spec: { containers, initContainers },
});
const res = (requests?: Record<string, string>, limits?: Record<string, string>): Container => ({
  name: Math.random().toString(36).slice(2),
  resources: { ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) },
});

describe('getPodQOS', () => {
  it('is BestEffort without cpu/memory requests or limits (zero and extended resources do not count)', () => {
    expect(computePodQOS(pod([{ name: 'a' }]))).to.equal('BestEffort');
    expect(computePodQOS(pod([res({ cpu: '0', 'nvidia.com/gpu': '1' }, { memory: '0' })]))).to.equal(
      'BestEffort',
    );
  });

  it('is Guaranteed when every container limits cpu and memory and requests equal limits', () => {
    const g = res({ cpu: '500m', memory: '1Gi' }, { cpu: '0.5', memory: '1024Mi' });
    expect(computePodQOS(pod([g]))).to.equal('Guaranteed');
    expect(computePodQOS(pod([g], [res({ cpu: '1', memory: '1G' }, { cpu: '1', memory: '1G' })]))).to.equal(
      'Guaranteed',
    );
  });

  it('is Burstable otherwise, including when an init container lacks limits', () => {
    const g = res({ cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' });
    expect(computePodQOS(pod([g], [res({ cpu: '100m' })]))).to.equal('Burstable');
    expect(computePodQOS(pod([res({ cpu: '1' }, { cpu: '2', memory: '1Gi' })]))).to.equal('Burstable');
    expect(computePodQOS(pod([res(undefined, { cpu: '1' })]))).to.equal('Burstable');
  });

  it('prefers the class already in the status (it is immutable)', () => {
    const p = { ...pod([{ name: 'a' }]), status: { qosClass: 'Guaranteed' as const } };
    expect(getPodQOS(p)).to.equal('Guaranteed');
    expect(getPodQOS(pod([{ name: 'a' }]))).to.equal('BestEffort');
  });

  it('rejects malformed quantities with InvalidArgument', () => {
    expect(() => computePodQOS(pod([res({ cpu: 'lots' })])))
      .to.throw()
      .that.satisfies(isInvalidArgument);
  });
});

describe('computePodQOS with pod-level resources (PodLevelResources, PodLevelResourcesFixKubeletQOSClass)', () => {
  const withPodLevel = (
    resources: Pod['spec']['resources'],
    containers: Container[] = [{ name: 'a' }],
  ): Pod => ({ metadata: {}, spec: { containers, resources } });
  const guaranteedContainer = res({ cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' });

  it('decides by the pod-level requirements alone when they name a supported resource', () => {
    const table: [Pod['spec']['resources'], Container[], string][] = [
      // pod-level resources, containers, class
      [
        { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        [{ name: 'a' }],
        'Guaranteed',
      ],
      // The containers' own resources do not count.
      [
        { requests: { cpu: '1', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        [res({ cpu: '100m' })],
        'Guaranteed',
      ],
      [{ requests: { cpu: '1' }, limits: { cpu: '1' } }, [guaranteedContainer], 'Burstable'],
      [
        { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '1', memory: '1Gi' } },
        [{ name: 'a' }],
        'Burstable',
      ],
      [{ limits: { memory: '1Gi' } }, [{ name: 'a' }], 'Burstable'],
      // Named but zero: BestEffort shape for both.
      [{ requests: { cpu: '0', memory: '0' } }, [guaranteedContainer], 'BestEffort'],
      // Hugepages alone set pod-level resources; cpu and memory are then zero at pod level.
      [
        { requests: { 'hugepages-2Mi': '2Mi' }, limits: { 'hugepages-2Mi': '2Mi' } },
        [guaranteedContainer],
        'BestEffort',
      ],
    ];
    for (const [resources, containers, want] of table) {
      expect(computePodQOS(withPodLevel(resources, containers)), JSON.stringify(resources)).to.equal(want);
    }
  });

  it('falls back to the containers when spec.resources names no supported resource (the 1.37 fix)', () => {
    // Before PodLevelResourcesFixKubeletQOSClass an empty or unsupported-only spec.resources made this
    // BestEffort; with it the containers decide.
    expect(computePodQOS(withPodLevel({}, [guaranteedContainer]))).to.equal('Guaranteed');
    expect(computePodQOS(withPodLevel({ requests: {}, limits: {} }, [guaranteedContainer]))).to.equal(
      'Guaranteed',
    );
    expect(
      computePodQOS(withPodLevel({ requests: { 'ephemeral-storage': '1Gi' } }, [res({ cpu: '100m' })])),
    ).to.equal('Burstable');
  });
});
