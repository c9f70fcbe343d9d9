/**
 * NativeHistograms: a VirtualNode's /metrics read as Prometheus reads a v1.37 kubelet's. An operator runs a
 * sim node and a pod on it against a real kube-apiserver, so the kubelet histograms (pod start, pod worker,
 * PLEG relist) are observed by the real code paths. Then /metrics is scraped twice,
 * once with Prometheus' protobuf Accept and once without, and both answers are read by an independent
 * decoder, test/support/promcheck (expfmt's delimited protobuf decoder and text parser, pinned Go modules):
 * the same families of the same types in both, and native buckets (schema, zero bucket, spans, deltas that add
 * up to the sample count) on the kubelet histograms, none on prom-client's.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Metrics } from '../../src/metrics.js';
import { decodeDelimited, PROTO_DELIMITED_CONTENT_TYPE } from '../../src/util/prometheus/exposition.js';
import { eventually } from '../support/eventually.js';
import { grantGet, saToken } from '../support/kubectl.js';
import { startNodeApiEnv, type NodeApiEnv } from '../support/nodeapi.js';
import { createShellPod } from '../support/operator.js';
import { getMetrics, PROMETHEUS_PROTOBUF_ACCEPT, promcheckBinary } from '../support/promcheck.js';

const NODE_IP = '127.0.0.67';
const NODE = 'vn-nativehist';
const run = promisify(execFile);

interface Native {
  schema: number;
  zeroThreshold: number;
  zeroCount: number;
  positiveSpan: { offset: number; length: number }[];
  positiveDelta: number[];
  negativeSpan: { offset: number; length: number }[];
  negativeDelta: number[];
}
interface Family {
  type: string;
  series: number;
  histograms?: {
    labels: Record<string, string>;
    sampleCount: number;
    classicBuckets: number;
    native?: Native;
  }[];
}

describe('NativeHistograms: /metrics in protobuf, read by expfmt (sim runtime)', function () {
  this.timeout(10 * 60_000);
  let env: NodeApiEnv | undefined;
  let dir: string;
  let promcheck: string;
  let token: string;

  before(async () => {
    // Built (or found in ~/.cache/kubelet-operator) before the cluster starts.
    promcheck = await promcheckBinary();
    dir = await mkdtemp(path.join(os.tmpdir(), 'nativehist-'));
    env = await startNodeApiEnv({
      node: NODE,
      ip: NODE_IP,
      spec: { runtime: { type: 'sim' } },
      metrics: new Metrics(true),
    });
    // A scraper's ServiceAccount, allowed nodes/metrics as Prometheus is.
    token = await saToken(env.cp, 'scraper');
    await grantGet(env.cp, 'node-metrics', 'nodes/metrics', 'scraper');
    await createShellPod(env.client, NODE, 'p1', 'sleep 3600');
  });

  after(async () => {
    await env?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves the same families as the text answer, with native buckets on the kubelet histograms', async () => {
    const get = (accept?: string): ReturnType<typeof getMetrics> =>
      getMetrics(10250, env!.servingCa, accept, NODE_IP, token);
    // The pod's start is observed once it runs.
    const proto = await eventually(
      async () => {
        const r = await get(PROMETHEUS_PROTOBUF_ACCEPT);
        const fam = decodeDelimited(r.body).find((f) => f.name === 'kubelet_pod_start_duration_seconds');
        return fam ? r : undefined;
      },
      60_000,
      'a pod start observed',
    );
    const text = await get();
    expect(proto.contentType).to.equal(PROTO_DELIMITED_CONTENT_TYPE);
    expect(text.contentType).to.equal('text/plain; version=0.0.4; charset=utf-8');
    await writeFile(path.join(dir, 'metrics.pb'), proto.body);
    await writeFile(path.join(dir, 'metrics.txt'), text.body);
    const out = await run(promcheck, ['decode', path.join(dir, 'metrics.pb'), path.join(dir, 'metrics.txt')]);
    const read = JSON.parse(out.stdout) as { protobuf: Record<string, Family>; text: Record<string, Family> };

    // The same families, of the same types (the two scrapes are moments apart: series counts may grow).
    const types = (fs: Record<string, Family>): Record<string, string> =>
      Object.fromEntries(Object.entries(fs).map(([n, f]) => [n, f.type]));
    expect(types(read.protobuf)).to.deep.equal(types(read.text));
    expect(Object.keys(read.protobuf).length).to.be.above(30);

    const kubelet = [
      'kubelet_pod_start_duration_seconds',
      'kubelet_pod_worker_duration_seconds',
      'kubelet_pleg_relist_duration_seconds',
    ];
    for (const name of kubelet) {
      const f = read.protobuf[name];
      expect(f, name).to.not.equal(undefined);
      expect(f!.type).to.equal('HISTOGRAM');
      for (const h of f!.histograms!) {
        const n = h.native;
        expect(n, `${name} ${JSON.stringify(h.labels)}`).to.not.equal(undefined);
        expect(n!.schema).to.be.within(-4, 3);
        expect(n!.zeroThreshold).to.equal(2 ** -128);
        expect(h.classicBuckets).to.be.above(0);
        // The deltas give each bucket's count; with the zero bucket they add up to the sample count.
        let total = n!.zeroCount;
        for (const deltas of [n!.positiveDelta, n!.negativeDelta]) {
          let count = 0;
          for (const d of deltas) {
            count += d;
            expect(count).to.be.at.least(0);
            total += count;
          }
        }
        expect(total, name).to.equal(h.sampleCount);
        const spanned = n!.positiveSpan.reduce((a, s) => a + s.length, 0);
        expect(spanned).to.equal(n!.positiveDelta.length);
        expect(h.sampleCount).to.be.above(0);
      }
    }
    // prom-client's own histogram: classic only.
    const loop = read.protobuf.kubelet_operator_event_loop_delay_seconds;
    expect(loop?.type).to.equal('HISTOGRAM');
    for (const h of loop!.histograms!) expect(h.native).to.equal(undefined);
  });
});
