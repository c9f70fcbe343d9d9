// Node declared features (src/node/declaredfeatures.ts): the v1.37 registry, and a node declares only what it
// supports.
import { expect } from 'chai';
import {
  DeclarableFeatures,
  declaredFeatures,
  declaredFeaturesSetter,
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

  it('declares none of them today, so the status has no declaredFeatures; a supported one would be listed sorted', () => {
    expect(declaredFeatures()).to.deep.equal([]);
    const set = declaredFeaturesSetter();
    expect(set({ declaredFeatures: ['Stale'] }, '')).to.deep.equal({});
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
