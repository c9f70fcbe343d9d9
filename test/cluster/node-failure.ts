/**
 * Node failure through the real node lifecycle controller: the agent of one simulated VirtualNode (`sim-3`,
 * served by the spare operator of test/cluster/env.ts) stops, its Lease and node status go stale, the Node
 * turns Ready=Unknown after the controller's grace period (shortened in env.ts), its pods are evicted after
 * their toleration, and all recovers when the agent is back.
 */
import { expect } from 'chai';
import { nodeReady, waitNodeReady } from '../../scripts/lib/cluster.js';
import { eventually } from '../support/eventually.js';
import { NODE_MONITOR_GRACE_S, NS, podReady as ready, type ClusterEnv } from './env.js';

/** A container that exits promptly on SIGTERM (a trap in a loop), like a well-behaved server. */
const GRACEFUL = ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'];

export function nodeFailureScenario(getEnv: () => ClusterEnv): void {
  describe('node failure', () => {
    const apply = (obj: unknown): Promise<string> => getEnv().apply(obj);
    const pods = (selector: string) => getEnv().pods(selector);
    const events = (name: string) => getEnv().events(name);
    const node = (name: string) => getEnv().node(name);

    it('a node whose agent stops goes NotReady, its pods are evicted after their toleration, then it recovers', async () => {
      const t0 = Date.now();
      const tolerations = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].map((key) => ({
        key,
        operator: 'Exists',
        effect: 'NoExecute',
        tolerationSeconds: 2,
      }));
      await apply({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'pinned', namespace: NS },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'pinned' } },
          template: {
            metadata: { labels: { app: 'pinned' } },
            spec: {
              terminationGracePeriodSeconds: 5,
              nodeSelector: { 'kubernetes.io/hostname': 'sim-3' },
              tolerations,
              containers: [{ name: 'app', image: 'busybox:1.36', command: GRACEFUL }],
            },
          },
        },
      });
      const before = await eventually(
        async () => {
          const ps = await pods('app=pinned');
          return ps.length === 2 && ps.every(ready) ? ps : undefined;
        },
        60_000,
        '2 Ready pinned pods',
        500,
      );

      await getEnv().spare!.stop();
      getEnv().spare = undefined;
      const stoppedAt = Date.now();
      // The node lifecycle controller notices the stale Lease and node status after its grace period
      // (--node-monitor-grace-period, NODE_MONITOR_GRACE_S here; 50 s by default).
      const unknown = await eventually(
        async () => {
          const n = await node('sim-3');
          return n.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'Unknown')
            ? n
            : undefined;
        },
        120_000,
        'Node sim-3 Ready=Unknown',
        1000,
      );
      const cond = unknown.status!.conditions!.find((c) => c.type === 'Ready')!;
      expect(cond.reason).to.equal('NodeStatusUnknown');
      expect(cond.message).to.equal('Kubelet stopped posting node status.');
      const notReadyMs = Date.now() - stoppedAt;
      // Not before the grace period, counted from when the controller last saw the Lease renewed (up to one
      // renew interval, 2 s, before the stop; 1 s more of slack), and well before the default 50 s.
      expect(notReadyMs, 'Ready=Unknown after').to.be.within((NODE_MONITOR_GRACE_S - 3) * 1000, 35_000);
      await eventually(
        async () =>
          (await node('sim-3')).spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unreachable'),
        30_000,
        'the unreachable taint',
      );
      // Evicted after tolerationSeconds: 2 (marked for deletion; they finish terminating once a kubelet is back).
      await eventually(
        async () => {
          const ps = await pods('app=pinned');
          return before.every(
            (b) => ps.find((p) => p.metadata.uid === b.metadata.uid)?.metadata.deletionTimestamp,
          );
        },
        60_000,
        'the pinned pods evicted',
        500,
      );
      const evicted = (await events(before[0]!.metadata.name!)).find(
        (e) => e.reason === 'TaintManagerEviction',
      );
      expect(evicted?.message).to.match(/^Marking for deletion Pod /);
      const evictedMs = Date.now() - stoppedAt;

      getEnv().spare = await getEnv().startSpare();
      await waitNodeReady(getEnv().client, 'sim-3', 60_000);
      await eventually(
        async () => {
          const ps = await pods('app=pinned');
          return (
            ps.length === 2 &&
            ps.every(ready) &&
            ps.every((p) => !before.some((b) => b.metadata.uid === p.metadata.uid))
          );
        },
        90_000,
        'replacement pods Ready on the recovered node, the evicted ones gone',
        500,
      );
      expect(nodeReady(await node('sim-3'))).to.equal(true);
      // The lifecycle controller lifts the unreachable taint on its next pass over the Ready node.
      await eventually(
        async () => ((await node('sim-3')).spec?.taints ?? []).length === 0,
        30_000,
        'Node sim-3 untainted',
      );
      console.log(
        `      node failure: NotReady after ${notReadyMs} ms, evicted after ${evictedMs} ms; ` +
          `recovered in ${Date.now() - t0} ms total`,
      );
    });
  });
}
