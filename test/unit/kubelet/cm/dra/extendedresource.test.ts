import { expect } from 'chai';
import type { Container, Pod } from '../../../../../src/api/core.js';
import {
  containerExtendedResourceRequests,
  containerUsesExtendedResourceClaim,
  extendedResourceClaimStatus,
  isDRAExtendedResource,
  isDRAExtendedResourceName,
  withoutDRAExtendedResources,
} from '../../../../../src/kubelet/cm/dra/extendedresource.js';

const GPU = 'example.com/gpu';
const IMPLICIT = 'deviceclass.resource.kubernetes.io/gpu-class';

function ctr(name: string, requests: Record<string, string>, limits = requests): Container {
  return { name, image: 'i', resources: { requests, limits } } as Container;
}

function pod(containers: Container[], status?: unknown, initContainers?: Container[]): Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
    spec: { containers, ...(initContainers ? { initContainers } : {}) },
    status: status === undefined ? {} : { extendedResourceClaimStatus: status },
  } as Pod;
}

const mapped = {
  resourceClaimName: 'p-extended-resources-x7',
  requestMappings: [
    { containerName: 'a', resourceName: GPU, requestName: 'container-0-request-0' },
    { containerName: 'b', resourceName: IMPLICIT, requestName: 'container-1-request-0' },
    { containerName: 'b', resourceName: IMPLICIT, requestName: 'container-1-request-1' },
  ],
};

describe('cm/dra/extendedresource (DRAExtendedResource)', () => {
  describe('isDRAExtendedResourceName', () => {
    const cases: [string, boolean][] = [
      [GPU, true],
      [IMPLICIT, true],
      ['cpu', false],
      ['hugepages-2Mi', false],
      ['kubernetes.io/something', false],
      ['requests.example.com/gpu', false],
    ];
    for (const [name, want] of cases)
      it(`${name}: ${want}`, () => expect(isDRAExtendedResourceName(name)).to.equal(want));
  });

  describe('extendedResourceClaimStatus', () => {
    const cases: [string, unknown, unknown][] = [
      ['none', undefined, undefined],
      ['null', null, undefined],
      ['no claim name', { requestMappings: [] }, undefined],
      ['an empty claim name', { resourceClaimName: '' }, undefined],
      ['no mappings', { resourceClaimName: 'x' }, { resourceClaimName: 'x', requestMappings: [] }],
      [
        'malformed mappings left out',
        {
          resourceClaimName: 'x',
          requestMappings: [
            null,
            { containerName: 'a' },
            { containerName: 'a', resourceName: GPU, requestName: 'r' },
          ],
        },
        {
          resourceClaimName: 'x',
          requestMappings: [{ containerName: 'a', resourceName: GPU, requestName: 'r' }],
        },
      ],
      ['as written', mapped, mapped],
    ];
    for (const [name, status, want] of cases) {
      it(name, () => expect(extendedResourceClaimStatus(pod([], status))).to.deep.equal(want));
    }
  });

  describe('isDRAExtendedResource and containerUsesExtendedResourceClaim', () => {
    const p = pod([ctr('a', { [GPU]: '1' }), ctr('b', { [IMPLICIT]: '2' }), ctr('c', {})], mapped);
    const cases: [string, string, boolean][] = [
      ['a', GPU, true],
      ['a', IMPLICIT, false],
      ['b', IMPLICIT, true],
      ['b', GPU, false],
      ['c', GPU, false],
    ];
    for (const [c, r, want] of cases) {
      it(`${c} ${r}: ${want}`, () => expect(isDRAExtendedResource(p, c, r)).to.equal(want));
    }
    it('without a claim nothing is DRA-backed', () => {
      expect(isDRAExtendedResource(pod([ctr('a', { [GPU]: '1' })]), 'a', GPU)).to.equal(false);
      expect(containerUsesExtendedResourceClaim(pod([ctr('a', { [GPU]: '1' })]), 'a')).to.equal(false);
    });
    it('a container is served when some mapping names it', () => {
      expect(['a', 'b', 'c'].map((c) => containerUsesExtendedResourceClaim(p, c))).to.deep.equal([
        true,
        true,
        false,
      ]);
    });
  });

  describe('containerExtendedResourceRequests (GetResources)', () => {
    const cases: [string, Pod, Container, unknown][] = [
      ['no claim', pod([ctr('a', { [GPU]: '1' })]), ctr('a', { [GPU]: '1' }), undefined],
      [
        'the mapped request of the resource asked',
        pod([], mapped),
        ctr('a', { [GPU]: '1' }),
        { claimName: 'p-extended-resources-x7', requestNames: ['container-0-request-0'] },
      ],
      [
        'several requests for one resource, in mapping order',
        pod([], mapped),
        ctr('b', { [IMPLICIT]: '2' }),
        {
          claimName: 'p-extended-resources-x7',
          requestNames: ['container-1-request-0', 'container-1-request-1'],
        },
      ],
      [
        'a zero request takes nothing',
        pod([], mapped),
        ctr('a', { [GPU]: '0' }),
        { claimName: 'p-extended-resources-x7', requestNames: [] },
      ],
      [
        'a resource the container does not ask for takes nothing',
        pod([], mapped),
        ctr('a', { cpu: '1' }),
        { claimName: 'p-extended-resources-x7', requestNames: [] },
      ],
      [
        'another container mapping takes nothing',
        pod([], mapped),
        ctr('c', { [GPU]: '1' }),
        { claimName: 'p-extended-resources-x7', requestNames: [] },
      ],
    ];
    for (const [name, p, c, want] of cases) {
      it(name, () => expect(containerExtendedResourceRequests(p, c)).to.deep.equal(want));
    }
  });

  describe('withoutDRAExtendedResources (admission)', () => {
    it('is the pod itself without a claim, or when nothing is DRA-backed', () => {
      const plain = pod([ctr('a', { [GPU]: '1' })]);
      expect(withoutDRAExtendedResources(plain)).to.equal(plain);
      const unmapped = pod([ctr('c', { [GPU]: '1', cpu: '1' })], mapped);
      expect(withoutDRAExtendedResources(unmapped)).to.equal(unmapped);
    });

    it("drops the mapped resources from each container's requests and limits, init containers too", () => {
      const p = pod([ctr('a', { [GPU]: '1', cpu: '100m' }), ctr('c', { [GPU]: '1' })], mapped, [
        ctr('b', { [IMPLICIT]: '2', memory: '1Mi' }),
      ]);
      const out = withoutDRAExtendedResources(p);
      expect(out.spec.containers.map((c) => [c.name, c.resources])).to.deep.equal([
        ['a', { requests: { cpu: '100m' }, limits: { cpu: '100m' } }],
        ['c', { requests: { [GPU]: '1' }, limits: { [GPU]: '1' } }],
      ]);
      expect(out.spec.initContainers?.[0]?.resources).to.deep.equal({
        requests: { memory: '1Mi' },
        limits: { memory: '1Mi' },
      });
      // The pod given is not changed.
      expect(p.spec.containers[0]!.resources?.requests).to.deep.equal({ [GPU]: '1', cpu: '100m' });
    });

    it('keeps a mapped name that is not an extended resource name (the kubelet checks both)', () => {
      const odd = pod([ctr('a', { cpu: '1' })], {
        resourceClaimName: 'x',
        requestMappings: [{ containerName: 'a', resourceName: 'cpu', requestName: 'r' }],
      });
      expect(withoutDRAExtendedResources(odd)).to.equal(odd);
    });
  });
});
