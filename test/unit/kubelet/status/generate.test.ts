import { expect } from 'chai';
import type { ContainerStatus, Pod } from '../../../../src/api/core.js';
import { asSandboxID } from '../../../../src/kubelet/container/types.js';
import {
  generateContainersReadyCondition,
  generatePodInitializedCondition,
  generatePodReadyCondition,
  generatePodReadyToStartContainersCondition,
  isKubeletOwnedCondition,
  isKubeletSharedCondition,
} from '../../../../src/kubelet/status/generate.js';

const pod = (spec: Partial<Pod['spec']>): Pod => ({
  metadata: { name: 'p' },
  spec: { containers: [], ...spec },
});
const st = (name: string, extra: Partial<ContainerStatus> = {}): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  ...extra,
});

describe('condition generators', () => {
  describe('ContainersReady', () => {
    it('distinguishes a nil list (unknown) from an empty one', () => {
      const p = pod({ containers: [{ name: 'a' }] });
      expect(generateContainersReadyCondition(p, null, 'Running')).to.deep.equal({
        type: 'ContainersReady',
        status: 'False',
        reason: 'UnknownContainerStatuses',
      });
      expect(generateContainersReadyCondition(p, [], 'Running')).to.deep.equal({
        type: 'ContainersReady',
        status: 'False',
        reason: 'ContainersNotReady',
        message: 'containers with unknown status: [a]',
      });
    });

    it('lists sidecars before regular containers and unknown before unready', () => {
      const p = pod({
        initContainers: [{ name: 'init' }, { name: 'side', restartPolicy: 'Always' }],
        containers: [{ name: 'a' }, { name: 'b' }, { name: 'c' }],
      });
      const c = generateContainersReadyCondition(
        p,
        [st('b'), st('side'), st('a', { ready: true })],
        undefined,
      );
      expect(c.message).to.equal(
        'containers with unknown status: [c], containers with unready status: [side b]',
      );
    });

    it('reports Succeeded as PodCompleted only when every status is known; Failed always wins', () => {
      const p = pod({ containers: [{ name: 'a' }, { name: 'b' }] });
      expect(generateContainersReadyCondition(p, [st('a')], 'Succeeded').reason).to.equal(
        'ContainersNotReady',
      );
      expect(generateContainersReadyCondition(p, [st('a'), st('b')], 'Succeeded').reason).to.equal(
        'PodCompleted',
      );
      expect(generateContainersReadyCondition(p, [], 'Failed').reason).to.equal('PodFailed');
    });

    it('tolerates malformed entries and specs without container lists', () => {
      const bad = { metadata: {}, spec: {} } as unknown as Pod;
      expect(generateContainersReadyCondition(bad, [], 'Running').status).to.equal('True');
      const withNull = [null, st('a', { ready: true })] as unknown as ContainerStatus[];
      expect(
        generateContainersReadyCondition(pod({ containers: [{ name: 'a' }] }), withNull, 'Running').status,
      ).to.equal('True');
    });
  });

  describe('Ready', () => {
    it('joins every failing readiness gate, in spec order', () => {
      const p = pod({
        readinessGates: [{ conditionType: 'g1' }, { conditionType: 'g2' }, { conditionType: 'g3' }],
      });
      const c = generatePodReadyCondition(
        p,
        [
          { type: 'g2', status: 'Unknown' },
          { type: 'g3', status: 'True' },
        ],
        [],
        'Running',
      );
      expect(c).to.deep.equal({
        type: 'Ready',
        status: 'False',
        reason: 'ReadinessGatesNotReady',
        message:
          'corresponding condition of pod readiness gate "g1" does not exist., ' +
          'the status of pod readiness gate "g2" is not "True", but Unknown',
      });
    });

    it('copies ContainersReady when that is not True, ignoring the gates', () => {
      const p = pod({ containers: [{ name: 'a' }], readinessGates: [{ conditionType: 'g' }] });
      expect(generatePodReadyCondition(p, undefined, null, 'Running')).to.deep.equal({
        type: 'Ready',
        status: 'False',
        reason: 'UnknownContainerStatuses',
      });
    });
  });

  describe('Initialized', () => {
    it('is True without init containers even for a nil list', () => {
      expect(
        generatePodInitializedCondition(pod({ containers: [{ name: 'a' }] }), null, 'Pending').status,
      ).to.equal('True');
    });

    it('names unknown and incomplete init containers (a sidecar completes when started)', () => {
      const p = pod({
        initContainers: [{ name: 'i1' }, { name: 's', restartPolicy: 'Always' }, { name: 'i2' }],
        containers: [{ name: 'a' }],
      });
      const c = generatePodInitializedCondition(
        p,
        [st('i1', { ready: true }), st('s', { ready: true })],
        'Pending',
      );
      expect(c.message).to.equal(
        'containers with unknown status: [i2], containers with incomplete status: [s]',
      );
    });

    it('stays True once a regular container ran, and only those count', () => {
      const p = pod({ initContainers: [{ name: 'i' }], containers: [{ name: 'a' }] });
      const ran = st('a', { state: { terminated: { exitCode: 1 } } });
      expect(generatePodInitializedCondition(p, [st('i'), ran], 'Running').status).to.equal('True');
      // An init container's running state is not evidence.
      const initRunning = st('i', { state: { running: {} } });
      expect(generatePodInitializedCondition(p, [initRunning], 'Running').status).to.equal('False');
    });
  });

  describe('PodReadyToStartContainers', () => {
    const sandbox = (netns: 'pod' | 'node', ip: string | null = '10.0.0.1') => ({
      id: asSandboxID('s'),
      state: 'ready' as const,
      attempt: 0,
      ip,
      netns,
    });
    it('follows podSandboxChanged, including the network namespace mode', () => {
      expect(
        generatePodReadyToStartContainersCondition(pod({}), { sandboxes: [sandbox('pod')] }).status,
      ).to.equal('True');
      expect(
        generatePodReadyToStartContainersCondition(pod({}), { sandboxes: [sandbox('node')] }).status,
      ).to.equal('False');
      const host = pod({ hostNetwork: true });
      expect(
        generatePodReadyToStartContainersCondition(host, { sandboxes: [sandbox('node', '')] }).status,
      ).to.equal('True');
    });
    it('treats a missing sandbox list as no sandbox', () => {
      const r = { sandboxes: undefined } as unknown as { sandboxes: [] };
      expect(generatePodReadyToStartContainersCondition(pod({}), r).status).to.equal('False');
    });
  });

  it('knows which condition types the kubelet owns and shares', () => {
    for (const t of [
      'PodScheduled',
      'Ready',
      'Initialized',
      'ContainersReady',
      'PodReadyToStartContainers',
    ]) {
      expect(isKubeletOwnedCondition(t), t).to.equal(true);
    }
    expect(isKubeletOwnedCondition('DisruptionTarget')).to.equal(false);
    expect(isKubeletSharedCondition('DisruptionTarget')).to.equal(true);
    expect(isKubeletOwnedCondition('example.com/gate')).to.equal(false);
  });
});
