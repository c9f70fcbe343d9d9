/**
 * The eviction manager (issue #56) against a real v1.37 kube-apiserver, on a simulated VirtualNode with 1Gi of
 * memory and `evictionHard: {memory.available: 300Mi}`: a pod over its memory request whose declared usage
 * leaves less than that puts the node under MemoryPressure (KubeletHasInsufficientMemory, Event
 * NodeHasInsufficientMemory); a BestEffort pod created then is refused as the kubelet refuses it; the hog is
 * evicted (Failed, Evicted, the kubelet's message, DisruptionTarget TerminationByKubelet, Warning Event
 * Evicted); with it gone the condition turns False after the transition period (15 s here). A second sim node
 * with a 1Gi declared disk and `nodefs.available: 300Mi` comes under DiskPressure when a container's writable
 * layer fills it, and evicts that pod for ephemeral-storage.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { eventually } from '../support/eventually.js';
import {
  createPodOn,
  postVirtualNode,
  type SimNodeEnv,
  startSimNodeEnv,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';

const NODE = 'vn-evict';
/** A sim node with a 1Gi declared disk. */
const DISK_NODE = 'vn-evict-disk';
const NS = 'default';

interface EventList {
  items: {
    metadata?: { annotations?: Record<string, string> };
    reason?: string;
    type?: string;
    message?: string;
    involvedObject?: { name?: string };
  }[];
}

describe('eviction manager (real apiserver, sim node)', function () {
  this.timeout(10 * 60_000);
  let env: SimNodeEnv | undefined;
  let client: KubeClient;

  const condition = async (
    type = 'MemoryPressure',
    node = NODE,
  ): Promise<{ status?: string; reason?: string; message?: string } | undefined> =>
    (await client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${node}` })).status?.conditions?.find(
      (c) => c.type === type,
    );
  const events = async (name: string): Promise<EventList['items']> =>
    (
      await client.request<EventList>({
        method: 'GET',
        path: `/api/v1/namespaces/${NS}/events`,
        query: { fieldSelector: `involvedObject.name=${name}` },
      })
    ).items;

  before(async () => {
    env = await startSimNodeEnv({ node: 'vn-evict-other', podCIDR: '10.83.0.0/24' });
    client = env.client;
    await postVirtualNode(client, NODE, {
      capacity: { cpu: '4', memory: '1Gi', pods: 110 },
      runtime: { type: 'sim', sim: { podCIDR: '10.83.1.0/24' } },
      kubelet: {
        evictionHard: { 'memory.available': '300Mi' },
        evictionPressureTransitionPeriod: '15s',
      },
    });
    await postVirtualNode(client, DISK_NODE, {
      capacity: { cpu: '4', memory: '4Gi', pods: 110, 'ephemeral-storage': '1Gi' },
      runtime: { type: 'sim', sim: { podCIDR: '10.83.2.0/24' } },
      kubelet: { evictionHard: { 'nodefs.available': '300Mi' }, evictionPressureTransitionPeriod: '15s' },
    });
    await waitNodeReady(client, NODE);
    await waitNodeReady(client, DISK_NODE);
  });

  after(async () => {
    await env?.stop();
  });

  it('MemoryPressure, a BestEffort pod refused, the hog evicted, then no pressure after the transition period', async () => {
    const c0 = await condition();
    expect(c0).to.deep.include({ status: 'False', reason: 'KubeletHasSufficientMemory' });

    // Over its 64Mi request: the simulated container declares a 900Mi working set.
    await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        metadata: {
          name: 'hog',
          annotations: { 'sim.kubelet-operator.dev/behaviour': '{"usage": {"memory": "900Mi"}}' },
        },
        spec: {
          nodeName: NODE,
          terminationGracePeriodSeconds: 30,
          containers: [
            {
              name: 'c',
              image: 'busybox',
              command: ['sleep', 'infinity'],
              resources: { requests: { memory: '64Mi' } },
            },
          ],
        },
      },
    });
    const pressured = await eventually(
      async () => {
        const c = await condition();
        return c?.status === 'True' ? c : undefined;
      },
      60_000,
      'MemoryPressure=True',
    );
    expect(pressured).to.deep.include({
      reason: 'KubeletHasInsufficientMemory',
      message: 'kubelet has insufficient memory available',
    });

    // Refused while the node is under pressure.
    await createPodOn(client, NS, NODE, 'late');
    const late = await waitPodStatus(client, NS, 'late', (s) => s.phase === 'Failed', 'refused', 30_000);
    expect(late.status).to.deep.include({
      phase: 'Failed',
      reason: 'Evicted',
      message: 'Pod was rejected: The node had condition: [MemoryPressure]. ',
    });

    // The hog is evicted as the kubelet evicts it.
    const hog: Pod = await waitPodStatus(client, NS, 'hog', (s) => s.phase === 'Failed', 'evicted', 60_000);
    expect(hog.status?.reason).to.equal('Evicted');
    expect(hog.status?.message).to.match(
      /^The node was low on resource: memory\. Threshold quantity: 300Mi, available: \d+(Ki|Mi)?\. Container c was using 900Mi, request is 64Mi, has larger consumption of memory\. $/,
    );
    expect(hog.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).to.deep.include({
      status: 'True',
      reason: 'TerminationByKubelet',
      message: hog.status?.message,
    });
    const evicted = await eventually(
      async () => (await events('hog')).find((e) => e.reason === 'Evicted'),
      30_000,
      'Evicted Event',
    );
    expect(evicted).to.deep.include({ type: 'Warning', message: hog.status?.message });
    expect(evicted.metadata?.annotations).to.deep.equal({
      offending_containers: 'c',
      offending_containers_usage: '900Mi',
      starved_resource: 'memory',
    });
    const nodeEvents = await eventually(
      async () => {
        const es = await events(NODE);
        return es.some((e) => e.reason === 'NodeHasInsufficientMemory') &&
          es.some((e) => e.reason === 'EvictionThresholdMet')
          ? es
          : undefined;
      },
      30_000,
      'node Events',
    );
    expect(nodeEvents.find((e) => e.reason === 'EvictionThresholdMet')).to.deep.include({
      type: 'Warning',
      message: 'Attempting to reclaim memory',
    });

    // Relieved: False again once the transition period has passed since pressure was last seen.
    const relieved = await eventually(
      async () => {
        const c = await condition();
        return c?.status === 'False' ? c : undefined;
      },
      90_000,
      'MemoryPressure=False',
    );
    expect(relieved).to.deep.include({ reason: 'KubeletHasSufficientMemory' });
    await eventually(
      async () =>
        (await events(NODE)).some((e) => e.reason === 'NodeHasSufficientMemory') ? true : undefined,
      30_000,
      'NodeHasSufficientMemory Event',
    );
  });

  it('DiskPressure on a declared disk: a container whose writable layer fills it is evicted for ephemeral-storage', async () => {
    expect(await condition('DiskPressure', DISK_NODE)).to.deep.include({ status: 'False' });
    // 800Mi in its writable layer leaves less than 300Mi of the node's 1Gi (the images take some too).
    await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        metadata: {
          name: 'filler',
          annotations: { 'sim.kubelet-operator.dev/behaviour': '{"usage": {"disk": "800Mi"}}' },
        },
        spec: {
          nodeName: DISK_NODE,
          containers: [{ name: 'c', image: 'busybox', command: ['sleep', 'infinity'] }],
        },
      },
    });
    const pressured = await eventually(
      async () => {
        const c = await condition('DiskPressure', DISK_NODE);
        return c?.status === 'True' ? c : undefined;
      },
      60_000,
      'DiskPressure=True',
    );
    expect(pressured).to.deep.include({
      reason: 'KubeletHasDiskPressure',
      message: 'kubelet has disk pressure',
    });
    const filler: Pod = await waitPodStatus(
      client,
      NS,
      'filler',
      (s) => s.phase === 'Failed',
      'evicted',
      60_000,
    );
    expect(filler.status?.reason).to.equal('Evicted');
    // No container is named: as the kubelet, it names one only with both its rootfs and its log usage, and a
    // sim container keeps its logs in memory (no log stats).
    expect(filler.status?.message).to.match(
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: 300Mi, available: \d+(Ki|Mi)?\. $/,
    );
    const relieved = await eventually(
      async () => {
        const c = await condition('DiskPressure', DISK_NODE);
        return c?.status === 'False' ? c : undefined;
      },
      90_000,
      'DiskPressure=False',
    );
    expect(relieved).to.deep.include({ reason: 'KubeletHasNoDiskPressure' });
  });
});
