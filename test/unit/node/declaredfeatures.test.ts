// Node declared features (src/node/declaredfeatures.ts): the v1.37 registry, and a node declares only what it
// supports.
import { expect } from 'chai';
import type { Container, PodSpec } from '../../../src/api/core.js';
import type { VolumeMount } from '../../../src/api/volumes.js';
import {
  admitDeclaredFeatures,
  DeclarableFeatures,
  declaredFeatures,
  declaredFeaturesSetter,
  inferForPodScheduling,
  inferForPodUpdate,
  podUpdateFeaturesWarning,
  unsatisfiedFeatures,
} from '../../../src/node/declaredfeatures.js';

describe('node declared features', () => {
  it('knows every feature of the v1.37 registry and says why each is or is not declared', () => {
    expect(DeclarableFeatures.map((f) => f.name)).to.deep.equal([
      'RestartAllContainersOnContainerExits',
      'InPlacePodLevelResourcesVerticalScaling',
      'ExtendWebSocketsToKubelet',
      'InPlacePodVerticalScalingInitContainers',
      'InPlacePodVerticalScalingMemoryBackedVolumes',
      'UserNamespacesHostNetworkSupport',
      'DRANodeAllocatableResources',
      'VolumeBindMountOptions',
      'DRAOptionalNodeOperations',
    ]);
    for (const f of DeclarableFeatures) expect(f.why, f.name).to.have.length.above(20);
  });

  it('declares ExtendWebSocketsToKubelet, InPlacePodLevelResourcesVerticalScaling, InPlacePodVerticalScalingInitContainers and RestartAllContainersOnContainerExits, sorted', () => {
    const ours = [
      'ExtendWebSocketsToKubelet',
      'InPlacePodLevelResourcesVerticalScaling',
      'InPlacePodVerticalScalingInitContainers',
      'RestartAllContainersOnContainerExits',
    ];
    expect(declaredFeatures()).to.deep.equal(ours);
    const set = declaredFeaturesSetter();
    expect(set({ declaredFeatures: ['Stale'] }, '')).to.deep.equal({ declaredFeatures: ours });
    expect(declaredFeaturesSetter([])({ declaredFeatures: ['Stale'] }, '')).to.deep.equal({});
    const table = [
      { name: 'Zeta', supported: true, why: 'because it works' },
      { name: 'Alpha', supported: true, why: 'because it works' },
      { name: 'Beta', supported: false, why: 'because it does not' },
    ];
    expect(declaredFeaturesSetter(declaredFeatures(table))({}, '')).to.deep.equal({
      declaredFeatures: ['Alpha', 'Zeta'],
    });
  });
});

describe('node declared features: what a pod needs (component-helpers nodedeclaredfeatures, v1.37)', () => {
  const c = (extra: Partial<Container> = {}): Container => ({ name: 'c', image: 'img', ...extra });
  const spec = (extra: Partial<PodSpec> = {}): PodSpec => ({ containers: [c()], ...extra });
  const allOf = (s: PodSpec) => ({ spec: s });

  const scheduling: [string, PodSpec, string[]][] = [
    ['a plain pod', spec(), []],
    [
      'a RestartAllContainers rule of a regular container',
      spec({
        containers: [
          c({
            restartPolicyRules: [
              { action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [1] } },
            ],
          }),
        ],
      }),
      ['RestartAllContainersOnContainerExits'],
    ],
    [
      'a RestartAllContainers rule of an init container',
      spec({ initContainers: [c({ restartPolicyRules: [{ action: 'RestartAllContainers' }] })] }),
      ['RestartAllContainersOnContainerExits'],
    ],
    ['a Restart rule only', spec({ containers: [c({ restartPolicyRules: [{ action: 'Restart' }] })] }), []],
    [
      'user namespaces on the host network',
      spec({ hostNetwork: true, hostUsers: false }),
      ['UserNamespacesHostNetworkSupport'],
    ],
    ['user namespaces alone', spec({ hostUsers: false }), []],
    ['the host network with host users', spec({ hostNetwork: true, hostUsers: true }), []],
    [
      'bindMountOptions of an ephemeral container, with a restart-all rule: both, sorted',
      spec({
        containers: [c({ restartPolicyRules: [{ action: 'RestartAllContainers' }] })],
        ephemeralContainers: [
          {
            name: 'e',
            image: 'img',
            volumeMounts: [{ name: 'v', mountPath: '/v', bindMountOptions: ['noexec'] } as VolumeMount],
          },
        ],
      }),
      ['RestartAllContainersOnContainerExits', 'VolumeBindMountOptions'],
    ],
    [
      'empty bindMountOptions',
      spec({
        containers: [
          c({ volumeMounts: [{ name: 'v', mountPath: '/v', bindMountOptions: [] } as VolumeMount] }),
        ],
      }),
      [],
    ],
  ];
  for (const [what, s, needs] of scheduling) {
    it(`scheduling: ${what}`, () => {
      expect(inferForPodScheduling(s)).to.deep.equal(needs);
      const verdict = admitDeclaredFeatures(allOf(s), []);
      if (needs.length === 0) expect(verdict).to.deep.equal({ admit: true });
      else
        expect(verdict).to.deep.equal({
          admit: false,
          reason: 'PodFeatureUnsupported',
          message: `Pod requires node features that are not available: ${needs.join(', ')}`,
        });
      // A node that declares them admits the pod.
      expect(admitDeclaredFeatures(allOf(s), needs)).to.deep.equal({ admit: true });
    });
  }

  const withPodResources = (r: unknown): PodSpec => ({ ...spec(), resources: r }) as PodSpec;
  const memVolume = (size?: string, medium = 'Memory') => ({
    name: 'm',
    emptyDir: { medium, ...(size ? { sizeLimit: size } : {}) },
  });
  const update: [string, PodSpec, PodSpec, string[]][] = [
    ['nothing changed', spec(), spec(), []],
    [
      'pod-level resources set',
      spec(),
      withPodResources({ requests: { cpu: '1' } }),
      ['InPlacePodLevelResourcesVerticalScaling'],
    ],
    [
      'pod-level resources changed',
      withPodResources({ limits: { cpu: '1' } }),
      withPodResources({ limits: { cpu: '2' } }),
      ['InPlacePodLevelResourcesVerticalScaling'],
    ],
    [
      'pod-level resources the same in other words',
      withPodResources({ limits: { cpu: '1' }, requests: {} }),
      withPodResources({ limits: { cpu: '1000m' } }),
      [],
    ],
    [
      'pod-level resources from none to empty',
      spec(),
      withPodResources({}),
      ['InPlacePodLevelResourcesVerticalScaling'],
    ],
    [
      'resources of an init container that runs to completion',
      spec({ initContainers: [c({ resources: { requests: { cpu: '1' } } })] }),
      spec({ initContainers: [c({ resources: { requests: { cpu: '2' } } })] }),
      ['InPlacePodVerticalScalingInitContainers'],
    ],
    [
      'resources of a sidecar',
      spec({ initContainers: [c({ restartPolicy: 'Always', resources: { requests: { cpu: '1' } } })] }),
      spec({ initContainers: [c({ restartPolicy: 'Always', resources: { requests: { cpu: '2' } } })] }),
      [],
    ],
    [
      'resources of a regular container (GA resize, no declared feature)',
      spec({ containers: [c({ resources: { requests: { cpu: '1' } } })] }),
      spec({ containers: [c({ resources: { requests: { cpu: '2' } } })] }),
      [],
    ],
    [
      'the size of a Memory emptyDir',
      spec({ volumes: [memVolume('1Gi')] }),
      spec({ volumes: [memVolume('2Gi')] }),
      ['InPlacePodVerticalScalingMemoryBackedVolumes'],
    ],
    [
      'the same size in other words',
      spec({ volumes: [memVolume('1Gi')] }),
      spec({ volumes: [memVolume('1024Mi')] }),
      [],
    ],
    ['a size limit added', spec({ volumes: [memVolume()] }), spec({ volumes: [memVolume('1Gi')] }), []],
    [
      'the size of a disk emptyDir',
      spec({ volumes: [memVolume('1Gi', '')] }),
      spec({ volumes: [memVolume('2Gi', '')] }),
      [],
    ],
  ];
  for (const [what, old, now, needs] of update) {
    it(`update: ${what}`, () => {
      expect(inferForPodUpdate(old, now)).to.deep.equal(needs);
      const warning = podUpdateFeaturesWarning(allOf(old), allOf(now), []);
      if (needs.length === 0) expect(warning).to.equal(undefined);
      else
        expect(warning).to.deep.equal({
          type: 'Warning',
          reason: 'FailedNodeDeclaredFeaturesCheck',
          message: `Pod requires node features that are not available: ${needs.join(', ')}`,
        });
      expect(podUpdateFeaturesWarning(allOf(old), allOf(now), needs)).to.equal(undefined);
    });
  }

  it('names only the features the node lacks, in the registry order by name', () => {
    expect(unsatisfiedFeatures(['A', 'B', 'C'], ['B'])).to.deep.equal(['A', 'C']);
  });
});
