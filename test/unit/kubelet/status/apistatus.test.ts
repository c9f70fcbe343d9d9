import { expect } from 'chai';
import type { Pod, PodStatus } from '../../../../src/api/core.js';
import {
  asContainerID,
  asPodUID,
  asSandboxID,
  type KubeContainerStatus,
  type RuntimePodStatus,
} from '../../../../src/kubelet/container/types.js';
import {
  ConfigSourceAnnotationKey,
  generateAPIPodStatus,
  type PodStatusProber,
} from '../../../../src/kubelet/status/apistatus.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';

const rec = (
  name: string,
  state: KubeContainerStatus['state'],
  extra: Partial<KubeContainerStatus> = {},
): KubeContainerStatus => ({
  id: asContainerID(`${name}-${state}`),
  name,
  state,
  restartCount: 0,
  hash: 'h',
  ...extra,
});
const runtime = (
  containers: KubeContainerStatus[] = [],
  ready = true,
  ips: string[] = ['10.0.0.5'],
): RuntimePodStatus => ({
  uid: asPodUID('u'),
  name: 'p',
  namespace: 'ns',
  sandboxes: [
    {
      id: asSandboxID('sb2'),
      state: ready ? 'ready' : 'notready',
      attempt: 1,
      ip: ips[0] ?? '',
      netns: 'pod',
    },
  ],
  containers,
  ips,
});
const basePod = (spec: Partial<Pod['spec']> = {}, status?: PodStatus): Pod => ({
  metadata: { uid: 'u', name: 'p', namespace: 'ns' },
  spec: { containers: [{ name: 'a' }], ...spec },
  ...(status ? { status } : {}),
});
const allReady: PodStatusProber = {
  updatePodStatus(_pod, status) {
    for (const s of [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])]) {
      s.ready = true;
      if (s.state?.running) s.started = true;
    }
  },
};
const types = (s: PodStatus) => (s.conditions ?? []).map((c) => `${c.type}=${c.status}`);

describe('generateAPIPodStatus', () => {
  it('takes podHasInitialized from the current sandbox only (1.33)', () => {
    const pod = basePod({ initContainers: [{ name: 's', restartPolicy: 'Always' }] });
    const old = [
      rec('s', 'running', { sandboxID: asSandboxID('sb2') }),
      rec('a', 'exited', { exitCode: 1, sandboxID: asSandboxID('sb1') }),
    ];
    expect(generateAPIPodStatus(pod, runtime(old), { podIsTerminal: false }).phase).to.equal('Pending');
    const current = [
      rec('s', 'running', { sandboxID: asSandboxID('sb2') }),
      rec('a', 'exited', { exitCode: 1, sandboxID: asSandboxID('sb2') }),
    ];
    expect(generateAPIPodStatus(pod, runtime(current), { podIsTerminal: false }).phase).to.equal('Running');
    // A sandbox that is not ready has no active containers at all.
    expect(generateAPIPodStatus(pod, runtime(current, false), { podIsTerminal: false }).phase).to.equal(
      'Pending',
    );
  });

  it('keeps a terminal cached phase and its reason over a non-terminal computed one', () => {
    const pod = basePod({ restartPolicy: 'Always' }, { phase: 'Running', reason: 'api-reason' });
    const s = generateAPIPodStatus(pod, runtime([rec('a', 'running')]), {
      podIsTerminal: false,
      cachedStatus: { phase: 'Failed', reason: '', message: 'cached-message' },
    });
    expect(s.phase).to.equal('Failed');
    expect(s.message).to.equal('cached-message');
    expect(s.reason).to.equal('api-reason');
  });

  it('never leaves a terminal API phase, not even for an eviction', () => {
    const pod = basePod({}, { phase: 'Succeeded' });
    const s = generateAPIPodStatus(pod, runtime([rec('a', 'running')]), {
      podIsTerminal: false,
      evictionHandlers: [{ shouldEvict: () => ({ evict: true, reason: 'Evicted', message: 'low memory' }) }],
    });
    expect(s.phase).to.equal('Succeeded');
    expect(s.reason).to.equal('Evicted');
  });

  it('lets an eviction handler force Failed with its reason and message', () => {
    const s = generateAPIPodStatus(basePod(), runtime([rec('a', 'running')]), {
      podIsTerminal: false,
      evictionHandlers: [
        { shouldEvict: () => ({ evict: false }) },
        { shouldEvict: () => ({ evict: true, reason: 'Evicted', message: 'low memory' }) },
      ],
    });
    expect([s.phase, s.reason, s.message]).to.deep.equal(['Failed', 'Evicted', 'low memory']);
  });

  it('clears reason and message when the phase changes', () => {
    const pod = basePod({}, { phase: 'Pending', reason: 'r', message: 'm' });
    const s = generateAPIPodStatus(pod, runtime([rec('a', 'running')]), { podIsTerminal: false });
    expect(s.phase).to.equal('Running');
    expect(s.reason).to.equal(undefined);
    expect(s.message).to.equal(undefined);
  });

  it('orders conditions, carries foreign ones, drops stale kubelet ones and reads gates from carried ones', () => {
    const pod = basePod(
      { readinessGates: [{ conditionType: 'example.com/gate' }] },
      {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'example.com/gate', status: 'True' },
          { type: 'DisruptionTarget', status: 'False' },
        ],
      },
    );
    const s = generateAPIPodStatus(pod, runtime([rec('a', 'running')]), {
      podIsTerminal: false,
      prober: allReady,
      cachedStatus: {
        conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }],
      },
    });
    expect(types(s)).to.deep.equal([
      'example.com/gate=True',
      'DisruptionTarget=True',
      'PodReadyToStartContainers=True',
      'Initialized=True',
      'Ready=True',
      'ContainersReady=True',
      'PodScheduled=True',
    ]);
  });

  it('omits PodReadyToStartContainers when the gate is off; without a prober nothing is ready', () => {
    const s = generateAPIPodStatus(basePod(), runtime([rec('a', 'running')]), {
      podIsTerminal: false,
      podReadyToStartContainersCondition: false,
    });
    expect(types(s)).to.deep.equal([
      'Initialized=True',
      'Ready=False',
      'ContainersReady=False',
      'PodScheduled=True',
    ]);
  });

  it('runs the prober after the phase is final', () => {
    let seen: string | undefined;
    generateAPIPodStatus(basePod({}, { phase: 'Failed' }), runtime([rec('a', 'running')]), {
      podIsTerminal: false,
      prober: { updatePodStatus: (_p, st) => (seen = st.phase) },
    });
    expect(seen).to.equal('Failed');
  });

  it('sorts pod IPs by the node family and fills host IPs', () => {
    const s = generateAPIPodStatus(basePod(), runtime([], true, ['fd00::1', '10.0.0.5', '10.0.0.6']), {
      podIsTerminal: false,
      nodeIPs: ['192.168.1.1', 'fd00::99'],
    });
    expect(s.podIP).to.equal('10.0.0.5');
    expect(s.podIPs).to.deep.equal([{ ip: '10.0.0.5' }, { ip: 'fd00::1' }]);
    expect(s.hostIPs).to.deep.equal([{ ip: '192.168.1.1' }, { ip: 'fd00::99' }]);
    const v6 = generateAPIPodStatus(basePod(), runtime([], true, ['10.0.0.5', 'fd00::1']), {
      podIsTerminal: false,
      nodeIPs: ['fd00::99'],
    });
    expect(v6.podIP).to.equal('fd00::1');
  });

  it('gives host-network pods the node IPs', () => {
    const s = generateAPIPodStatus(basePod({ hostNetwork: true }), runtime([], true, []), {
      podIsTerminal: false,
      nodeIPs: ['192.168.1.1', 'fd00::99'],
    });
    expect(s.podIPs).to.deep.equal([{ ip: '192.168.1.1' }, { ip: 'fd00::99' }]);
    expect(s.hostIP).to.equal('192.168.1.1');
  });

  it('treats pods from a non-API source as static', () => {
    const pod = basePod({ restartPolicy: 'Always' });
    pod.metadata.annotations = { [ConfigSourceAnnotationKey]: 'file' };
    const rt = runtime([rec('a', 'exited', { exitCode: 1 })]);
    expect(generateAPIPodStatus(pod, rt, { podIsTerminal: true }).phase).to.equal('Running');
    pod.metadata.annotations = { [ConfigSourceAnnotationKey]: 'api' };
    expect(generateAPIPodStatus(pod, rt, { podIsTerminal: true }).phase).to.equal('Failed');
  });

  it('sets the QoS class, leaves out empty init/ephemeral lists and does not mutate its inputs', () => {
    const pod = basePod({}, { phase: 'Running', conditions: [{ type: 'x', status: 'True' }] });
    const rt = runtime([rec('a', 'running')]);
    const before = JSON.stringify({ pod, rt });
    const s = generateAPIPodStatus(pod, rt, { podIsTerminal: false, prober: allReady });
    expect(s.qosClass).to.equal('BestEffort');
    expect(s).to.not.have.property('initContainerStatuses');
    expect(s).to.not.have.property('ephemeralContainerStatuses');
    s.conditions?.forEach((c) => (c.status = 'Unknown'));
    expect(JSON.stringify({ pod, rt })).to.equal(before);
  });

  it('reports ephemeral containers and tolerates a runtime view with missing lists', () => {
    const pod = basePod({ ephemeralContainers: [{ name: 'debug' }] });
    const rt = { uid: asPodUID('u'), name: 'p', namespace: 'ns' } as unknown as RuntimePodStatus;
    const s = generateAPIPodStatus(pod, rt, { podIsTerminal: false });
    expect(s.ephemeralContainerStatuses?.[0]?.state).to.deep.equal({
      waiting: { reason: 'ContainerCreating' },
    });
    expect(s.phase).to.equal('Pending');
  });

  it('rejects malformed pods with InvalidArgument', () => {
    const bad = basePod({ restartPolicy: 'Sometimes' as 'Always' });
    expect(() => generateAPIPodStatus(bad, runtime(), { podIsTerminal: false }))
      .to.throw()
      .that.satisfies(isInvalidArgument);
    const noSpec = { metadata: {} } as Pod;
    expect(() => generateAPIPodStatus(noSpec, runtime(), { podIsTerminal: false }))
      .to.throw()
      .that.satisfies(isInvalidArgument);
  });
});

describe('generateAPIPodStatus: observedGeneration (PodObservedGenerationTracking)', () => {
  it('stamps the status and every condition the kubelet writes with the generation it was generated from', () => {
    const pod: Pod = {
      ...basePod({ containers: [{ name: 'a' }], initContainers: [{ name: 'i' }] }),
      metadata: { uid: 'u', name: 'p', namespace: 'ns', generation: 3 },
      status: { conditions: [{ type: 'example.com/gate', status: 'True', observedGeneration: 1 }] },
    };
    const s = generateAPIPodStatus(pod, runtime([rec('i', 'exited', { exitCode: 0 }), rec('a', 'running')]), {
      podIsTerminal: false,
      prober: allReady,
    });
    expect(s.observedGeneration).to.equal(3);
    const byType = Object.fromEntries((s.conditions ?? []).map((c) => [c.type, c.observedGeneration]));
    expect(byType).to.deep.equal({
      'example.com/gate': 1,
      PodReadyToStartContainers: 3,
      Initialized: 3,
      Ready: 3,
      ContainersReady: 3,
      PodScheduled: 3,
    });
  });

  it('writes no generation for a pod that has none', () => {
    const s = generateAPIPodStatus(basePod(), runtime([rec('a', 'running')]), { podIsTerminal: false });
    expect(s).to.not.have.property('observedGeneration');
    expect((s.conditions ?? []).filter((c) => 'observedGeneration' in c)).to.deep.equal([]);
  });
});
