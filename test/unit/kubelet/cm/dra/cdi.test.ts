import { expect } from 'chai';
import {
  buildCDIRegistry,
  inKubeletRoot,
  mergeEnv,
  resolveCDIDevices,
} from '../../../../../src/kubelet/cm/dra/cdi.js';

// As the DRA test driver writes one per claim.
const driverSpec = JSON.stringify({
  cdiVersion: '0.3.0',
  kind: 'test-driver.cdi.k8s.io/test',
  devices: [
    {
      name: 'claim-uid-dev0',
      containerEdits: { env: ['user_a=b', 'DRA_DEVICE=dev0'] },
    },
  ],
  containerEdits: { env: ['SHARED=1'] },
});

const yamlSpec = `
cdiVersion: 0.5.0
kind: vendor.com/gpu
devices:
  - name: gpu0
    containerEdits:
      deviceNodes:
        - path: /dev/gpu0
          hostPath: /dev/null
      mounts:
        - hostPath: /opt/lib
          containerPath: /usr/lib/gpu
          options: [ro, rbind]
      hooks:
        - hookName: createContainer
          path: /bin/true
  - name: gpu1
    containerEdits:
      deviceNodes:
        - path: /dev/gpu1
      env: [SHARED=2]
`;

describe('cm/dra/cdi', () => {
  const registry = buildCDIRegistry([
    { path: '/var/run/cdi/test-driver.json', text: driverSpec },
    { path: '/etc/cdi/gpu.yaml', text: yamlSpec },
    { path: '/etc/cdi/broken.json', text: '{' },
    { path: '/etc/cdi/nokind.json', text: '{"devices":[]}' },
  ]);

  it('knows the devices of valid specs and says which files it skipped', () => {
    expect([...registry.devices.keys()].sort()).to.deep.equal([
      'test-driver.cdi.k8s.io/test=claim-uid-dev0',
      'vendor.com/gpu=gpu0',
      'vendor.com/gpu=gpu1',
    ]);
    expect(registry.errors).to.have.length(2);
    expect(registry.errors[1]).to.equal('invalid CDI Spec /etc/cdi/nokind.json: invalid kind undefined');
  });

  const cases: [string, string[], unknown][] = [
    [
      "the driver's env, its spec's once",
      ['test-driver.cdi.k8s.io/test=claim-uid-dev0'],
      {
        env: [
          { key: 'SHARED', value: '1' },
          { key: 'user_a', value: 'b' },
          { key: 'DRA_DEVICE', value: 'dev0' },
        ],
        mounts: [],
        devices: [],
        notApplied: [],
      },
    ],
    [
      'device nodes, read-only mounts, hooks reported; a later env wins',
      ['test-driver.cdi.k8s.io/test=claim-uid-dev0', 'vendor.com/gpu=gpu0', 'vendor.com/gpu=gpu1'],
      {
        env: [
          { key: 'user_a', value: 'b' },
          { key: 'DRA_DEVICE', value: 'dev0' },
          { key: 'SHARED', value: '2' },
        ],
        mounts: [{ containerPath: '/usr/lib/gpu', hostPath: '/opt/lib', readonly: true }],
        devices: [
          { containerPath: '/dev/gpu0', hostPath: '/dev/null', permissions: 'rwm' },
          { containerPath: '/dev/gpu1', hostPath: '/dev/gpu1', permissions: 'rwm' },
        ],
        notApplied: ['vendor.com/gpu=gpu0: hooks'],
      },
    ],
  ];
  for (const [name, ids, want] of cases) {
    it(name, () => expect(resolveCDIDevices(registry, ids)).to.deep.equal({ ok: true, edits: want }));
  }

  it('an unknown device is an error', () => {
    expect(resolveCDIDevices(registry, ['vendor.com/gpu=gpu9', 'vendor.com/gpu=gpu0'])).to.deep.equal({
      ok: false,
      error: 'unresolvable CDI devices vendor.com/gpu=gpu9',
    });
  });

  it('a later spec file wins for a device both define', () => {
    const r = buildCDIRegistry([
      {
        path: '/etc/cdi/a.json',
        text: '{"kind":"v.io/c","devices":[{"name":"d","containerEdits":{"env":["X=etc"]}}]}',
      },
      {
        path: '/var/run/cdi/a.json',
        text: '{"kind":"v.io/c","devices":[{"name":"d","containerEdits":{"env":["X=run"]}}]}',
      },
    ]);
    const got = resolveCDIDevices(r, ['v.io/c=d']);
    expect(got.ok && got.edits.env).to.deep.equal([{ key: 'X', value: 'run' }]);
  });

  it("inKubeletRoot: mounts of /var/lib/kubelet files come from the node's root, others stay", () => {
    const edits = {
      env: [{ key: 'A', value: 'b' }],
      mounts: [
        {
          containerPath: '/var/run/kubernetes.io/dra-device-attributes/x',
          hostPath: '/var/lib/kubelet/plugins/d/m',
        },
        { containerPath: '/data', hostPath: '/srv/data', readonly: true },
      ],
      devices: [],
      notApplied: [],
    };
    expect(inKubeletRoot(edits, '/state/nodes/vn-a').mounts).to.deep.equal([
      {
        containerPath: '/var/run/kubernetes.io/dra-device-attributes/x',
        hostPath: '/state/nodes/vn-a/plugins/d/m',
      },
      { containerPath: '/data', hostPath: '/srv/data', readonly: true },
    ]);
    expect(inKubeletRoot(edits, '/var/lib/kubelet').mounts).to.deep.equal(edits.mounts);
  });

  it('mergeEnv: CDI replaces a variable of the same name', () => {
    expect(
      mergeEnv(
        [
          { key: 'A', value: '1' },
          { key: 'B', value: '2' },
        ],
        [{ key: 'A', value: '9' }],
      ),
    ).to.deep.equal([
      { key: 'B', value: '2' },
      { key: 'A', value: '9' },
    ]);
  });
});
