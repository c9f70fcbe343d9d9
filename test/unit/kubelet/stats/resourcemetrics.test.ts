import { expect } from 'chai';
import { renderResourceMetrics } from '../../../../src/kubelet/stats/resourcemetrics.js';
import type { Summary } from '../../../../src/kubelet/stats/types.js';
import { KubeletResourceMetrics, parseExposition } from '../../../support/kubelet-metrics.js';

const T = Date.UTC(2026, 10, 25, 12, 0, 0);

const summary: Summary = {
  node: {
    nodeName: 'n1',
    startTime: T - 60_000,
    cpu: { time: T, usageCoreNanoSeconds: 2_500_000_000, usageNanoCores: 10 },
    memory: { time: T, workingSetBytes: 1024 },
  },
  pods: [
    {
      podRef: { name: 'web', namespace: 'ns "q"', uid: 'u1' },
      startTime: T - 30_000,
      containers: [
        {
          name: 'app',
          startTime: T - 29_500,
          cpu: { time: T + 1, usageCoreNanoSeconds: 1_000_000_000 },
          memory: { time: T + 1, workingSetBytes: 512 },
        },
        { name: 'nomem', startTime: T - 1_000, cpu: { time: T, usageCoreNanoSeconds: 5 } },
      ],
      cpu: { time: T + 1, usageCoreNanoSeconds: 1_000_000_005 },
      memory: { time: T + 1, workingSetBytes: 512 },
    },
  ],
};

describe('stats/resourcemetrics', () => {
  it("writes the kubelet families with their types, labels and the readings' own times", () => {
    const p = parseExposition(renderResourceMetrics(summary));
    for (const fam of KubeletResourceMetrics) expect(p.types.get(fam.name), fam.name).to.equal(fam.type);
    const get = (name: string, labels: Record<string, string> = {}) =>
      p.samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    expect(get('node_cpu_usage_seconds_total')).to.deep.include({ value: 2.5, timestampMs: T });
    expect(get('node_memory_working_set_bytes')).to.deep.include({ value: 1024, timestampMs: T });
    const app = { container: 'app', pod: 'web', namespace: 'ns "q"' };
    expect(get('container_cpu_usage_seconds_total', app)).to.deep.include({ value: 1, timestampMs: T + 1 });
    expect(get('container_memory_working_set_bytes', app)?.value).to.equal(512);
    expect(get('container_start_time_seconds', app)).to.deep.include({
      value: (T - 29_500) / 1000,
      timestampMs: T - 29_500,
    });
    expect(get('pod_cpu_usage_seconds_total', { pod: 'web' })?.value).to.equal(1.000000005);
    // A figure the Summary lacks is left out, not written as 0.
    expect(get('container_memory_working_set_bytes', { container: 'nomem' })).to.equal(undefined);
    expect(get('resource_scrape_error')).to.deep.include({ value: 0 });
    expect(get('scrape_error')?.timestampMs).to.equal(undefined);
    for (const s of p.samples) {
      const fam = KubeletResourceMetrics.find((f) => f.name === s.name)!;
      expect(Object.keys(s.labels).sort(), s.name).to.deep.equal(fam.labels);
    }
  });

  it('reports a failed scrape as resource_scrape_error 1 and no samples', () => {
    const p = parseExposition(renderResourceMetrics(undefined));
    expect(p.samples.map((s) => [s.name, s.value])).to.deep.equal([
      ['resource_scrape_error', 1],
      ['scrape_error', 1],
    ]);
  });
});
