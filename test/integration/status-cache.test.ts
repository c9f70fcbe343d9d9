/**
 * The status manager reading the server's pod from the pod manager (the informer's copy) instead of a GET
 * before each PATCH (StatusManagerConfig.readFromCache), against a real kube-apiserver: its strategic merge
 * of `pods/status` decides whether a condition set by another writer survives a patch computed from a copy
 * that has not seen it. The pod manager here is fed by hand, so the stale copies are exact, not raced.
 */
import { expect } from 'chai';
import type { Pod, PodCondition, PodStatus } from '../../src/api/core.js';
import { asPodUID } from '../../src/kubelet/container/types.js';
import { KubeletPodManager } from '../../src/kubelet/shell/podmanager.js';
import { StatusManager } from '../../src/kubelet/status/manager.js';
import { restPodStatusClient } from '../../src/kubelet/shell/statusclient.js';
import { KubeClient, PatchTypes } from '../../src/kube/client.js';
import { RealClock } from '../../src/util/clock.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';

const NS = 'default';
const GATE = 'example.com/gate';

function podPath(name: string): string {
  return `/api/v1/namespaces/${NS}/pods/${name}`;
}

const conditionOf = (pod: Pod, type: string): PodCondition | undefined =>
  pod.status?.conditions?.find((c) => c.type === type);

describe('status manager: the informer copy instead of a GET (real kube-apiserver)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let client: KubeClient;

  before(async function () {
    this.timeout(180_000);
    cp = await startControlPlane();
    client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { qps: 200, burst: 400 });
    // No controller-manager here: the namespace's default ServiceAccount is ours to create.
    await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/serviceaccounts`,
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default' } },
    });
  });

  after(async function () {
    await cp?.stop();
  });

  /** A pod bound to a node, a StatusManager reading from a hand-fed pod manager, and its GET count. */
  async function setup(name: string) {
    const created = await client.request<Pod>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          nodeName: 'status-cache-node',
          readinessGates: [{ conditionType: GATE }],
          containers: [{ name: 'c', image: 'busybox' }],
        },
      },
    });
    const rest = restPodStatusClient(client);
    let gets = 0;
    const podManager = new KubeletPodManager();
    podManager.upsert(created);
    const manager = new StatusManager({
      client: {
        ...rest,
        getPod: (ns, n) => {
          gets++;
          return rest.getPod(ns, n);
        },
      },
      podManager,
      podDeletionSafety: { podCouldHaveRunningContainers: () => true },
      clock: new RealClock(),
      readFromCache: true,
    });
    const read = () => client.request<Pod>({ method: 'GET', path: podPath(name) });
    const set = async (status: PodStatus): Promise<void> => {
      manager.setPodStatus(created, status);
      await manager.drain();
    };
    return { created, podManager, manager, read, set, gets: () => gets };
  }

  /** Another writer (a controller) adds a condition to the pod's status. */
  async function otherWriterAdds(name: string, condition: PodCondition): Promise<void> {
    await client.request({
      method: 'PATCH',
      path: `${podPath(name)}/status`,
      contentType: PatchTypes.strategic,
      body: { status: { conditions: [condition] } },
    });
  }

  /** Other writers set the readiness gate True and add DisruptionTarget (a controller, an eviction). */
  async function othersAddGateAndDisruption(name: string, disruptionReason: string): Promise<void> {
    await otherWriterAdds(name, { type: GATE, status: 'True' });
    await otherWriterAdds(name, {
      type: 'DisruptionTarget',
      status: 'True',
      reason: disruptionReason,
      message: 'from the test',
    });
  }

  /** The other writer's gate and DisruptionTarget survived our second write, which made ContainersReady True. */
  function expectOthersKeptAndReady(pod: Pod, disruptionReason: string): void {
    expect(conditionOf(pod, GATE)?.status).to.equal('True');
    expect(conditionOf(pod, 'DisruptionTarget')).to.deep.include({
      status: 'True',
      reason: disruptionReason,
    });
    expect(conditionOf(pod, 'ContainersReady')?.status).to.equal('True');
  }

  const running = (ready: boolean, message?: string): PodStatus => ({
    phase: 'Running',
    ...(message ? { message } : {}),
    conditions: [
      { type: 'ContainersReady', status: ready ? 'True' : 'False' },
      { type: 'Ready', status: 'False', reason: 'ReadinessGatesNotReady' },
    ],
  });

  it('keeps a readiness gate and DisruptionTarget written by others after the copy was taken', async () => {
    const s = await setup('cache-keeps-others');
    await s.set(running(false));
    expect(s.gets(), 'the first write reads the copy').to.equal(0);
    // The informer has delivered our own write, but not yet the other writer's below.
    s.podManager.upsert(await s.read());
    await othersAddGateAndDisruption('cache-keeps-others', 'EvictionByEvictionAPI');
    await s.set(running(true, 'all containers up'));
    expect(s.gets(), 'a copy as new as our last write stands in for the GET').to.equal(0);

    const pod = await s.read();
    expectOthersKeptAndReady(pod, 'EvictionByEvictionAPI');
    expect(pod.status?.message).to.equal('all containers up');
  });

  it('reads its own last write when the copy is older, so what it dropped since is removed', async () => {
    const s = await setup('cache-older-than-write');
    await s.set(running(false, 'starting'));
    // The copy stays the pod as created: older than the write above.
    await s.set(running(true));
    expect(s.gets(), 'the pod as the first write left it stands in for the stale copy').to.equal(0);
    const pod = await s.read();
    expect(pod.status?.message, 'a field the kubelet dropped is removed on the server').to.equal(undefined);
    expect(conditionOf(pod, 'ContainersReady')?.status).to.equal('True');
  });

  it('keeps what others wrote between its two writes while the copy is older than both', async () => {
    const s = await setup('cache-older-others');
    await s.set(running(false, 'starting'));
    await othersAddGateAndDisruption('cache-older-others', 'TerminationByKubelet');
    await s.set(running(true));
    expect(s.gets()).to.equal(0);
    const pod = await s.read();
    expectOthersKeptAndReady(pod, 'TerminationByKubelet');
    expect(pod.status?.message).to.equal(undefined);
  });

  it('GETs when it has no copy of the pod', async () => {
    const s = await setup('cache-no-copy');
    s.podManager.remove(s.created);
    await s.set(running(false, 'starting'));
    expect(s.gets()).to.equal(1);
    expect((await s.read()).status?.message).to.equal('starting');
  });

  it('counts the reads it saved', async () => {
    const s = await setup('cache-counts');
    await s.set(running(false));
    s.podManager.upsert(await s.read());
    await s.set(running(true));
    expect(s.manager.statusReads()).to.deep.equal({ cache: 2, get: 0 });
    expect(s.manager.getPodStatus(asPodUID(s.created.metadata.uid ?? ''))?.phase).to.equal('Running');
  });

  it("is answered the patched pod's metadata alone, the stored resourceVersion among it", async () => {
    const s = await setup('cache-metadata-answer');
    const rest = restPodStatusClient(client);
    const answer = await rest.patchPodStatus(NS, 'cache-metadata-answer', s.created.metadata.uid!, {
      metadata: { uid: s.created.metadata.uid! },
      status: { phase: 'Running', message: 'from the test' },
    } as never);
    const stored = await s.read();
    expect(Object.keys(answer).sort()).to.deep.equal(['apiVersion', 'kind', 'metadata']);
    expect((answer as { kind?: string }).kind).to.equal('PartialObjectMetadata');
    expect(answer.metadata.uid).to.equal(s.created.metadata.uid);
    expect(answer.metadata.resourceVersion).to.equal(stored.metadata.resourceVersion);
    expect(stored.status).to.include({ phase: 'Running', message: 'from the test' });
  });
});
