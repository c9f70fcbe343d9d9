/**
 * The resource metrics API on the cluster's metrics-server (test/support/metricsserver.ts, started by env.ts):
 * the APIService `v1beta1.metrics.k8s.io` is Available through the aggregation layer, the API answers, and
 * `kubectl top nodes` / `kubectl top pods` show every VirtualNode and a pod on each runtime. The last two need
 * the node API's `/metrics/resource` (what metrics-server scrapes); a value shows after two scrapes, so after
 * one to two METRIC_RESOLUTION_S periods.
 */
import { expect } from 'chai';
import { kubectl } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { SimBehaviourAnnotation } from '../../src/runtime/sim/profile.js';
import { METRICS_API_SERVICE } from '../support/metricsserver.js';
import { CRI_NODES, CRI_TAINT, NS, podReady, SIM_NODES, type ClusterEnv } from './env.js';

interface APIService {
  spec: { service?: { name: string; namespace: string; port?: number }; caBundle?: string };
  status?: { conditions?: { type: string; status: string; reason?: string }[] };
}

interface MetricsList {
  kind: string;
  apiVersion: string;
  items: { metadata: { name: string }; usage?: Record<string, string> }[];
}

/** `kubectl top <what> --no-headers` as rows of columns; a failure (no metrics yet) is an empty table. */
async function top(env: ClusterEnv, args: string[]): Promise<string[][]> {
  const r = await kubectl(env.cp, ['top', ...args, '--no-headers']);
  if (r.code !== 0) throw new Error(`kubectl top ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout
    .trim()
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => l.trim().split(/\s+/));
}

export function metricsScenarios(getEnv: () => ClusterEnv): void {
  describe('resource metrics (metrics-server through the aggregation layer)', () => {
    it('APIService v1beta1.metrics.k8s.io is Available and /apis/metrics.k8s.io/v1beta1 answers NodeMetricsList and PodMetricsList', async () => {
      const env = getEnv();
      const svc = await env.get<APIService>(
        `/apis/apiregistration.k8s.io/v1/apiservices/${METRICS_API_SERVICE}`,
      );
      const available = svc.status?.conditions?.find((c) => c.type === 'Available');
      expect(available?.status, JSON.stringify(svc.status)).to.equal('True');
      // Verified against a CA bundle, reached through the ExternalName Service on metrics-server's port.
      expect(svc.spec.caBundle).to.be.a('string').and.not.equal('');
      expect(svc.spec.service).to.deep.equal({
        name: 'metrics-server',
        namespace: 'kube-system',
        port: env.metricsServer.port,
      });

      // kubectl get --raw exits non-zero on any status but 2xx.
      const nodes = await kubectl(env.cp, ['get', '--raw', '/apis/metrics.k8s.io/v1beta1/nodes']);
      expect(nodes.code, nodes.stderr).to.equal(0);
      const nodeList = JSON.parse(nodes.stdout) as MetricsList;
      expect(nodeList).to.include({ kind: 'NodeMetricsList', apiVersion: 'metrics.k8s.io/v1beta1' });
      expect(nodeList.items).to.be.an('array');

      const pods = await kubectl(env.cp, [
        'get',
        '--raw',
        `/apis/metrics.k8s.io/v1beta1/namespaces/${NS}/pods`,
      ]);
      expect(pods.code, pods.stderr).to.equal(0);
      expect(JSON.parse(pods.stdout)).to.include({
        kind: 'PodMetricsList',
        apiVersion: 'metrics.k8s.io/v1beta1',
      });
    });

    // Needs the node API's /metrics/resource (src/server/nodeapi/stats.ts).
    it('kubectl top nodes lists every VirtualNode with its CPU and memory usage', async () => {
      const env = getEnv();
      const t0 = Date.now();
      const want = [...SIM_NODES, ...Object.keys(CRI_NODES)];
      const rows = await eventually(
        async () => {
          const table = await top(env, ['nodes']);
          const seen = new Set(table.map((r) => r[0]));
          return want.every((n) => seen.has(n)) ? table : undefined;
        },
        60_000,
        `every VirtualNode (${want.join(', ')}) in kubectl top nodes`,
        1000,
      );
      // NAME  CPU(cores)  CPU(%)  MEMORY(bytes)  MEMORY(%)
      for (const name of want) {
        const row = rows.find((r) => r[0] === name)!;
        expect(row[1], row.join(' ')).to.match(/^\d+m$/);
        expect(row[3], row.join(' ')).to.match(/^\d+Mi$/);
      }
      console.log(`      kubectl top nodes: all ${want.length} nodes after ${Date.now() - t0} ms`);
    });

    it('kubectl top pods: a sim pod shows exactly its declared usage; on containerd a busy loop > 100m, sleep < 10m', async () => {
      const env = getEnv();
      const t0 = Date.now();
      const sleeper = {
        name: 'app',
        image: 'busybox',
        imagePullPolicy: 'IfNotPresent',
        command: ['sleep', '3600'],
      };
      const cri = (name: string, command: string[]): unknown => ({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS },
        spec: {
          terminationGracePeriodSeconds: 0,
          hostNetwork: true,
          automountServiceAccountToken: false,
          nodeSelector: { 'cluster-test/pool': 'cri' },
          tolerations: [{ ...CRI_TAINT, operator: 'Equal' }],
          containers: [{ ...sleeper, command }],
        },
      });
      await env.apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'top-sim',
          namespace: NS,
          annotations: {
            [SimBehaviourAnnotation]: JSON.stringify({ usage: { cpu: '250m', memory: '64Mi' } }),
          },
        },
        spec: {
          terminationGracePeriodSeconds: 0,
          nodeSelector: { 'cluster-test/pool': 'main' },
          containers: [sleeper],
        },
      });
      await env.apply(cri('top-cri-idle', ['sleep', '3600']));
      await env.apply(cri('top-cri-busy', ['sh', '-c', 'while :; do :; done']));
      const names = ['top-sim', 'top-cri-idle', 'top-cri-busy'];
      try {
        await eventually(
          async () => (await Promise.all(names.map((n) => env.pod(n)))).every(podReady),
          60_000,
          `${names.join(', ')} Ready`,
          200,
        );
        const rows = await eventually(
          async () => {
            const table = await top(env, ['pods', '-n', NS]);
            const seen = new Set(table.map((r) => r[0]));
            return names.every((n) => seen.has(n)) ? table : undefined;
          },
          60_000,
          `${names.join(', ')} in kubectl top pods`,
          1000,
        );
        // NAME  CPU(cores)  MEMORY(bytes)
        const row = (name: string): { cpuMilli: number; memory: string; line: string } => {
          const r = rows.find((x) => x[0] === name)!;
          expect(r[1], r.join(' ')).to.match(/^\d+m$/);
          expect(r[2], r.join(' ')).to.match(/^\d+Mi$/);
          return { cpuMilli: parseInt(r[1]!, 10), memory: r[2]!, line: r.join(' ') };
        };
        const sim = row('top-sim');
        // A constant curve: the rate between two scrapes is the declared rate (kubectl rounds to whole m).
        expect(sim.cpuMilli, sim.line).to.be.within(249, 251);
        expect(sim.memory, sim.line).to.equal('64Mi');
        const busy = row('top-cri-busy');
        const idle = row('top-cri-idle');
        expect(busy.cpuMilli, busy.line).to.be.greaterThan(100);
        expect(idle.cpuMilli, idle.line).to.be.lessThan(10);
        const containers = await top(env, ['pod', 'top-cri-idle', '-n', NS, '--containers']);
        expect(
          containers.map((r) => r.slice(0, 2)),
          JSON.stringify(containers),
        ).to.deep.equal([['top-cri-idle', 'app']]);
        console.log(
          `      kubectl top pods after ${Date.now() - t0} ms: ${sim.line}; ${busy.line}; ${idle.line}`,
        );
      } finally {
        await env.k(['delete', 'pod', ...names, '--wait=false']);
      }
    });
  });
}
