// The simulated kernel's OOM killer: a container whose declared memory usage exceeds its memory limit exits
// 137, reason OOMKilled, at the moment it crossed (to the millisecond for closed-form curves, on the 1 s grid
// for expressions), through the same exit as any other; and the kubelet above it sees an ordinary OOM kill.
import { expect } from 'chai';
import { asPodUID } from '../../../src/kubelet/container/types.js';
import { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { SimBehaviourAnnotation, parseSimProfilesYaml } from '../../../src/runtime/sim/index.js';
import { SCAN_SECONDS } from '../../../src/runtime/sim/usage.js';
import { advance, mkPod, setup, start } from '../kubelet/kubelet-fixtures.js';
import { IMAGE, MI, newSim, ns } from './sim-fixtures.js';

const rampTo200Mi = { usage: { memory: { ramp: { from: 0, to: '200Mi', durationSeconds: 100 } } } };

describe('SimRuntime: OOM kills from declared memory usage', () => {
  it('kills a ramp at the exact moment it crosses the limit: exit 137, OOMKilled, finishedAt then', async () => {
    const { sim, clock, pod, run, at } = newSim();
    const p = await pod();
    const id = await run(p, 'app', { behaviour: rampTo200Mi, resources: { memoryLimitInBytes: 100 * MI } });
    expect(clock.pendingTimers(), 'one timer, at the crossing').to.equal(1);
    at(49_999);
    const before = await sim.containerStatus(id);
    expect(before.state).to.equal('running');
    const mem = (await sim.containerStats(id)).memory!;
    expect(mem.workingSetBytes).to.equal(Math.round(49.999 * 2 * MI));
    expect(mem.availableBytes).to.equal(100 * MI - mem.workingSetBytes!);
    at(50_000);
    const s = await sim.containerStatus(id);
    expect([s.state, s.exitCode, s.reason, s.finishedAt]).to.deep.equal([
      'exited',
      137,
      'OOMKilled',
      ns(50_000),
    ]);
    expect(clock.pendingTimers()).to.equal(0);
    expect((await sim.containerStats(id)).memory?.workingSetBytes).to.equal(0);
  });

  it('never kills without a memory limit (unlimited), nor below it', async () => {
    const { sim, clock, pod, run, at } = newSim();
    const p = await pod();
    const unlimited = await run(p, 'unlimited', { behaviour: rampTo200Mi });
    const zero = await run(p, 'zero', { behaviour: rampTo200Mi, resources: { memoryLimitInBytes: 0 } });
    const roomy = await run(p, 'roomy', {
      behaviour: rampTo200Mi,
      resources: { memoryLimitInBytes: 200 * MI },
    });
    expect(clock.pendingTimers()).to.equal(0);
    at(3_600_000);
    for (const id of [unlimited, zero, roomy])
      expect((await sim.containerStatus(id)).state).to.equal('running');
    expect((await sim.containerStats(unlimited)).memory?.workingSetBytes).to.equal(200 * MI);
    expect((await sim.containerStats(roomy)).memory?.availableBytes).to.equal(0);
  });

  it('kills an expression at the first whole second after the start at which it exceeds the limit', async () => {
    const { sim, clock, pod, run, at } = newSim();
    const p = await pod();
    at(250);
    const soon = await run(p, 'soon', {
      behaviour: { usage: { memory: { expr: 't * 10Mi' } } },
      resources: { memoryLimitInBytes: 95 * MI },
    });
    // Far beyond the first look-ahead: found by later looks, one timer at a time.
    const late = await run(p, 'late', {
      behaviour: { usage: { memory: { expr: 'step(t - 150.5) * 1Gi' } } },
      resources: { memoryLimitInBytes: MI },
    });
    expect(SCAN_SECONDS).to.be.below(150);
    for (let t = 1_000; t <= 160_000; t += 1_000) {
      at(250 + t);
      expect(clock.pendingTimers()).to.be.at.most(2);
    }
    const s = await sim.containerStatus(soon);
    expect([s.exitCode, s.reason, s.finishedAt]).to.deep.equal([137, 'OOMKilled', ns(10_250)]);
    const l = await sim.containerStatus(late);
    expect([l.exitCode, l.reason, l.finishedAt]).to.deep.equal([137, 'OOMKilled', ns(151_250)]);
  });

  it('kills at the start a container that starts above its limit; the restart count can decide', async () => {
    const { sim, pod, run } = newSim();
    const p = await pod();
    const limit = { memoryLimitInBytes: 100 * MI };
    const byRestarts = { usage: { memory: { expr: 'restarts * 64Mi' } } };
    const constant = await run(p, 'constant', {
      behaviour: { memoryUsageBytes: 101 * MI },
      resources: limit,
    });
    const first = await run(p, 'grows', { behaviour: byRestarts, resources: limit, attempt: 1 });
    const second = await run(p, 'grows', { behaviour: byRestarts, resources: limit, attempt: 2 });
    const st = await sim.containerStatus(constant);
    expect([st.state, st.reason, st.finishedAt > st.startedAt]).to.deep.equal(['exited', 'OOMKilled', true]);
    expect(st.finishedAt - st.startedAt < 1_000_000n, 'within the start millisecond').to.equal(true);
    expect((await sim.containerStatus(first)).state).to.equal('running');
    expect((await sim.containerStatus(second)).reason).to.equal('OOMKilled');
  });

  it('lets a natural exit that comes first win, and OOM-kills a process a stop is still waiting on', async () => {
    const { sim, pod, run, at } = newSim();
    const p = await pod();
    const limit = { memoryLimitInBytes: 100 * MI };
    const quick = await run(p, 'quick', {
      behaviour: { ...rampTo200Mi, run: { exitAfterMs: 10_000 } },
      resources: limit,
    });
    const stubborn = await run(p, 'stubborn', {
      behaviour: { ...rampTo200Mi, ignoresSigterm: true },
      resources: limit,
    });
    at(45_000);
    let stopped = false;
    const stopping = sim.stopContainer(stubborn, 30).then(() => (stopped = true));
    at(49_000);
    await Promise.resolve();
    expect(stopped).to.equal(false);
    at(50_000);
    await stopping;
    const s = await sim.containerStatus(stubborn);
    expect([s.exitCode, s.reason, s.finishedAt]).to.deep.equal([137, 'OOMKilled', ns(50_000)]);
    const q = await sim.containerStatus(quick);
    expect([q.exitCode, q.reason, q.finishedAt]).to.deep.equal([0, 'Completed', ns(10_000)]);
  });

  it('kills in step with the clock for a clock-phase curve, whenever the container started', async () => {
    const { sim, pod, run, at } = newSim();
    const p = await pod();
    const square = {
      usage: {
        memory: {
          periodic: { min: '10Mi', max: '200Mi', periodSeconds: 60, shape: 'square', phase: 'clock' },
        },
      },
    };
    at(13_000);
    const a = await run(p, 'a', { behaviour: square, resources: { memoryLimitInBytes: 100 * MI } });
    at(41_000);
    const b = await run(p, 'b', { behaviour: square, resources: { memoryLimitInBytes: 100 * MI } });
    at(120_000);
    // a: high from 30 s on the clock; b started in a high half: killed at its start.
    expect((await sim.containerStatus(a)).finishedAt).to.equal(ns(30_000));
    const sb = await sim.containerStatus(b);
    expect([sb.reason, sb.finishedAt - ns(41_000) < 1_000_000n]).to.deep.equal(['OOMKilled', true]);
  });

  it('moves the kill with a resize of the limit, when the resize takes effect', async () => {
    const { sim, pod, run, at } = newSim({
      profiles: parseSimProfilesYaml('images: { "busybox:1.36": { resizeLatencyMs: 5000 } }'),
      images: [IMAGE, 'busybox:1.36'],
    });
    const p = await pod();
    const limit = { memoryLimitInBytes: 100 * MI };
    const raised = await run(p, 'raised', { behaviour: rampTo200Mi, resources: limit });
    const lowered = await run(p, 'lowered', { behaviour: rampTo200Mi, resources: limit });
    const slow = await run(p, 'slow', { behaviour: rampTo200Mi, resources: limit, image: 'busybox:1.36' });
    at(40_000);
    await sim.updateContainerResources(raised, { memoryLimitInBytes: 150 * MI });
    // Below what it uses now (80 MiB): the kubelet refuses such a resize; the kernel would kill at once.
    await sim.updateContainerResources(lowered, { memoryLimitInBytes: 64 * MI });
    await sim.updateContainerResources(slow, { memoryLimitInBytes: 64 * MI });
    at(300_000);
    const finished = async (id: string) => {
      const s = await sim.containerStatus(id);
      return [s.reason, s.finishedAt];
    };
    expect(await finished(raised)).to.deep.equal(['OOMKilled', ns(75_000)]);
    expect(await finished(lowered)).to.deep.equal(['OOMKilled', ns(40_000)]);
    expect(await finished(slow)).to.deep.equal(['OOMKilled', ns(45_000)]);
  });
});

describe('Kubelet on the simulated runtime: a declared OOM kill', () => {
  it('records OOMKilled in lastState and restarts the container with back-off', async function () {
    this.timeout(60_000);
    const { clock, api, deps, events } = setup();
    const pod = mkPod('oom', {
      containers: [{ name: 'app', image: 'img:1', resources: { limits: { memory: '64Mi' } } }],
    });
    pod.metadata.annotations = {
      [SimBehaviourAnnotation]: JSON.stringify({
        usage: { memory: { ramp: { from: '32Mi', to: '96Mi', durationSeconds: 20 } } },
      }),
    };
    api.pods.set(pod.metadata.name!, pod);
    const base = deps();
    const k = new Kubelet({
      ...base,
      node: () => ({
        ...base.node(),
        allocatable: new Map([...base.node().allocatable, ['memory', 8 * 2 ** 30]]),
      }),
    });
    await start(k, clock);
    await advance(clock, 25_000, 250);
    const status = k.statusManager.getPodStatus(asPodUID('oom'))!;
    const app = status.containerStatuses?.[0];
    expect(app?.restartCount, JSON.stringify(status)).to.be.at.least(1);
    expect(app?.lastState?.terminated).to.include({ exitCode: 137, reason: 'OOMKilled' });
    expect(events).to.include('Warning BackOff');
    await k.stop(0);
  });
});
