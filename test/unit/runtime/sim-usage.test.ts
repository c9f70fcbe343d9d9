// Declared usage on the simulated runtime: what ContainerStats, ListContainerStats and ListPodSandboxStats
// report for each curve kind, cpu under the CFS quota (and a resize of it), deterministic cumulative cpu
// time, the profile layering of `usage`, and invalid usage data.
import { expect } from 'chai';
import {
  SimBehaviourAnnotation,
  SimRuntime,
  parseSimProfilesYaml,
  simContainerBehaviourAnnotation,
} from '../../../src/runtime/sim/index.js';
import { FakeClock } from '../../../src/util/clock.js';
import { errorKind } from '../../../src/util/errors.js';
import { IMAGE, MI, newSim, ns } from './sim-fixtures.js';

const cpuOf = async (sim: SimRuntime, id: string) => (await sim.containerStats(id)).cpu!;
const memOf = async (sim: SimRuntime, id: string) => (await sim.containerStats(id)).memory!;

describe('SimRuntime: declared usage and stats', () => {
  it('reports a constant: cpu rate and cumulative time, memory with the room left under the limit', async () => {
    const { sim, pod, run, at } = newSim();
    const p = await pod();
    const id = await run(p, 'app', {
      behaviour: { usage: { cpu: '250m', memory: '64Mi', disk: '10Mi' } },
      resources: { memoryLimitInBytes: 100 * MI },
    });
    at(10_000);
    expect(await sim.containerStats(id)).to.deep.equal({
      cpu: { timestamp: ns(10_000), usageCoreNanoSeconds: 2.5e9, usageNanoCores: 250_000_000 },
      memory: {
        timestamp: ns(10_000),
        workingSetBytes: 64 * MI,
        availableBytes: 36 * MI,
        usageBytes: 64 * MI,
        rssBytes: 64 * MI,
        pageFaults: 0,
        majorPageFaults: 0,
      },
      writableLayer: { timestamp: ns(10_000), usedBytes: 10 * MI, inodesUsed: 0 },
    });
  });

  it('reports an idle process for a container that declares nothing, and holds no timer or state for it', async () => {
    const { sim, clock, pod, run, at } = newSim();
    const p = await pod();
    const id = await run(p, 'app');
    expect(clock.pendingTimers()).to.equal(0);
    at(5_000);
    const s = await sim.containerStats(id);
    // A tenth of a millicore and 1 MiB: never zero, or metrics-server would drop the pod (usage.ts).
    expect([s.cpu?.usageCoreNanoSeconds, s.cpu?.usageNanoCores, s.memory?.workingSetBytes]).to.deep.equal([
      0.0001 * 5 * 1e9,
      0.0001 * 1e9,
      MI,
    ]);
  });

  it('follows a ramp and a periodic curve, with their exact integrals', async () => {
    const { sim, pod, run, at } = newSim();
    const p = await pod();
    const ramp = await run(p, 'ramp', {
      behaviour: {
        usage: {
          cpu: { ramp: { from: 0, to: 2, durationSeconds: 10 } },
          memory: { ramp: { from: 0, to: '100Mi', durationSeconds: 100 } },
        },
      },
    });
    const wave = await run(p, 'wave', {
      behaviour: {
        usage: { cpu: { periodic: { min: '1', max: '3', periodSeconds: 8, shape: 'triangle' } } },
      },
    });
    at(5_000);
    expect(await cpuOf(sim, ramp)).to.include({ usageNanoCores: 1e9, usageCoreNanoSeconds: 2.5e9 });
    expect((await memOf(sim, ramp)).workingSetBytes).to.equal(5 * MI);
    expect(await cpuOf(sim, wave)).to.include({ usageNanoCores: 2.5e9 });
    at(20_000);
    expect(await cpuOf(sim, ramp)).to.include({ usageNanoCores: 2e9, usageCoreNanoSeconds: 30e9 });
    expect(await cpuOf(sim, wave)).to.include({ usageNanoCores: 3e9, usageCoreNanoSeconds: 40e9 });
  });

  it('samples an expression each second from the start: trapezoids between samples, restarts in scope', async () => {
    const { sim, pod, run, at } = newSim();
    const p = await pod();
    const linear = await run(p, 'linear', { behaviour: { usage: { cpu: { expr: 't / 10' } } } });
    const square = await run(p, 'square', { behaviour: { usage: { cpu: { expr: '(t / 10)^2' } } } });
    const byRestarts = {
      usage: { cpu: { expr: '100m * (restarts + 1)' }, memory: { expr: 'restarts * 64Mi' } },
    };
    const first = await run(p, 'crash', { behaviour: byRestarts, attempt: 0 });
    const third = await run(p, 'crash', { behaviour: byRestarts, attempt: 2 });
    const negative = await run(p, 'negative', { behaviour: { usage: { cpu: { expr: '1 - t' } } } });
    at(20_000);
    // ∫ t/10 over 20 s = 20: the trapezoids are exact on a line. (t/10)² is integrated along the chords between
    // whole-second samples: Σ (k² + (k+1)²) / 200 for k < 20 (26.7 where the exact integral is 26.67).
    expect(await cpuOf(sim, linear)).to.include({ usageNanoCores: 2e9, usageCoreNanoSeconds: 20e9 });
    let trapezoids = 0;
    for (let k = 0; k < 20; k++) trapezoids += (k * k + (k + 1) * (k + 1)) / 200;
    expect((await cpuOf(sim, square)).usageCoreNanoSeconds).to.equal(Math.round(trapezoids * 1e9));
    expect((await cpuOf(sim, first)).usageNanoCores).to.equal(100_000_000);
    expect((await cpuOf(sim, third)).usageNanoCores).to.equal(300_000_000);
    expect([
      (await memOf(sim, first)).workingSetBytes,
      (await memOf(sim, third)).workingSetBytes,
    ]).to.deep.equal([0, 128 * MI]);
    // Below zero reads as zero: 1 - t is used for its first second only (half a core-second).
    expect(await cpuOf(sim, negative)).to.include({ usageNanoCores: 0, usageCoreNanoSeconds: 0.5e9 });
  });

  it('gives the same cumulative cpu time however often it is asked (1 s or 7 s apart)', async () => {
    const usage = [
      { expr: '0.5 + 0.4 * sin(t / 5) + 0.1 * step(t - 13.5)' },
      { expr: 'clamp(clock % 30 / 10, 0.2, 2)' },
      { periodic: { min: '100m', max: '900m', periodSeconds: 11, phase: 'clock' } },
      { ramp: { from: 0, to: 3, durationSeconds: 40 } },
    ];
    const sample = async (stepMs: number): Promise<number[][]> => {
      const { sim, pod, run, at } = newSim();
      const p = await pod();
      at(333);
      const ids: string[] = [];
      for (const [i, cpu] of usage.entries())
        ids.push(await run(p, `c${i}`, { behaviour: { usage: { cpu } }, resources: { cpuQuota: 150_000 } }));
      const seen: number[][] = [];
      for (let t = 0; t <= 63_000; t += stepMs) {
        at(333 + t);
        const row = await Promise.all(ids.map(async (id) => (await cpuOf(sim, id)).usageCoreNanoSeconds!));
        if (t % 7_000 === 0) seen.push(row);
      }
      return seen;
    };
    const every7 = await sample(7_000);
    const every1 = await sample(1_000);
    const every250 = await sample(250);
    expect(every7).to.have.length(10);
    expect(every1).to.deep.equal(every7);
    expect(every250).to.deep.equal(every7);
    expect(every7[9]!.every((v) => v > 0)).to.equal(true);
  });

  it('caps cpu at the CFS quota, and moves the cap when a resize takes effect', async () => {
    const { sim, pod, run, at } = newSim({
      profiles: parseSimProfilesYaml('images: { "busybox:1.36": { resizeLatencyMs: 5000 } }'),
      images: [IMAGE, 'busybox:1.36'],
    });
    const p = await pod();
    const resources = { cpuQuota: 50_000, cpuPeriod: 100_000, cpuShares: 512 };
    const behaviour = { usage: { cpu: 2 } };
    const now = await run(p, 'now', { behaviour, resources });
    const later = await run(p, 'later', { behaviour, resources, image: 'busybox:1.36' });
    const unlimited = await run(p, 'unlimited', {
      behaviour,
      resources: { cpuQuota: -1, cpuPeriod: 100_000 },
    });
    at(10_000);
    expect(await cpuOf(sim, now)).to.include({ usageNanoCores: 0.5e9, usageCoreNanoSeconds: 5e9 });
    expect(await cpuOf(sim, unlimited)).to.include({ usageNanoCores: 2e9, usageCoreNanoSeconds: 20e9 });
    await sim.updateContainerResources(now, { cpuQuota: 150_000 });
    await sim.updateContainerResources(later, { cpuQuota: 150_000 });
    // Nobody looks until well after `later`'s resize took effect at 15 s: the cap still moved then.
    at(30_000);
    expect(await cpuOf(sim, now)).to.include({ usageNanoCores: 1.5e9, usageCoreNanoSeconds: 5e9 + 30e9 });
    expect(await cpuOf(sim, later)).to.include({
      usageNanoCores: 1.5e9,
      usageCoreNanoSeconds: 7.5e9 + 22.5e9,
    });
  });

  it('reports an exited container as using nothing, with the cpu time it ran up; lists only running ones', async () => {
    const { sim, pod, run, at } = newSim();
    const p = await pod();
    const behaviour = { usage: { cpu: 1, memory: '10Mi', disk: '3Mi' } };
    const done = await run(p, 'done', { behaviour, argv: ['sleep', '4'] });
    const busy = await run(p, 'busy', { behaviour });
    const created = await sim.createContainer(
      p.id,
      { metadata: { name: 'created', attempt: 0 }, image: IMAGE, labels: {}, annotations: {} },
      p.config,
    );
    at(10_000);
    const s = await sim.containerStats(done);
    expect([s.cpu?.usageNanoCores, s.cpu?.usageCoreNanoSeconds, s.memory?.workingSetBytes]).to.deep.equal([
      0, 4e9, 0,
    ]);
    expect(s.writableLayer?.usedBytes, 'the writable layer stays').to.equal(3 * MI);
    expect((await sim.containerStats(created)).cpu?.usageCoreNanoSeconds).to.equal(0);
    const listed = await sim.listContainerStats();
    expect(listed.map((l) => l.attributes?.id)).to.deep.equal([busy]);
    expect(listed[0]!.attributes).to.deep.include({ metadata: { name: 'busy', attempt: 0 } });
    expect(await sim.listContainerStats({ id: done })).to.deep.equal([]);
    expect(errorKind(await sim.containerStats('nope').catch((e: unknown) => e))).to.equal('NotFound');
  });

  it('sums a sandbox over its containers: running ones, and the cpu time of exited ones', async () => {
    const { sim, pod, run, at } = newSim();
    const p = await pod();
    const other = await pod();
    await run(p, 'a', { behaviour: { usage: { cpu: '500m', memory: '10Mi' } } });
    await run(p, 'b', { behaviour: { usage: { cpu: '250m', memory: '20Mi' } } });
    const done = await run(p, 'done', {
      behaviour: { usage: { cpu: 1, memory: '40Mi' } },
      argv: ['sleep', '2'],
    });
    await run(p, 'quiet');
    await run(other, 'x', { behaviour: { usage: { cpu: 1 } } });
    at(4_000);
    const [stats] = await sim.listPodSandboxStats({ id: p.id });
    expect(stats!.attributes).to.deep.include({ id: p.id, metadata: p.config.metadata });
    expect(stats!.cpu).to.deep.equal({
      timestamp: ns(4_000),
      // a, b and the idle `quiet` (usage.ts IDLE_CPU_CORES, IDLE_MEMORY_BYTES); done ran 2 s at one core.
      usageNanoCores: 750e6 + 1e5,
      usageCoreNanoSeconds: 5e9 + 4e5,
    });
    expect(stats!.memory).to.include({ workingSetBytes: 31 * MI, usageBytes: 31 * MI });
    expect(stats!.process).to.deep.equal({ timestamp: ns(4_000), processCount: 3 });
    expect(stats!.network?.defaultInterface).to.deep.equal({
      name: 'eth0',
      rxBytes: 0,
      rxErrors: 0,
      txBytes: 0,
      txErrors: 0,
    });
    expect(stats!.containers.map((c) => c.attributes?.metadata.name)).to.deep.equal(['a', 'b', 'quiet']);
    // Removing the exited container leaves its cpu time in the pod's total, as the pod cgroup's counter would.
    await sim.removeContainer(done);
    at(6_000);
    expect((await sim.listPodSandboxStats({ id: p.id }))[0]!.cpu?.usageCoreNanoSeconds).to.equal(6.5e9 + 6e5);

    expect((await sim.listPodSandboxStats()).length).to.equal(2);
    await sim.stopPodSandbox(other.id);
    expect((await sim.listPodSandboxStats()).map((s) => s.attributes.id)).to.deep.equal([p.id]);
  });

  it('layers usage per resource: defaults, then the image, then the pod and container annotations', async () => {
    const { sim, pod, run, at } = newSim({
      profiles: parseSimProfilesYaml(`
defaults:
  usage: { cpu: 1, memory: 10Mi }
images:
  busybox:1.36:
    usage: { memory: 20Mi }
`),
      images: [IMAGE, 'busybox:1.36'],
    });
    const p = await pod();
    const plain = await run(p, 'plain');
    const image = await run(p, 'image', { image: 'busybox:1.36' });
    const annotated = await run(p, 'annotated', { image: 'busybox:1.36', behaviour: 'usage: { cpu: 250m }' });
    const own = await run(p, 'own', {
      image: 'busybox:1.36',
      behaviour: 'usage: { cpu: 250m }',
      annotations: { [simContainerBehaviourAnnotation('own')]: 'memoryUsageBytes: 1048576' },
    });
    const both = await run(p, 'both', {
      annotations: { [SimBehaviourAnnotation]: 'memoryUsageBytes: 5\nusage: { memory: 7 }' },
    });
    at(1_000);
    const row = async (id: string) => {
      const s = await sim.containerStats(id);
      return [s.cpu?.usageNanoCores, s.memory?.workingSetBytes];
    };
    expect(await row(plain)).to.deep.equal([1e9, 10 * MI]);
    expect(await row(image)).to.deep.equal([1e9, 20 * MI]);
    expect(await row(annotated)).to.deep.equal([250e6, 20 * MI]);
    expect(await row(own)).to.deep.equal([250e6, MI]);
    expect(await row(both)).to.deep.equal([1e9, 7]);
  });

  it('rejects invalid usage data with InvalidArgument naming the source and the field', async () => {
    const cases: [unknown, RegExp][] = [
      [
        { cpu: { expr: '2 * x' } },
        /defaults\.usage\.cpu\.expr: invalid expression: at column 5: unknown name "x"/,
      ],
      [{ cpu: '2 cores' }, /defaults\.usage\.cpu\.constant: "2 cores" is not a quantity/],
      [{ memory: '-1Mi' }, /defaults\.usage\.memory\.constant: must not be negative/],
      [{ memory: true }, /defaults\.usage\.memory\.constant: expected a quantity such as "64Mi" or 1048576/],
      [
        { memory: {} },
        /defaults\.usage\.memory: exactly one of a quantity, constant, ramp, periodic or expr/,
      ],
      [{ cpu: { ramp: { from: 0, to: 1 } } }, /defaults\.usage\.cpu\.ramp\.durationSeconds/],
      [
        { cpu: { ramp: { from: 0, to: 1, durationSeconds: 5 }, expr: 't' } },
        /defaults\.usage\.cpu: exactly one of/,
      ],
      [
        { cpu: { periodic: { min: 2, max: 1, periodSeconds: 5 } } },
        /usage\.cpu\.periodic: min must not exceed max/,
      ],
      [
        { cpu: { periodic: { min: 0, max: 1, periodSeconds: 0 } } },
        /usage\.cpu\.periodic\.periodSeconds: Too small/,
      ],
      [
        { cpu: { periodic: { min: 0, max: 1, periodSeconds: 5, shape: 'wobble' } } },
        /usage\.cpu\.periodic\.shape/,
      ],
      [{ network: 1 }, /defaults\.usage\.network: unknown field/],
    ];
    for (const [usage, message] of cases) {
      const err = await Promise.resolve()
        .then(() => new SimRuntime({ clock: new FakeClock(), profiles: { defaults: { usage } } }))
        .catch((e: unknown) => e as Error);
      expect(errorKind(err), JSON.stringify(usage)).to.equal('InvalidArgument');
      expect((err as Error).message, JSON.stringify(usage)).to.match(message);
    }
    const { sim, pod, create } = newSim();
    const p = await pod();
    const err = await create(p, 'app', { behaviour: 'usage: { memory: { expr: "1 +" } }' }).catch(
      (e: unknown) => e as Error,
    );
    expect(errorKind(err)).to.equal('InvalidArgument');
    expect((err as Error).message).to.match(
      new RegExp(
        `annotation ${SimBehaviourAnnotation}: .*usage\\.memory\\.expr: invalid expression: at column 4`,
      ),
    );
    expect(await sim.listContainers()).to.deep.equal([]);
  });
});
