// ContainerRestartRules (Beta, on by default in v1.37): a container's own restartPolicy and its
// restartPolicyRules over the pod's policy, in every decision the kubelet makes with them: whether an exited
// container restarts, computePodActions (regular and init containers, a new sandbox), the pod phase, the
// status manager's transition check and the probe worker's "will it come back".
import { expect } from 'chai';
import type {
  Container,
  ContainerRestartPolicy,
  ContainerRestartRule,
  ContainerStatus,
  PodSpec,
  RestartPolicy,
} from '../../../src/api/core.js';
import { containerShouldRestart, findMatchingRestartRule } from '../../../src/api/restartrules.js';
import { shouldContainerBeRestarted } from '../../../src/kubelet/container/helpers.js';
import { computePodActions } from '../../../src/kubelet/kuberuntime/actions.js';
import { decideProbe, initialWorkerState, probeTiming } from '../../../src/kubelet/prober/doprobe.js';
import { getPhase } from '../../../src/kubelet/status/phase.js';
import { checkContainerStateTransition } from '../../../src/kubelet/status/transition.js';
import { pod, probes, record, runtime, sandbox } from './kuberuntime/fixtures.js';
import * as pf from './prober/fixtures.js';

const restartIn = (...values: number[]): ContainerRestartRule => ({
  action: 'Restart',
  exitCodes: { operator: 'In', values },
});
const restartNotIn = (...values: number[]): ContainerRestartRule => ({
  action: 'Restart',
  exitCodes: { operator: 'NotIn', values },
});

/** A container named `name` with the given own policy and rules. */
function ctr(name: string, policy?: ContainerRestartPolicy, rules?: ContainerRestartRule[]): Container {
  return {
    name,
    image: 'busybox',
    ...(policy ? { restartPolicy: policy } : {}),
    ...(rules ? { restartPolicyRules: rules } : {}),
  };
}

describe('ContainerRestartRules', () => {
  describe('containerShouldRestart: pod policy × container policy × exit code', () => {
    // Rows: pod policy (unset = Always), container policy (unset = the pod's), then [exit 0, exit 1].
    const table: [RestartPolicy | undefined, ContainerRestartPolicy | undefined, boolean, boolean][] = [
      [undefined, undefined, true, true],
      [undefined, 'Always', true, true],
      [undefined, 'OnFailure', false, true],
      [undefined, 'Never', false, false],
      ['Always', undefined, true, true],
      ['Always', 'Always', true, true],
      ['Always', 'OnFailure', false, true],
      ['Always', 'Never', false, false],
      ['OnFailure', undefined, false, true],
      ['OnFailure', 'Always', true, true],
      ['OnFailure', 'OnFailure', false, true],
      ['OnFailure', 'Never', false, false],
      ['Never', undefined, false, false],
      ['Never', 'Always', true, true],
      ['Never', 'OnFailure', false, true],
      ['Never', 'Never', false, false],
    ];
    for (const [podPolicy, own, on0, on1] of table) {
      it(`pod ${podPolicy ?? '(unset)'}, container ${own ?? '(unset)'}: exit 0 → ${on0}, exit 1 → ${on1}`, () => {
        const spec = podPolicy ? { restartPolicy: podPolicy } : {};
        expect(containerShouldRestart(ctr('c', own), spec, 0)).to.equal(on0);
        expect(containerShouldRestart(ctr('c', own), spec, 1)).to.equal(on1);
      });
    }
  });

  describe('containerShouldRestart: rules', () => {
    // [pod policy, container policy, rules, exit code, restart?, why]
    const rows: [RestartPolicy, ContainerRestartPolicy | undefined, unknown, number, boolean, string][] = [
      ['Always', 'Never', [restartIn(42)], 42, true, 'an In rule matches'],
      ['Always', 'Never', [restartIn(42)], 1, false, 'an In rule does not match: the container policy'],
      ['Never', 'Never', [restartIn(1, 2, 3)], 2, true, 'one of several values'],
      ['Always', 'Never', [restartNotIn(0)], 1, true, 'a NotIn rule matches'],
      ['Always', 'Never', [restartNotIn(0)], 0, false, 'a NotIn rule does not match'],
      ['Always', 'Never', [restartNotIn()], 0, true, 'NotIn an empty set matches every code'],
      ['Always', 'Never', [restartIn()], 0, false, 'In an empty set matches none'],
      ['Always', 'OnFailure', [restartIn(0)], 0, true, 'a rule wins over OnFailure for exit 0'],
      ['Never', undefined, [restartIn(1)], 1, false, 'rules are not read without a container policy'],
      [
        'Always',
        'Never',
        [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [3] } }],
        3,
        true,
        'a RestartAllContainers rule matches: the container restarts with the whole pod',
      ],
      [
        'Never',
        'Never',
        [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [3] } }, restartIn(4)],
        4,
        true,
        'the first match decides: a later Restart rule',
      ],
      [
        'Never',
        'Never',
        [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [3] } }],
        4,
        false,
        'RestartAllContainers not matching: the container policy (Never)',
      ],
      ['Always', 'Never', [{ action: 'Restart' }], 1, false, 'a rule without exitCodes never matches'],
      [
        'Always',
        'Never',
        [{ action: 'Restart', exitCodes: { operator: 'Exists', values: [1] } }, restartIn(1)],
        1,
        true,
        'an unknown operator is skipped, the next rule matches',
      ],
      [
        'Always',
        'Never',
        [{ action: 'Stop', exitCodes: { operator: 'In', values: [1] } }],
        1,
        false,
        'unknown action',
      ],
      ['Always', 'Never', 'garbage', 1, false, 'rules that are not a list are ignored'],
      ['Always', 'Never', [null, 7, restartIn(1)], 1, true, 'entries that are not rules are skipped'],
      [
        'Always',
        'Never',
        [{ action: 'Restart', exitCodes: { operator: 'In', values: 1 } }],
        1,
        false,
        'values not a list',
      ],
    ];
    for (const [podPolicy, own, rules, code, want, why] of rows) {
      it(`${why}: exit ${code} → ${want}`, () => {
        const c = { ...ctr('c', own), restartPolicyRules: rules as ContainerRestartRule[] };
        expect(containerShouldRestart(c, { restartPolicy: podPolicy }, code)).to.equal(want);
      });
    }

    it('findMatchingRestartRule returns the first matching rule, in order', () => {
      const rules = [restartIn(1), restartNotIn(5), restartIn(2)];
      expect(findMatchingRestartRule({ restartPolicyRules: rules }, 2)).to.equal(rules[1]);
      expect(findMatchingRestartRule({ restartPolicyRules: rules }, 5)).to.equal(undefined);
      expect(findMatchingRestartRule({}, 5)).to.equal(undefined);
    });
  });

  describe('shouldContainerBeRestarted (runtime records)', () => {
    it('judges an exited record by the rules, and never restarts for a pod being deleted', () => {
      const c = ctr('a', 'Never', [restartIn(42)]);
      const p = pod({ containers: [c], restartPolicy: 'Always' });
      expect(
        shouldContainerBeRestarted(c, p, runtime([], [record('a', 'exited', { exitCode: 42 })])),
      ).to.equal(true);
      expect(
        shouldContainerBeRestarted(c, p, runtime([], [record('a', 'exited', { exitCode: 1 })])),
      ).to.equal(false);
      // Created or unknown records are always started again; no record means never started.
      expect(shouldContainerBeRestarted(c, p, runtime([], [record('a', 'created')]))).to.equal(true);
      expect(shouldContainerBeRestarted(c, p, runtime([], []))).to.equal(true);
      const deleting = pod({ containers: [c], restartPolicy: 'Always', deleting: true });
      expect(
        shouldContainerBeRestarted(c, deleting, runtime([], [record('a', 'exited', { exitCode: 42 })])),
      ).to.equal(false);
    });
  });

  describe('computePodActions', () => {
    const sb = () => [sandbox()];

    it('regular containers: each by its own policy; all done for good kills the pod', () => {
      const containers = [
        ctr('always', 'Always'),
        ctr('never', 'Never'),
        ctr('onfail', 'OnFailure'),
        ctr('pod'),
      ];
      const recs = [
        record('always', 'exited', { exitCode: 0, spec: containers[0] }),
        record('never', 'exited', { exitCode: 1, spec: containers[1] }),
        record('onfail', 'exited', { exitCode: 0, spec: containers[2] }),
        record('pod', 'exited', { exitCode: 0, spec: containers[3] }),
      ];
      const a = computePodActions(pod({ containers, restartPolicy: 'Never' }), runtime(sb(), recs), probes());
      expect(a.containersToStart).to.deep.equal([0]);
      expect(a.killPod).to.equal(false);

      // Under pod Always the container-less one restarts too; Never and OnFailure (exit 0) stay down.
      const b = computePodActions(
        pod({ containers, restartPolicy: 'Always' }),
        runtime(sb(), recs),
        probes(),
      );
      expect(b.containersToStart).to.deep.equal([0, 3]);

      // Nothing restarts: the pod is killed (its sandbox goes), as when every container finished.
      const done = [ctr('never', 'Never'), ctr('onfail', 'OnFailure')];
      const c = computePodActions(
        pod({ containers: done, restartPolicy: 'Always' }),
        runtime(sb(), [
          record('never', 'exited', { exitCode: 3, spec: done[0] }),
          record('onfail', 'exited', { exitCode: 0, spec: done[1] }),
        ]),
        probes(),
      );
      expect(c.containersToStart).to.deep.equal([]);
      expect(c.killPod).to.equal(true);
    });

    it('regular containers: a matching Restart rule restarts, another exit code does not', () => {
      const containers = [ctr('a', 'Never', [restartIn(42)])];
      const run = (code: number) =>
        computePodActions(
          pod({ containers, restartPolicy: 'Never' }),
          runtime(sb(), [record('a', 'exited', { exitCode: code, spec: containers[0] })]),
          probes(),
        );
      expect(run(42).containersToStart).to.deep.equal([0]);
      expect(run(1).containersToStart).to.deep.equal([]);
      expect(run(1).killPod).to.equal(true);
    });

    it('a running container failing its liveness probe: its own policy decides, rules are not read', () => {
      const cases: [RestartPolicy, Container, boolean][] = [
        ['Always', ctr('a', 'Never', [restartNotIn()]), false],
        ['Never', ctr('a', 'Always'), true],
        ['Never', ctr('a', 'OnFailure'), true],
        ['Never', ctr('a'), false],
        ['OnFailure', ctr('a'), true],
      ];
      for (const [podPolicy, c, restart] of cases) {
        const rec = record('a', 'running', { spec: c });
        const a = computePodActions(
          pod({ containers: [c], restartPolicy: podPolicy }),
          runtime(sb(), [rec]),
          probes({ [rec.id]: 'failure' }),
        );
        const what = `pod ${podPolicy}, container ${c.restartPolicy ?? '(unset)'}`;
        expect(a.containersToStart, what).to.deep.equal(restart ? [0] : []);
        expect(a.containersToKill.get(rec.id)?.message, what).to.equal(
          restart
            ? 'Container a failed liveness probe, will be restarted'
            : 'Container a failed liveness probe',
        );
      }
    });

    it('a new sandbox: the container OnFailure policy replaces the pod one for succeeded containers', () => {
      const containers = [ctr('once', 'OnFailure'), ctr('again', 'Never'), ctr('plain')];
      const recs = containers.map((c) => record(c.name, 'exited', { exitCode: 0, spec: c }));
      const dead = [sandbox({ state: 'notready', attempt: 1 })];
      // Pod Always: 'once' succeeded and its own OnFailure skips it; 'again' (Never) still starts in a new
      // sandbox, as in the kubelet (only OnFailure is looked at here).
      const a = computePodActions(
        pod({ containers, restartPolicy: 'Always' }),
        runtime(dead, recs),
        probes(),
      );
      expect(a.createSandbox).to.equal(true);
      expect(a.containersToStart).to.deep.equal([1, 2]);
      // Pod OnFailure: 'plain' follows the pod; 'again' has its own policy (Never), so it is not skipped.
      const b = computePodActions(
        pod({ containers, restartPolicy: 'OnFailure' }),
        runtime(dead, recs),
        probes(),
      );
      expect(b.containersToStart).to.deep.equal([1]);
      // Pod Never: no new sandbox once containers have run, whatever the containers' policies.
      const c = computePodActions(pod({ containers, restartPolicy: 'Never' }), runtime(dead, recs), probes());
      expect(c.createSandbox).to.equal(false);
    });

    it('init containers: a failed one restarts by its own policy and rules, else the pod is killed', () => {
      const run = (podPolicy: RestartPolicy, init: Container, code: number) =>
        computePodActions(
          pod({ init: [init], containers: ['app'], restartPolicy: podPolicy }),
          runtime(sb(), [record(init.name, 'exited', { exitCode: code, spec: init })]),
          probes(),
        );
      expect(run('Never', ctr('i', 'OnFailure'), 1)).to.deep.include({
        killPod: false,
        initContainersToStart: [0],
      });
      expect(run('Always', ctr('i', 'Never'), 1)).to.deep.include({
        killPod: true,
        initContainersToStart: [],
      });
      expect(run('Never', ctr('i', 'Never', [restartIn(7)]), 7)).to.deep.include({
        killPod: false,
        initContainersToStart: [0],
      });
      expect(run('Never', ctr('i', 'Never', [restartIn(7)]), 8).killPod).to.equal(true);
      expect(run('Never', ctr('i'), 1).killPod).to.equal(true);
      expect(run('OnFailure', ctr('i'), 1).killPod).to.equal(false);
      // Succeeded: on to the regular containers, whatever the policy.
      expect(run('Never', ctr('i', 'Never'), 0)).to.deep.include({ killPod: false, containersToStart: [0] });
    });

    it('init containers: an OOM-killed one that exited 0 is failed, and OnFailure does not restart exit 0', () => {
      const init = ctr('i', 'OnFailure');
      const a = computePodActions(
        pod({ init: [init], containers: ['app'], restartPolicy: 'Always' }),
        runtime(sb(), [record('i', 'exited', { exitCode: 0, reason: 'OOMKilled', spec: init })]),
        probes(),
      );
      expect(a.killPod).to.equal(true);
    });

    it('init containers in an unknown state: only the container policy, else the pod one', () => {
      const run = (podPolicy: RestartPolicy, init: Container) =>
        computePodActions(
          pod({ init: [init], containers: ['app'], restartPolicy: podPolicy }),
          runtime(sb(), [record('i', 'unknown', { spec: init })]),
          probes(),
        );
      expect(run('Always', ctr('i', 'Never', [restartNotIn()])).killPod).to.equal(true);
      const b = run('Never', ctr('i', 'OnFailure'));
      expect(b).to.deep.include({ killPod: false, initContainersToStart: [0] });
      expect([...b.containersToKill.values()].map((k) => k.reason)).to.deep.equal(['Unknown']);
      expect(run('Never', ctr('i')).killPod).to.equal(true);
    });

    it('rejects turning the gate off (only the v1.37 default is served)', () => {
      expect(() =>
        computePodActions(pod({}), runtime([], []), probes(), {
          featureGates: { ContainerRestartRules: false },
        }),
      ).to.throw(/ContainerRestartRules cannot be disabled/);
      expect(() =>
        computePodActions(pod({}), runtime([], []), probes(), {
          featureGates: { ContainerRestartRules: true },
        }),
      ).not.to.throw();
    });
  });

  describe('getPhase', () => {
    const term = (name: string, exitCode: number): ContainerStatus => ({
      name,
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode } },
    });
    const waitingAfter = (name: string, exitCode: number): ContainerStatus => ({
      name,
      ready: false,
      restartCount: 1,
      state: { waiting: { reason: 'CrashLoopBackOff' } },
      lastState: { terminated: { exitCode } },
    });
    const run = (name: string): ContainerStatus => ({
      name,
      ready: true,
      restartCount: 0,
      state: { running: {} },
    });

    // [case, spec, statuses, phase]
    const rows: [string, PodSpec, ContainerStatus[], string][] = [
      [
        'pod Never, container Always exited 0: restarting',
        { restartPolicy: 'Never', containers: [ctr('a', 'Always')] },
        [term('a', 0)],
        'Running',
      ],
      [
        'pod Never, container OnFailure exited 1: restarting',
        { restartPolicy: 'Never', containers: [ctr('a', 'OnFailure')] },
        [term('a', 1)],
        'Running',
      ],
      [
        'pod Never, container OnFailure exited 0',
        { restartPolicy: 'Never', containers: [ctr('a', 'OnFailure')] },
        [term('a', 0)],
        'Succeeded',
      ],
      [
        'pod Always, container Never exited 1',
        { restartPolicy: 'Always', containers: [ctr('a', 'Never')] },
        [term('a', 1)],
        'Failed',
      ],
      [
        'pod Always, container Never exited 0',
        { containers: [ctr('a', 'Never')] },
        [term('a', 0)],
        'Succeeded',
      ],
      [
        'pod Always, container OnFailure exited 0',
        { containers: [ctr('a', 'OnFailure')] },
        [term('a', 0)],
        'Succeeded',
      ],
      [
        'pod Always, container OnFailure waiting after exit 1',
        { containers: [ctr('a', 'OnFailure')] },
        [waitingAfter('a', 1)],
        'Running',
      ],
      [
        'a matching rule: restarting',
        { restartPolicy: 'Never', containers: [ctr('a', 'Never', [restartIn(42)])] },
        [term('a', 42)],
        'Running',
      ],
      [
        'a rule that does not match',
        { restartPolicy: 'Never', containers: [ctr('a', 'Never', [restartIn(42)])] },
        [term('a', 1)],
        'Failed',
      ],
      [
        'one done for good, one restarting',
        { restartPolicy: 'Always', containers: [ctr('a', 'Never'), ctr('b')] },
        [term('a', 1), term('b', 0)],
        'Running',
      ],
      [
        'one done for good, one running',
        { containers: [ctr('a', 'Never'), ctr('b')] },
        [term('a', 1), run('b')],
        'Running',
      ],
      [
        'init Never failed under pod Always',
        { initContainers: [ctr('i', 'Never')], containers: [ctr('a')] },
        [term('i', 1)],
        'Failed',
      ],
      [
        'init OnFailure failed under pod Never',
        { restartPolicy: 'Never', initContainers: [ctr('i', 'OnFailure')], containers: [ctr('a')] },
        [term('i', 1)],
        'Pending',
      ],
      [
        'init waiting to restart by a rule',
        {
          restartPolicy: 'Never',
          initContainers: [ctr('i', 'Never', [restartIn(5)])],
          containers: [ctr('a')],
        },
        [waitingAfter('i', 5)],
        'Pending',
      ],
      [
        'init waiting, the rule does not match',
        {
          restartPolicy: 'Never',
          initContainers: [ctr('i', 'Never', [restartIn(5)])],
          containers: [ctr('a')],
        },
        [waitingAfter('i', 6)],
        'Failed',
      ],
    ];
    for (const [name, spec, statuses, phase] of rows) {
      it(`${name} → ${phase}`, () => {
        expect(getPhase(spec, statuses, false, true)).to.equal(phase);
      });
    }

    it('a terminal pod is Succeeded or Failed whatever the containers would do', () => {
      const spec: PodSpec = { restartPolicy: 'Never', containers: [ctr('a', 'Always')] };
      expect(getPhase(spec, [term('a', 0)], true, true)).to.equal('Succeeded');
      expect(getPhase(spec, [term('a', 2)], true, true)).to.equal('Failed');
    });
  });

  describe('checkContainerStateTransition', () => {
    const st = (c: ContainerStatus[], init: ContainerStatus[] = []) => ({
      containerStatuses: c,
      initContainerStatuses: init,
    });
    const term = (name: string, exitCode: number): ContainerStatus => ({
      name,
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode } },
    });
    const back = (name: string): ContainerStatus => ({
      name,
      ready: false,
      restartCount: 1,
      state: { running: {} },
    });

    it('lets a container its own policy or rules restart leave terminated, and no other', () => {
      const spec: PodSpec = {
        restartPolicy: 'Never',
        containers: [ctr('a', 'Always'), ctr('b', 'Never', [restartIn(9)]), ctr('c')],
      };
      expect(checkContainerStateTransition(st([term('a', 0)]), st([back('a')]), spec)).to.equal(undefined);
      expect(checkContainerStateTransition(st([term('b', 9)]), st([back('b')]), spec)).to.equal(undefined);
      expect(checkContainerStateTransition(st([term('b', 1)]), st([back('b')]), spec)).to.match(
        /terminated container b/,
      );
      expect(checkContainerStateTransition(st([term('c', 1)]), st([back('c')]), spec)).to.match(
        /terminated container c/,
      );
    });

    it('does the same for init containers, by index', () => {
      const spec: PodSpec = {
        restartPolicy: 'Never',
        initContainers: [ctr('i', 'OnFailure')],
        containers: [ctr('a')],
      };
      expect(checkContainerStateTransition(st([], [term('i', 1)]), st([], [back('i')]), spec)).to.equal(
        undefined,
      );
      expect(checkContainerStateTransition(st([], [term('i', 0)]), st([], [back('i')]), spec)).to.match(
        /terminated init container i/,
      );
    });
  });

  describe('probe worker: does the container come back?', () => {
    const decide = (podPolicy: RestartPolicy, c: Container, code: number) => {
      const p = pf.makePod([{ ...c, name: 'c', livenessProbe: pf.probe() }], [], {
        restartPolicy: podPolicy,
      });
      const target = { probeType: 'liveness' as const, containerName: 'c', timing: probeTiming(pf.probe()) };
      return decideProbe(target, initialWorkerState, {
        pod: p,
        status: pf.podStatus([pf.terminated('c', 'x://1', code)]),
        now: Date.parse('2026-01-01T00:01:00Z'),
      });
    };
    const rows: [RestartPolicy, Container, number, boolean][] = [
      ['Always', ctr('c', 'Never'), 1, false],
      ['Never', ctr('c', 'Always'), 0, true],
      ['Never', ctr('c', 'OnFailure'), 1, true],
      ['Never', ctr('c', 'OnFailure'), 0, false],
      ['OnFailure', ctr('c'), 0, false],
      ['OnFailure', ctr('c'), 1, true],
      ['Never', ctr('c', 'Never', [restartIn(1)]), 1, true],
      ['Never', ctr('c', 'Never', [restartIn(99)]), 1, false],
    ];
    for (const [podPolicy, c, code, keepGoing] of rows) {
      it(`pod ${podPolicy}, container ${c.restartPolicy ?? '(unset)'}${c.restartPolicyRules ? ' + rule' : ''}, exit ${code}: keeps going ${keepGoing}`, () => {
        const d = decide(podPolicy, c, code);
        expect(d).to.deep.include({ action: 'finish', keepGoing });
        expect(d.writes).to.deep.equal([
          { op: 'set', containerID: 'x://1', result: 'success' },
          { op: 'set', containerID: 'x://1', result: 'failure' },
        ]);
      });
    }
  });
});
