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

  it('stopped during the jitter: the jitter timer is cancelled at once, and the exit follows', async () => {
    const r = rig({ proberStartedAt: T0, random: 0.9 });
    r.worker.start();
    expect(r.clock.pendingTimers()).to.equal(1);
    r.worker.stop();
    expect(r.clock.pendingTimers()).to.equal(0);
    expect(r.exits).to.equal(0); // the exit happens in a microtask, not inside stop()
    await r.worker.done;
    expect(r.exits).to.equal(1);
    expect(r.worker.running).to.equal(false);
  });

  it('stopped before start: exits at once, calls onExit once, and a later start does nothing', async () => {
    const r = rig();
    r.worker.stop();
    expect(r.exits).to.equal(1);
    r.worker.stop();
    r.worker.start();
    expect(r.worker.manualTrigger()).to.equal(false);
    await advance(r, 30_000);
    await r.worker.done;
    expect(r.probes).to.deep.equal([]);
    expect(r.exits).to.equal(1);
    expect(r.clock.pendingTimers()).to.equal(0);
  });

  it('done resolves whether asked for before or after the exit, and is the same promise each time', async () => {
    const asked = rig();
    asked.worker.start();
    const early = asked.worker.done;
    let resolved = false;
    void early.then(() => (resolved = true));
    await flush();
    expect(resolved).to.equal(false);
    asked.worker.stop();
    await flush();
    expect(resolved).to.equal(true);
    expect(asked.worker.done).to.equal(early);

    const late = rig();
    late.worker.start();
    late.worker.stop();
    await flush();
    expect(late.exits).to.equal(1);
    await late.worker.done; // created after the exit: already resolved
    expect(late.worker.done).to.equal(late.worker.done);
  });

  it('stopped during a probe: records that probe, then exits and cleans up', async () => {
    const r = rig();
    let release: (o: ProbeOutcome) => void = () => undefined;
    r.setOutcome(() => new Promise<ProbeOutcome>((res) => (release = res)));
    r.worker.start();
    await flush();
    r.worker.stop();
    expect(r.worker.running).to.equal(true);
    await flush();
    expect(r.exits).to.equal(0);
    release('success');
    await r.worker.done;
    expect(r.exits).to.equal(1);
    expect(r.results.get('x://1')).to.equal(undefined);
    expect(r.clock.pendingTimers()).to.equal(0);
  });

  it('a manual trigger probes in a later microtask, never inside manualTrigger', async () => {
    const r = rig();
    r.worker.start();
    await flush();
    expect(r.worker.manualTrigger()).to.equal(true);
    expect(r.probes).to.deep.equal([0]);
    await flush();
    expect(r.probes).to.deep.equal([0, 0]);
    r.worker.stop();
  });

  it('a manual trigger during the jitter probes right after the first probe, then ticks from there', async () => {
    const r = rig({ proberStartedAt: T0, random: 0.5 });
    r.worker.start();
    await advance(r, 1_000);
    expect(r.worker.manualTrigger()).to.equal(true);
    await flush();
    expect(r.probes).to.deep.equal([]);
    await advance(r, 4_000);
    expect(r.probes).to.deep.equal([5_000, 5_000]);
    await advance(r, 10_000);
    expect(r.probes).to.deep.equal([5_000, 5_000, 15_000]);
    r.worker.stop();
  });

  it('never runs two probes at once: a trigger during a slow probe waits for it', async () => {
    const r = rig();
    let release: (o: ProbeOutcome) => void = () => undefined;
    let inFlight = 0;
    let maxInFlight = 0;
    r.setOutcome(() => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      return new Promise<ProbeOutcome>((res) => (release = res)).finally(() => inFlight--);
    });
    r.worker.start();
    await flush();
    await advance(r, 3_000);
    expect(r.worker.manualTrigger()).to.equal(true);
    await advance(r, 12_000); // a tick passes too, and is absorbed by the trigger
    expect(r.probes).to.deep.equal([0]);
    release('success');
    await flush();
    expect(r.probes).to.deep.equal([0, 15_000]);
    release('success');
    await advance(r, 9_500);
    expect(r.probes).to.deep.equal([0, 15_000]);
    await advance(r, 500);
    expect(r.probes).to.deep.equal([0, 15_000, 25_000]);
    release('success');
    await flush();
    expect(maxInFlight).to.equal(1);
    r.worker.stop();
  });

  it('workers on one clock share one clock timer', async () => {
    const clock = new FakeClock(T0);
    const results = new ResultsManager('readiness');
    const pod = makePod([{ name: 'c', readinessProbe: probe() }]);
    const probes: number[] = [];
    let n = 0;
    const deps = {
      clock,
      random: () => (n++ % 50) / 50, // jitters spread over the first period
      getPodStatus: () => podStatus([running('c', 'x://1', { started: true })]),
      results,
      runner: () => {
        probes.push(clock.now() - T0);
        return Promise.resolve('success' as const);
      },
      proberStartedAt: T0,
    };
    const workers = Array.from(
      { length: 50 },
      () => new ProbeWorker(pod, pod.spec.containers[0]!, 'readiness', deps),
    );
    for (const w of workers) w.start();
    expect(clock.pendingTimers()).to.equal(1);
    for (let t = 0; t < 20_000; t += 250) {
      clock.advance(250);
      await flush();
    }
    expect(probes).to.have.length(100); // one jittered probe within the first period each, then one tick
    expect(probes.every((p) => p <= 20_000)).to.equal(true);
    for (const w of workers) w.stop();
    await flush();
    expect(clock.pendingTimers()).to.equal(0);
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
