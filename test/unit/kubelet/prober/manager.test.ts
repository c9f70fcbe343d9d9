import { expect } from 'chai';
import type { PodStatus } from '../../../../src/api/core.js';
import { asPodUID } from '../../../../src/kubelet/container/types.js';
import { ProberManager } from '../../../../src/kubelet/prober/manager.js';
import { ResultsManager } from '../../../../src/kubelet/prober/results.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';
import { flush, makePod, POD_UID, podStatus, probe, running, terminated } from './fixtures.js';

function setup(status?: () => PodStatus | undefined, keepStatusOnRestart = false) {
  const clock = new FakeClock(Date.parse('2026-01-01T00:00:00Z'));
  const results = {
    liveness: new ResultsManager('liveness'),
    readiness: new ResultsManager('readiness'),
    startup: new ResultsManager('startup'),
  };
  let runs = 0;
  const manager = new ProberManager({
    clock,
    random: () => 0,
    getPodStatus: status ?? (() => undefined),
    runner: () => {
      runs++;
      return Promise.resolve('success');
    },
    results,
    keepStatusOnRestart,
  });
  return { clock, results, manager, runs: () => runs };
}

describe('prober manager', () => {
  it('AddPod probes regular and restartable init containers, never regular init containers', () => {
    const { manager } = setup();
    const pod = makePod(
      [{ name: 'app', readinessProbe: probe(), livenessProbe: probe() }],
      [
        { name: 'init', readinessProbe: probe(), startupProbe: probe() },
        { name: 'sidecar', restartPolicy: 'Always', startupProbe: probe() },
      ],
    );
    manager.addPod(pod);
    expect(manager.workerCount()).to.equal(3);
    expect(manager.getWorker(POD_UID, 'app', 'readiness')).to.not.equal(undefined);
    expect(manager.getWorker(POD_UID, 'sidecar', 'startup')).to.not.equal(undefined);
    expect(manager.getWorker(POD_UID, 'init', 'startup')).to.equal(undefined);
    manager.removePod(pod);
  });

  it('AddPod returns early on an existing key, leaving later containers without workers', () => {
    const { manager } = setup();
    const pod = makePod([
      { name: 'a', readinessProbe: probe() },
      { name: 'b', readinessProbe: probe() },
    ]);
    manager.startWorker(pod, pod.spec.containers[0]!, 'readiness');
    manager.addPod(pod);
    expect(manager.getWorker(POD_UID, 'b', 'readiness')).to.equal(undefined);
    manager.removePod(pod);
  });

  it('stops workers: StopLivenessAndStartup, RemovePod, CleanupPods', async () => {
    const { manager } = setup();
    const pod = makePod(
      [{ name: 'a', readinessProbe: probe(), livenessProbe: probe(), startupProbe: probe() }],
      [{ name: 's', restartPolicy: 'Always', livenessProbe: probe() }],
    );
    manager.addPod(pod);
    expect(manager.workerCount()).to.equal(4);
    manager.stopLivenessAndStartup(pod);
    await flush();
    expect(manager.getWorker(POD_UID, 'a', 'liveness')).to.equal(undefined);
    expect(manager.getWorker(POD_UID, 'a', 'startup')).to.equal(undefined);
    expect(manager.getWorker(POD_UID, 's', 'liveness')).to.not.equal(undefined);
    manager.cleanupPods(new Set([POD_UID]));
    await flush();
    expect(manager.workerCount()).to.equal(2);
    manager.cleanupPods(new Set());
    await flush();
    expect(manager.workerCount()).to.equal(0);
    manager.addPod(pod);
    manager.removePod(pod);
    await flush();
    expect(manager.workerCount()).to.equal(0);
  });

  it("UpdatePod hands the newer pod object to that pod's workers only", () => {
    const { manager } = setup();
    const pod = makePod([{ name: 'a', readinessProbe: probe(), livenessProbe: probe() }]);
    const other = { ...makePod([{ name: 'a', readinessProbe: probe() }]) };
    other.metadata = { ...other.metadata, uid: 'pod-2' };
    manager.addPod(pod);
    manager.addPod(other);
    expect(manager.workerCount()).to.equal(3);
    const newer = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: '2026-01-01T00:00:01Z' } };
    manager.updatePod(newer);
    expect(manager.getWorker(POD_UID, 'a', 'readiness')!.pod).to.equal(newer);
    expect(manager.getWorker(POD_UID, 'a', 'liveness')!.pod).to.equal(newer);
    expect(manager.getWorker('pod-2', 'a', 'readiness')!.pod).to.equal(other);
    manager.removePod(pod);
    manager.removePod(other);
  });

  it('UpdatePodStatus: started and ready for regular containers', () => {
    const { manager, results } = setup();
    const pod = makePod([
      { name: 'plain' },
      { name: 'startupPending', startupProbe: probe() },
      { name: 'readyProbe', readinessProbe: probe() },
      { name: 'readyOK', readinessProbe: probe() },
      { name: 'dead' },
    ]);
    for (const c of pod.spec.containers) {
      if (c.startupProbe) manager.startWorker(pod, c, 'startup');
      if (c.readinessProbe) manager.startWorker(pod, c, 'readiness');
    }
    results.readiness.set('x://readyOK', 'success', asPodUID(POD_UID));
    const status = podStatus([
      running('plain', 'x://plain'),
      running('startupPending', 'x://startupPending'),
      running('readyProbe', 'x://readyProbe'),
      running('readyOK', 'x://readyOK'),
      terminated('dead', 'x://dead', 0),
    ]);
    manager.updatePodStatus(pod, status);
    const by = Object.fromEntries(status.containerStatuses!.map((c) => [c.name, [c.started, c.ready]]));
    expect(by).to.deep.equal({
      plain: [true, true],
      startupPending: [false, false],
      readyProbe: [true, false],
      readyOK: [true, true],
      dead: [false, false],
    });
    manager.removePod(pod);
  });

  it('UpdatePodStatus triggers a readiness worker that has no success yet', async () => {
    const status = podStatus([running('a', 'x://a', { started: true })]);
    const { manager, clock, runs } = setup(() => status);
    const pod = makePod([{ name: 'a', readinessProbe: probe() }]);
    clock.advance(60_000); // past the start-up jitter window
    manager.addPod(pod);
    await flush();
    expect(runs()).to.equal(1);
    manager.updatePodStatus(pod, podStatus([running('a', 'x://other')]));
    await flush();
    expect(runs()).to.equal(2);
    manager.removePod(pod);
  });

  it('keepStatusOnRestart: an adopted container keeps the API ready/started until a probe publishes', () => {
    const { manager, results } = setup(undefined, true);
    const pod = makePod([
      { name: 'r', readinessProbe: probe() },
      { name: 's', startupProbe: probe(), readinessProbe: probe() },
      { name: 'n', readinessProbe: probe() },
    ]);
    // Started before the manager (the clock starts at 00:00:00Z): adopted from a previous kubelet.
    const before = '2025-12-31T23:59:00Z';
    pod.status = podStatus([
      { ...running('r', 'x://r', { started: true, startedAt: before }), ready: true },
      { ...running('s', 'x://s', { started: true, startedAt: before }), ready: true },
      { ...running('n', 'x://old', { started: true, startedAt: before }), ready: true },
    ]);
    for (const c of pod.spec.containers) {
      if (c.startupProbe) manager.startWorker(pod, c, 'startup');
      if (c.readinessProbe) manager.startWorker(pod, c, 'readiness');
    }
    const generate = () => {
      const status = podStatus([
        running('r', 'x://r', { startedAt: before }),
        running('s', 'x://s', { startedAt: before }),
        running('n', 'x://new', { startedAt: before }), // another container than the API's: no carry-over
      ]);
      manager.updatePodStatus(pod, status);
      return Object.fromEntries(status.containerStatuses!.map((c) => [c.name, [c.started, c.ready]]));
    };
    expect(generate()).to.deep.equal({ r: [true, true], s: [true, true], n: [true, false] });
    // A published result wins over the carried value.
    results.readiness.set('x://r', 'failure', asPodUID(POD_UID));
    expect(generate().r).to.deep.equal([true, false]);
    manager.removePod(pod);
  });

  it('keepStatusOnRestart: a container started after the manager gets no carried value', () => {
    const { manager, clock } = setup(undefined, true);
    clock.advance(5_000);
    const pod = makePod([{ name: 'r', readinessProbe: probe() }]);
    const after = new Date(clock.now()).toISOString();
    pod.status = podStatus([{ ...running('r', 'x://r', { started: true, startedAt: after }), ready: true }]);
    manager.startWorker(pod, pod.spec.containers[0]!, 'readiness');
    const status = podStatus([running('r', 'x://r', { startedAt: after })]);
    manager.updatePodStatus(pod, status);
    expect(status.containerStatuses![0]!.ready).to.equal(false);
    manager.removePod(pod);
  });

  it('UpdatePodStatus: a regular init container is ready iff terminated with exit 0', () => {
    const { manager } = setup();
    const pod = makePod([{ name: 'app' }], [{ name: 'i0' }, { name: 'i1' }, { name: 'i2' }]);
    const status = podStatus(
      [],
      [terminated('i0', 'x://i0', 0), terminated('i1', 'x://i1', 1), running('i2', 'x://i2')],
    );
    manager.updatePodStatus(pod, status);
    expect(status.initContainerStatuses!.map((c) => c.ready)).to.deep.equal([true, false, false]);
    expect(status.initContainerStatuses!.map((c) => c.started)).to.deep.equal([false, false, true]);
  });

  it('rejects missing dependencies with InvalidArgument', () => {
    expect(() => new ProberManager({} as never))
      .to.throw()
      .satisfy(isInvalidArgument);
  });
});
