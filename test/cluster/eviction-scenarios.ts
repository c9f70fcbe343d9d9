/**
 * The eviction manager (issue #56) in the whole cluster, through the API only:
 * - a simulated VirtualNode `sim-evict` (8Gi, `evictionHard: memory.available<3Gi`) whose pods' declared
 *   memory leaves less than that: MemoryPressure, the node lifecycle controller's memory-pressure taint, the
 *   pod furthest over its request evicted with the kubelet's words while the others stay, and the ReplicaSet's
 *   replacement Ready on another node;
 * - a pod on a containerd-backed node that writes past its emptyDir's `sizeLimit` is evicted with the
 *   kubelet's message.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { createVirtualNode, waitNodeReady } from '../../scripts/lib/cluster.js';
import { eventually } from '../support/eventually.js';
import { CRI_NODES, CRI_TAINT, HEARTBEAT, NS, podReady, type ClusterEnv } from './env.js';
import { expectKubeletEvent } from './kubelet-expectations.js';

const NODE = 'sim-evict';
const BEHAVIOUR = 'sim.kubelet-operator.dev/behaviour';
const usage = (memory: string): Record<string, string> => ({
  [BEHAVIOUR]: JSON.stringify({ usage: { memory } }),
});
// Dies of SIGTERM (exit 143), as most processes do: an evicted pod whose containers all exit 0 ends
// Succeeded, not Failed, since the kubelet's final status takes the phase from its containers (getPhase with
// the pod terminal); ours does the same.
const SLEEP = ['sleep', '3600'];

export function evictionScenarios(getEnv: () => ClusterEnv): void {
  describe('node-pressure eviction', () => {
    const env = (): ClusterEnv => getEnv();
    const waitPod = async (name: string, pred: (p: Pod) => boolean, what: string, timeoutMs = 90_000) => {
      let last: unknown;
      try {
        return await eventually(
          async () => {
            const p = await env()
              .pod(name)
              .catch((err: unknown) => err);
            last = p;
            return !(p instanceof Error) && pred(p as Pod) ? (p as Pod) : undefined;
          },
          timeoutMs,
          `${name}: ${what}`,
          250,
        );
      } catch (err) {
        const seen = last instanceof Error ? last.message : JSON.stringify((last as Pod | undefined)?.status);
        throw new Error(`${(err as Error).message}; last seen: ${seen}`);
      }
    };

    after(async function () {
      this.timeout(2 * 60_000);
      await env()
        .k(['delete', 'deployment', 'hungry', 'pod', 'light', 'steady', '--ignore-not-found', '--wait=false'])
        .catch(() => undefined);
      await env()
        .client.request({
          method: 'DELETE',
          path: `/apis/kubelet-operator.dev/v1alpha1/virtualnodes/${NODE}`,
        })
        .catch(() => undefined);
    });

    it('a sim node short of memory gets MemoryPressure and its taint, evicts the pod furthest over its request, and the ReplicaSet replaces it elsewhere', async () => {
      await createVirtualNode(env().client, NODE, 'main', {
        capacity: { cpu: '4', memory: '8Gi', pods: 20 },
        runtime: { type: 'sim', sim: { podCIDR: '10.88.9.0/24' } },
        internalIP: '127.0.0.7',
        labels: { 'cluster-test/pool': 'evict' },
        heartbeat: HEARTBEAT,
        kubelet: { evictionHard: { 'memory.available': '3Gi' }, evictionPressureTransitionPeriod: '20s' },
      });
      await waitNodeReady(env().client, NODE);
      const onNode = { nodeSelector: { 'cluster-test/pool': 'evict' } };
      // 250Mi declared, plus the operator's own memory (the node's kubelet, up to a GiB here): no pressure.
      await env().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'steady', namespace: NS, annotations: usage('50Mi') },
        spec: {
          ...onNode,
          containers: [
            {
              name: 'app',
              image: 'busybox:1.36',
              command: SLEEP,
              resources: {
                requests: { cpu: '100m', memory: '100Mi' },
                limits: { cpu: '100m', memory: '100Mi' },
              },
            },
          ],
        },
      });
      await env().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'light', namespace: NS, annotations: usage('200Mi') },
        spec: { ...onNode, containers: [{ name: 'app', image: 'busybox:1.36', command: SLEEP }] },
      });
      await waitPod('steady', podReady, 'Ready');
      await waitPod('light', podReady, 'Ready');
      expect(
        (await env().node(NODE)).status?.conditions?.find((c) => c.type === 'MemoryPressure'),
      ).to.deep.include({
        status: 'False',
      });

      // The hungry replica declares 5Gi over a 64Mi request: under 2.8Gi left, below the threshold. It
      // prefers sim-evict, so a replacement lands elsewhere only while the node is tainted.
      await env().apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'hungry', namespace: NS },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'hungry' } },
          template: {
            metadata: { labels: { app: 'hungry' }, annotations: usage('5Gi') },
            spec: {
              terminationGracePeriodSeconds: 5,
              affinity: {
                nodeAffinity: {
                  preferredDuringSchedulingIgnoredDuringExecution: [
                    {
                      weight: 100,
                      preference: {
                        matchExpressions: [{ key: 'cluster-test/pool', operator: 'In', values: ['evict'] }],
                      },
                    },
                  ],
                },
              },
              containers: [
                {
                  name: 'app',
                  image: 'busybox:1.36',
                  command: SLEEP,
                  resources: { requests: { memory: '64Mi' } },
                },
              ],
            },
          },
        },
      });
      const first = await eventually(
        async () => (await env().pods('app=hungry')).find((p) => p.spec.nodeName === NODE),
        60_000,
        'the first hungry replica on sim-evict',
      );
      const name = first.metadata.name!;

      const pressure = await eventually(
        async () => {
          const c = (await env().node(NODE)).status?.conditions?.find((x) => x.type === 'MemoryPressure');
          return c?.status === 'True' ? c : undefined;
        },
        60_000,
        'MemoryPressure=True',
      );
      expect(pressure).to.deep.include({
        reason: 'KubeletHasInsufficientMemory',
        message: 'kubelet has insufficient memory available',
      });
      const taint = await eventually(
        async () =>
          (await env().node(NODE)).spec?.taints?.find((t) => t.key === 'node.kubernetes.io/memory-pressure'),
        60_000,
        'the memory-pressure taint',
      );
      expect(taint).to.deep.include({ effect: 'NoSchedule' });

      const evicted = await waitPod(name, (p) => p.status?.phase === 'Failed', 'evicted');
      expect(evicted.status?.reason).to.equal('Evicted');
      expect(evicted.status?.message).to.match(
        /^The node was low on resource: memory\. Threshold quantity: 3Gi, available: \d+(Ki|Mi|Gi)?\. Container app was using 5Gi, request is 64Mi, has larger consumption of memory\. $/,
      );
      expect(evicted.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).to.deep.include({
        status: 'True',
        reason: 'TerminationByKubelet',
      });
      expectKubeletEvent(await env().events(name, ['Evicted']), {
        reason: 'Evicted',
        type: 'Warning',
        message: evicted.status!.message!,
        node: NODE,
      });

      // The API server proxies to no loopback address, so this sim node's series are read where the process
      // serves them all: through a containerd-backed node of the same operator process.
      const viaNode = Object.keys(CRI_NODES)[0]!;
      const metrics = await env().k(['get', '--raw', `/api/v1/nodes/${viaNode}/proxy/metrics`]);
      expect(metrics).to.contain(`kubelet_evictions{node="${NODE}",eviction_signal="memory.available"} 1`);
      expect(metrics).to.match(
        new RegExp(
          `kubelet_eviction_stats_age_seconds_count\\{node="${NODE}",eviction_signal="memory.available"\\} 1`,
        ),
      );

      // The others stay: under their request (steady) or less far over it (light).
      for (const other of ['steady', 'light']) {
        const p = await env().pod(other);
        expect(p.status?.phase, other).to.equal('Running');
      }

      const replacement = await eventually(
        async () =>
          (await env().pods('app=hungry')).find(
            (p) => p.metadata.name !== name && p.spec.nodeName && p.spec.nodeName !== NODE && podReady(p),
          ),
        120_000,
        'a Ready replacement on another node',
      );
      expect(replacement.spec.nodeName).to.not.equal(NODE);
      console.log(
        `      eviction: ${name} evicted, replacement ${replacement.metadata.name} Ready on ${replacement.spec.nodeName}`,
      );
    });

    it('a pod on containerd that writes past its emptyDir sizeLimit is evicted with the kubelet message', async () => {
      await env().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'fill-emptydir', namespace: NS },
        spec: {
          hostNetwork: true,
          automountServiceAccountToken: false,
          tolerations: [
            { key: CRI_TAINT.key, operator: 'Equal', value: CRI_TAINT.value, effect: 'NoSchedule' },
          ],
          nodeSelector: { 'cluster-test/pool': 'cri' },
          terminationGracePeriodSeconds: 5,
          volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '4Mi' } }],
          containers: [
            {
              name: 'app',
              image: 'busybox',
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', 'dd if=/dev/zero of=/scratch/fill bs=1M count=8 && exec sleep 3600'],
              volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
            },
          ],
        },
      });
      const p = await waitPod('fill-emptydir', (x) => x.status?.phase === 'Failed', 'evicted', 120_000).catch(
        async (err: Error) => {
          // What the node measured: the volume's usage in its Summary, the eviction manager's input.
          const on = (await env().pod('fill-emptydir')).spec.nodeName;
          const summary = on
            ? await env()
                .k(['get', '--raw', `/api/v1/nodes/${on}/proxy/stats/summary`])
                .catch((e: Error) => e.message)
            : 'not scheduled';
          const pod = /"podRef":\{"name":"fill-emptydir"[\s\S]*?"volume":\[[\s\S]*?\]/.exec(
            summary.replace(/\s+/g, ''),
          );
          throw new Error(`${err.message}; its Summary: ${pod?.[0] ?? summary.slice(0, 2000)}`);
        },
      );
      expect(p.status).to.deep.include({
        reason: 'Evicted',
        message: 'Usage of EmptyDir volume "scratch" exceeds the limit "4Mi". ',
      });
      expectKubeletEvent(await env().events('fill-emptydir', ['Evicted']), {
        reason: 'Evicted',
        type: 'Warning',
        message: p.status!.message!,
        node: p.spec.nodeName!,
      });
      const metrics = await env().k(['get', '--raw', `/api/v1/nodes/${p.spec.nodeName}/proxy/metrics`]);
      expect(metrics).to.contain(
        `kubelet_evictions{node="${p.spec.nodeName}",eviction_signal="emptydirfs.limit"} 1`,
      );
      await env().k(['delete', 'pod', 'fill-emptydir', '--wait=false']);
    });
  });
}
