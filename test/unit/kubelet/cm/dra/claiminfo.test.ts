import { expect } from 'chai';
import type { Container, Pod } from '../../../../../src/api/core.js';
import {
  attachPod,
  batchesByDriver,
  checkClaimForPod,
  checkDriverResponse,
  ClaimInfoCache,
  containerCDIDevices,
  containerNeedsDynamicResources,
  decodeCheckpoint,
  encodeCheckpoint,
  inactivePodClaims,
  newClaimInfo,
  planUnprepare,
  podClaimName,
  podClaimNames,
  podClaimsToPrepare,
  type ClaimInfoState,
  type ResourceClaim,
} from '../../../../../src/kubelet/cm/dra/claiminfo.js';

function pod(over: { claims?: unknown[]; statuses?: unknown[]; uid?: string } = {}): Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid: over.uid ?? 'pod-uid' },
    spec: { containers: [], ...(over.claims ? { resourceClaims: over.claims } : {}) },
    status: over.statuses ? { resourceClaimStatuses: over.statuses } : {},
  } as unknown as Pod;
}

function claim(
  over: Partial<{ owner: string; reservedFor: string[]; drivers: string[]; allocated: boolean }> = {},
): ResourceClaim {
  const c: ResourceClaim = {
    metadata: {
      name: 'c',
      namespace: 'ns',
      uid: 'claim-uid',
      ...(over.owner ? { ownerReferences: [{ uid: over.owner, controller: true }] } : {}),
    },
    status: { reservedFor: (over.reservedFor ?? ['pod-uid']).map((uid) => ({ resource: 'pods', uid })) },
  };
  if (over.allocated !== false) {
    c.status!.allocation = {
      devices: { results: (over.drivers ?? ['d.example.com']).map((driver) => ({ driver, request: 'r' })) },
    };
  }
  return c;
}

function info(over: Partial<ClaimInfoState> = {}): ClaimInfoState {
  return {
    claimUID: 'claim-uid',
    claimName: 'c',
    namespace: 'ns',
    podUIDs: ['pod-uid'],
    driverState: { 'd.example.com': { devices: [] } },
    prepared: true,
    ...over,
  };
}

describe('cm/dra/claiminfo', () => {
  describe('podClaimName', () => {
    const cases: [string, Pod, unknown][] = [
      ['a named claim', pod(), { ok: true, name: 'shared', mustCheckOwner: false }],
      [
        "a template's claim from the pod status",
        pod({ statuses: [{ name: 'gpu', resourceClaimName: 'p-gpu-x7' }] }),
        { ok: true, name: 'p-gpu-x7', mustCheckOwner: true },
      ],
      [
        'a template whose status says no claim was needed',
        pod({ statuses: [{ name: 'gpu' }] }),
        { ok: true, name: undefined, mustCheckOwner: true },
      ],
      [
        'a template not generated yet',
        pod(),
        { ok: false, error: 'pod "ns/p": ResourceClaim not created yet' },
      ],
    ];
    for (const [name, p, want] of cases) {
      it(name, () => {
        const pc =
          name === 'a named claim'
            ? { name: 'gpu', resourceClaimName: 'shared' }
            : { name: 'gpu', resourceClaimTemplateName: 't' };
        expect(podClaimName(p, pc)).to.deep.equal(want);
      });
    }
    it('a claim with neither field', () => {
      expect(podClaimName(pod(), { name: 'gpu' })).to.deep.equal({
        ok: false,
        error: 'pod "ns/p", spec.resourceClaim "gpu": none of the supported fields are set',
      });
    });
  });

  describe('checkClaimForPod', () => {
    const cases: [string, ResourceClaim, boolean, unknown][] = [
      [
        'allocated and reserved',
        claim({ drivers: ['b', 'a', 'b'] }),
        false,
        { ok: true, drivers: ['a', 'b'] },
      ],
      [
        'not reserved for the pod',
        claim({ reservedFor: ['other'] }),
        false,
        { ok: false, error: 'pod p (pod-uid) is not allowed to use ResourceClaim c (claim-uid)' },
      ],
      [
        'not allocated',
        claim({ allocated: false }),
        false,
        { ok: false, error: 'ResourceClaim c: not allocated' },
      ],
      [
        'a generated claim another pod owns',
        claim({ owner: 'other' }),
        true,
        { ok: false, error: 'ResourceClaim ns/c was not created for Pod ns/p (Pod is not owner)' },
      ],
      [
        'a generated claim the pod owns',
        claim({ owner: 'pod-uid' }),
        true,
        { ok: true, drivers: ['d.example.com'] },
      ],
    ];
    for (const [name, c, mustCheckOwner, want] of cases) {
      it(name, () => expect(checkClaimForPod(pod(), c, mustCheckOwner)).to.deep.equal(want));
    }
  });

  describe('checkClaimForPod: skipped node operations (DRAOptionalNodeOperations off, as v1.37 defaults)', () => {
    const skipping = (skips: (string[] | undefined)[]): ResourceClaim => {
      const c = claim();
      c.status!.allocation = {
        devices: {
          results: skips.map((ops, i) => ({
            driver: 'd.example.com',
            request: 'r',
            device: `dev-${i}`,
            ...(ops ? { skipNodeOperations: ops } : {}),
          })),
        },
      };
      return c;
    };
    const refused = {
      ok: false,
      error: 'ResourceClaim c: DRAOptionalNodeOperations feature gate is disabled on kubelet',
    };
    const cases: [string, (string[] | undefined)[], unknown][] = [
      ['no result skips anything', [undefined, []], { ok: true, drivers: ['d.example.com'] }],
      ['every device skips All', [['All'], ['All']], refused],
      ['every device skips one operation, by name or All', [['NodePrepareResources'], ['All']], refused],
      [
        'only some devices skip: nothing is skipped for the driver',
        [['All'], undefined],
        { ok: true, drivers: ['d.example.com'] },
      ],
    ];
    for (const [name, skips, want] of cases) {
      it(name, () => expect(checkClaimForPod(pod(), skipping(skips), false)).to.deep.equal(want));
    }
  });

  describe('attachPod', () => {
    const fresh = newClaimInfo(claim(), ['d.example.com']);
    it('a new claim gets the pod and is not prepared', () => {
      expect(attachPod(undefined, fresh, 'pod-uid', false)).to.deep.equal({
        ok: true,
        info: { ...fresh, podUIDs: ['pod-uid'], prepared: false },
      });
    });
    it('a prepared claim shared with a second pod stays prepared', () => {
      const got = attachPod(info(), fresh, 'pod-2', false);
      expect(got).to.deep.equal({ ok: true, info: info({ podUIDs: ['pod-uid', 'pod-2'] }) });
    });
    it('the same pod twice is one reference', () => {
      expect(attachPod(info(), fresh, 'pod-uid', false)).to.deep.equal({ ok: true, info: info() });
    });
    it('an old claim of the same name', () => {
      expect(attachPod(info({ claimUID: 'old' }), fresh, 'pod-2', false)).to.deep.equal({
        ok: false,
        error:
          'old ResourceClaim with same name c and different UID old still exists (previous pod force-deleted?!)',
      });
    });
    it('a claim being unprepared', () => {
      expect(attachPod(info(), fresh, 'pod-2', true)).to.deep.equal({
        ok: false,
        error: 'ResourceClaim c is being unprepared',
      });
    });
  });

  it('batchesByDriver groups claims per driver', () => {
    const a = info({
      claimUID: 'u1',
      claimName: 'c1',
      driverState: { x: { devices: [] }, y: { devices: [] } },
    });
    const b = info({ claimUID: 'u2', claimName: 'c2', driverState: { y: { devices: [] } } });
    expect(batchesByDriver([a, b])).to.deep.equal([
      { driver: 'x', claims: [{ namespace: 'ns', uid: 'u1', name: 'c1' }] },
      {
        driver: 'y',
        claims: [
          { namespace: 'ns', uid: 'u1', name: 'c1' },
          { namespace: 'ns', uid: 'u2', name: 'c2' },
        ],
      },
    ]);
  });

  describe('checkDriverResponse', () => {
    const batch = { driver: 'x', claims: [{ namespace: 'ns', uid: 'u1', name: 'c1' }] };
    const cases: [string, Record<string, { error?: string }>, unknown][] = [
      ['every claim answered', { u1: {} }, { ok: true }],
      [
        'a claim failed',
        { u1: { error: 'no such device' } },
        { ok: false, error: 'NodePrepareResources failed for ResourceClaim c1: no such device' },
      ],
      [
        'an unknown claim',
        { u1: {}, u9: {} },
        { ok: false, error: 'NodePrepareResources returned result for unknown claim UID u9' },
      ],
      ['a claim skipped', {}, { ok: false, error: 'NodePrepareResources skipped 1 ResourceClaims' }],
    ];
    for (const [name, answers, want] of cases) {
      it(name, () => expect(checkDriverResponse('NodePrepareResources', batch, answers)).to.deep.equal(want));
    }
  });

  describe('containerCDIDevices', () => {
    const p = pod({
      claims: [
        { name: 'gpu', resourceClaimName: 'c' },
        { name: 'nic', resourceClaimTemplateName: 't' },
      ],
      statuses: [{ name: 'nic', resourceClaimName: 'p-nic' }],
    });
    const cache = new ClaimInfoCache([
      info({
        driverState: {
          'd.example.com': {
            devices: [
              { requestNames: ['r1'], poolName: 'p', deviceName: 'd0', cdiDeviceIDs: ['k.io/c=d0'] },
              { requestNames: ['r2'], poolName: 'p', deviceName: 'd1', cdiDeviceIDs: ['k.io/c=d1'] },
              { requestNames: [], poolName: 'p', deviceName: 'd2', cdiDeviceIDs: ['k.io/c=d2'] },
            ],
          },
        },
      }),
    ]);
    const ctr = (claims: unknown[]): Container =>
      ({ name: 'a', resources: { claims } }) as unknown as Container;
    const cases: [string, unknown[], unknown][] = [
      ['a whole claim', [{ name: 'gpu' }], { ok: true, devices: ['k.io/c=d0', 'k.io/c=d1', 'k.io/c=d2'] }],
      [
        'one request, and devices of every request',
        [{ name: 'gpu', request: 'r2' }],
        { ok: true, devices: ['k.io/c=d1', 'k.io/c=d2'] },
      ],
      ['no claims', [], { ok: true, devices: [] }],
      [
        'a claim not prepared',
        [{ name: 'nic' }],
        {
          ok: false,
          error: 'internal error: unable to get claim info for ResourceClaim p-nic in namespace ns',
        },
      ],
    ];
    for (const [name, claims, want] of cases) {
      it(name, () => expect(containerCDIDevices(p, ctr(claims), cache)).to.deep.equal(want));
    }
  });

  describe('containerNeedsDynamicResources', () => {
    const p = pod();
    p.status = {
      extendedResourceClaimStatus: {
        resourceClaimName: 'p-ext',
        requestMappings: [{ containerName: 'mapped', resourceName: 'example.com/gpu', requestName: 'r' }],
      },
    };
    const cases: [string, Pod, Container, boolean][] = [
      [
        'a container referencing a claim',
        pod(),
        { name: 'a', resources: { claims: [{ name: 'gpu' }] } } as unknown as Container,
        true,
      ],
      ['a container mapped in the extended resource claim', p, { name: 'mapped' } as Container, true],
      ['another container of that pod', p, { name: 'other' } as Container, false],
      ['no claims at all', pod(), { name: 'a' } as Container, false],
    ];
    for (const [name, pd, c, want] of cases) {
      it(name, () => expect(containerNeedsDynamicResources(pd, c)).to.equal(want));
    }
  });

  describe('containerCDIDevices with an extended resource claim (DRAExtendedResource)', () => {
    const ext = (name: string, req: string, dev: string) => ({
      requestNames: [req],
      poolName: 'p',
      deviceName: dev,
      cdiDeviceIDs: [`k.io/c=${name}-${dev}`],
    });
    const cache = new ClaimInfoCache([
      info({
        claimName: 'p-ext',
        claimUID: 'ext-uid',
        driverState: {
          'd.example.com': {
            devices: [ext('ext', 'container-0-request-0', 'd0'), ext('ext', 'container-1-request-0', 'd1')],
          },
        },
      }),
      info({
        driverState: { 'd.example.com': { devices: [ext('own', 'r', 'd5')] } },
      }),
    ]);
    const status = (claimName: string) => ({
      extendedResourceClaimStatus: {
        resourceClaimName: claimName,
        requestMappings: [
          { containerName: 'a', resourceName: 'example.com/gpu', requestName: 'container-0-request-0' },
          { containerName: 'b', resourceName: 'example.com/gpu', requestName: 'container-1-request-0' },
        ],
      },
    });
    const withClaim = (claimName: string): Pod => {
      const p = pod({ claims: [{ name: 'gpu', resourceClaimName: 'c' }] });
      p.status = status(claimName);
      return p;
    };
    const ctr = (name: string, requests: Record<string, string>, claims: unknown[] = []): Container =>
      ({ name, resources: { requests, claims } }) as unknown as Container;
    const cases: [string, Pod, Container, unknown][] = [
      [
        'only the requests mapped to the container',
        withClaim('p-ext'),
        ctr('a', { 'example.com/gpu': '1' }),
        { ok: true, devices: ['k.io/c=ext-d0'] },
      ],
      [
        "the pod's own claim first, then the extended one",
        withClaim('p-ext'),
        ctr('b', { 'example.com/gpu': '1' }, [{ name: 'gpu' }]),
        { ok: true, devices: ['k.io/c=own-d5', 'k.io/c=ext-d1'] },
      ],
      [
        'a container not asking for the resource gets nothing from the claim',
        withClaim('p-ext'),
        ctr('a', { cpu: '1' }),
        { ok: true, devices: [] },
      ],
      [
        'an extended resource claim not prepared',
        withClaim('p-ext-gone'),
        ctr('a', { 'example.com/gpu': '1' }),
        {
          ok: false,
          error: 'internal error: unable to get claim info for ResourceClaim p-ext-gone in namespace ns',
        },
      ],
    ];
    for (const [name, p, c, want] of cases) {
      it(name, () => expect(containerCDIDevices(p, c, cache)).to.deep.equal(want));
    }
  });

  describe('planUnprepare', () => {
    const cache = new ClaimInfoCache([
      info({ claimName: 'alone' }),
      info({ claimName: 'shared', podUIDs: ['pod-uid', 'pod-2'] }),
      info({ claimName: 'others', podUIDs: ['pod-2'] }),
    ]);
    it('unprepares what only the pod used, drops it from shared claims, leaves the rest', () => {
      const plan = planUnprepare(cache, 'ns', 'pod-uid', ['alone', 'shared', 'others', 'unknown']);
      expect(plan.unprepare.map((i) => i.claimName)).to.deep.equal(['alone']);
      expect(plan.dropPod.map((i) => i.claimName)).to.deep.equal(['shared']);
    });
  });

  it('podClaimNames: names that resolve', () => {
    const p = pod({
      claims: [
        { name: 'a', resourceClaimName: 'x' },
        { name: 'b', resourceClaimTemplateName: 't' },
        { name: 'c', resourceClaimTemplateName: 't' },
      ],
      statuses: [{ name: 'b', resourceClaimName: 'p-b' }],
    });
    expect(podClaimNames(p)).to.deep.equal(['x', 'p-b']);
  });

  it("podClaimsToPrepare and podClaimNames: the pod's claims, then its extended resource claim", () => {
    const p = pod({ claims: [{ name: 'a', resourceClaimName: 'x' }] });
    expect(podClaimsToPrepare(p)).to.deep.equal([{ name: 'a', resourceClaimName: 'x' }]);
    p.status = { extendedResourceClaimStatus: { resourceClaimName: 'p-ext', requestMappings: [] } };
    expect(podClaimsToPrepare(p)).to.deep.equal([
      { name: 'a', resourceClaimName: 'x' },
      { name: '', resourceClaimName: 'p-ext' },
    ]);
    expect(podClaimNames(p)).to.deep.equal(['x', 'p-ext']);
    // Named, so its owner is not checked (the kubelet prepares it as it would a named claim).
    expect(podClaimName(p, podClaimsToPrepare(p)[1]!)).to.deep.equal({
      ok: true,
      name: 'p-ext',
      mustCheckOwner: false,
    });
    const onlyExtended = pod();
    onlyExtended.status = { extendedResourceClaimStatus: { resourceClaimName: 'p-ext' } };
    expect(podClaimNames(onlyExtended)).to.deep.equal(['p-ext']);
  });

  describe('checkpoint', () => {
    const sum = (s: string) => `len${s.length}`;
    it('round-trips', () => {
      const entries = [info({ claimName: 'z' }), info({ claimName: 'a' })];
      const got = decodeCheckpoint(encodeCheckpoint(entries, sum), sum);
      expect(got).to.deep.equal({ ok: true, entries: [entries[1], entries[0]] });
    });
    it('refuses a changed file', () => {
      const text = encodeCheckpoint([info()], sum).replace('"pod-uid"', '"pod-uiX"');
      expect(decodeCheckpoint(text, () => 'other')).to.deep.equal({
        ok: false,
        error: 'checkpoint is corrupted',
      });
    });
    it('refuses garbage', () => {
      const got = decodeCheckpoint('{', sum);
      expect(got.ok).to.equal(false);
    });
  });

  it('inactivePodClaims: pods the cache references that are not active', () => {
    const entries = [
      info({ claimName: 'c1', podUIDs: ['gone', 'live'] }),
      info({ claimName: 'c2', podUIDs: ['gone'] }),
    ];
    expect(inactivePodClaims(entries, new Set(['live']))).to.deep.equal([
      { podUID: 'gone', namespace: 'ns', claimNames: ['c1', 'c2'] },
    ]);
  });
});
