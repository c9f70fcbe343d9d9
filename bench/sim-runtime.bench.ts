/**
 * Simulated runtime at scale: creates and starts containers in pod sandboxes of 10 on a RealClock-backed
 * SimRuntime and prints throughput and memory as a table.
 *
 *   npx tsx bench/sim-runtime.bench.ts [containers]        (default 100000)
 *
 * Every container runs `sleep 3600`, so each holds a real timer, as a running container with a finite run
 * does in the simulation. The first and last 10% are timed separately: equal rates mean per-call work does
 * not grow with the number of containers already held.
 */
import {
  ContainerNameLabel,
  ManagedByLabel,
  PodNameLabel,
  PodNamespaceLabel,
  PodUIDLabel,
} from '../src/runtime/labels.js';
import { SimRuntime } from '../src/runtime/sim/index.js';
import type { ContainerConfig, PodSandboxConfig } from '../src/runtime/types.js';
import { RealClock } from '../src/util/clock.js';

const TOTAL = Number(process.argv[2] ?? 100_000);
const PER_POD = 10;
const IMAGE = 'docker.io/library/busybox:latest';

if (!Number.isInteger(TOTAL) || TOTAL < PER_POD * 10 || TOTAL % PER_POD !== 0) {
  console.error(`containers must be an integer multiple of ${PER_POD}, at least ${PER_POD * 10}`);
  process.exit(64);
}

interface Row {
  phase: string;
  operations: number;
  seconds: number;
}

const rows: Row[] = [];
const rssMB = (): string => (process.memoryUsage().rss / 2 ** 20).toFixed(0);

function sandboxConfig(i: number): PodSandboxConfig {
  const uid = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  const name = `bench-${i}`;
  return {
    metadata: { name, uid, namespace: 'bench', attempt: 0 },
    logDirectory: `/var/log/pods/bench_${name}_${uid}`,
    labels: {
      [PodNameLabel]: name,
      [PodNamespaceLabel]: 'bench',
      [PodUIDLabel]: uid,
      [ManagedByLabel]: 'bench-node',
    },
    annotations: {},
  };
}

function containerConfig(sb: PodSandboxConfig, j: number): ContainerConfig {
  const name = `c${j}`;
  return {
    metadata: { name, attempt: 0 },
    image: IMAGE,
    command: ['sleep', '3600'],
    labels: {
      [PodNameLabel]: sb.metadata.name,
      [PodNamespaceLabel]: 'bench',
      [PodUIDLabel]: sb.metadata.uid,
      [ContainerNameLabel]: name,
    },
    annotations: { 'io.kubernetes.container.restartCount': '0' },
    logPath: `${name}/0.log`,
  };
}

async function timed(phase: string, operations: number, fn: () => Promise<void>): Promise<void> {
  const t0 = process.hrtime.bigint();
  await fn();
  rows.push({ phase, operations, seconds: Number(process.hrtime.bigint() - t0) / 1e9 });
}

async function main(): Promise<void> {
  const sim = new SimRuntime({ clock: new RealClock(), images: [IMAGE], podCIDR: '10.0.0.0/8' });
  const pods: { id: string; config: PodSandboxConfig }[] = [];
  const containerIds: string[] = [];
  const rssBefore = rssMB();

  async function createPods(from: number, to: number): Promise<void> {
    for (let i = from; i < to; i++) {
      const config = sandboxConfig(i);
      const id = await sim.runPodSandbox(config);
      pods.push({ id, config });
      for (let j = 0; j < PER_POD; j++) {
        const cid = await sim.createContainer(id, containerConfig(config, j), config);
        await sim.startContainer(cid);
        containerIds.push(cid);
      }
    }
  }

  const podCount = TOTAL / PER_POD;
  const tenth = Math.floor(podCount / 10);
  const total0 = process.hrtime.bigint();
  await timed('create+start: first 10%', tenth * PER_POD, () => createPods(0, tenth));
  await timed('create+start: middle 80%', (podCount - 2 * tenth) * PER_POD, () =>
    createPods(tenth, podCount - tenth),
  );
  await timed('create+start: last 10%', tenth * PER_POD, () => createPods(podCount - tenth, podCount));
  rows.push({
    phase: 'create+start: all',
    operations: TOTAL,
    seconds: Number(process.hrtime.bigint() - total0) / 1e9,
  });
  const rssLoaded = rssMB();

  await timed('listContainers by sandbox', pods.length, async () => {
    for (const p of pods) await sim.listContainers({ podSandboxId: p.id });
  });
  await timed('listContainers by pod UID label', pods.length, async () => {
    for (const p of pods)
      await sim.listContainers({ labelSelector: { [PodUIDLabel]: p.config.metadata.uid } });
  });
  await timed('containerStatus', containerIds.length, async () => {
    for (const id of containerIds) await sim.containerStatus(id);
  });
  await timed('listContainers, all (one call)', 1, async () => {
    await sim.listContainers();
  });
  await timed('stopPodSandbox+removePodSandbox', pods.length, async () => {
    for (const p of pods) {
      await sim.stopPodSandbox(p.id);
      await sim.removePodSandbox(p.id);
    }
  });
  await sim.close();

  const header = ['phase', 'operations', 'seconds', 'per second'];
  const body = rows.map((r) => [
    r.phase,
    r.operations.toLocaleString('en-US'),
    r.seconds.toFixed(3),
    Math.round(r.operations / r.seconds).toLocaleString('en-US'),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(
    `SimRuntime, RealClock: ${TOTAL.toLocaleString('en-US')} containers in sandboxes of ${PER_POD}`,
  );
  console.log(`node ${process.version}, ${process.platform}/${process.arch}\n`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
  console.log(
    `\nRSS: ${rssBefore} MB at start, ${rssLoaded} MB holding ${TOTAL.toLocaleString('en-US')} running containers`,
  );
}

await main();
