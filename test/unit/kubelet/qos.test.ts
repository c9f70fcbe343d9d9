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
