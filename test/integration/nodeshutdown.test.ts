/**
 * Graceful node shutdown (issue #56 item 3) against a real v1.37 kube-apiserver, on simulated VirtualNodes:
 * - deleting a VirtualNode with `shutdownGracePeriod: 8s, shutdownGracePeriodCriticalPods: 3s` shuts its
 *   node down as a kubelet does on a host shutdown: the Shutdown Event, Ready=False "node is shutting down",
 *   a pod bound meanwhile refused (NodeShutdown), the non-critical pods terminated first (a pod that ignores
 *   SIGTERM takes its whole 5 s), the system-node-critical pod only after them, each Failed with reason
 *   Terminated, the kubelet's message and a DisruptionTarget condition; then the Node goes;
 * - `spec.shutdown: true` with shutdownGracePeriodByPodPriority terminates pods by priority group and keeps
 *   the Node NotReady until the field is cleared, then the Node is Ready and admits pods again.
 * Pods are watched, so their last state is seen even when the drain deletes them right after.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import { PatchTypes, type KubeClient } from '../../src/kube/client.js';
import { Informer, restListWatcher } from '../../src/kube/informer.js';
import { RealClock } from '../../src/util/clock.js';
import { eventually } from '../support/eventually.js';
import { rejection } from '../support/throws.js';
import {
  createPodOn,
  isGone,
  postVirtualNode,
  type SimNodeEnv,
  startSimNodeEnv,
  VN_PATH,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';

const MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
const slow = { 'sim.kubelet-operator.dev/behaviour': '{"ignoresSigterm": true}' };

interface Seen {
  /** The pod as last seen (a deletion's last state included). */
  last: Pod;
  /** When it was first seen Failed (ms). */
  failedAt?: number;
}

describe('graceful node shutdown (real apiserver, sim nodes)', function () {
  this.timeout(10 * 60_000);
  let env: SimNodeEnv | undefined;
  let client: KubeClient;
  let informer: Informer<Pod> | undefined;
  const seen = new Map<string, Seen>();

  const record = (p: Pod): void => {
    const key = `${p.metadata.namespace}/${p.metadata.name}`;
    const s = seen.get(key) ?? { last: p };
    s.last = p;
    if (p.status?.phase === 'Failed' && s.failedAt === undefined) s.failedAt = Date.now();
    seen.set(key, s);
  };
  const ready = async (
    node: string,
  ): Promise<{ status?: string; reason?: string; message?: string } | undefined> =>
    (await client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${node}` })).status?.conditions?.find(
      (c) => c.type === 'Ready',
    );
  const nodeEvents = async (node: string): Promise<{ reason?: string; message?: string; type?: string }[]> =>
    (
      await client.request<{ items: { reason?: string; message?: string; type?: string }[] }>({
        method: 'GET',
        path: '/api/v1/namespaces/default/events',
        query: { fieldSelector: `involvedObject.kind=Node,involvedObject.name=${node}` },
      })
    ).items;
  const expectTerminatedByShutdown = (key: string): Pod => {
    const p = seen.get(key)?.last;
    expect(p, key).to.not.equal(undefined);
    expect(p!.status, key).to.deep.include({ phase: 'Failed', reason: 'Terminated', message: MESSAGE });
    expect(
      p!.status?.conditions?.find((c) => c.type === 'DisruptionTarget'),
      key,
    ).to.deep.include({
      status: 'True',
      reason: 'TerminationByKubelet',
      message: MESSAGE,
    });
    return p!;
  };
  /** A pod bound to `node` that ignores SIGTERM: it stops only when its grace period is up. */
  const postSlowPod = (node: string, name: string, priorityClassName?: string): Promise<unknown> =>
    client.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods',
      body: {
        metadata: { name, annotations: slow },
        spec: {
          nodeName: node,
          priorityClassName,
          containers: [{ name: 'c', image: 'busybox', command: ['sleep', 'infinity'] }],
        },
      },
    });
  const waitFailed = (name: string, what: string, timeoutMs: number): Promise<Pod> =>
    waitPodStatus(client, 'default', name, (s) => s.phase === 'Failed', what, timeoutMs);
  const finishedAt = (p: Pod): number =>
    Date.parse(p.status?.containerStatuses?.[0]?.state?.terminated?.finishedAt ?? '');

  before(async () => {
    env = await startSimNodeEnv({ node: 'vn-shut-other', podCIDR: '10.84.0.0/24' });
    client = env.client;
    informer = new Informer<Pod>(restListWatcher<Pod>(client, '/api/v1/pods'), {
      clock: new RealClock(),
      name: 'pods',
    });
    informer.addHandlers({ add: record, update: (_o, n) => record(n), delete: record });
    informer.start();
    await informer.waitForSync();
  });

  after(async () => {
    await informer?.stop();
    await env?.stop();
  });

  it('deleting a VirtualNode terminates non-critical pods, then critical ones, then the Node goes', async () => {
    const NODE = 'vn-shut';
    await postVirtualNode(client, NODE, {
      runtime: { type: 'sim', sim: { podCIDR: '10.84.1.0/24' } },
      kubelet: { shutdownGracePeriod: '8s', shutdownGracePeriodCriticalPods: '3s' },
    });
    await waitNodeReady(client, NODE);
    const running = (s: { phase?: string }): boolean => s.phase === 'Running';
    // Ignores SIGTERM: stops only when its grace period, the group's 5 s, is up.
    await postSlowPod(NODE, 'normal-slow');
    await createPodOn(client, 'default', NODE, 'normal-quick');
    await postSlowPod(NODE, 'critical', 'system-node-critical');
    for (const [ns, name] of [
      ['default', 'normal-slow'],
      ['default', 'normal-quick'],
      ['default', 'critical'],
    ] as const)
      await waitPodStatus(client, ns, name, running, 'running', 30_000);
    const criticalPod = await client.request<Pod>({
      method: 'GET',
      path: '/api/v1/namespaces/default/pods/critical',
    });
    expect(criticalPod.spec.priority).to.equal(2_000_001_000);

    await client.request({ method: 'DELETE', path: `${VN_PATH}/${NODE}` });

    const notReady = await eventually(
      async () => {
        const c = await ready(NODE);
        return c?.status === 'False' ? c : undefined;
      },
      10_000,
      'Ready=False while shutting down',
    );
    expect(notReady).to.deep.include({ reason: 'KubeletNotReady', message: 'node is shutting down' });

    // Bound while the node shuts down: refused by the shutdown manager's admit handler.
    await createPodOn(client, 'default', NODE, 'late');
    const late = await eventually(
      async () => {
        const p = seen.get('default/late')?.last;
        return p?.status?.phase === 'Failed' ? p : undefined;
      },
      10_000,
      'late pod refused',
    );
    expect(late.status).to.deep.include({
      reason: 'NodeShutdown',
      message: 'Pod was rejected: Pod was rejected as the node is shutting down.',
    });

    // The Node goes once the shutdown and the drain are done.
    await eventually(() => isGone(client, `/api/v1/nodes/${NODE}`), 60_000, 'Node removed');
    await eventually(() => isGone(client, `${VN_PATH}/${NODE}`), 30_000, 'VirtualNode finalized');

    const slowPod = expectTerminatedByShutdown('default/normal-slow');
    const quickPod = expectTerminatedByShutdown('default/normal-quick');
    const critical = expectTerminatedByShutdown('default/critical');
    // Non-critical pods first: the slow one stops when its 5 s are up (SIGKILL, 137), the critical one is
    // killed only then, and takes its own 3 s.
    expect(slowPod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).to.equal(137);
    expect(critical.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).to.equal(137);
    const gap = finishedAt(critical) - finishedAt(slowPod);
    expect(gap, 'critical stopped ~3 s after the last non-critical pod').to.be.within(2_000, 5_000);
    expect(finishedAt(quickPod)).to.be.at.most(finishedAt(slowPod));
    const [slowFailed, criticalFailed] = [seen.get('default/normal-slow')!, seen.get('default/critical')!];
    expect(criticalFailed.failedAt! - slowFailed.failedAt!).to.be.greaterThan(1_500);

    const events = await nodeEvents(NODE);
    expect(events.map((e) => `${e.type} ${e.reason}: ${e.message}`)).to.include(
      'Normal Shutdown: Shutdown manager detected shutdown event',
    );
    expect(events.map((e) => e.reason)).to.include('NodeNotReady');
  });

  it('spec.shutdown terminates pods by priority group and keeps the Node NotReady until cleared', async () => {
    const NODE = 'vn-shut-flag';
    await client.request({
      method: 'POST',
      path: '/apis/scheduling.k8s.io/v1/priorityclasses',
      body: { metadata: { name: 'shutdown-high' }, value: 10_000 },
    });
    await postVirtualNode(client, NODE, {
      runtime: { type: 'sim', sim: { podCIDR: '10.84.2.0/24' } },
      kubelet: {
        shutdownGracePeriodByPodPriority: [
          { priority: 10_000, shutdownGracePeriodSeconds: 2 },
          { priority: 0, shutdownGracePeriodSeconds: 4 },
        ],
      },
    });
    await waitNodeReady(client, NODE);
    await postSlowPod(NODE, 'flag-low');
    await postSlowPod(NODE, 'flag-high', 'shutdown-high');
    for (const name of ['flag-low', 'flag-high'])
      await waitPodStatus(client, 'default', name, (s) => s.phase === 'Running', 'running', 30_000);

    const patchShutdown = (shutdown: boolean): Promise<unknown> =>
      client.request({
        method: 'PATCH',
        path: `${VN_PATH}/${NODE}`,
        contentType: PatchTypes.merge,
        body: { spec: { shutdown } },
      });
    await patchShutdown(true);

    const low = await waitFailed('flag-low', 'terminated', 30_000);
    const high = await waitFailed('flag-high', 'terminated', 30_000);
    for (const p of [low, high]) {
      expect(p.status).to.deep.include({ reason: 'Terminated', message: MESSAGE });
      expect(p.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).to.deep.include({
        status: 'True',
        reason: 'TerminationByKubelet',
      });
    }
    // The lowest group first, with its 4 s; the higher one then, with its 2 s.
    const gap = finishedAt(high) - finishedAt(low);
    expect(gap).to.be.within(1_000, 4_000);

    // Shut down, not deleted: the Node stays, NotReady, and refuses pods.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await ready(NODE)).to.deep.include({ status: 'False', message: 'node is shutting down' });
    await createPodOn(client, 'default', NODE, 'flag-late');
    const refused = await waitFailed('flag-late', 'refused', 15_000);
    expect(refused.status?.reason).to.equal('NodeShutdown');

    // Cleared: the cancellation; Ready again and admitting.
    await patchShutdown(false);
    await waitNodeReady(client, NODE);
    await createPodOn(client, 'default', NODE, 'flag-after');
    await waitPodStatus(client, 'default', 'flag-after', (s) => s.phase === 'Running', 'running', 30_000);
    const events = await nodeEvents(NODE);
    expect(events.map((e) => e.message)).to.include.members([
      'Shutdown manager detected shutdown event',
      'Shutdown manager detected shutdown cancellation',
    ]);
  });

  it('the CRD refuses the shutdown settings the kubelet refuses', async () => {
    const refused = async (kubelet: Record<string, unknown>): Promise<string> =>
      (await rejection(postVirtualNode(client, 'vn-shut-bad', { runtime: { type: 'sim' }, kubelet })))
        .message;
    expect(await refused({ shutdownGracePeriod: '500ms' })).to.include(
      'shutdownGracePeriod must be either zero or otherwise >= 1 sec',
    );
    expect(await refused({ shutdownGracePeriod: '10s', shutdownGracePeriodCriticalPods: '20s' })).to.include(
      'kubelet.shutdownGracePeriodCriticalPods must be <= kubelet.shutdownGracePeriod',
    );
    expect(
      await refused({
        shutdownGracePeriod: '10s',
        shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 5 }],
      }),
    ).to.include(
      'Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
    );
    expect(await refused({ shutdownGracePeriod: 'soon' })).to.include('spec.kubelet.shutdownGracePeriod');
    expect(
      await refused({
        shutdownGracePeriodByPodPriority: [{ priority: 2 ** 31, shutdownGracePeriodSeconds: 5 }],
      }),
    ).to.include('priority');
  });
});
