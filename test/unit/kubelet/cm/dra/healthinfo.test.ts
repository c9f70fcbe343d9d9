import { expect } from 'chai';
import type { ContainerStatus, Pod } from '../../../../../src/api/core.js';
import type { ClaimInfoState } from '../../../../../src/kubelet/cm/dra/claiminfo.js';
import {
  DefaultHealthTimeoutMs,
  deviceHealthFromWire,
  HealthInfoCache,
  MaxDevicesPerDriver,
  podsUsingDevices,
  truncateHealthMessage,
  withClaimsAllocatedResourcesStatus,
  type DeviceHealth,
  type DeviceHealthStatus,
} from '../../../../../src/kubelet/cm/dra/healthinfo.js';

const D = 'gpu.example.com';
const T0 = Date.parse('2026-12-07T09:00:00Z');

function dev(device: string, health: DeviceHealthStatus, over: Partial<DeviceHealth> = {}): DeviceHealth {
  return {
    poolName: 'pool',
    deviceName: device,
    health,
    lastUpdated: 0,
    healthCheckTimeoutMs: DefaultHealthTimeoutMs,
    message: '',
    ...over,
  };
}

describe('DRA health: reported devices (buildDeviceHealth, truncateHealthMessage)', () => {
  const cases: {
    name: string;
    wire: Parameters<typeof deviceHealthFromWire>[0];
    want: Partial<DeviceHealth>;
    negative?: boolean;
  }[] = [
    {
      name: 'healthy with its own timeout; the time is the receipt, not the driver clock',
      wire: {
        device: { pool_name: 'p', device_name: 'd' },
        health: 'HEALTHY',
        last_updated_time: '12',
        health_check_timeout_seconds: '60',
      },
      want: {
        poolName: 'p',
        deviceName: 'd',
        health: 'Healthy',
        lastUpdated: T0,
        healthCheckTimeoutMs: 60_000,
      },
    },
    {
      name: 'unhealthy with a message',
      wire: { device: { pool_name: 'p', device_name: 'd' }, health: 'UNHEALTHY', message: 'ECC errors' },
      want: { health: 'Unhealthy', message: 'ECC errors', healthCheckTimeoutMs: DefaultHealthTimeoutMs },
    },
    { name: 'UNKNOWN and anything else: Unknown', wire: { health: 'UNKNOWN' }, want: { health: 'Unknown' } },
    {
      name: 'a negative timeout: the default, flagged for the log',
      wire: { health: 'HEALTHY', health_check_timeout_seconds: '-5' },
      want: { healthCheckTimeoutMs: DefaultHealthTimeoutMs },
      negative: true,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = deviceHealthFromWire(c.wire, T0);
      expect(got.device).to.deep.include(c.want);
      expect(got.negativeTimeout).to.equal(c.negative ?? false);
    });
  }

  it('a message over 1024 bytes keeps 1021 and gets "..."; one at the limit stays', () => {
    expect(truncateHealthMessage('x'.repeat(1024))).to.equal('x'.repeat(1024));
    const cut = truncateHealthMessage('y'.repeat(2000));
    expect(cut).to.have.length(1024);
    expect(cut.endsWith('y...')).to.equal(true);
    // Bytes, not characters: 600 two-byte characters are 1200 bytes.
    expect(Buffer.byteLength(truncateHealthMessage('é'.repeat(600)))).to.be.at.most(1024 + 2);
  });
});

describe('DRA health: the health cache (healthInfoCache)', () => {
  it('a device never heard of reads Unknown without a message', () => {
    expect(new HealthInfoCache().get(D, 'pool', 'gpu-0', T0)).to.deep.equal({
      health: 'Unknown',
      message: '',
    });
  });

  it('a report stores each device as heard now; a change, a new device or a new timeout counts as changed', () => {
    const c = new HealthInfoCache();
    const first = c.update(D, [dev('gpu-0', 'Healthy'), dev('gpu-1', 'Healthy')], T0);
    expect(first.changed.map((d) => [d.deviceName, d.health, d.lastUpdated])).to.deep.equal([
      ['gpu-0', 'Healthy', T0],
      ['gpu-1', 'Healthy', T0],
    ]);
    expect(first.dirty).to.equal(true);
    const same = c.update(D, [dev('gpu-0', 'Healthy'), dev('gpu-1', 'Healthy')], T0 + 2_000);
    expect(same).to.deep.equal({ changed: [], ignored: 0, dirty: false });
    const steps: [DeviceHealth, boolean][] = [
      [dev('gpu-0', 'Unhealthy', { message: 'ECC' }), true],
      [dev('gpu-0', 'Unhealthy', { message: 'ECC' }), false],
      [dev('gpu-0', 'Unhealthy', { message: 'ECC, again' }), true],
      [dev('gpu-0', 'Unhealthy', { message: 'ECC, again', healthCheckTimeoutMs: 90_000 }), true],
    ];
    for (const [d, changed] of steps) {
      const u = c.update(D, [d, dev('gpu-1', 'Healthy')], T0 + 4_000);
      expect(
        u.changed.map((x) => x.deviceName),
        JSON.stringify(d),
      ).to.deep.equal(changed ? ['gpu-0'] : []);
    }
    expect(c.get(D, 'pool', 'gpu-0', T0 + 5_000)).to.deep.equal({
      health: 'Unhealthy',
      message: 'ECC, again',
    });
  });

  it('a device not heard of within its timeout reads Unknown; the default timeout is 30 s', () => {
    const c = new HealthInfoCache();
    c.update(
      D,
      [dev('gpu-0', 'Unhealthy', { message: 'm' }), dev('gpu-1', 'Healthy', { healthCheckTimeoutMs: 5_000 })],
      T0,
    );
    expect(c.get(D, 'pool', 'gpu-0', T0 + 30_000).health).to.equal('Unhealthy');
    expect(c.get(D, 'pool', 'gpu-0', T0 + 30_001)).to.deep.equal({ health: 'Unknown', message: '' });
    expect(c.get(D, 'pool', 'gpu-1', T0 + 5_000).health).to.equal('Healthy');
    expect(c.get(D, 'pool', 'gpu-1', T0 + 5_001).health).to.equal('Unknown');
  });

  it('a device a report leaves out: kept until its timeout, then dropped and announced as Unknown once', () => {
    const c = new HealthInfoCache();
    c.update(D, [dev('gpu-0', 'Healthy'), dev('gpu-1', 'Unknown')], T0);
    expect(c.update(D, [], T0 + 30_000)).to.deep.equal({ changed: [], ignored: 0, dirty: false });
    const later = c.update(D, [], T0 + 30_001);
    // gpu-1 was Unknown already: dropped without a notice (the cache changed all the same).
    expect(later.changed.map((d) => [d.deviceName, d.health, d.message])).to.deep.equal([
      ['gpu-0', 'Unknown', ''],
    ]);
    expect(later.dirty).to.equal(true);
    expect(c.update(D, [], T0 + 40_000)).to.deep.equal({ changed: [], ignored: 0, dirty: false });
    // Reported again: a new device.
    expect(c.update(D, [dev('gpu-0', 'Healthy')], T0 + 41_000).changed).to.have.length(1);
  });

  it('drivers are apart; clearDriver forgets one (its stream ended)', () => {
    const c = new HealthInfoCache();
    c.update(D, [dev('gpu-0', 'Healthy')], T0);
    c.update('nic.example.com', [dev('gpu-0', 'Unhealthy')], T0);
    expect(c.get(D, 'pool', 'gpu-0', T0).health).to.equal('Healthy');
    expect(c.clearDriver(D)).to.equal(true);
    expect(c.get(D, 'pool', 'gpu-0', T0).health).to.equal('Unknown');
    expect(c.get('nic.example.com', 'pool', 'gpu-0', T0).health).to.equal('Unhealthy');
  });

  it(`new devices beyond ${MaxDevicesPerDriver} per driver are ignored; known ones still update`, () => {
    const c = new HealthInfoCache();
    const many = Array.from({ length: MaxDevicesPerDriver }, (_, i) => dev(`d${i}`, 'Healthy'));
    c.update(D, many, T0);
    const u = c.update(D, [...many.slice(1), dev('d0', 'Unhealthy'), dev('extra', 'Healthy')], T0 + 1);
    expect(u.ignored).to.equal(1);
    expect(u.changed.map((d) => d.deviceName)).to.deep.equal(['d0']);
    expect(c.get(D, 'pool', 'extra', T0 + 1).health).to.equal('Unknown');
  });

  it("the checkpoint is the kubelet's dra_health_state JSON and reads back", () => {
    const c = new HealthInfoCache();
    c.update(D, [dev('gpu-0', 'Unhealthy', { message: 'ECC', healthCheckTimeoutMs: 60_000 })], T0);
    const text = c.encode();
    expect(JSON.parse(text)).to.deep.equal({
      [D]: {
        Devices: {
          'pool/gpu-0': {
            PoolName: 'pool',
            DeviceName: 'gpu-0',
            Health: 'Unhealthy',
            LastUpdated: '2026-12-07T09:00:00.000Z',
            HealthCheckTimeout: 60_000_000_000,
            Message: 'ECC',
          },
        },
      },
    });
    const back = HealthInfoCache.decode(text);
    expect(back.ok).to.equal(true);
    if (!back.ok) return;
    expect(back.cache.get(D, 'pool', 'gpu-0', T0 + 60_000)).to.deep.equal({
      health: 'Unhealthy',
      message: 'ECC',
    });
    expect(back.cache.get(D, 'pool', 'gpu-0', T0 + 60_001).health).to.equal('Unknown');
    // A Go-written file: nanosecond times, a zero timeout (the default).
    const go = HealthInfoCache.decode(
      JSON.stringify({
        [D]: {
          Devices: {
            'pool/gpu-1': {
              PoolName: 'pool',
              DeviceName: 'gpu-1',
              Health: 'Healthy',
              LastUpdated: '2026-12-07T09:00:00.123456789Z',
              HealthCheckTimeout: 0,
              Message: '',
            },
          },
        },
      }),
    );
    expect(go.ok && go.cache.get(D, 'pool', 'gpu-1', T0 + 30_000).health).to.equal('Healthy');
    for (const bad of ['{', '[]', 'null']) expect(HealthInfoCache.decode(bad).ok, bad).to.equal(false);
  });
});

function info(
  over: Partial<ClaimInfoState> & { devices?: ClaimInfoState['driverState'][string]['devices'] },
): ClaimInfoState {
  const { devices, ...rest } = over;
  return {
    claimUID: 'uid-c',
    claimName: 'c',
    namespace: 'ns',
    podUIDs: ['pod-1'],
    driverState: { [D]: { devices: devices ?? [] } },
    prepared: true,
    ...rest,
  };
}

const prepared = (device: string, requestNames: string[] = ['req'], cdiDeviceIDs: string[] = []) => ({
  requestNames,
  poolName: 'pool',
  deviceName: device,
  cdiDeviceIDs,
});

describe('DRA health: the pods a change concerns', () => {
  it('those whose claims hold a changed device of that driver, each once', () => {
    const claims = [
      info({ claimName: 'a', podUIDs: ['p2', 'p1'], devices: [prepared('gpu-0')] }),
      info({ claimName: 'b', podUIDs: ['p3'], devices: [prepared('gpu-1')] }),
      info({ claimName: 'c', podUIDs: ['p1'], devices: [prepared('gpu-1')] }),
      info({
        claimName: 'd',
        podUIDs: ['p4'],
        driverState: { 'other.example.com': { devices: [prepared('gpu-0')] } },
      }),
    ];
    expect(podsUsingDevices(claims, D, [dev('gpu-0', 'Unhealthy')])).to.deep.equal(['p1', 'p2']);
    expect(podsUsingDevices(claims, D, [dev('gpu-1', 'Unhealthy'), dev('gpu-0', 'Healthy')])).to.deep.equal([
      'p1',
      'p2',
      'p3',
    ]);
    expect(podsUsingDevices(claims, D, [dev('gpu-9', 'Unhealthy')])).to.deep.equal([]);
  });
});

describe('DRA health: containerStatuses[].allocatedResourcesStatus (UpdateAllocatedResourcesStatus)', () => {
  const podWith = (
    containers: { name: string; claims?: { name: string; request?: string }[] }[],
    over: { resourceClaims?: unknown[]; resourceClaimStatuses?: unknown[] } = {},
  ): Pod =>
    ({
      metadata: { name: 'p', namespace: 'ns', uid: 'pod-1' },
      spec: {
        containers: containers.map((c) => ({
          name: c.name,
          image: 'i',
          ...(c.claims ? { resources: { claims: c.claims } } : {}),
        })),
        resourceClaims: over.resourceClaims ?? [{ name: 'gpu', resourceClaimName: 'c' }],
      },
      status: over.resourceClaimStatuses ? { resourceClaimStatuses: over.resourceClaimStatuses } : {},
    }) as unknown as Pod;
  const statusesOf = (
    pod: Pod,
    extra: Partial<Record<string, ContainerStatus['allocatedResourcesStatus']>> = {},
  ) =>
    pod.spec.containers.map(
      (c) =>
        ({
          name: c.name,
          ...(extra[c.name] ? { allocatedResourcesStatus: extra[c.name] } : {}),
        }) as ContainerStatus,
    );

  const health = new HealthInfoCache();
  health.update(D, [dev('gpu-0', 'Unhealthy', { message: 'ECC errors' }), dev('gpu-1', 'Healthy')], T0);
  const view = (claims: ClaimInfoState[]) => ({
    claimInfo: (ns: string, name: string) => claims.find((c) => c.namespace === ns && c.claimName === name),
    health: (driver: string, pool: string, device: string) => health.get(driver, pool, device, T0),
  });

  const cases: {
    name: string;
    pod: Pod;
    claims: ClaimInfoState[];
    message?: boolean;
    before?: Partial<Record<string, ContainerStatus['allocatedResourcesStatus']>>;
    want: Record<string, ContainerStatus['allocatedResourcesStatus'] | undefined>;
  }[] = [
    {
      name: "a container's claim: claim:<name>, driver/pool/device, health and message",
      pod: podWith([{ name: 'c', claims: [{ name: 'gpu' }] }, { name: 'plain' }]),
      claims: [info({ devices: [prepared('gpu-0'), prepared('gpu-1')] })],
      want: {
        c: [
          {
            name: 'claim:gpu',
            resources: [
              { resourceID: `${D}/pool/gpu-0`, health: 'Unhealthy', message: 'ECC errors' },
              { resourceID: `${D}/pool/gpu-1`, health: 'Healthy' },
            ],
          },
        ],
        plain: undefined,
      },
    },
    {
      name: 'without ResourceHealthStatusMessage: no message',
      pod: podWith([{ name: 'c', claims: [{ name: 'gpu' }] }]),
      claims: [info({ devices: [prepared('gpu-0')] })],
      message: false,
      want: {
        c: [{ name: 'claim:gpu', resources: [{ resourceID: `${D}/pool/gpu-0`, health: 'Unhealthy' }] }],
      },
    },
    {
      name: 'a device with CDI IDs: the first is its resourceID, each ID once; a device never reported: Unknown',
      pod: podWith([{ name: 'c', claims: [{ name: 'gpu' }] }]),
      claims: [
        info({
          devices: [
            prepared('gpu-1', ['req'], ['vendor.com/gpu=1', 'vendor.com/gpu=all']),
            prepared('gpu-1', ['other'], ['vendor.com/gpu=1']),
            prepared('gpu-7'),
          ],
        }),
      ],
      want: {
        c: [
          {
            name: 'claim:gpu',
            resources: [
              { resourceID: 'vendor.com/gpu=1', health: 'Healthy' },
              { resourceID: `${D}/pool/gpu-7`, health: 'Unknown' },
            ],
          },
        ],
      },
    },
    {
      name: "a reference to one request: claim:<name>/<request>, only that request's devices (a subrequest counts as its request)",
      pod: podWith([
        {
          name: 'c',
          claims: [
            { name: 'gpu', request: 'a' },
            { name: 'gpu', request: 'b/sub' },
          ],
        },
      ]),
      claims: [
        info({ devices: [prepared('gpu-0', ['a']), prepared('gpu-1', ['b']), prepared('gpu-7', [])] }),
      ],
      want: {
        c: [
          {
            name: 'claim:gpu/a',
            resources: [
              { resourceID: `${D}/pool/gpu-0`, health: 'Unhealthy', message: 'ECC errors' },
              { resourceID: `${D}/pool/gpu-7`, health: 'Unknown' },
            ],
          },
          {
            name: 'claim:gpu/b/sub',
            resources: [
              { resourceID: `${D}/pool/gpu-1`, health: 'Healthy' },
              { resourceID: `${D}/pool/gpu-7`, health: 'Unknown' },
            ],
          },
        ],
      },
    },
    {
      name: "a template's claim: the name the pod's status gives; not named yet: resolved from the spec, else nothing",
      pod: podWith([{ name: 'c', claims: [{ name: 'gpu' }, { name: 'tpl' }, { name: 'pending' }] }], {
        resourceClaims: [
          { name: 'gpu', resourceClaimName: 'c' },
          { name: 'tpl', resourceClaimTemplateName: 't' },
          { name: 'pending', resourceClaimTemplateName: 't' },
        ],
        resourceClaimStatuses: [{ name: 'tpl', resourceClaimName: 'p-tpl-x' }],
      }),
      claims: [
        info({ devices: [prepared('gpu-1')] }),
        info({ claimName: 'p-tpl-x', devices: [prepared('gpu-0')] }),
      ],
      want: {
        c: [
          { name: 'claim:gpu', resources: [{ resourceID: `${D}/pool/gpu-1`, health: 'Healthy' }] },
          {
            name: 'claim:tpl',
            resources: [{ resourceID: `${D}/pool/gpu-0`, health: 'Unhealthy', message: 'ECC errors' }],
          },
        ],
      },
    },
    {
      name: 'a claim not prepared (not in the cache): no entry; device plugin entries stay, an emptied claim entry goes',
      pod: podWith([{ name: 'c', claims: [{ name: 'gpu' }] }]),
      claims: [],
      before: {
        c: [
          { name: 'example.com/dev', resources: [{ resourceID: 'd1', health: 'Healthy' }] },
          { name: 'claim:old', resources: [] },
        ],
      },
      want: { c: [{ name: 'example.com/dev', resources: [{ resourceID: 'd1', health: 'Healthy' }] }] },
    },
    {
      name: 'a claim whose devices are none (nothing prepared yet): no entry, no empty list',
      pod: podWith([{ name: 'c', claims: [{ name: 'gpu' }] }]),
      claims: [info({ devices: [] })],
      want: { c: undefined },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = withClaimsAllocatedResourcesStatus(
        c.pod,
        statusesOf(c.pod, c.before),
        view(c.claims),
        c.message ?? true,
      );
      expect(Object.fromEntries(got.map((s) => [s.name, s.allocatedResourcesStatus]))).to.deep.equal(c.want);
    });
  }

  it('no container references a claim: the same array', () => {
    const p = podWith([{ name: 'c' }]);
    const s = statusesOf(p);
    expect(withClaimsAllocatedResourcesStatus(p, s, view([]), true)).to.equal(s);
  });
});
