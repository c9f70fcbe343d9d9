// Pod requests and limits with pod-level resources (src/api/resources.ts; component-helpers PodRequests,
// PodLimits, IsPodLevel*Set).
import { expect } from 'chai';
import type { Container, PodSpec, ResourceRequirements } from '../../../src/api/core.js';
import {
  isPodLevelLimitsSet,
  isPodLevelRequestsSet,
  isPodLevelResourcesSet,
  isSupportedPodLevelResource,
  podLimits,
  podRequests,
} from '../../../src/api/resources.js';

const c = (name: string, resources?: ResourceRequirements, restartPolicy?: 'Always'): Container => ({
  name,
  ...(resources ? { resources } : {}),
  ...(restartPolicy ? { restartPolicy } : {}),
});
const spec = (
  containers: Container[],
  resources?: ResourceRequirements,
  init: Container[] = [],
): PodSpec => ({
  containers,
  initContainers: init,
  ...(resources ? { resources } : {}),
});
const obj = (m: Map<string, number>) => Object.fromEntries(m);

describe('pod-level resources: which are set', () => {
  it('supports cpu, memory and hugepages-* only', () => {
    const table: [string, boolean][] = [
      ['cpu', true],
      ['memory', true],
      ['hugepages-2Mi', true],
      ['ephemeral-storage', false],
      ['nvidia.com/gpu', false],
    ];
    for (const [name, want] of table) expect(isSupportedPodLevelResource(name), name).to.equal(want);
  });

  it('counts as set only when a supported resource is named (requests, limits, either)', () => {
    const table: [ResourceRequirements | undefined, boolean, boolean, boolean][] = [
      // resources, any, requests, limits
      [undefined, false, false, false],
      [{}, false, false, false],
      [{ requests: {}, limits: {} }, false, false, false],
      [{ requests: { 'ephemeral-storage': '1Gi' } }, false, false, false],
      [{ requests: { cpu: '1' } }, true, true, false],
      [{ limits: { memory: '1Gi' } }, true, false, true],
      [{ limits: { 'hugepages-2Mi': '2Mi' } }, true, false, true],
      [{ requests: { cpu: '0' } }, true, true, false],
    ];
    for (const [resources, any, req, lim] of table) {
      const s = spec([c('a')], resources);
      const what = JSON.stringify(resources);
      expect(
        [isPodLevelResourcesSet(s), isPodLevelRequestsSet(s), isPodLevelLimitsSet(s)],
        what,
      ).to.deep.equal([any, req, lim]);
    }
  });
});

describe('podRequests and podLimits with pod-level resources', () => {
  const cont = [
    c('a', { requests: { cpu: '100m', memory: '64Mi', 'nvidia.com/gpu': '1' }, limits: { cpu: '200m' } }),
    c('b', { requests: { cpu: '100m' } }),
  ];

  it('without them: the containers aggregate', () => {
    expect(obj(podRequests(spec(cont)))).to.deep.equal({
      cpu: 200,
      memory: 64 * 2 ** 20,
      'nvidia.com/gpu': 1,
    });
    expect(obj(podLimits(spec(cont)))).to.deep.equal({ cpu: 200 });
  });

  it('a pod-level value replaces the aggregate of that resource; the others stay', () => {
    const s = spec(cont, { requests: { cpu: '1', memory: '256Mi' }, limits: { cpu: '2', memory: '512Mi' } });
    expect(obj(podRequests(s))).to.deep.equal({ cpu: 1000, memory: 256 * 2 ** 20, 'nvidia.com/gpu': 1 });
    expect(obj(podLimits(s))).to.deep.equal({ cpu: 2000, memory: 512 * 2 ** 20 });
  });

  it('pod-level limits alone change no request (the API server defaults requests from them)', () => {
    const s = spec([c('a')], { limits: { cpu: '1' } });
    expect(obj(podRequests(s))).to.deep.equal({});
    expect(obj(podLimits(s))).to.deep.equal({ cpu: 1000 });
  });

  it('unsupported pod-level names are not applied', () => {
    const s = spec([c('a')], { requests: { cpu: '1', 'ephemeral-storage': '1Gi' } });
    expect(obj(podRequests(s))).to.deep.equal({ cpu: 1000 });
  });

  it('hugepages at pod level count as requests and limits', () => {
    const s = spec([c('a')], { requests: { 'hugepages-2Mi': '4Mi' }, limits: { 'hugepages-2Mi': '4Mi' } });
    expect(obj(podRequests(s))).to.deep.equal({ 'hugepages-2Mi': 4 * 2 ** 20 });
    expect(obj(podLimits(s))).to.deep.equal({ 'hugepages-2Mi': 4 * 2 ** 20 });
  });

  it('limits aggregate with sidecars and init containers as requests do', () => {
    const s = spec([c('main', { limits: { cpu: '300m' } })], undefined, [
      c('init', { limits: { cpu: '1' } }),
      c('side', { limits: { cpu: '100m' } }, 'Always'),
    ]);
    // max(main + side = 400m, init = 1000m, side = 100m)
    expect(obj(podLimits(s))).to.deep.equal({ cpu: 1000 });
  });
});
