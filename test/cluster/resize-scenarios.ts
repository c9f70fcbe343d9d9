/**
 * In-place pod resize on a simulated VirtualNode of the cluster (test/cluster/env.ts), through kubectl only: a
 * resize the node can never hold is Infeasible; one that fits the node but not next to another pod is Deferred
 * and completes once that pod is deleted; a runtime that takes its time shows PodResizeInProgress until it has
 * caught up, and one that refuses shows reason Error. Every step shows in `kubectl describe pod`, as on a
 * kubelet's node.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { SimBehaviourAnnotation } from '../../src/runtime/sim/profile.js';
import { quantityMilliValue } from '../../src/util/quantity.js';
import { eventually } from '../support/eventually.js';
import { NS, podReady, type ClusterEnv } from './env.js';

const NODE = 'sim-1';

export function resizeScenarios(getEnv: () => ClusterEnv): void {
  describe('in-place pod resize (kubectl patch --subresource resize)', () => {
    const k = (args: string[]) => getEnv().k(args);
    const pod = (name: string) => getEnv().pod(name);
    const condition = (p: Pod, type: string) => p.status?.conditions?.find((c) => c.type === type);
    /** The pod once its `type` condition has `reason` (up to 30 s). */
    const conditionWithReason = (name: string, type: string, reason: string): Promise<Pod> =>
      eventually(
        async () => {
          const p = await pod(name);
          return condition(p, type)?.reason === reason ? p : undefined;
        },
        30_000,
        `${type} ${reason}`,
      );
    const resizeCPU = (name: string, cpu: string) =>
      k([
        'patch',
        'pod',
        name,
        '--subresource',
        'resize',
        '-p',
        JSON.stringify({
          spec: { containers: [{ name: 'app', resources: { requests: { cpu }, limits: { cpu } } }] },
        }),
      ]);
    const create = (name: string, cpu: string, behaviour?: Record<string, unknown>) =>
      getEnv().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name,
          namespace: NS,
          labels: { scenario: 'resize' },
          ...(behaviour ? { annotations: { [SimBehaviourAnnotation]: JSON.stringify(behaviour) } } : {}),
        },
        spec: {
          terminationGracePeriodSeconds: 1,
          nodeSelector: { 'kubernetes.io/hostname': NODE },
          containers: [
            {
              name: 'app',
              image: 'busybox:1.36',
              command: ['sleep', '3600'],
              resources: { requests: { cpu, memory: '32Mi' }, limits: { cpu, memory: '32Mi' } },
            },
          ],
        },
      });

    after(async () => {
      await k(['delete', 'pod', '-l', 'scenario=resize', '--wait=false']).catch(() => undefined);
    });

    it('an over-sized resize is Infeasible; one that waits for room is Deferred, then completes when room frees', async () => {
      await Promise.all([create('rs-a', '500m'), create('rs-b', '1')]);
      await eventually(
        async () => ((await Promise.all([pod('rs-a'), pod('rs-b')])).every(podReady) ? true : undefined),
        60_000,
        'resize pods Ready',
      );

      // Beyond the node's allocatable: never.
      const node = await getEnv().node(NODE);
      const allocatable = quantityMilliValue(node.status!.allocatable!.cpu!);
      await resizeCPU('rs-a', `${allocatable + 1000}m`);
      const infeasible = await conditionWithReason('rs-a', 'PodResizePending', 'Infeasible');
      expect(condition(infeasible, 'PodResizePending')!.message).to.equal(
        `Node didn't have enough capacity: cpu, requested: ${allocatable + 1000}, capacity: ${allocatable}`,
      );
      expect(infeasible.status!.containerStatuses![0]!.resources?.limits?.cpu).to.equal('500m');

      // What every other pod on the node asks for, then a size that fits the node only without rs-b.
      const onNode = JSON.parse(
        await k(['get', 'pods', '-A', '--field-selector', `spec.nodeName=${NODE}`, '-o', 'json']),
      ) as { items: Pod[] };
      const others = onNode.items
        .filter((p) => p.metadata.name !== 'rs-a' && !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''))
        .flatMap((p) => p.spec.containers)
        .reduce((sum, c) => sum + quantityMilliValue(c.resources?.requests?.cpu ?? 0), 0);
      // Half a cpu more than the room left: it fits once rs-b (1 cpu) is gone, never beyond the node.
      const want = allocatable - others + 500;
      await resizeCPU('rs-a', `${want}m`);
      const deferred = await conditionWithReason('rs-a', 'PodResizePending', 'Deferred');
      expect(condition(deferred, 'PodResizePending')!.message).to.match(
        /^Node didn't have enough resource: cpu, requested: \d+, used: \d+, capacity: \d+$/,
      );

      const t0 = Date.now();
      await k(['delete', 'pod', 'rs-b', '--wait=false']);
      const done = await eventually(
        async () => {
          const p = await pod('rs-a');
          const c = p.status?.containerStatuses?.[0];
          const resized = quantityMilliValue(c?.resources?.limits?.cpu ?? 0) === want;
          const clear = !(p.status?.conditions ?? []).some((x) => x.type.startsWith('PodResize'));
          return resized && clear ? p : undefined;
        },
        60_000,
        'deferred resize completed',
      );
      console.log(`      deferred resize completed ${Date.now() - t0} ms after the other pod was deleted`);
      expect(done.status!.containerStatuses![0]!.restartCount).to.equal(0);
      expect(done.status!.observedGeneration).to.equal(done.metadata.generation);

      const described = await k(['describe', 'pod', 'rs-a']);
      for (const reason of ['ResizeInfeasible', 'ResizeDeferred', 'ResizeStarted', 'ResizeCompleted']) {
        expect(described, reason).to.contain(reason);
      }
    });

    it('shows PodResizeInProgress while the runtime catches up, and Error with ResizeError when it refuses', async () => {
      await Promise.all([
        create('rs-slow', '100m', { resizeLatencyMs: 4000 }),
        create('rs-broken', '100m', { resizeError: 'cgroup update refused by the simulated runtime' }),
      ]);
      await eventually(
        async () =>
          (await Promise.all([pod('rs-slow'), pod('rs-broken')])).every(podReady) ? true : undefined,
        60_000,
        'resize pods Ready',
      );
      await Promise.all([resizeCPU('rs-slow', '200m'), resizeCPU('rs-broken', '200m')]);
      const catchingUp = await eventually(
        async () => {
          const p = await pod('rs-slow');
          const c = condition(p, 'PodResizeInProgress');
          return c && !c.reason ? p : undefined;
        },
        10_000,
        'PodResizeInProgress while the runtime catches up',
      );
      expect(catchingUp.status!.containerStatuses![0]!.allocatedResources?.cpu).to.equal('200m');
      expect(catchingUp.status!.containerStatuses![0]!.resources?.limits?.cpu).to.equal('100m');
      await eventually(
        async () => {
          const p = await pod('rs-slow');
          const done =
            p.status?.containerStatuses?.[0]?.resources?.limits?.cpu === '200m' &&
            !condition(p, 'PodResizeInProgress');
          return done ? p : undefined;
        },
        30_000,
        'slow resize completed',
      );
      const broken = await conditionWithReason('rs-broken', 'PodResizeInProgress', 'Error');
      expect(condition(broken, 'PodResizeInProgress')!.message).to.contain(
        'cgroup update refused by the simulated runtime',
      );
      expect(await k(['describe', 'pod', 'rs-broken'])).to.contain('ResizeError');
      expect(await k(['describe', 'pod', 'rs-slow'])).to.contain('ResizeCompleted');
    });
  });
}
