import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { kwokEventsStage } from '../../../bench/lib/agents.js';
import { parseBenchArgs } from '../../../bench/lib/args.js';
import { apiserverPhase, apiserverReading, worstLevel } from '../../../bench/lib/apiservermetrics.js';
import { joinCadences, leaseCadence } from '../../../bench/lib/leases.js';
import { POD_START_EVENTS } from '../../../bench/lib/pods.js';
import type { ProcSample } from '../../../bench/lib/procstat.js';
import { failoverLeaseGaps, groupProcReader } from '../../../bench/lib/replicas.js';
import { mergeScrapes, NOT_SCRAPED } from '../../../bench/lib/scaleround.js';
import {
  growthMilestones,
  histogramBuckets,
  NotReadyTimeline,
  phaseQuantile,
} from '../../../bench/lib/scalehealth.js';
import {
  ceilingTargetsTable,
  nodesReadyTargetMs,
  type CeilingInputs,
} from '../../../bench/lib/scaletargets.js';

describe('bench: the ceiling run (issue #58)', () => {
  describe('growth milestones', () => {
    const cases: [number, number[]][] = [
      [1_000, [1_000]],
      [10_000, [10_000]],
      [30_000, [10_000, 25_000, 30_000]],
      [100_000, [10_000, 25_000, 50_000, 100_000]],
      [150_000, [10_000, 25_000, 50_000, 100_000, 150_000]],
    ];
    for (const [total, want] of cases)
      it(`samples ${total} pods at ${want.join(', ')}`, () => {
        expect(growthMilestones(total)).to.deep.equal(want);
      });
  });

  describe('NotReady nodes at every moment', () => {
    it('counts a node only once it has been Ready, and keeps the most at once', () => {
      const t = new NotReadyTimeline();
      t.observe(1, 'a', false); // registering: not counted
      t.observe(2, 'a', true);
      t.observe(3, 'b', true);
      t.observe(10, 'a', false);
      t.observe(11, 'b', false);
      t.observe(12, 'a', true);
      t.observe(13, 'a', true); // a repeat changes nothing
      t.observe(20, 'b', true);
      expect(t.maxBetween(0, 9)).to.equal(0);
      expect(t.maxBetween(0, 100)).to.equal(2);
      expect(t.maxBetween(12, 19)).to.equal(1); // b stood NotReady from 11 on
      expect(t.maxBetween(21, 100)).to.equal(0);
      expect([...t.wentNotReady].sort()).to.deep.equal(['a', 'b']);
    });

    it('finds none when every node stays Ready', () => {
      const t = new NotReadyTimeline();
      for (let i = 0; i < 5; i++) t.observe(i, `n${i}`, true);
      for (let i = 0; i < 5; i++) t.observe(100 + i, `n${i}`, true);
      expect(t.maxBetween(0, 1000)).to.equal(0);
      expect(t.wentNotReady.size).to.equal(0);
    });
  });

  describe("a phase's p99 from a cumulative histogram", () => {
    const text = (counts: number[]): string =>
      ['0.01', '0.05', '0.1', '+Inf']
        .map((le, i) => `kubelet_operator_event_loop_delay_seconds_bucket{le="${le}"} ${counts[i]}`)
        .join('\n');

    it('reads the buckets and takes the bound the p99 falls under, between two scrapes', () => {
      const before = histogramBuckets(
        text([100, 100, 100, 100]),
        'kubelet_operator_event_loop_delay_seconds',
      );
      expect(before.get(Infinity)).to.equal(100);
      // 1,000 samples in the phase: 985 under 10 ms, 10 under 50 ms, 5 under 100 ms.
      const after = histogramBuckets(
        text([1085, 1095, 1100, 1100]),
        'kubelet_operator_event_loop_delay_seconds',
      );
      expect(phaseQuantile(before, after, 0.99)).to.equal(0.05);
      expect(phaseQuantile(before, after, 0.5)).to.equal(0.01);
      expect(phaseQuantile(before, after, 0.999)).to.equal(0.1);
    });

    it('says Infinity above the last bound and NaN for an empty phase', () => {
      const a = histogramBuckets(text([0, 0, 0, 0]), 'kubelet_operator_event_loop_delay_seconds');
      const b = histogramBuckets(text([0, 0, 0, 10]), 'kubelet_operator_event_loop_delay_seconds');
      expect(phaseQuantile(a, b, 0.99)).to.equal(Infinity);
      expect(phaseQuantile(b, b, 0.99)).to.be.NaN;
    });
  });

  describe('targets', () => {
    it('holds 100 nodes to 2 s and 1,000 to 10 s', () => {
      expect(nodesReadyTargetMs(100)).to.equal(2000);
      expect(nodesReadyTargetMs(1000)).to.equal(10_000);
    });

    const run = (over: Partial<CeilingInputs> = {}): CeilingInputs => ({
      nodes: 1000,
      pods: 100_000,
      ready: 100_000,
      nodesReadyMs: 9000,
      rssAtAllReadyMiB: 1400,
      health: { leases: { late: 3, maxGapMs: 12_500 }, leasesLateBy10s: 0, maxNotReady: 0 },
      lagP99ByPhaseMs: { startup: 50, create: 100, hold: Number.NaN, delete: 25 },
      ...over,
    });
    const met = (table: string, figure: string): string =>
      table
        .split('\n')
        .find((l) => l.startsWith(figure))!
        .trim()
        .split(/\s+/)
        .pop()!;

    it('meets every target of a healthy run', () => {
      const t = ceilingTargetsTable(run());
      for (const f of [
        'pods Running',
        'RSS',
        'Nodes NotReady',
        'Lease renewals',
        'event-loop',
        '1,000 Virtual',
      ])
        expect(met(t, f), f).to.equal('met');
    });

    it('fails each target on its own figure', () => {
      expect(met(ceilingTargetsTable(run({ ready: 99_999 })), 'pods Running')).to.equal('no');
      expect(met(ceilingTargetsTable(run({ rssAtAllReadyMiB: 1600 })), 'RSS')).to.equal('no');
      const sick = { leases: { late: 3, maxGapMs: 41_000 }, leasesLateBy10s: 2, maxNotReady: 1 };
      expect(met(ceilingTargetsTable(run({ health: sick })), 'Nodes NotReady')).to.equal('no');
      expect(met(ceilingTargetsTable(run({ health: sick })), 'Lease renewals')).to.equal('no');
      const slow = { startup: 50, create: 250, hold: 10, delete: 25 };
      expect(met(ceilingTargetsTable(run({ lagP99ByPhaseMs: slow })), 'event-loop')).to.equal('no');
      expect(met(ceilingTargetsTable(run({ nodesReadyMs: 18_400 })), '1,000 Virtual')).to.equal('no');
    });

    it('holds each replica to 600 MiB and reads ours against kwok with Events', () => {
      expect(
        met(ceilingTargetsTable(run({ replicas: { maxRssMiB: [580, 600, 590] } })), 'RSS peak of each'),
      ).to.equal('met');
      expect(
        met(ceilingTargetsTable(run({ replicas: { maxRssMiB: [580, 601, 590] } })), 'RSS peak of each'),
      ).to.equal('no');
      expect(ceilingTargetsTable(run())).not.to.match(/replicas|kwok/);
      const ours = run({ podsPerSec: 360, createWithEventsCpuSec: 100 });
      const peer = { pods: 100_000, podsPerSec: 300, createWithEventsCpuSec: 100 };
      const t = ceilingTargetsTable(ours, peer);
      expect(met(t, 'throughput against kwok')).to.equal('met');
      expect(met(t, 'CPU per pod')).to.equal('met');
      const t2 = ceilingTargetsTable(ours, { ...peer, podsPerSec: 301, createWithEventsCpuSec: 99 });
      expect(met(t2, 'throughput against kwok')).to.equal('no');
      expect(met(t2, 'CPU per pod')).to.equal('no');
    });
  });

  describe('replicas', () => {
    it("times the fail-over from the kill to the last node's first renewal after it", () => {
      const renewals = new Map([
        ['a', [0, 10_000, 30_000]],
        ['b', [5_000, 11_000, 38_000]],
        ['c', [9_000, 19_000]],
      ]);
      const g = failoverLeaseGaps(['a', 'b'], renewals, 12_000);
      expect(g).to.deep.equal({ servedMs: 26_000, maxGapMs: 27_000, over20s: 1, over40s: 0, waiting: 0 });
      const w = failoverLeaseGaps(['a', 'c'], renewals, 20_000);
      expect(w.waiting).to.equal(1);
      expect(w.servedMs).to.be.NaN;
    });

    it("sums the replicas' CPU and RSS, and keeps a dead one's CPU", () => {
      const live = new Map<number, ProcSample>([
        [1, { t: 0, cpuSec: 10, rssMiB: 300, hwmMiB: 310 }],
        [2, { t: 0, cpuSec: 5, rssMiB: 200, hwmMiB: 220 }],
      ]);
      const read = groupProcReader([1, 2], (pid) => live.get(pid));
      expect(read()).to.include({ cpuSec: 15, rssMiB: 500, hwmMiB: 530 });
      live.delete(2);
      live.set(1, { t: 0, cpuSec: 12, rssMiB: 320, hwmMiB: 330 });
      expect(read()).to.include({ cpuSec: 17, rssMiB: 320 });
      live.clear();
      expect(read()).to.equal(undefined);
    });

    it("merges the replicas' metrics: heaps and Events summed, histograms added, the worst lag", () => {
      const one = (heap: number, lag: number, b: [number, number][]) => ({
        ...NOT_SCRAPED,
        heapMiB: heap,
        heapCommittedMiB: heap * 2,
        youngCommittedMiB: 16,
        lagP99Ms: lag,
        loopDelayBuckets: new Map(b),
        events: { created: 3, patched: 0, filtered: 0, droppedQueueFull: 0, failed: 1, pending: 2 },
      });
      const m = mergeScrapes([
        one(100, 20, [
          [0.01, 5],
          [0.1, 9],
        ]),
        one(50, 40, [
          [0.01, 1],
          [0.1, 2],
        ]),
      ]);
      expect(m).to.include({ heapMiB: 150, heapCommittedMiB: 300, youngCommittedMiB: 32, lagP99Ms: 40 });
      expect([...m.loopDelayBuckets]).to.deep.equal([
        [0.01, 6],
        [0.1, 11],
      ]);
      expect(m.events).to.include({ created: 6, failed: 2, pending: 4 });
    });

    it('joins the Lease cadence of the windows around a fail-over (the second from just after the last return)', () => {
      const renewals = new Map([['a', [0, 10_000, 20_000, 50_000, 60_000]]]);
      const opts = { intervalMs: 10_000, lateMs: 12_000, durationMs: 40_000 };
      const j = joinCadences([
        leaseCadence(renewals, 0, 25_000, opts),
        leaseCadence(renewals, 50_001, 60_000, opts),
      ]);
      expect(j).to.include({ nodes: 1, late: 0, maxGapMs: 10_000 });
      expect(leaseCadence(renewals, 0, 60_000, opts).late).to.equal(1);
    });
  });

  describe("kwok's pod-ready stage with the kubelet's start Events", () => {
    const stage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  next:
    statusTemplate: |
      phase: Running
`;

    it('sends Pulled, Created and Started, then patches the status as kwok converts next.statusTemplate', () => {
      const out = parseYaml(kwokEventsStage(stage)) as {
        spec: { next?: unknown; steps: Record<string, Record<string, string>>[]; resourceRef: unknown };
      };
      expect(out.spec.next).to.equal(undefined);
      expect(out.spec.resourceRef).to.deep.equal({ apiGroup: 'v1', kind: 'Pod' });
      expect(out.spec.steps.slice(0, 3).map((s) => s.event)).to.deep.equal(
        POD_START_EVENTS.map(([reason, message]) => ({ type: 'Normal', reason, message })),
      );
      expect(out.spec.steps[3]!.patch).to.deep.equal({
        subresource: 'status',
        root: 'status',
        template: 'phase: Running\n',
      });
    });

    it('refuses a stage it cannot convert', () => {
      expect(() => kwokEventsStage(stage.replace('statusTemplate', 'other'))).to.throw(/statusTemplate/);
    });
  });

  describe('arguments', () => {
    it('takes --rate, --hold-minutes and the kwok sides for scale', () => {
      const r = parseBenchArgs([
        'scale',
        '--nodes',
        '1000',
        '--rate',
        '500',
        '--hold-minutes',
        '3',
        '--kwok-both',
      ]);
      expect(r.ok && r.args).to.include({ nodes: 1000, rate: 500, holdMinutes: 3, kwokEvents: 'both' });
      const e = parseBenchArgs(['scale', '--kwok-events']);
      expect(e.ok && e.args.kwokEvents).to.equal('events');
      expect(parseBenchArgs(['scale', '--rate', '0']).ok).to.equal(false);
      expect(parseBenchArgs(['scale', '--no-kwok', '--kwok-events']).ok).to.equal(false);
      const rp = parseBenchArgs(['scale', '--replicas', '3']);
      expect(rp.ok && rp.args.replicas).to.equal(3);
      expect(parseBenchArgs(['steady', '--replicas', '3']).ok).to.equal(false);
    });
  });

  describe("the API server's metrics", () => {
    // Lines as kube-apiserver v1.37 writes them (label order included).
    const exposition = (o: { nodeHigh: number[]; leases: number[]; rejected?: number }): string =>
      [
        '# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram',
        ...['0', '0.005', '0.02', '0.05', '+Inf'].map(
          (le, i) =>
            `apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="kubelet-operator-node-high",priority_level="node-high",le="${le}"} ${o.nodeHigh[i]}`,
        ),
        // A request that never executed (it timed out in the queue) is not a wait of one that ran.
        'apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="false",flow_schema="kubelet-operator-node-high",priority_level="node-high",le="+Inf"} 40',
        ...['0.005', '0.1', '1', '60', '+Inf'].map(
          (le, i) =>
            `apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1",le="${le}"} ${o.leases[i]}`,
        ),
        // Lease GETs and pod PUTs are not Lease writes.
        'apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="GET",version="v1",le="+Inf"} 500',
        'apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="PUT",version="v1",le="+Inf"} 700',
        ...(o.rejected
          ? [
              `apiserver_flowcontrol_rejected_requests_total{flow_schema="kubelet-operator-nodes",priority_level="system",reason="queue-full"} ${o.rejected}`,
            ]
          : []),
      ].join('\n');

    it("reads a phase's Lease writes, queue waits and rejections from two readings", () => {
      const before = apiserverReading(
        exposition({ nodeHigh: [0, 10, 10, 10, 10], leases: [10, 10, 10, 10, 10] }),
      );
      const after = apiserverReading(
        exposition({ nodeHigh: [0, 60, 100, 110, 110], leases: [10, 900, 1000, 1010, 1010], rejected: 7 }),
      );
      const p = apiserverPhase(before, after);
      expect(p.leasePuts).to.equal(1000);
      // 990 of the 1,000 PUTs within 1 s: the p99 (990th) is in the 1 s bucket.
      expect(p.leasePutP99Ms).to.equal(1000);
      expect(p.levels['node-high']).to.deep.equal({ executed: 100, waitP99Ms: 50, rejected: 0 });
      expect(p.levels['system']).to.deep.equal({ executed: 0, waitP99Ms: Number.NaN, rejected: 7 });
      expect(worstLevel(p)).to.deep.equal({ level: 'node-high', waitP99Ms: 50, rejected: 7 });
      // Nothing in the window: no level, no p99.
      const idle = apiserverPhase(after, after);
      expect(idle.leasePuts).to.equal(0);
      expect(idle.leasePutP99Ms).to.be.NaN;
      expect(idle.levels).to.deep.equal({});
    });
  });
});
