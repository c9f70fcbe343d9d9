/**
 * Graceful node shutdown (issue #56) in the whole cluster: a simulated VirtualNode `sim-shutdown`
 * (`shutdownGracePeriod: 6s`, `shutdownGracePeriodCriticalPods: 2s`) runs two replicas of a Deployment;
 * deleting the VirtualNode terminates them as a kubelet does on a host shutdown (Failed, reason Terminated,
 * the kubelet's message, a DisruptionTarget condition), the Node goes, and the ReplicaSet's replacements
 * are Ready on other nodes. Pods are watched, so their last state is seen even when they are deleted right
 * after.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { Informer, restListWatcher } from '../../src/kube/informer.js';
import { RealClock } from '../../src/util/clock.js';
import { createVirtualNode, waitNodeReady } from '../../scripts/lib/cluster.js';
import { eventually } from '../support/eventually.js';
import { isGone } from '../support/operator.js';
import { HEARTBEAT, NS, podReady, type ClusterEnv } from './env.js';

const NODE = 'sim-shutdown';
const MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
const VN_PATH = '/apis/kubelet-operator.dev/v1alpha1/virtualnodes';

export function nodeShutdownScenario(getEnv: () => ClusterEnv): void {
  describe('graceful node shutdown', () => {
    const env = (): ClusterEnv => getEnv();
    /** The last state seen of each pod of the Deployment, deletions included. */
    const last = new Map<string, Pod>();
    let informer: Informer<Pod> | undefined;

    before(async () => {
      informer = new Informer<Pod>(
        restListWatcher<Pod>(env().client, `/api/v1/namespaces/${NS}/pods`, {
          labelSelector: 'app=drain-web',
        }),
        { clock: new RealClock(), name: 'drain-web pods' },
      );
      const record = (p: Pod): void => void last.set(p.metadata.name!, p);
      informer.addHandlers({ add: record, update: (_o, n) => record(n), delete: record });
      informer.start();
      await informer.waitForSync();
    });

    after(async function () {
      this.timeout(2 * 60_000);
      await informer?.stop();
      await env()
        .k(['delete', 'deployment', 'drain-web', '--ignore-not-found', '--wait=false'])
        .catch(() => undefined);
      await env()
        .client.request({ method: 'DELETE', path: `${VN_PATH}/${NODE}` })
        .catch(() => undefined);
    });

    it('deleting a VirtualNode terminates its pods with DisruptionTarget, the Node goes, replacements run elsewhere', async () => {
      await createVirtualNode(env().client, NODE, 'main', {
        capacity: { cpu: '4', memory: '8Gi', pods: 20 },
        runtime: { type: 'sim', sim: { podCIDR: '10.88.10.0/24' } },
        internalIP: '127.0.0.8',
        labels: { 'cluster-test/pool': 'shutdown' },
        heartbeat: HEARTBEAT,
        kubelet: { shutdownGracePeriod: '6s', shutdownGracePeriodCriticalPods: '2s' },
      });
      await waitNodeReady(env().client, NODE);
      // Preferring sim-shutdown: both replicas land there while it stands, their replacements elsewhere.
      await env().apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'drain-web', namespace: NS },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'drain-web' } },
          template: {
            metadata: { labels: { app: 'drain-web' } },
            spec: {
              terminationGracePeriodSeconds: 30,
              affinity: {
                nodeAffinity: {
                  preferredDuringSchedulingIgnoredDuringExecution: [
                    {
                      weight: 100,
                      preference: {
                        matchExpressions: [
                          { key: 'cluster-test/pool', operator: 'In', values: ['shutdown'] },
                        ],
                      },
                    },
                  ],
                },
              },
              containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'] }],
            },
          },
        },
      });
      const first = await eventually(
        async () => {
          const on = (await env().pods('app=drain-web')).filter(
            (p) => p.spec.nodeName === NODE && podReady(p),
          );
          return on.length === 2 ? on.map((p) => p.metadata.name!) : undefined;
        },
        90_000,
        'both replicas Ready on sim-shutdown',
      );

      const t0 = Date.now();
      await env().client.request({ method: 'DELETE', path: `${VN_PATH}/${NODE}` });
      for (const name of first) {
        const p = await eventually(
          async () => {
            const seen = last.get(name);
            return seen?.status?.phase === 'Failed' ? seen : undefined;
          },
          60_000,
          `${name} terminated by the shutdown`,
        );
        expect(p.status, name).to.deep.include({ reason: 'Terminated', message: MESSAGE });
        expect(
          p.status?.conditions?.find((c) => c.type === 'DisruptionTarget'),
          name,
        ).to.deep.include({
          status: 'True',
          reason: 'TerminationByKubelet',
          message: MESSAGE,
        });
      }
      await eventually(() => isGone(env().client, `/api/v1/nodes/${NODE}`), 90_000, 'Node removed');
      const gone = Date.now() - t0;
      const replacements = await eventually(
        async () => {
          const ready = (await env().pods('app=drain-web')).filter(
            (p) => !first.includes(p.metadata.name!) && p.spec.nodeName !== NODE && podReady(p),
          );
          return ready.length === 2 ? ready : undefined;
        },
        120_000,
        'two Ready replacements on other nodes',
      );
      console.log(
        `      node shutdown: ${first.join(', ')} terminated, Node gone after ${gone} ms, replacements on ${replacements
          .map((p) => p.spec.nodeName)
          .join(', ')}`,
      );
    });
  });
}
