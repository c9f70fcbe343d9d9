// The node shutdown manager's decisions, from the kubelet's own tables: Test_groupByPriority, the grace
// periods and statuses of TestManager, the admit handler, and the wait per group.
import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import {
  migrateConfig,
  shutdownConfigFrom,
  SystemCriticalPriority,
} from '../../../../src/kubelet/nodeshutdown/config.js';
import type { ShutdownGracePeriodByPodPriority } from '../../../../src/api/shutdownsettings.js';
import { admitPod } from '../../../../src/kubelet/lifecycle/admission.js';
import {
  admitWhileShuttingDown,
  groupByPriority,
  groupWait,
  killsExceeded,
  killTimeoutSeconds,
  podShutdownStatus,
  shutdownPlan,
  shutdownStatusErrors,
} from '../../../../src/kubelet/nodeshutdown/manager.js';
import { makePod } from './nodeshutdown-fixtures.js';
import { admissionNode } from '../lifecycle/admission-fixtures.js';

/** scheduling.HighestUserDefinablePriority. */
const HighestUserDefinablePriority = 1_000_000_000;

const names = (groups: { pods: Pod[] }[]): string[][] =>
  groups.map((g) => g.pods.map((p) => p.metadata.name!));

describe('nodeshutdown manager (pure)', () => {
  describe('groupByPriority (kubelet Test_groupByPriority)', () => {
    const cases: {
      name: string;
      groups: ShutdownGracePeriodByPodPriority[];
      pods: Pod[];
      want: string[][];
    }[] = [
      {
        name: 'migrate config',
        groups: migrateConfig(300_000, 120_000),
        pods: [
          makePod('normal-pod', 0),
          makePod('highest-user-definable-pod', HighestUserDefinablePriority),
          makePod('critical-pod', SystemCriticalPriority),
        ],
        want: [['normal-pod', 'highest-user-definable-pod'], ['critical-pod']],
      },
      {
        name: 'pod priority',
        groups: [1, 2, 3, 4].map((p) => ({ priority: p, shutdownGracePeriodSeconds: p * 10 })),
        pods: [0, 1, 2, 3, 4, 5].map((p) => makePod(`pod-${p}`, p)),
        want: [['pod-0', 'pod-1'], ['pod-2'], ['pod-3'], ['pod-4', 'pod-5']],
      },
      {
        name: 'a pod without a priority counts as 0; negative priorities go to the lowest group',
        groups: [
          { priority: 0, shutdownGracePeriodSeconds: 30 },
          { priority: 10_000, shutdownGracePeriodSeconds: 20 },
        ],
        pods: [
          makePod('none'),
          makePod('negative', -5),
          makePod('at-bound', 10_000),
          makePod('between', 9_999),
        ],
        want: [['none', 'negative', 'between'], ['at-bound']],
      },
      { name: 'no groups: nothing', groups: [], pods: [makePod('a', 0)], want: [] },
    ];
    for (const c of cases) {
      it(c.name, () => {
        const got = groupByPriority(c.groups, c.pods);
        expect(names(got)).to.deep.equal(c.want);
        expect(got.map((g) => g.group)).to.deep.equal(c.groups);
      });
    }
  });

  describe('grace period per pod (kubelet TestManager expectedPodToGracePeriodOverride)', () => {
    const normalNil = makePod('normal-pod-nil-grace-period', 0);
    const criticalNil = makePod('critical-pod-nil-grace-period', SystemCriticalPriority);
    const normalShort = makePod('normal-pod-grace-period', 0, 2);
    const criticalShort = makePod('critical-pod-grace-period', SystemCriticalPriority, 2);
    const normalLong = makePod('normal-pod-long-grace-period', 0, 1000);
    const both = [normalNil, criticalNil];
    const all = [normalNil, criticalNil, normalShort, criticalShort];
    // [desc, shutdownGracePeriod, shutdownGracePeriodCriticalPods, pods, each pod's grace period in order]
    const cases: [string, string, string, Pod[], number[]][] = [
      ['no override (total=30s, critical=10s)', '30s', '10s', both, [20, 10]],
      ['pods with terminationGracePeriod and without', '30s', '10s', all, [20, 10, 2, 2]],
      [
        'pod with long terminationGracePeriod is overridden',
        '30s',
        '10s',
        [...all, normalLong],
        [20, 10, 2, 2, 20],
      ],
      ['total=30, critical=0', '30s', '0s', both, [30, 0]],
      ['all time to critical pods', '5s', '5s', both, [0, 5]],
    ];
    for (const [desc, period, critical, pods, graces] of cases) {
      it(desc, () => {
        const config = shutdownConfigFrom({
          shutdownGracePeriod: period,
          shutdownGracePeriodCriticalPods: critical,
        });
        const got: Record<string, number> = {};
        for (const g of shutdownPlan(config.groups, pods))
          for (const p of g.pods) got[p.pod.metadata.name!] = p.gracePeriodSeconds;
        expect(got).to.deep.equal(Object.fromEntries(pods.map((p, i) => [p.metadata.name!, graces[i]])));
      });
    }

    it('terminates non-critical pods in the first group and critical ones in the last', () => {
      const config = shutdownConfigFrom({
        shutdownGracePeriod: '30s',
        shutdownGracePeriodCriticalPods: '10s',
      });
      const plan = shutdownPlan(config.groups, [criticalNil, normalNil]);
      expect(plan.map((g) => [g.priority, g.shutdownGracePeriodSeconds])).to.deep.equal([
        [0, 20],
        [SystemCriticalPriority, 10],
      ]);
      expect(names(plan.map((g) => ({ pods: g.pods.map((p) => p.pod) })))).to.deep.equal([
        ['normal-pod-nil-grace-period'],
        ['critical-pod-nil-grace-period'],
      ]);
    });
  });

  describe('what a terminated pod is told (kubelet TestManager "verify pod status")', () => {
    it('Failed (a Succeeded pod keeps its phase), Terminated, the message, DisruptionTarget', () => {
      const pod = makePod('running-pod');
      pod.metadata.generation = 3;
      expect(podShutdownStatus(pod)).to.deep.equal({
        phase: 'Failed',
        keepSucceeded: true,
        reason: 'Terminated',
        message: 'Pod was terminated in response to imminent node shutdown.',
        condition: {
          type: 'DisruptionTarget',
          status: 'True',
          reason: 'TerminationByKubelet',
          message: 'Pod was terminated in response to imminent node shutdown.',
          observedGeneration: 3,
        },
      });
    });
  });

  describe('admission and readiness (kubelet Admit, ShutdownStatus)', () => {
    it('admits everything until the node shuts down, then nothing', () => {
      expect(admitWhileShuttingDown(false)).to.deep.equal({ admit: true });
      expect(admitWhileShuttingDown(true)).to.deep.equal({
        admit: false,
        reason: 'NodeShutdown',
        message: 'Pod was rejected as the node is shutting down.',
      });
    });
    it("is the kubelet's last admit handler", () => {
      const node = admissionNode({ cpu: 4000, memory: 8 * 2 ** 30, pods: 110 });
      const fits = makePod('fits');
      expect(admitPod(fits, node, [])).to.deep.equal({ admit: true });
      expect(admitPod(fits, { ...node, shuttingDown: true }, [])).to.deep.equal({
        admit: false,
        reason: 'NodeShutdown',
        message: 'Pod was rejected as the node is shutting down.',
      });
      // A pod an earlier handler refuses is refused for that reason.
      const tooBig = makePod('too-big');
      tooBig.spec.containers[0]!.resources = { requests: { cpu: '8' } };
      expect(admitPod(tooBig, { ...node, shuttingDown: true }, [])).to.deep.include({ reason: 'OutOfcpu' });
    });
    it('reports "node is shutting down" as a readiness error while it does', () => {
      expect(shutdownStatusErrors(false)).to.deep.equal([]);
      expect(shutdownStatusErrors(true)).to.deep.equal(['node is shutting down']);
    });
  });

  describe('the wait per group', () => {
    const cases: {
      name: string;
      startedAt: number;
      grace: number;
      now: number;
      done: boolean;
      want: ReturnType<typeof groupWait>;
    }[] = [
      {
        name: 'all cleaned up ends the wait early',
        startedAt: 0,
        grace: 20,
        now: 3_000,
        done: true,
        want: { next: 'done' },
      },
      {
        name: 'pods left: wait, at most the poll period',
        startedAt: 0,
        grace: 20,
        now: 3_000,
        done: false,
        want: { next: 'wait', ms: 500 },
      },
      {
        name: 'pods left near the deadline: wait until it',
        startedAt: 0,
        grace: 20,
        now: 19_800,
        done: false,
        want: { next: 'wait', ms: 200 },
      },
      {
        name: 'the group grace period has passed',
        startedAt: 0,
        grace: 20,
        now: 20_000,
        done: false,
        want: { next: 'timedOut' },
      },
      {
        name: 'a group with 0 s does not wait (its pods are still killed)',
        startedAt: 5,
        grace: 0,
        now: 5,
        done: false,
        want: { next: 'timedOut' },
      },
    ];
    for (const c of cases) {
      it(c.name, () => expect(groupWait(c.startedAt, c.grace, c.now, c.done, 500)).to.deep.equal(c.want));
    }

    it('killPodNow timeout: one and a half grace periods, at least 10 s', () => {
      expect([0, 2, 7, 10, 20, 31].map(killTimeoutSeconds)).to.deep.equal([10, 10, 10, 15, 30, 46]);
    });

    it('reports the pods still running after their kill timeout, once', () => {
      const a = { pod: makePod('a'), gracePeriodSeconds: 20 };
      const b = { pod: makePod('b'), gracePeriodSeconds: 2 };
      const c = { pod: makePod('c'), gracePeriodSeconds: 2 };
      const stopped = (p: Pod): boolean => p.metadata.name === 'c';
      const late = (now: number, reported: Set<string> = new Set()): string[] =>
        killsExceeded([a, b, c], 1_000, now, stopped, reported).map((p) => p.pod.metadata.name!);
      expect(late(10_999)).to.deep.equal([]);
      expect(late(11_000)).to.deep.equal(['b']);
      expect(late(31_000)).to.deep.equal(['a', 'b']);
      expect(late(31_000, new Set(['b']))).to.deep.equal(['a']);
    });
  });
});
