import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import {
  dynamicResourcesOf,
  getPodResources,
  listPodResources,
  type KubeletPodsView,
} from '../../../../src/kubelet/apis/podresources/answers.js';
import {
  ClaimInfoCache,
  containerClaimInfos,
  type ClaimInfoState,
} from '../../../../src/kubelet/cm/dra/claiminfo.js';

const D = 'test-driver.cdi.k8s.io';
const dev = (name: string, requests: string[] = ['r']) => ({
  requestNames: requests,
  poolName: 'vn',
  deviceName: name,
  cdiDeviceIDs: [`${D}/test=${name}`],
});
const info = (claimName: string, driverState: ClaimInfoState['driverState']): ClaimInfoState => ({
  claimUID: `${claimName}-uid`,
  claimName,
  namespace: 'ns',
  podUIDs: ['u1'],
  driverState,
  prepared: true,
});

const pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: {
    resourceClaims: [
      { name: 'gpu', resourceClaimName: 'shared' },
      { name: 'nic', resourceClaimTemplateName: 't' },
    ],
    containers: [
      {
        name: 'both',
        image: 'i',
        resources: { claims: [{ name: 'gpu', request: 'a' }, { name: 'gpu' }, { name: 'nic' }] },
      },
      { name: 'ext', image: 'i', resources: { requests: { 'example.com/gpu': '1' } } },
      { name: 'none', image: 'i' },
    ],
  },
  status: {
    resourceClaimStatuses: [{ name: 'nic', resourceClaimName: 'p-nic' }],
    extendedResourceClaimStatus: {
      resourceClaimName: 'p-ext',
      requestMappings: [
        { containerName: 'ext', resourceName: 'example.com/gpu', requestName: 'container-1-request-0' },
      ],
    },
  },
} as unknown as Pod;
const container = (name: string) => pod.spec.containers.find((c) => c.name === name)!;

const cache = new ClaimInfoCache([
  info('shared', { [D]: { devices: [dev('d0')] } }),
  info('p-nic', {
    'b.example.com': { devices: [dev('n0')] },
    'a.example.com': { devices: [dev('m0'), dev('m1')] },
  }),
  info('p-ext', { [D]: { devices: [dev('e0', ['container-1-request-0'])] } }),
]);

describe('podresources answers with the DRA manager (dynamicResources)', () => {
  describe('containerClaimInfos (GetContainerClaimInfos)', () => {
    const cases: [string, Container, unknown][] = [
      ['the claims it references, each once, in the pod order', container('both'), ['shared', 'p-nic']],
      ['the extended resource claim of a mapped container', container('ext'), ['p-ext']],
      ['nothing for a container without claims', container('none'), []],
    ];
    for (const [name, c, want] of cases) {
      it(name, () => {
        const got = containerClaimInfos(pod, c, cache);
        expect(got.ok && got.infos.map((i) => i.claimName)).to.deep.equal(want);
      });
    }
    it('a claim not prepared is the kubelet error', () => {
      expect(containerClaimInfos(pod, container('both'), new ClaimInfoCache([]))).to.deep.equal({
        ok: false,
        error: 'unable to get information for ResourceClaim shared',
      });
      expect(containerClaimInfos(pod, container('ext'), new ClaimInfoCache([]))).to.deep.equal({
        ok: false,
        error: 'unable to get claim info for claim p-ext in namespace ns',
      });
    });
  });

  it("dynamicResourcesOf: one entry per device, drivers in name order, a driver's CDI devices so far", () => {
    expect(dynamicResourcesOf([cache.get('ns', 'p-nic')!])).to.deep.equal([
      {
        claim_name: 'p-nic',
        claim_namespace: 'ns',
        claim_resources: [
          {
            cdi_devices: [{ name: `${D}/test=m0` }],
            driver_name: 'a.example.com',
            pool_name: 'vn',
            device_name: 'm0',
          },
          {
            cdi_devices: [{ name: `${D}/test=m0` }, { name: `${D}/test=m1` }],
            driver_name: 'a.example.com',
            pool_name: 'vn',
            device_name: 'm1',
          },
          {
            cdi_devices: [{ name: `${D}/test=n0` }],
            driver_name: 'b.example.com',
            pool_name: 'vn',
            device_name: 'n0',
          },
        ],
      },
    ]);
    expect(dynamicResourcesOf([])).to.deep.equal([]);
  });

  it('List and Get give each container its claims', () => {
    const view: KubeletPodsView = {
      pods: () => [pod],
      podByName: () => pod,
      workerState: () => 'syncing',
      statusPhase: () => 'Running',
      dynamicResources: {
        containerClaimInfos: (p, c) => {
          const got = containerClaimInfos(p, c, cache);
          return got.ok ? got.infos : [];
        },
      },
    };
    const names = (r: ReturnType<typeof listPodResources>['pod_resources'][number]) =>
      r.containers.map((c) => [c.name, c.dynamic_resources.map((d) => d.claim_name)]);
    const want = [
      ['both', ['shared', 'p-nic']],
      ['ext', ['p-ext']],
      ['none', []],
    ];
    expect(names(listPodResources(view).pod_resources[0]!)).to.deep.equal(want);
    const got = getPodResources(view, { pod_name: 'p', pod_namespace: 'ns' });
    expect('ok' in got && names(got.ok.pod_resources)).to.deep.equal(want);
    const ext = listPodResources(view).pod_resources[0]!.containers[1]!.dynamic_resources[0]!;
    expect(ext).to.deep.equal({
      claim_name: 'p-ext',
      claim_namespace: 'ns',
      claim_resources: [
        { cdi_devices: [{ name: `${D}/test=e0` }], driver_name: D, pool_name: 'vn', device_name: 'e0' },
      ],
    });
  });
});
