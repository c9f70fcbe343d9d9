import { expect } from 'chai';
import type { PodStatus } from '../../../../src/api/core.js';
import type { ProbeOutcome } from '../../../../src/kubelet/prober/doprobe.js';
import { ResultsManager } from '../../../../src/kubelet/prober/results.js';
import { ProbeWorker, type ProbeRunner } from '../../../../src/kubelet/prober/worker.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { isInvalidArgument } from '../../../../src/util/errors.js';
import { flush, makePod, podStatus, probe, running } from './fixtures.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

interface Rig {
  clock: FakeClock;
  worker: ProbeWorker;
  results: ResultsManager;
  probes: number[];
  exits: number;
  setStatus(s: PodStatus | undefined): void;
  setOutcome(o: ProbeOutcome | Error | (() => Promise<ProbeOutcome>)): void;
}

function rig(opts: { proberStartedAt?: number; random?: number; periodSeconds?: number } = {}): Rig {
  const clock = new FakeClock(T0);
  const results = new ResultsManager('readiness');
  const pod = makePod([{ name: 'c', readinessProbe: probe({ periodSeconds: opts.periodSeconds ?? 10 }) }]);
  let status: PodStatus | undefined = podStatus([running('c', 'x://1', { started: true })]);
  let outcome: ProbeOutcome | Error | (() => Promise<ProbeOutcome>) = 'success';
  const r: Rig = {
    clock,
    results,
    probes: [],
    exits: 0,
    worker: undefined as unknown as ProbeWorker,
    setStatus: (s) => (status = s),
    setOutcome: (o) => (outcome = o),
  };
  const runner: ProbeRunner = () => {
    r.probes.push(clock.now() - T0);
    if (outcome instanceof Error) return Promise.reject(outcome);
    if (typeof outcome === 'function') return outcome();
    return Promise.resolve(outcome);
  };
  r.worker = new ProbeWorker(pod, pod.spec.containers[0]!, 'readiness', {
    clock,
    random: () => opts.random ?? 0,
    getPodStatus: () => status,
    results,
    runner,
    proberStartedAt: opts.proberStartedAt ?? T0 - 3_600_000,
    onExit: () => r.exits++,
  });
  return r;
}

async function advance(r: Rig, ms: number, stepMs = 500): Promise<void> {
  for (let t = 0; t < ms; t += stepMs) {
    r.clock.advance(Math.min(stepMs, ms - t));
    await flush();
  }
}

describe('prober worker loop', () => {
  it('probes at once, then once per period', async () => {
    const r = rig();
    r.worker.start();
    await flush();
    await advance(r, 25_000);
    expect(r.probes).to.deep.equal([0, 10_000, 20_000]);
    expect(r.results.get('x://1')).to.equal('success');
    r.worker.stop();
  });

  it('sleeps a random fraction of one period first when the prober started less than a period ago', async () => {
    const r = rig({ proberStartedAt: T0 - 2_000, random: 0.3 });
    r.worker.start();
    await flush();
    expect(r.probes).to.deep.equal([]);
    await advance(r, 14_000);
    expect(r.probes).to.deep.equal([3_000, 13_000]);
    r.worker.stop();
  });

  it('runs a manual trigger at once and restarts the ticker from it', async () => {
    const r = rig();
    r.worker.start();
    await flush();
    await advance(r, 4_000);
    expect(r.worker.manualTrigger()).to.equal(true);
    await flush();
    expect(r.probes).to.deep.equal([0, 4_000]);
    await advance(r, 11_000);
    expect(r.probes).to.deep.equal([0, 4_000, 14_000]);
    r.worker.stop();
  });

  it('does not queue a second manual trigger while one is pending', async () => {
    const r = rig();
    let release: (o: ProbeOutcome) => void = () => undefined;
    r.setOutcome(() => new Promise<ProbeOutcome>((res) => (release = res)));
    r.worker.start();
    await flush();
    expect(r.worker.manualTrigger()).to.equal(true);
    expect(r.worker.manualTrigger()).to.equal(false);
    r.setOutcome('success');
    release('success');
    await flush();
    expect(r.probes).to.deep.equal([0, 0]);
    r.worker.stop();
  });

  it('on stop: exits, removes its cached result, calls onExit once, never probes again', async () => {
    const r = rig();
    r.worker.start();
    await flush();
    expect(r.results.get('x://1')).to.equal('success');
    r.worker.stop();
    r.worker.stop();
    await r.worker.done;
    expect(r.results.get('x://1')).to.equal(undefined);
    expect(r.exits).to.equal(1);
    expect(r.worker.running).to.equal(false);
    await advance(r, 30_000);
    expect(r.probes).to.deep.equal([0]);
    expect(r.clock.pendingTimers()).to.equal(0);
  });

  it('stopped during the jitter, it never probes', async () => {
    const r = rig({ proberStartedAt: T0, random: 0.9 });
    r.worker.start();
    await advance(r, 1_000);
    r.worker.stop();
    await r.worker.done;
    await advance(r, 30_000);
    expect(r.probes).to.deep.equal([]);
    expect(r.exits).to.equal(1);
  });

  it('exits by itself when doProbe says stop (terminal pod phase)', async () => {
    const r = rig();
    r.worker.start();
    await flush();
    r.setStatus(podStatus([running('c', 'x://1', { started: true })], [], 'Succeeded'));
    await advance(r, 10_000);
    await r.worker.done;
    expect(r.exits).to.equal(1);
    expect(r.results.get('x://1')).to.equal(undefined);
  });

  it('throws an execution error away and keeps probing', async () => {
    const r = rig();
    r.setOutcome(new Error('exec failed'));
    r.worker.start();
    await flush();
    expect(r.results.get('x://1')).to.equal('failure'); // the initial readiness value
    r.setOutcome('success');
    await advance(r, 10_000);
    expect(r.results.get('x://1')).to.equal('success');
    r.worker.stop();
  });

  it('coalesces ticks that pass during a slow probe into one', async () => {
    const r = rig({ periodSeconds: 1 });
    let release: (o: ProbeOutcome) => void = () => undefined;
    r.setOutcome(() => new Promise<ProbeOutcome>((res) => (release = res)));
    r.worker.start();
    await flush();
    await advance(r, 5_000);
    expect(r.probes).to.deep.equal([0]);
    r.setOutcome('success');
    release('success');
    await flush();
    expect(r.probes).to.deep.equal([0, 5_000]);
    await advance(r, 500);
    expect(r.probes).to.deep.equal([0, 5_000]);
    await advance(r, 500);
    expect(r.probes).to.deep.equal([0, 5_000, 6_000]);
    r.worker.stop();
  });

  it('rejects a container without the probe, or a mismatched results manager', () => {
    const clock = new FakeClock(T0);
    const pod = makePod([{ name: 'c', readinessProbe: probe() }]);
    const deps = {
      clock,
      random: () => 0,
      getPodStatus: () => undefined,
      results: new ResultsManager('readiness'),
      runner: () => Promise.resolve('success' as const),
      proberStartedAt: T0,
    };
    expect(() => new ProbeWorker(pod, pod.spec.containers[0]!, 'liveness', deps))
      .to.throw()
      .satisfy(isInvalidArgument);
    expect(
      () =>
        new ProbeWorker(pod, pod.spec.containers[0]!, 'readiness', {
          ...deps,
          results: new ResultsManager('startup'),
        }),
    )
      .to.throw()
      .satisfy(isInvalidArgument);
  });
});
