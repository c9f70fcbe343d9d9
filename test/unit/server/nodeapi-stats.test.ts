import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ProbeMetrics } from '../../../src/kubelet/prober/metrics.js';
import { StatsProvider } from '../../../src/kubelet/stats/shell/provider.js';
import type { PodSandboxStats, Runtime } from '../../../src/runtime/types.js';
import type { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import { KindError } from '../../../src/util/errors.js';
import { RealClock } from '../../../src/util/clock.js';
import { parseExposition } from '../../support/kubelet-metrics.js';
import { nodeApiGet, startLocalNodeApi } from '../../support/nodeapi.js';

const NOW_NS = BigInt(Date.now()) * 1_000_000n;

/** A runtime without ListPodSandboxStats (as an older containerd): the provider groups container stats. */
function runtimeWithoutSandboxStats(fail: { on: boolean }): Runtime {
  const sandbox = {
    id: 's1',
    metadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 0 },
    state: 'ready' as const,
    createdAt: NOW_NS - 10_000_000_000n,
    labels: {},
    annotations: {},
  };
  const container = {
    id: 'c1',
    podSandboxId: 's1',
    metadata: { name: 'app', attempt: 0 },
    image: 'img',
    imageRef: 'sha',
    state: 'running' as const,
    createdAt: NOW_NS - 9_000_000_000n,
    labels: {},
    annotations: {},
  };
  return {
    kind: 'cri',
    capabilities: { hostLogDirectories: false, hostPodCgroups: false },
    listPodSandbox: async () => {
      if (fail.on) throw new KindError('Unavailable', 'runtime down');
      return [sandbox];
    },
    listContainers: async () => [container],
    listPodSandboxStats: async (): Promise<PodSandboxStats[]> => {
      throw new KindError('Unimplemented', 'unknown method ListPodSandboxStats');
    },
    listContainerStats: async () => [
      {
        attributes: { id: 'c1', metadata: { name: 'app', attempt: 0 }, labels: {}, annotations: {} },
        cpu: { timestamp: NOW_NS, usageCoreNanoSeconds: 3e9 },
        memory: { timestamp: NOW_NS, workingSetBytes: 4096 },
      },
    ],
  } as unknown as Runtime;
}

describe('NodeApiServer: /stats/summary, /metrics/resource, /metrics/probes', function () {
  this.timeout(30_000);
  let dir: string;
  let server: NodeApiServer;
  let port: number;
  let cert: Buffer;
  const fail = { on: false };

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-stats-'));
    const runtime = runtimeWithoutSandboxStats(fail);
    const provider = new StatsProvider({
      nodeName: 'n1',
      runtime,
      clock: new RealClock(),
      startTimeMs: Date.now() - 60_000,
      memoryCapacityBytes: 1 << 30,
      ephemeralStorageCapacityBytes: 1 << 30,
      nodesServed: () => 1,
      processUsage: () => ({ cpuMicros: 1_000_000, rssBytes: 50 << 20 }),
    });
    const probes = new ProbeMetrics();
    ({ server, port, cert } = await startLocalNodeApi(dir, {
      runtime,
      pods: [],
      stats: { summary: (o) => provider.summary(o), probeMetrics: () => probes.render() },
    }));
  });

  after(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const get = (p: string): Promise<{ status: number; body: string }> =>
    nodeApiGet({ host: '127.0.0.1', port, ca: cert }, p, 'good');

  it('serves the Summary from container stats when the runtime has no sandbox stats', async () => {
    const r = await get('/stats/summary');
    expect(r.status).to.equal(200);
    const s = JSON.parse(r.body) as {
      node: { cpu: { usageCoreNanoSeconds: number }; memory: { workingSetBytes: number } };
      pods: {
        podRef: { name: string };
        cpu: { usageCoreNanoSeconds: number };
        containers: { name: string }[];
      }[];
    };
    expect(s.pods.map((p) => p.podRef.name)).to.deep.equal(['web']);
    expect(s.pods[0]!.cpu.usageCoreNanoSeconds).to.equal(3e9);
    // The pod plus the operator's 1 s of CPU and 50 MiB.
    expect(s.node.cpu.usageCoreNanoSeconds).to.equal(4e9);
    expect(s.node.memory.workingSetBytes).to.equal(4096 + (50 << 20));
  });

  it('serves resource metrics, and a scrape error as resource_scrape_error 1 with a 200', async () => {
    const ok = parseExposition((await get('/metrics/resource')).body);
    expect(ok.samples.find((s) => s.name === 'pod_cpu_usage_seconds_total')?.value).to.equal(3);
    fail.on = true;
    try {
      const r = await get('/metrics/resource');
      expect(r.status).to.equal(200);
      const p = parseExposition(r.body);
      expect(p.samples.find((s) => s.name === 'resource_scrape_error')?.value).to.equal(1);
      expect((await get('/stats/summary')).status).to.equal(500);
    } finally {
      fail.on = false;
    }
  });

  it('serves /metrics/probes, and refuses other methods and unknown stats paths', async () => {
    const r = await get('/metrics/probes');
    expect(r.status).to.equal(200);
    expect(r.body).to.contain('# TYPE prober_probe_total counter');
    expect((await get('/stats/container')).status).to.equal(404);
    expect((await get('/metrics/cadvisor')).status).to.equal(404);
  });
});
