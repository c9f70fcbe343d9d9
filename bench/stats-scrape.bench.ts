/**
 * The cost of one scrape of a node's resource-usage endpoints, in process: a simulated node with N pods
 * (default 100, one container each, a declared periodic CPU curve and a memory ramp, as a load test would
 * declare them) and this node's StatsProvider. Times building the Summary and rendering each endpoint's
 * body, as the node API does per request, and prints the body sizes. No network, no TLS, no auth: what the
 * operator itself spends per scrape.
 *
 *   npx tsx bench/stats-scrape.bench.ts [pods] [iterations]      (npm run bench:stats)
 */
import { summaryJSON } from '../src/kubelet/stats/json.js';
import { StatsProvider } from '../src/kubelet/stats/shell/provider.js';
import { renderResourceMetrics } from '../src/kubelet/stats/resourcemetrics.js';
import { ContainerNameLabel, PodUIDLabel } from '../src/runtime/labels.js';
import { SimBehaviourAnnotation, SimRuntime } from '../src/runtime/sim/index.js';
import { FakeClock } from '../src/util/clock.js';
import { formatTable } from './lib/table.js';

const PODS = Number(process.argv[2] ?? 100);
const ITERATIONS = Number(process.argv[3] ?? 300);
const IMAGE = 'docker.io/library/busybox:latest';
const USAGE = JSON.stringify({
  usage: {
    cpu: { periodic: { min: '50m', max: '400m', periodSeconds: 120, shape: 'sine' } },
    memory: { ramp: { from: '32Mi', to: '96Mi', durationSeconds: 600 } },
  },
});

async function main(): Promise<void> {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const sim = new SimRuntime({ clock, images: [IMAGE] });
  for (let i = 0; i < PODS; i++) {
    const uid = `uid-${i}`;
    const config = {
      metadata: { name: `pod-${i}`, uid, namespace: 'bench', attempt: 0 },
      labels: { [PodUIDLabel]: uid },
      annotations: {},
    };
    const sandbox = await sim.runPodSandbox(config);
    const id = await sim.createContainer(
      sandbox,
      {
        metadata: { name: 'app', attempt: 0 },
        image: IMAGE,
        command: ['sleep', 'infinity'],
        labels: { [PodUIDLabel]: uid, [ContainerNameLabel]: 'app' },
        annotations: { [SimBehaviourAnnotation]: USAGE },
        linux: { resources: { cpuPeriod: 100_000, cpuQuota: 100_000, memoryLimitInBytes: 256 * 2 ** 20 } },
      },
      config,
    );
    await sim.startContainer(id);
  }
  const provider = new StatsProvider({
    nodeName: 'bench-1',
    runtime: sim,
    clock,
    startTimeMs: clock.now(),
    memoryCapacityBytes: 64 * 2 ** 30,
    ephemeralStorageCapacityBytes: 100 * 2 ** 30,
    nodesServed: () => 1,
  });

  const measure = async (what: string, fn: () => Promise<string>): Promise<string[]> => {
    const times: number[] = [];
    let bytes = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      clock.advance(15_000); // one metrics-server period between scrapes
      const t = process.hrtime.bigint();
      bytes = Buffer.byteLength(await fn());
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    times.sort((a, b) => a - b);
    const q = (p: number): string =>
      times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(2);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    return [what, mean.toFixed(2), q(0.5), q(0.99), (bytes / 1024).toFixed(1)];
  };
  const rows = [
    await measure('/metrics/resource', async () =>
      renderResourceMetrics(await provider.summary({ fs: false })),
    ),
    await measure('/stats/summary', async () => summaryJSON(await provider.summary({ fs: true }))),
  ];
  console.log(
    `One scrape of a simulated node with ${PODS} pods (${ITERATIONS} scrapes each, 15 s of fake time apart)\n`,
  );
  console.log(formatTable(['endpoint', 'mean ms', 'p50 ms', 'p99 ms', 'body KiB'], rows));
}

await main();
