import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { parseBenchArgs, defaultJsonPath, kwokFirstInRun, positiveArg } from '../../../bench/lib/args.js';
import {
  entrypointNodeFlags,
  imageCompileCache,
  imageNodeFlags,
  setsCompileCache,
} from '../../../bench/lib/imageflags.js';
import {
  auditPolicy,
  countOf,
  countRequests,
  countsRequest,
  parseAuditLine,
  requestsBesidesEvents,
  type AuditRecord,
} from '../../../bench/lib/audit.js';
import { leaseCadence } from '../../../bench/lib/leases.js';
import { isRunningReady, podPlan, statusKey } from '../../../bench/lib/pods.js';
import {
  parseProcStatCpu,
  parseProcStatMachine,
  parseProcStatusMem,
  rssTimeline,
  windowUsage,
} from '../../../bench/lib/procstat.js';
import { promValue } from '../../../bench/lib/prom.js';
import { targetRows, targetsSummaryTable, type TargetInputs } from '../../../bench/lib/scaletargets.js';
import { median, percentile, ratio, slope, summarize } from '../../../bench/lib/stats.js';
import { duration, formatTable, num, times } from '../../../bench/lib/table.js';

describe('bench helpers', () => {
  describe('stats', () => {
    it('takes nearest-rank percentiles', () => {
      const s = Array.from({ length: 100 }, (_, i) => i + 1);
      expect(percentile(s, 50)).to.equal(50);
      expect(percentile(s, 99)).to.equal(99);
      expect(percentile(s, 100)).to.equal(100);
      expect(percentile([7], 99)).to.equal(7);
      expect(percentile([], 50)).to.be.NaN;
    });

    it('takes the median of the finite values, the mean of the middle two for an even count', () => {
      expect(median([3, 1, 2])).to.equal(2);
      expect(median([4, 1, 3, 2])).to.equal(2.5);
      expect(median([Number.NaN, 5, 1])).to.equal(3);
      expect(median([Number.NaN])).to.be.NaN;
      expect(median([])).to.be.NaN;
    });

    it('summarizes unsorted samples without changing them', () => {
      const input = [5, 1, 4, 2, 3];
      const s = summarize(input);
      expect(s).to.deep.include({ n: 5, min: 1, p50: 3, p99: 5, max: 5, mean: 3 });
      expect(input).to.deep.equal([5, 1, 4, 2, 3]);
    });

    it('fits a least-squares slope and guards ratios', () => {
      expect(
        slope([
          [0, 1],
          [1, 3],
          [2, 5],
        ]),
      ).to.be.closeTo(2, 1e-9);
      expect(slope([[1, 1]])).to.be.NaN;
      expect(ratio(6, 3)).to.equal(2);
      expect(ratio(1, 0)).to.be.NaN;
      expect(ratio(Number.NaN, 1)).to.be.NaN;
    });
  });

  describe('table', () => {
    it('aligns the first column left and the others right', () => {
      const t = formatTable(
        ['', 'a', 'bb'],
        [
          ['row one', '1 ms', '22 ms'],
          ['r2', '333 ms'],
        ],
      );
      expect(t.split('\n')).to.deep.equal([
        '              a     bb',
        '-------  ------  -----',
        'row one    1 ms  22 ms',
        'r2       333 ms',
      ]);
    });

    it('formats numbers, durations and ratios with units', () => {
      expect(num(1234.567, 1, 'MiB')).to.equal('1,234.6 MiB');
      expect(num(Number.NaN)).to.equal('n/a');
      expect(duration(12.34)).to.equal('12.3 ms');
      expect(duration(450)).to.equal('450 ms');
      expect(duration(65_000)).to.equal('65.0 s');
      expect(times(1.234)).to.equal('1.23x');
      expect(times(Number.POSITIVE_INFINITY)).to.equal('n/a');
    });
  });

  describe('audit log counting', () => {
    const ev = (o: Record<string, unknown>): string =>
      JSON.stringify({
        kind: 'Event',
        apiVersion: 'audit.k8s.io/v1',
        level: 'Metadata',
        requestReceivedTimestamp: '2026-01-01T00:00:01.000000Z',
        ...o,
      });

    it('parses resource, subresource, user and time', () => {
      const r = parseAuditLine(
        ev({
          stage: 'ResponseComplete',
          verb: 'patch',
          user: { username: 'op' },
          objectRef: { resource: 'pods', subresource: 'status', namespace: 'x', name: 'p' },
          responseStatus: { code: 200 },
        }),
      );
      expect(r).to.deep.equal({
        user: 'op',
        verb: 'patch',
        resource: 'pods/status',
        stage: 'ResponseComplete',
        atMs: Date.parse('2026-01-01T00:00:01Z'),
        code: 200,
      });
      expect(parseAuditLine('not json')).to.equal(undefined);
      expect(parseAuditLine('{"broken"')).to.equal(undefined);
    });

    it('counts a request once: watches when they start, the rest when they complete', () => {
      const base = { user: 'op', resource: 'pods', atMs: 1000, code: 200 };
      expect(countsRequest({ ...base, verb: 'watch', stage: 'ResponseStarted' })).to.equal(true);
      expect(countsRequest({ ...base, verb: 'watch', stage: 'ResponseComplete' })).to.equal(false);
      expect(countsRequest({ ...base, verb: 'get', stage: 'ResponseStarted' })).to.equal(false);
      expect(countsRequest({ ...base, verb: 'get', stage: 'ResponseComplete' })).to.equal(true);
      expect(countsRequest({ ...base, verb: 'get', stage: 'Panic' })).to.equal(true);
    });

    it('counts by user inside a half-open window, by verb and resource', () => {
      const r = (user: string, verb: string, resource: string, atMs: number): AuditRecord => ({
        user,
        verb,
        resource,
        atMs,
        stage: 'ResponseComplete',
        code: 200,
      });
      const records = [
        r('op', 'patch', 'pods/status', 100),
        r('op', 'patch', 'pods/status', 150),
        r('op', 'get', 'pods', 120),
        r('op', 'update', 'leases', 199),
        r('op', 'patch', 'pods/status', 200), // at the end: outside
        r('op', 'patch', 'pods/status', 99), // before the start: outside
        r('kwok', 'patch', 'pods/status', 120), // another user
      ];
      const c = countRequests(records, 'op', 100, 200);
      expect(c.total).to.equal(4);
      expect(c.byKind).to.deep.equal({ 'patch pods/status': 2, 'get pods': 1, 'update leases': 1 });
      expect(countOf(c, /^(patch|update) pods\/status$/)).to.equal(2);
      expect(countOf(c, /leases/)).to.equal(1);
      expect(requestsBesidesEvents(c)).to.equal(4);
      const withEvents = countRequests(
        [...records, r('op', 'create', 'events', 130), r('op', 'patch', 'events', 140)],
        'op',
        100,
        200,
      );
      expect(withEvents.total).to.equal(6);
      expect(requestsBesidesEvents(withEvents)).to.equal(4);
    });

    it('writes a policy that drops the ignored users', () => {
      const p = auditPolicy(['bench-driver', 'system:apiserver']);
      expect(p).to.contain('users: ["bench-driver", "system:apiserver"]');
      expect(p).to.contain('level: Metadata');
      expect(p).to.contain('omitStages: [RequestReceived]');
    });

    it('leaves core Events out of the policy unless asked, before the Metadata rule that would take them', () => {
      const rules = (policy: string): unknown[] => (parseYaml(policy) as { rules: unknown[] }).rules;
      const without = rules(auditPolicy(['bench-driver']));
      const eventsRule = { level: 'None', resources: [{ group: '', resources: ['events'] }] };
      expect(without).to.deep.include(eventsRule);
      expect(without.findIndex((r) => JSON.stringify(r) === JSON.stringify(eventsRule))).to.be.lessThan(
        without.findIndex((r) => (r as { level: string }).level === 'Metadata'),
      );
      expect(rules(auditPolicy(['bench-driver'], { events: true }))).to.not.deep.include(eventsRule);
    });
  });

  describe('/proc parsing', () => {
    it('reads utime+stime after a command name with spaces and parentheses', () => {
      // Fields 14 and 15 (utime, stime) are 250 and 50 ticks.
      const stat = '4242 (node (x) y) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 11 0 100 200 300';
      expect(parseProcStatCpu(stat)).to.equal(3);
      expect(() => parseProcStatCpu('1 (x) S')).to.throw(/malformed/);
    });

    it("reads the machine's busy and whole CPU time from /proc/stat's first line", () => {
      // user nice system idle iowait irq softirq steal guest guest_nice, in ticks
      const stat = 'cpu  300 20 100 900 80 10 40 30 5 0\ncpu0 150 10 50 450 40 5 20 15 0 0\nintr 1 2\n';
      // busy: everything but idle and iowait (guest is inside user already)
      expect(parseProcStatMachine(stat)).to.deep.equal({ busySec: 5, allSec: 14.8 });
      expect(parseProcStatMachine('cpu 1 2 3 4 5 6 7')).to.deep.equal({ busySec: 0.19, allSec: 0.28 });
      expect(() => parseProcStatMachine('cpu0 1 2 3 4 5 6 7 8\n')).to.throw(/malformed/);
      expect(() => parseProcStatMachine('cpu 1 2 x 4 5 6 7 8\n')).to.throw(/malformed/);
    });

    it('reads VmRSS and VmHWM in MiB', () => {
      const status = 'Name:\tnode\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n';
      expect(parseProcStatusMem(status)).to.deep.equal({ rssMiB: 100, hwmMiB: 200 });
      expect(() => parseProcStatusMem('Name: x\n')).to.throw(/VmRSS/);
    });

    it('takes CPU used over a window and its largest RSS', () => {
      const s = [
        { t: 0, cpuSec: 1, rssMiB: 10, hwmMiB: 10 },
        { t: 1, cpuSec: 1.5, rssMiB: 30, hwmMiB: 30 },
        { t: 2, cpuSec: 4, rssMiB: 20, hwmMiB: 30 },
      ];
      expect(windowUsage(s)).to.deep.equal({ cpuSec: 3, maxRssMiB: 30 });
      expect(windowUsage([]).cpuSec).to.be.NaN;
    });

    it('reads RSS at each whole minute of a window and at its end', () => {
      const s = [0, 30, 60, 90, 120, 150].map((sec) => ({
        t: 1000 + sec * 1000,
        cpuSec: 0,
        rssMiB: 100 + sec,
        hwmMiB: 0,
      }));
      expect(rssTimeline(s, 1000, 1000 + 150_000)).to.deep.equal([
        { minute: 0, rssMiB: 100 },
        { minute: 1, rssMiB: 160 },
        { minute: 2, rssMiB: 220 },
        { minute: 2.5, rssMiB: 250 },
      ]);
      expect(rssTimeline(s.slice(0, 5), 1000, 1000 + 120_400)).to.have.length(3);
      // The first sample is taken just after the window opens: it is still minute 0.
      const late = s.map((x) => ({ ...x, t: x.t + 5 }));
      expect(rssTimeline(late, 1000, 1000 + 60_000)[0]).to.deep.equal({ minute: 0, rssMiB: 100 });
      expect(rssTimeline([], 0, 60_000)).to.deep.equal([]);
    });
  });

  describe('prometheus text', () => {
    const text = [
      '# HELP nodejs_eventloop_lag_p99_seconds The 99th percentile.',
      'nodejs_eventloop_lag_p99_seconds 0.0123',
      'prober_probe_total{node="a",probe_type="readiness",result="successful"} 10',
      'prober_probe_total{node="b",probe_type="readiness",result="successful"} 5',
      'prober_probe_total{node="b",probe_type="liveness",result="successful"} 7',
      'prober_probe_total_created 99',
    ].join('\n');

    it('reads one metric, summed over the matching label sets', () => {
      expect(promValue(text, 'nodejs_eventloop_lag_p99_seconds')).to.equal(0.0123);
      expect(promValue(text, 'prober_probe_total')).to.equal(22);
      expect(promValue(text, 'prober_probe_total', { probe_type: 'readiness' })).to.equal(15);
      expect(promValue(text, 'prober_probe_total', { node: 'b', probe_type: 'liveness' })).to.equal(7);
      expect(promValue(text, 'missing_metric')).to.be.NaN;
    });
  });

  describe('lease cadence', () => {
    const opts = { intervalMs: 10_000, lateMs: 12_000, durationMs: 40_000 };

    it('finds every late and expired gap, the window end included', () => {
      const renewals = new Map([
        ['a', [5_000, 15_000, 25_000, 35_000, 45_000, 55_000]], // on time throughout
        ['b', [8_000, 18_000, 60_000]], // 42 s silent: late and expired
        ['c', [9_000, 19_000]], // silent from 19 s to the end at 60 s
      ]);
      const c = leaseCadence(renewals, 10_000, 60_000, opts);
      expect(c.nodes).to.equal(3);
      expect(c.renewals).to.equal(5 + 2 + 1);
      expect(c.expected).to.equal(15);
      expect(c.maxGapMs).to.equal(42_000);
      expect(c.late).to.equal(2);
      expect(c.expired).to.equal(2);
    });

    it('counts a perfectly regular heartbeat as on time', () => {
      const times = Array.from({ length: 20 }, (_, i) => i * 10_000 + 3_000);
      const c = leaseCadence(new Map([['n', times]]), 0, 180_000, opts);
      expect(c).to.include({ late: 0, expired: 0, maxGapMs: 10_000, renewals: 18 });
    });
  });

  describe('pods', () => {
    it('sees Ready only for Running pods with Ready=True', () => {
      const cond = (s: string) => [{ type: 'Ready', status: s }];
      expect(isRunningReady({ status: { phase: 'Running', conditions: cond('True') } })).to.equal(true);
      expect(isRunningReady({ status: { phase: 'Running', conditions: cond('False') } })).to.equal(false);
      expect(isRunningReady({ status: { phase: 'Pending', conditions: cond('True') } })).to.equal(false);
    });

    it('keys a status by state, not by details', () => {
      const a = {
        status: {
          phase: 'Running',
          conditions: [{ type: 'Ready', status: 'True' }],
          containerStatuses: [{ ready: true, state: { running: { startedAt: 'x' } } }],
        },
      };
      const b = structuredClone(a);
      b.status.containerStatuses[0]!.state.running.startedAt = 'y';
      expect(statusKey(a)).to.equal(statusKey(b));
      b.status.containerStatuses[0]!.ready = false;
      expect(statusKey(a)).to.not.equal(statusKey(b));
    });

    it('spreads the pod plan over the nodes from the start', () => {
      expect(podPlan(['n0', 'n1'], 2, 'p')).to.deep.equal([
        { name: 'p-0-0', node: 'n0' },
        { name: 'p-1-0', node: 'n1' },
        { name: 'p-0-1', node: 'n0' },
        { name: 'p-1-1', node: 'n1' },
      ]);
    });
  });

  describe('arguments', () => {
    it('parses a scenario with flags', () => {
      const r = parseBenchArgs(['scale', '--quick', '--nodes', '3', '--pods=7', '--json', 'x.json']);
      expect(r).to.deep.equal({
        ok: true,
        args: {
          scenario: 'scale',
          quick: true,
          nodes: 3,
          pods: 7,
          json: 'x.json',
          concurrency: 64,
          kwok: true,
          ours: true,
          planePerSide: false,
          nodeArgs: [],
          imageNodeFlags: true,
          imageNode: false,
          agentAuth: 'token',
          runs: 1,
          kwokFirst: false,
          auditEvents: false,
          kwokEvents: 'default',
          replicas: 1,
        },
      });
      expect(parseBenchArgs(['steady', '--hold-minutes', '2', '--no-kwok'])).to.deep.include({ ok: true });
      const kwokOnly = parseBenchArgs(['scale', '--kwok-only', '--kwok-events']);
      expect(kwokOnly.ok && kwokOnly.args.ours).to.equal(false);
      const perSide = parseBenchArgs(['scale', '--plane-per-side']);
      expect(perSide.ok && perSide.args.planePerSide).to.equal(true);
      for (const bad of [
        ['scale', '--kwok-only', '--no-kwok'],
        ['scale', '--kwok-only', '--replicas', '3'],
        ['steady', '--kwok-only'],
      ])
        expect(parseBenchArgs(bad)).to.deep.include({ ok: false });
      const audited = parseBenchArgs(['scale', '--audit-events']);
      expect(audited.ok && audited.args.auditEvents).to.equal(true);
    });

    it("reads a micro-benchmark's positive integer flag, its fallback when absent", () => {
      expect(positiveArg('--pods', 34, ['node', 'x.ts', '--pods', '7'])).to.equal(7);
      expect(positiveArg('--pods', 34, ['node', 'x.ts'])).to.equal(34);
      expect(() => positiveArg('--pods', 34, ['node', 'x.ts', '--pods', '0'])).to.throw('positive integer');
      expect(() => positiveArg('--pods', 34, ['node', 'x.ts', '--pods'])).to.throw('positive integer');
    });

    it('alternates which side of a scale set goes first, starting as --kwok-first says', () => {
      const first = parseBenchArgs(['scale', '--runs', '4', '--kwok-first']);
      expect(first.ok && first.args.kwokFirst).to.equal(true);
      const order = (kwok: boolean, kwokFirst: boolean): boolean[] =>
        [1, 2, 3, 4].map((run) => kwokFirstInRun({ kwok, kwokFirst }, run));
      expect(order(true, false)).to.deep.equal([false, true, false, true]);
      expect(order(true, true)).to.deep.equal([true, false, true, false]);
      expect(order(false, true)).to.deep.equal([false, false, false, false]);
    });

    it('passes node flags to the operator and takes a heap snapshot directory', () => {
      const r = parseBenchArgs([
        'scale',
        '--node-arg=--max-old-space-size=384',
        '--node-arg',
        '--expose-gc',
        '--heap-snapshots',
        '/tmp/snaps',
      ]);
      expect(r.ok && r.args.nodeArgs).to.deep.equal(['--max-old-space-size=384', '--expose-gc']);
      expect(r.ok && r.args.heapSnapshots).to.equal('/tmp/snaps');
      expect(r.ok && r.args.imageNodeFlags).to.equal(true);
      const bare = parseBenchArgs(['scale', '--no-image-node-flags']);
      expect(bare.ok && bare.args.imageNodeFlags).to.equal(false);
      expect(r.ok && r.args.imageNode).to.equal(false);
      const shipped = parseBenchArgs(['scale', '--image-node']);
      expect(shipped.ok && shipped.args.imageNode).to.equal(true);
      expect(parseBenchArgs(['scale', '--node-arg', 'x'])).to.deep.equal({
        ok: false,
        message: '--node-arg needs a node flag (--node-arg=--flag)',
      });
    });

    it('takes a directory for the API server profile', () => {
      const r = parseBenchArgs(['scale', '--apiserver-profile=/tmp/prof']);
      expect(r.ok && r.args.apiserverProfile).to.equal('/tmp/prof');
      expect(parseBenchArgs(['scale', '--apiserver-profile'])).to.deep.equal({
        ok: false,
        message: '--apiserver-profile needs a directory',
      });
    });

    it('authenticates the agents with ServiceAccount tokens unless told certificate', () => {
      const r = parseBenchArgs(['scale']);
      expect(r.ok && r.args.agentAuth).to.equal('token');
      const c = parseBenchArgs(['scale', '--agent-auth', 'certificate']);
      expect(c.ok && c.args.agentAuth).to.equal('certificate');
      expect(parseBenchArgs(['scale', '--agent-auth=password'])).to.deep.equal({
        ok: false,
        message: '--agent-auth needs one of token, certificate',
      });
    });

    it('repeats the scale scenario, and only it', () => {
      const r = parseBenchArgs(['scale', '--runs', '3']);
      expect(r.ok && r.args.runs).to.equal(3);
      expect(parseBenchArgs(['scale', '--runs=0'])).to.deep.equal({
        ok: false,
        message: '--runs needs a positive integer',
      });
      expect(parseBenchArgs(['steady', '--runs', '2'])).to.deep.equal({
        ok: false,
        message: '--runs is a flag of the scale scenario',
      });
      expect(parseBenchArgs(['steady', '--runs', '1'])).to.deep.include({ ok: true });
    });

    it('rejects what it does not know', () => {
      expect(parseBenchArgs([])).to.deep.equal({ ok: false, message: 'no scenario given' });
      expect(parseBenchArgs(['scale', '--nodes', '0'])).to.deep.equal({
        ok: false,
        message: '--nodes needs a positive integer',
      });
      expect(parseBenchArgs(['fly'])).to.deep.equal({ ok: false, message: 'unknown scenario fly' });
      expect(parseBenchArgs(['scale', '--bogus'])).to.deep.equal({
        ok: false,
        message: 'unknown flag --bogus',
      });
      expect(parseBenchArgs(['scale', 'steady'])).to.deep.equal({
        ok: false,
        message: 'unexpected argument steady',
      });
    });

    it('names the default results file by scenario and time', () => {
      expect(defaultJsonPath('scale', new Date('2026-11-23T01:02:03.456Z'))).to.equal(
        'bench/results/scale-2026-11-23T01-02-03Z.json',
      );
    });
  });
});

describe('bench: the image node flags', () => {
  it('reads the flags between node and dist/main.js of the exec-form ENTRYPOINT', () => {
    const df = 'FROM node:22 AS build\nENTRYPOINT ["node", "--a=1", "--b", "dist/main.js"]\n';
    expect(entrypointNodeFlags(df)).to.deep.equal(['--a=1', '--b']);
    expect(entrypointNodeFlags('ENTRYPOINT ["node", "dist/main.js"]')).to.deep.equal([]);
  });

  it('fails loudly on any other ENTRYPOINT, or none', () => {
    for (const df of ['FROM x', 'ENTRYPOINT node dist/main.js', 'ENTRYPOINT ["sh", "-c", "dist/main.js"]']) {
      expect(() => entrypointNodeFlags(df), df).to.throw(/expected ENTRYPOINT/);
    }
  });

  it("finds the repository's Dockerfile in that shape", () => {
    expect(imageNodeFlags()).to.be.an('array');
  });

  it('sees an image that starts from a compile cache by its ENV line only', () => {
    expect(setsCompileCache('FROM node:22\nENV NODE_COMPILE_CACHE=/app/.compile-cache\n')).to.equal(true);
    expect(setsCompileCache('FROM node:22\n# ENV NODE_COMPILE_CACHE=/x\nENV NODE_ENV=production\n')).to.equal(
      false,
    );
    expect(setsCompileCache('ENV NODE_COMPILE_CACHE=\n')).to.equal(false);
    // The repository's image does (the benchmarks then fill one for the operator).
    expect(imageCompileCache()).to.equal(true);
  });
});

describe('bench: the issue #17 targets', () => {
  /** One side of a 10-pod run: everything on target but what `over` changes. */
  const side = (over: Partial<TargetInputs> = {}): TargetInputs => ({
    nodes: 2,
    pods: 10,
    podsPerSec: 100,
    readyLatency: { p99: 1000 },
    createCpuSec: 1,
    createWithEventsCpuSec: 1,
    rssAtAllReadyMiB: 200,
    nodesReadyMs: 1500,
    eventLoopP99Ms: 40,
    statusUpdatesPerPod: 2,
    createRequests: { total: 20, byKind: { 'patch pods/status': 10, 'create events': 10 } },
    deleteRequests: { total: 10, byKind: { 'patch pods/status': 10 } },
    liveHeapPerPodBytes: Number.NaN,
    eventsByReason: { Started: [10, 10] },
    ...over,
  });
  const kwok = side({ createWithEventsCpuSec: 1 });

  it("tests each row's value against its target", () => {
    const rows = targetRows(side({ podsPerSec: 90, rssAtAllReadyMiB: 301 }), kwok);
    const byFigure = new Map(rows.map((r) => [r.figure, r]));
    const tp = byFigure.get('throughput, ours / kwok')!;
    expect(tp.value).to.be.closeTo(0.9, 1e-9);
    expect(tp.shown).to.equal('0.90x');
    expect(tp.meets(tp.value)).to.equal(false);
    expect(tp.meets(1)).to.equal(true);
    const rss = byFigure.get('RSS when all pods are Ready')!;
    expect([rss.meets(rss.value), rss.meets(300)]).to.deep.equal([false, true]);
    // Requests: 10 status writes and the 10 Started Events, per pod.
    expect(byFigure.get('API requests per pod, create (Events by reason)')!.value).to.equal(2);
    const writes = byFigure.get('status writes per lifecycle / status changes')!;
    expect(writes.shown).to.equal('2.00 / 2.00');
    expect(writes.meets(writes.value)).to.equal(true);
    expect(writes.meets(0.1)).to.equal(false);
  });

  it('summarizes several runs by the median and counts the runs that met each target', () => {
    const runs = [
      { ours: side({ podsPerSec: 90 }), kwok },
      { ours: side({ podsPerSec: 120, statusUpdatesPerPod: 1.9 }), kwok },
      { ours: side({ podsPerSec: 105 }), kwok },
    ];
    const lines = targetsSummaryTable(runs).split('\n');
    expect(lines[0]).to.match(
      /^target \(issue #17\)\s+run 1\s+run 2\s+run 3\s+median\s+target\s+met\s+runs met$/,
    );
    const cells = (figure: string): string[] =>
      lines
        .find((l) => l.startsWith(figure))!
        .slice(figure.length)
        .trim()
        .split(/\s{2,}/);
    // Throughput 0.90x, 1.20x, 1.05x: the median meets 1.0x, two runs of three did.
    expect(cells('throughput, ours / kwok')).to.deep.equal([
      '0.90x',
      '1.20x',
      '1.05x',
      '1.05x',
      '>= 1.0x',
      'met',
      '2 of 3',
    ]);
    // One run wrote 0.1 more statuses per pod than it saw change: the median is still equal, two runs met it.
    expect(cells('status writes per lifecycle / status changes')).to.deep.equal([
      '2.00 / 2.00',
      '2.00 / 1.90',
      '2.00 / 2.00',
      '+0.00 (writes - changes)',
      'equal',
      'met',
      '2 of 3',
    ]);
    // Without snapshots the row has no value in any run.
    expect(cells('live heap per pod (heap snapshots, settled)').slice(-3)).to.deep.equal([
      '<= 8 KB',
      'n/a',
      'n/a',
    ]);
    // Without kwok the ratios have none either.
    const alone = targetsSummaryTable([{ ours: side() }, { ours: side() }]).split('\n');
    expect(alone.find((l) => l.startsWith('throughput'))).to.match(
      /n\/a\s+n\/a\s+n\/a\s+>= 1\.0x\s+n\/a\s+n\/a$/,
    );
  });
});
