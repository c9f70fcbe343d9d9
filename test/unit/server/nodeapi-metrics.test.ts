/**
 * The node API's /metrics negotiates its exposition as promhttp: the delimited protobuf one (MetricFamily)
 * when the Accept header asks for it, carrying the kubelet histograms' native buckets; text 0.0.4 otherwise.
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Metrics } from '../../../src/metrics.js';
import type { NodeApiServer } from '../../../src/server/nodeapi/server.js';
import { decodeDelimited, PROTO_DELIMITED_CONTENT_TYPE } from '../../../src/util/prometheus/exposition.js';
import { getMetrics, PROMETHEUS_PROTOBUF_ACCEPT, startMetricsNodeApi } from '../../support/promcheck.js';

describe('NodeApiServer: /metrics in text or protobuf', function () {
  this.timeout(30_000);
  let dir: string;
  let server: NodeApiServer;
  let port: number;
  let cert: Buffer;
  const metrics = new Metrics(false);

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-metrics-'));
    const s = metrics.forNode('n1');
    for (const v of [0.01, 0.2, 0.2, 3]) s.podStart.observe(v);
    s.worker('create').observe(0.05);
    s.startedPods.inc();
    metrics.runningPods.set({ node: 'n1' }, 2);
    ({ server, port, cert } = await startMetricsNodeApi(dir, metrics.registry));
  });

  after(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers text 0.0.4 without an Accept header, or to one asking for text or anything', async () => {
    for (const accept of [undefined, '*/*', 'text/plain;version=0.0.4', 'application/json']) {
      const r = await getMetrics(port, cert, accept);
      expect(r.status).to.equal(200);
      expect(r.contentType).to.equal('text/plain; version=0.0.4; charset=utf-8');
      const text = r.body.toString('utf8');
      expect(text).to.include('kubelet_pod_start_duration_seconds_bucket{le="0.25",node="n1"} 3');
      expect(text).to.not.match(/schema|span/);
    }
  });

  it("answers the delimited protobuf exposition to Prometheus' protobuf Accept, native buckets included", async () => {
    const r = await getMetrics(port, cert, PROMETHEUS_PROTOBUF_ACCEPT);
    expect(r.status).to.equal(200);
    expect(r.contentType).to.equal(PROTO_DELIMITED_CONTENT_TYPE);
    const fams = decodeDelimited(r.body);
    const byName = new Map(fams.map((f) => [f.name as string, f]));
    expect(byName.get('kubelet_started_pods_total')).to.deep.include({ type: 'COUNTER' });
    expect(byName.get('kubelet_running_pods')).to.deep.include({ type: 'GAUGE' });
    const podStart = byName.get('kubelet_pod_start_duration_seconds')!;
    const h = (podStart.metric as { histogram: Record<string, unknown> }[])[0]!.histogram;
    expect(h).to.include({ sampleCount: 4, schema: 3, zeroThreshold: 2 ** -128 });
    // 0.01, 0.2 twice and 3 at schema 3: buckets -53, -18 and 13, one span each.
    expect(h.positiveSpan).to.deep.equal([
      { offset: -53, length: 1 },
      { offset: 34, length: 1 },
      { offset: 30, length: 1 },
    ]);
    expect(h.positiveDelta).to.deep.equal([1, 1, -1]);
    // Families without a series are left out, as client_golang's gatherer does; the others are all there.
    const text = (await getMetrics(port, cert)).body.toString('utf8');
    const withSamples = new Set(
      text
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => l.replace(/(_bucket|_sum|_count)?(\{.*)?\s.*$/, '')),
    );
    expect([...byName.keys()].sort()).to.deep.equal([...withSamples].sort());
  });
});
