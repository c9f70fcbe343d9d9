// RestartAllContainersOnContainerExits (Beta, on by default in v1.37): a container restart rule's
// RestartAllContainers action restarts the whole pod in place. Each decision the kubelet makes about it, alone:
// the rules, whether the pod is restarting, computePodActions' containersToReset, the AllContainersRestarting
// and Initialized conditions, the container statuses of removed containers, the phase, the status manager's
// transition check and the probe worker.
import { expect } from 'chai';
import type {
  Container,
  ContainerRestartRule,
  ContainerStatus,
  Pod,
  PodStatus,
} from '../../../src/api/core.js';
import {
  allContainersCouldRestart,
  containerShouldRestart,
  restartsAllContainers,
} from '../../../src/api/restartrules.js';
import {
  allContainersRestartCleanedUp,
  shouldAllContainersRestart,
} from '../../../src/kubelet/container/helpers.js';
import { asContainerID } from '../../../src/kubelet/container/types.js';
import { computePodActions } from '../../../src/kubelet/kuberuntime/actions.js';
import { decideProbe, initialWorkerState, probeTiming } from '../../../src/kubelet/prober/doprobe.js';
import { generateAPIPodStatus } from '../../../src/kubelet/status/apistatus.js';
import { convertToAPIContainerStatuses } from '../../../src/kubelet/status/convert.js';
import {
  generateAllContainersRestartingCondition,
  generatePodInitializedCondition,
} from '../../../src/kubelet/status/generate.js';
import { getPhase } from '../../../src/kubelet/status/phase.js';
import { checkContainerStateTransition } from '../../../src/kubelet/status/transition.js';
import { pod, probes, record, runtime, sandbox } from './kuberuntime/fixtures.js';
import * as pf from './prober/fixtures.js';

const restartAllIn = (...values: number[]): ContainerRestartRule => ({
  action: 'RestartAllContainers',
  exitCodes: { operator: 'In', values },
});
const source = (name: string, policy: Container['restartPolicy'] = 'Never'): Container => ({
  name,
  image: 'busybox',
  restartPolicy: policy,
  restartPolicyRules: [restartAllIn(42)],
});
const plain = (name: string): Container => ({ name, image: 'busybox' });
const restarting: PodStatus = { conditions: [{ type: 'AllContainersRestarting', status: 'True' }] };

describe('RestartAllContainersOnContainerExits', () => {
  describe('rules', () => {
    it('a matching RestartAllContainers rule restarts the container, under any policy', () => {
      expect(restartsAllContainers(source('s'), 42)).to.equal(true);
      expect(restartsAllContainers(source('s'), 1)).to.equal(false);
      expect(containerShouldRestart(source('s'), { restartPolicy: 'Never' }, 42)).to.equal(true);
      expect(containerShouldRestart(source('s'), { restartPolicy: 'Never' }, 1)).to.equal(false);
    });

    it('a pod may restart all its containers when any init or regular container has such a rule', () => {
      expect(allContainersCouldRestart({ containers: [plain('a')] })).to.equal(false);
      expect(allContainersCouldRestart({ containers: [plain('a'), source('s')] })).to.equal(true);
      expect(allContainersCouldRestart({ initContainers: [source('i')], containers: [plain('a')] })).to.equal(
        true,
      );
      const restartOnly = { ...plain('r'), restartPolicy: 'Never' as const };
      restartOnly.restartPolicyRules = [{ action: 'Restart', exitCodes: { operator: 'In', values: [1] } }];
      expect(allContainersCouldRestart({ containers: [restartOnly] })).to.equal(false);
    });
  });

  describe('shouldAllContainersRestart and allContainersRestartCleanedUp', () => {
    const p = pod({ init: [plain('init')], containers: [source('s'), plain('a')], restartPolicy: 'Never' });
    const sb = [sandbox()];
    // [why, runtime records, api status, restarting?]
    const rows: [string, ReturnType<typeof record>[], PodStatus | undefined, boolean][] = [
      ['nothing exited', [record('s', 'running'), record('a', 'running')], undefined, false],
      ['the source exited by its rule', [record('s', 'exited', { exitCode: 42 })], undefined, true],
      ['the source exited otherwise', [record('s', 'exited', { exitCode: 1 })], undefined, false],
      [
        'another container exited 42 (no rule of its own)',
        [record('a', 'exited', { exitCode: 42 })],
        undefined,
        false,
      ],
      ['the status says so', [], restarting, true],
      [
        'the status shows the source terminated by its rule',
        [],
        { containerStatuses: [pf.terminated('s', 'x://1', 42)] },
        true,
      ],
      [
        'the status shows the source waiting after it (restarted)',
        [],
        { containerStatuses: [{ name: 's', ready: false, restartCount: 1, state: { waiting: {} } }] },
        false,
      ],
    ];
    for (const [why, recs, api, want] of rows) {
      it(`${why}: ${want}`, () =>
        expect(shouldAllContainersRestart(p, runtime(sb, recs), api)).to.equal(want));
    }

    it('cleaned up once no init or regular container has a record (ephemeral ones do not count)', () => {
      expect(allContainersRestartCleanedUp(p, runtime(sb, [record('init', 'exited')]))).to.equal(false);
      expect(allContainersRestartCleanedUp(p, runtime(sb, [record('debug', 'running')]))).to.equal(true);
      expect(allContainersRestartCleanedUp(p, runtime(sb, []))).to.equal(true);
    });
  });

  describe('computePodActions: containersToReset', () => {
    const containers = [source('s'), plain('a')];
    const init = [plain('init'), source('si', 'Always')];
    const p = pod({ init, containers, restartPolicy: 'Never' });
    const recs = [
      record('s', 'exited', { exitCode: 42, spec: containers[0] }),
      record('a', 'running', { spec: containers[1] }),
      record('init', 'exited', { exitCode: 0, spec: init[0] }),
      { ...record('init', 'exited', { exitCode: 0, spec: init[0] }), id: asContainerID('id-init-old') },
      record('si', 'running', { spec: init[1] }),
    ];

    it('every record: others first (regular, then init; kill the running ones), then the sources', () => {
      const a = computePodActions(p, runtime([sandbox()], recs), probes(), { restartAllContainers: true });
      expect(
        a.containersToReset.map((r) => `${r.kind}/${r.name} ${r.containerID} kill=${r.kill}`),
      ).to.deep.equal([
        'regular/a id-a kill=true',
        'init/init id-init kill=false',
        'init/init id-init-old kill=false',
        'init/si id-si kill=true',
        'regular/s id-s kill=false',
      ]);
      expect(a.containersToReset.map((r) => r.containerIndex)).to.deep.equal([1, 0, 0, 1, 0]);
      expect(a).to.deep.include({
        killPod: false,
        createSandbox: false,
        initContainersToStart: [],
        containersToStart: [],
        ephemeralContainersToStart: [],
      });
      expect(a.containersToKill.size).to.equal(0);
    });

    it('a source init container exited by its rule goes last of all', () => {
      const r = [record('si', 'exited', { exitCode: 42, spec: init[1] }), record('init', 'exited')];
      const a = computePodActions(p, runtime([sandbox()], r), probes(), { restartAllContainers: true });
      expect(a.containersToReset.map((x) => x.name)).to.deep.equal(['init', 'si']);
    });

    it('without the flag, the exited source restarts by its rule alone; with it, a dead sandbox still comes first', () => {
      const a = computePodActions(p, runtime([sandbox()], recs), probes());
      expect(a.containersToReset).to.deep.equal([]);
      expect(a.containersToStart).to.deep.equal([0]);
      const dead = computePodActions(p, runtime([sandbox({ state: 'notready' })], recs), probes(), {
        restartAllContainers: true,
      });
      // A new sandbox is due: the pod is killed and its sandbox re-created (the reset list is not applied).
      expect(dead).to.deep.include({ killPod: true, createSandbox: true, initContainersToStart: [] });
    });

    it('the gate cannot be turned off', () => {
      expect(() =>
        computePodActions(p, runtime([sandbox()], recs), probes(), {
          featureGates: { RestartAllContainersOnContainerExits: false },
        }),
      ).to.throw('cannot be disabled');
    });
  });

  describe('conditions', () => {
    const p = pod({ init: [plain('init')], containers: [source('s'), plain('a')], restartPolicy: 'Never' });
    const sb = [sandbox()];
    // [why, phase, records, old status, status, reason]
    const rows: [
      string,
      PodStatus['phase'],
      ReturnType<typeof record>[],
      PodStatus | undefined,
      string,
      string,
    ][] = [
      ['Succeeded', 'Succeeded', [], restarting, 'False', 'PodCompleted'],
      ['Failed', 'Failed', [record('s', 'exited', { exitCode: 42 })], undefined, 'False', 'PodFailed'],
      ['nothing asks', 'Running', [record('s', 'running')], undefined, 'False', ''],
      [
        'the source exited by its rule',
        'Running',
        [record('s', 'exited', { exitCode: 42 })],
        undefined,
        'True',
        'RestartAllContainersStarted',
      ],
      [
        'restarting, records left',
        'Running',
        [record('a', 'exited', { exitCode: 137 })],
        restarting,
        'True',
        'RestartAllContainersStarted',
      ],
      ['restarting, every record removed', 'Pending', [], restarting, 'False', ''],
    ];
    for (const [why, phase, recs, old, status, reason] of rows) {
      it(`AllContainersRestarting, ${why}: ${status} ${reason}`, () => {
        const c = generateAllContainersRestartingCondition(p, runtime(sb, recs), old, phase);
        expect(c.status).to.equal(status);
        expect(c.reason ?? '').to.equal(reason);
        if (status === 'True') expect(c.message).to.equal('container exited with restart policy rule');
        expect(c).to.not.have.property('observedGeneration');
      });
    }

    it('Initialized stays True once the old status says so, though init containers wait again', () => {
      const waiting: ContainerStatus[] = [
        { name: 'init', ready: false, restartCount: 1, state: { waiting: {} } },
      ];
      const wasInitialized: PodStatus = { conditions: [{ type: 'Initialized', status: 'True' }] };
      expect(generatePodInitializedCondition(p, waiting, 'Pending', wasInitialized).status).to.equal('True');
      expect(generatePodInitializedCondition(p, waiting, 'Pending', {})).to.deep.include({
        status: 'False',
        reason: 'ContainersNotInitialized',
      });
    });
  });

  describe('container statuses of removed containers', () => {
    const containers = [source('s'), plain('a')];
    const p = pod({ containers, restartPolicy: 'Never' });
    const old: ContainerStatus[] = [
      {
        name: 'a',
        ready: true,
        restartCount: 2,
        containerID: 'sim://a1',
        state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
      },
      { ...pf.terminated('s', 'sim://s1', 42), restartCount: 0 },
    ];
    const convert = (recs: ReturnType<typeof record>[], podRestarting: boolean) =>
      convertToAPIContainerStatuses(p, runtime([sandbox()], recs), {
        containers,
        previousStatuses: old,
        hasInitContainers: false,
        isInitContainer: false,
        podRestarting,
      });

    it('while restarting: waiting RestartingAllContainers, its removal a termination and a restart', () => {
      const removed = 'The container is removed because RestartAllContainers in place';
      const byName = new Map(convert([], true).map((s) => [s.name, s]));
      for (const [name, count] of [
        ['a', 3],
        ['s', 1],
      ] as const) {
        expect(byName.get(name)?.state, name).to.deep.equal({
          waiting: { reason: 'RestartingAllContainers', message: removed },
        });
        expect(byName.get(name)?.lastState, name).to.deep.equal({
          terminated: { reason: 'RestartingAllContainers', message: removed, exitCode: 137 },
        });
        expect(byName.get(name)?.restartCount, name).to.equal(count);
      }
    });

    it('not restarting: the usual inference (the vanished running one terminated, unknown)', () => {
      const byName = new Map(convert([], false).map((s) => [s.name, s]));
      expect(byName.get('a')?.lastState?.terminated?.reason).to.equal('ContainerStatusUnknown');
      expect(byName.get('s')?.state?.terminated?.exitCode).to.equal(42);
    });

    it('a new container: the count never goes back, and a termination the runtime lost is carried', () => {
      const fresh = [
        { ...record('a', 'running', { spec: containers[1] }), id: asContainerID('a2'), restartCount: 0 },
      ];
      const a = convert(fresh, false).find((s) => s.name === 'a')!;
      expect(a.restartCount).to.equal(2);
      const oldWaiting: ContainerStatus[] = [
        {
          name: 's',
          ready: false,
          restartCount: 1,
          state: { waiting: { reason: 'RestartingAllContainers' } },
          lastState: { terminated: { exitCode: 137, reason: 'RestartingAllContainers' } },
        },
      ];
      const s = convertToAPIContainerStatuses(
        p,
        runtime(
          [sandbox()],
          [{ ...record('s', 'running', { spec: containers[0] }), id: asContainerID('s2') }],
        ),
        { containers, previousStatuses: oldWaiting, hasInitContainers: false, isInitContainer: false },
      ).find((x) => x.name === 's')!;
      expect(s.restartCount).to.equal(1);
      expect(s.lastState?.terminated?.reason).to.equal('RestartingAllContainers');
      // Running again after a termination the runtime's count missed: one more restart.
      const t = convertToAPIContainerStatuses(
        p,
        runtime(
          [sandbox()],
          [{ ...record('s', 'running', { spec: containers[0] }), id: asContainerID('s2') }],
        ),
        { containers, previousStatuses: old, hasInitContainers: false, isInitContainer: false },
      ).find((x) => x.name === 's')!;
      expect(t.restartCount).to.equal(1);
      expect(t.lastState?.terminated?.exitCode).to.equal(42);
    });
  });

  describe('phase, transitions, probes', () => {
    const spec = { restartPolicy: 'Never' as const, containers: [plain('a')] };
    const removedTermination = { exitCode: 137, reason: 'RestartingAllContainers' };

    it('a termination reported as RestartingAllContainers counts as restarting in the phase', () => {
      const waiting: ContainerStatus = {
        name: 'a',
        ready: false,
        restartCount: 1,
        state: { waiting: {} },
        lastState: { terminated: removedTermination },
      };
      expect(getPhase(spec, [waiting], false, true)).to.equal('Running');
      const other = { ...waiting, lastState: { terminated: { exitCode: 137, reason: 'Error' } } };
      expect(getPhase(spec, [other], false, true)).to.equal('Failed');
      const initSpec = { ...spec, initContainers: [plain('i')] };
      const init = { ...waiting, name: 'i' };
      expect(getPhase(initSpec, [init, { ...waiting, lastState: {} }], false, false)).to.equal('Pending');
      const initFailed = { ...init, lastState: { terminated: { exitCode: 1 } } };
      expect(getPhase(initSpec, [initFailed], false, false)).to.equal('Failed');
    });

    it('containers of a pod that may restart all in place may leave a terminated state', () => {
      const oldStatus = { containerStatuses: [pf.terminated('a', 'x://1', 0)] };
      const newStatus = {
        containerStatuses: [{ name: 'a', ready: false, restartCount: 1, state: { running: {} } }],
      };
      expect(checkContainerStateTransition(oldStatus, newStatus, spec)).to.be.a('string');
      const withRule = { ...spec, containers: [plain('a'), source('s')] };
      expect(checkContainerStateTransition(oldStatus, newStatus, withRule)).to.equal(undefined);
    });

    it('the probe worker of a container that may not restart goes on while the pod restarts all', () => {
      const p: Pod = pf.makePod([{ ...plain('c'), restartPolicy: 'Never', livenessProbe: pf.probe() }], [], {
        restartPolicy: 'Never',
      });
      const target = { probeType: 'liveness' as const, containerName: 'c', timing: probeTiming(pf.probe()) };
      const decide = (status: PodStatus) =>
        decideProbe(target, initialWorkerState, { pod: p, status, now: Date.parse('2026-01-01T00:01:00Z') });
      const dead = pf.podStatus([pf.terminated('c', 'x://1', 1)]);
      expect(decide(dead)).to.deep.include({ action: 'finish', keepGoing: false });
      expect(decide({ ...dead, conditions: restarting.conditions! })).to.deep.include({
        action: 'finish',
        keepGoing: true,
      });
    });
  });

  it('generateAPIPodStatus: the condition only for pods with such a rule; the statuses while restarting', () => {
    const plainPod = pod({ containers: [plain('a')], restartPolicy: 'Never' });
    const types = (p: Pod, recs: ReturnType<typeof record>[], cached?: PodStatus) =>
      generateAPIPodStatus(p, runtime([sandbox()], recs), {
        podIsTerminal: false,
        cachedStatus: cached ?? null,
      }).conditions!.map((c) => `${c.type}=${c.status}`);
    expect(types(plainPod, [record('a', 'running')])).to.not.include.members([
      'AllContainersRestarting=False',
    ]);
    const p = pod({ containers: [source('s'), plain('a')], restartPolicy: 'Never' });
    const exited = [record('s', 'exited', { exitCode: 42 }), record('a', 'running')];
    expect(types(p, exited)).to.include('AllContainersRestarting=True');
    // The sync after the reset: nothing left, the old status said True.
    const cached: PodStatus = {
      phase: 'Running',
      conditions: [
        { type: 'Initialized', status: 'True' },
        { type: 'AllContainersRestarting', status: 'True' },
      ],
      containerStatuses: [
        { ...pf.terminated('s', 'sim://s1', 42), restartCount: 0 },
        { name: 'a', ready: true, restartCount: 0, containerID: 'sim://a1', state: { running: {} } },
      ],
    };
    const after = generateAPIPodStatus(p, runtime([sandbox()], []), {
      podIsTerminal: false,
      cachedStatus: cached,
    });
    expect(after.phase).to.equal('Running');
    expect(after.conditions!.find((c) => c.type === 'AllContainersRestarting')?.status).to.equal('False');
    expect(after.conditions!.find((c) => c.type === 'Initialized')?.status).to.equal('True');
    expect(
      after.containerStatuses!.map((c) => `${c.name} ${c.state?.waiting?.reason} ${c.restartCount}`),
    ).to.deep.equal(['a RestartingAllContainers 1', 's RestartingAllContainers 1']);
  });
});
