// The node shutdown manager's shell on a fake clock: the shutdown event, the groups in order with their
// waits, the Events, admission and readiness while shutting down, the cancellation, and the feature off.
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../../../../src/api/core.js';
import type { ShutdownSettings } from '../../../../../src/api/shutdownsettings.js';
import { shutdownConfigFrom } from '../../../../../src/kubelet/nodeshutdown/config.js';
import type { PodShutdown, PodShutdownStatus } from '../../../../../src/kubelet/nodeshutdown/manager.js';
import {
  NodeShutdownManager,
  type NodeShutdownManagerDeps,
} from '../../../../../src/kubelet/nodeshutdown/shell/loop.js';
import { Metrics } from '../../../../../src/metrics.js';
import { FakeClock } from '../../../../../src/util/clock.js';
import { makePod } from '../nodeshutdown-fixtures.js';

const flush = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

interface Harness {
  clock: FakeClock;
  manager: NodeShutdownManager;
  /** [pod, grace, ms since the shutdown began] of each kill, in order. */
  kills: [string, number, number][];
  statuses: Map<string, PodShutdownStatus>;
  nodeEvents: string[];
  podEvents: string[];
  syncs: number;
  /** Pods whose containers are stopped, and those also unmounted. */
  stopped: Set<string>;
  cleaned: Set<string>;
  /** Stops and cleans up each pod this long after its kill (ms); undefined: never. */
  cleanAfter: Map<string, number>;
  start: number;
}

function harness(
  pods: Pod[],
  settings: ShutdownSettings,
  extra: Pick<NodeShutdownManagerDeps, 'metrics' | 'stateFile'> = {},
): Harness {
  const clock = new FakeClock();
  const h = {
    clock,
    kills: [] as [string, number, number][],
    statuses: new Map<string, PodShutdownStatus>(),
    nodeEvents: [] as string[],
    podEvents: [] as string[],
    syncs: 0,
    stopped: new Set<string>(),
    cleaned: new Set<string>(),
    cleanAfter: new Map<string, number>(),
    start: clock.now(),
  } as Harness;
  h.manager = new NodeShutdownManager({
    config: shutdownConfigFrom(settings),
    clock,
    activePods: () => pods.filter((p) => !h.stopped.has(p.metadata.name!)),
    killPod: (p: PodShutdown, status) => {
      const name = p.pod.metadata.name!;
      h.kills.push([name, p.gracePeriodSeconds, clock.now() - h.start]);
      h.statuses.set(name, status);
      const after = h.cleanAfter.get(name);
      if (after !== undefined)
        clock.setTimer(after, () => {
          h.stopped.add(name);
          h.cleaned.add(name);
        });
    },
    podStopped: (p) => h.stopped.has(p.metadata.name!),
    podCleanedUp: (p) => h.cleaned.has(p.metadata.name!),
    recordPod: (p, type, reason, message) =>
      h.podEvents.push(`${p.metadata.name} ${type} ${reason}: ${message}`),
    recordNode: (type, reason, message) => h.nodeEvents.push(`${type} ${reason}: ${message}`),
    syncNodeStatus: () => h.syncs++,
    logger: { info: () => undefined, warn: () => undefined },
    ...extra,
  });
  return h;
}

/** Advances the clock in poll-sized steps, letting the manager run between them. */
async function run(h: Harness, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 100) {
    h.clock.advance(100);
    await flush();
  }
}

describe('NodeShutdownManager (shell)', () => {
  const normal = makePod('normal', 0);
  const high = makePod('high', 1_000_000_000);
  const critical = makePod('critical', 2_000_000_000);

  it('kubelet_graceful_shutdown_{start,end}_time_seconds: the start set and the end 0 while it runs, then the end', async () => {
    const metrics = new Metrics();
    const series = metrics.forNode('n1');
    // Wired as the kubelet does (kubelet.ts newShutdownManager).
    const h = harness(
      [normal],
      { shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' },
      {
        metrics: {
          started: (t) => {
            series.gracefulShutdownStartTime(t);
            series.gracefulShutdownEndTime(0);
          },
          ended: (t) => series.gracefulShutdownEndTime(t),
        },
      },
    );
    const scrape = async (): Promise<string[]> =>
      (await metrics.registry.metrics())
        .split('\n')
        .filter((l) => l.startsWith('kubelet_graceful_shutdown_'));
    expect(await scrape()).to.deep.equal([]);
    h.cleanAfter.set('normal', 3_000);
    h.clock.advance(1_500);
    const start = Math.floor(h.clock.now() / 1000);
    h.manager.shutdown();
    await flush();
    expect(await scrape()).to.deep.equal([
      `kubelet_graceful_shutdown_start_time_seconds{node="n1"} ${start}`,
      'kubelet_graceful_shutdown_end_time_seconds{node="n1"} 0',
    ]);
    await run(h, 4_000);
    expect(h.manager.completed()).to.equal(true);
    const lines = await scrape();
    expect(lines[0]).to.equal(`kubelet_graceful_shutdown_start_time_seconds{node="n1"} ${start}`);
    // Cleaned up 3 s after the kill, seen at the next 500 ms poll.
    expect(lines[1]).to.equal(`kubelet_graceful_shutdown_end_time_seconds{node="n1"} ${start + 3}`);
  });

  it('keeps the times in the state file, and a restarted manager sets the gauges from it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ko-shutdown-state-'));
    const stateFile = path.join(dir, 'root', 'graceful_node_shutdown_state');
    try {
      const wired = (metrics: Metrics) => {
        const series = metrics.forNode('n1');
        return {
          started: (t: number) => {
            series.gracefulShutdownStartTime(t);
            series.gracefulShutdownEndTime(0);
          },
          ended: (t: number) => series.gracefulShutdownEndTime(t),
        };
      };
      const scrape = async (m: Metrics): Promise<string[]> =>
        (await m.registry.metrics()).split('\n').filter((l) => l.startsWith('kubelet_graceful_shutdown_'));
      const settings = { shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' };
      const h = harness([normal], settings, { metrics: wired(new Metrics()), stateFile });
      h.cleanAfter.set('normal', 2_000);
      const start = h.clock.now();
      h.manager.shutdown();
      // Real file writes between fake clock steps: run until the end time is in the file.
      for (let i = 0; i < 200 && !h.manager.completed(); i++) {
        h.clock.advance(100);
        await new Promise((r) => setTimeout(r, 2));
      }
      expect(h.manager.completed()).to.equal(true);
      const file = JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, string>;
      expect(Object.keys(file)).to.deep.equal(['startTime', 'endTime']);
      expect(Date.parse(file.startTime!)).to.equal(start);
      // Cleaned up 2 s after the kill and seen at a poll after it (real writes make the poll's step vary).
      const end = Date.parse(file.endTime!);
      expect(end - start).to.be.within(2_000, 3_000);

      const restarted = new Metrics();
      harness([], settings, { metrics: wired(restarted), stateFile });
      expect(await scrape(restarted)).to.deep.equal([
        `kubelet_graceful_shutdown_start_time_seconds{node="n1"} ${Math.floor(start / 1000)}`,
        `kubelet_graceful_shutdown_end_time_seconds{node="n1"} ${Math.floor(end / 1000)}`,
      ]);
      // A shutdown the process did not see end: the start, and the end at 0.
      writeFileSync(
        stateFile,
        JSON.stringify({ startTime: file.startTime, endTime: '0001-01-01T00:00:00Z' }),
      );
      const midway = new Metrics();
      harness([], settings, { metrics: wired(midway), stateFile });
      expect((await scrape(midway))[1]).to.equal('kubelet_graceful_shutdown_end_time_seconds{node="n1"} 0');
      // A garbled file sets nothing (logged), and no file at all neither.
      writeFileSync(stateFile, '{"startTime": 7');
      const garbled = new Metrics();
      harness([], settings, { metrics: wired(garbled), stateFile });
      expect(await scrape(garbled)).to.deep.equal([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('kills non-critical pods first, then critical ones once the first group is done', async () => {
    const h = harness([critical, normal, high], {
      shutdownGracePeriod: '30s',
      shutdownGracePeriodCriticalPods: '10s',
    });
    h.cleanAfter.set('normal', 3_000).set('high', 5_000).set('critical', 1_000);
    expect(h.manager.shuttingDown()).to.equal(false);
    expect(h.manager.admit()).to.deep.equal({ admit: true });

    h.manager.shutdown();
    await flush();
    expect(h.manager.shuttingDown()).to.equal(true);
    expect(h.nodeEvents).to.deep.equal(['Normal Shutdown: Shutdown manager detected shutdown event']);
    expect(h.syncs).to.equal(1);
    expect(h.manager.readinessErrors()).to.deep.equal(['node is shutting down']);
    expect(h.manager.admit()).to.deep.equal({
      admit: false,
      reason: 'NodeShutdown',
      message: 'Pod was rejected as the node is shutting down.',
    });
    expect(h.kills).to.deep.equal([
      ['normal', 20, 0],
      ['high', 20, 0],
    ]);

    await run(h, 4_000);
    expect(h.kills.length).to.equal(2);
    expect(h.manager.completed()).to.equal(false);
    // "high" is cleaned up at 5 s: the critical group starts then, not at 20 s.
    await run(h, 1_600);
    expect(h.kills.map((k) => k[0])).to.deep.equal(['normal', 'high', 'critical']);
    const [, grace, at] = h.kills[2]!;
    expect(grace).to.equal(10);
    expect(at).to.be.within(5_000, 5_500);
    expect(h.statuses.get('critical')!.reason).to.equal('Terminated');

    await run(h, 1_500);
    expect(h.manager.completed()).to.equal(true);
    // Still shutting down: the node stays NotReady and refuses pods until a cancellation.
    expect(h.manager.shuttingDown()).to.equal(true);
    expect(h.podEvents).to.deep.equal([]);
  });

  it('goes on to the next group when the first one outlives its grace period, and says which kill is late', async () => {
    const h = harness([normal, critical], {
      shutdownGracePeriodByPodPriority: [
        { priority: 0, shutdownGracePeriodSeconds: 12 },
        { priority: 2_000_000_000, shutdownGracePeriodSeconds: 2 },
      ],
    });
    h.manager.shutdown();
    await flush();
    expect(h.kills).to.deep.equal([['normal', 12, 0]]);
    await run(h, 11_000);
    // killPodNow gave up on it after 1.5 x 12 s = 18 s; not yet.
    expect(h.podEvents).to.deep.equal([]);
    expect(h.kills.length).to.equal(1);
    await run(h, 1_200);
    expect(h.kills.map((k) => [k[0], k[1]])).to.deep.equal([
      ['normal', 12],
      ['critical', 2],
    ]);
    expect(h.kills[1]![2]).to.be.within(12_000, 12_200);
    await run(h, 2_200);
    expect(h.manager.completed()).to.equal(true);
  });

  it('records ExceededGracePeriod for a pod not stopped within its kill timeout', async () => {
    // Its own 2 s grace period: killPodNow gives up after 10 s, well inside the group's 40 s.
    const slow = makePod('slow', 0, 2);
    const h = harness([slow], {
      shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 40 }],
    });
    h.manager.shutdown();
    await run(h, 9_900);
    expect(h.podEvents).to.deep.equal([]);
    await run(h, 200);
    expect(h.podEvents).to.deep.equal([
      'slow Warning ExceededGracePeriod: Container runtime did not kill the pod within specified grace period.',
    ]);
    await run(h, 30_000);
    expect(h.podEvents.length).to.equal(1);
    expect(h.manager.completed()).to.equal(true);
  });

  it('skips empty groups without waiting for them', async () => {
    const h = harness([critical], { shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' });
    h.cleanAfter.set('critical', 500);
    h.manager.shutdown();
    await flush();
    expect(h.kills).to.deep.equal([['critical', 10, 0]]);
    await run(h, 1_000);
    expect(h.manager.completed()).to.equal(true);
  });

  it('a second shutdown event while shutting down changes nothing', async () => {
    const h = harness([normal], { shutdownGracePeriod: '10s' });
    h.cleanAfter.set('normal', 100);
    h.manager.shutdown();
    h.manager.shutdown();
    await run(h, 1_000);
    expect(h.kills.length).to.equal(1);
    expect(h.nodeEvents.length).to.equal(1);
  });

  it('takes a cancellation after the shutdown in flight, then admits again and is Ready', async () => {
    const h = harness([normal], { shutdownGracePeriod: '10s' });
    h.cleanAfter.set('normal', 2_000);
    h.manager.shutdown();
    await run(h, 500);
    h.manager.cancel();
    expect(h.manager.shuttingDown()).to.equal(true);
    await run(h, 2_000);
    expect(h.manager.shuttingDown()).to.equal(false);
    expect(h.manager.admit()).to.deep.equal({ admit: true });
    expect(h.manager.readinessErrors()).to.deep.equal([]);
    expect(h.manager.completed()).to.equal(false);
    expect(h.nodeEvents).to.deep.equal([
      'Normal Shutdown: Shutdown manager detected shutdown event',
      'Normal Shutdown: Shutdown manager detected shutdown cancellation',
    ]);
    expect(h.syncs).to.equal(2);
    // A new shutdown runs again (the killed pod is no longer active).
    h.manager.shutdown();
    await run(h, 200);
    expect(h.manager.completed()).to.equal(true);
    expect(h.kills.length).to.equal(1);
  });

  it('is the kubelet stub without configuration: never shutting down, nothing killed, nothing to wait for', async () => {
    const h = harness([normal], {});
    expect(h.manager.enabled()).to.equal(false);
    h.manager.shutdown();
    await run(h, 1_000);
    expect(h.manager.shuttingDown()).to.equal(false);
    expect(h.manager.admit()).to.deep.equal({ admit: true });
    expect(h.kills).to.deep.equal([]);
    expect(h.nodeEvents).to.deep.equal([]);
    expect(h.manager.completed()).to.equal(true);
  });

  it('sends no kill after stop()', async () => {
    const h = harness([normal, critical], {
      shutdownGracePeriod: '30s',
      shutdownGracePeriodCriticalPods: '10s',
    });
    h.manager.shutdown();
    await flush();
    const stopped = h.manager.stop();
    await run(h, 30_000);
    await stopped;
    expect(h.kills.map((k) => k[0])).to.deep.equal(['normal']);
  });
});
