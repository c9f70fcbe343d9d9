/**
 * KubeletSeparateDiskGC end to end (issue #60) against a real v1.37 kube-apiserver, on simulated VirtualNodes
 * that declare an image disk of their own (`runtime.sim.imageFs`):
 *
 * - `vn-imgfs`: a 1Gi image disk holding the images and the containers' writable layers, an 8Gi node disk.
 *   The Summary's `runtime.imageFs` and `containerFs` are the image disk; a layer of 800Mi fills it, so
 *   `imagefs.available: 300Mi` is met (nodefs stays empty) and that pod is evicted for ephemeral-storage.
 * - `vn-split`: an 8Gi image disk for the images alone, the writable layers on the 1Gi node disk (the runtime
 *   names a container filesystem of its own). `containerFs` is the node disk; the same layer fills nodefs and
 *   containerfs, never imagefs, and the pod is evicted for `nodefs.available: 300Mi`.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Summary } from '../../src/kubelet/stats/types.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { eventually } from '../support/eventually.js';
import {
  postVirtualNode,
  type SimNodeEnv,
  startSimNodeEnv,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';

const IMGFS_NODE = 'vn-imgfs';
const SPLIT_NODE = 'vn-split';
const NS = 'default';
const Mi = 2 ** 20;
const Gi = 2 ** 30;

describe('separate image and container filesystems (real apiserver, sim nodes)', function () {
  this.timeout(10 * 60_000);
  let env: SimNodeEnv | undefined;
  let client: KubeClient;
  const nodeApi = new NodeApiRegistry();

  const summary = async (node: string): Promise<Summary> => {
    const target = nodeApi.nodes().find((n) => n.nodeName === node);
    if (!target?.stats) throw new Error(`node ${node} serves no stats`);
    return target.stats.summary({ fs: true });
  };
  const diskPressure = async (node: string): Promise<{ status?: string; reason?: string } | undefined> =>
    (await client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${node}` })).status?.conditions?.find(
      (c) => c.type === 'DiskPressure',
    );
  const filler = (name: string, node: string) =>
    client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/pods`,
      body: {
        metadata: {
          name,
          annotations: { 'sim.kubelet-operator.dev/behaviour': '{"usage": {"disk": "800Mi"}}' },
        },
        spec: {
          nodeName: node,
          containers: [{ name: 'c', image: 'busybox', command: ['sleep', 'infinity'] }],
        },
      },
    });
  const evicted = async (name: string): Promise<Pod> =>
    waitPodStatus(client, NS, name, (s) => s.phase === 'Failed', 'evicted', 90_000);

  before(async () => {
    env = await startSimNodeEnv({ node: 'vn-sd-other', podCIDR: '10.84.0.0/24', nodeApi });
    client = env.client;
    const kubelet = {
      evictionHard: { 'nodefs.available': '300Mi', 'imagefs.available': '300Mi' },
      evictionPressureTransitionPeriod: '15s',
    };
    await postVirtualNode(client, IMGFS_NODE, {
      capacity: { cpu: '4', memory: '4Gi', pods: 110, 'ephemeral-storage': '8Gi' },
      runtime: { type: 'sim', sim: { podCIDR: '10.84.1.0/24', imageFs: { capacity: '1Gi' } } },
      kubelet,
    });
    await postVirtualNode(client, SPLIT_NODE, {
      capacity: { cpu: '4', memory: '4Gi', pods: 110, 'ephemeral-storage': '1Gi' },
      runtime: {
        type: 'sim',
        sim: { podCIDR: '10.84.2.0/24', imageFs: { capacity: '8Gi', containerFs: 'nodeFs' } },
      },
      kubelet,
    });
    await waitNodeReady(client, IMGFS_NODE);
    await waitNodeReady(client, SPLIT_NODE);
  });

  after(async () => {
    await env?.stop();
  });

  it('an image disk with the layers: the Summary shows it; its filling evicts for imagefs, nodefs untouched', async () => {
    const before = await summary(IMGFS_NODE);
    expect(before.node.fs?.capacityBytes).to.equal(8 * Gi);
    expect(before.node.runtime?.imageFs?.capacityBytes).to.equal(Gi);
    expect(before.node.runtime?.containerFs).to.deep.equal(before.node.runtime?.imageFs);

    await filler('imgfs-filler', IMGFS_NODE);
    const full = await eventually(
      async () => {
        const s = await summary(IMGFS_NODE);
        return (s.node.runtime?.imageFs?.availableBytes ?? Gi) < 300 * Mi ? s : undefined;
      },
      60_000,
      'the image disk filled',
    );
    // The layer is on the image disk: the node disk keeps nearly all of its 8Gi.
    expect(full.node.fs?.availableBytes).to.be.greaterThan(7 * Gi);
    const pod = await evicted('imgfs-filler');
    expect(pod.status?.reason).to.equal('Evicted');
    expect(pod.status?.message).to.match(
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: 300Mi, available: \d+(Ki|Mi)?\. $/,
    );
    await eventually(
      async () => ((await diskPressure(IMGFS_NODE))?.status === 'True' ? true : undefined),
      30_000,
      'DiskPressure=True',
    );
  });

  it('split: the layers on the node disk as the runtime’s container filesystem; their filling evicts for nodefs', async () => {
    const before = await summary(SPLIT_NODE);
    expect(before.node.runtime?.imageFs?.capacityBytes).to.equal(8 * Gi);
    expect(before.node.runtime?.containerFs?.capacityBytes).to.equal(Gi);

    await filler('split-filler', SPLIT_NODE);
    const full = await eventually(
      async () => {
        const s = await summary(SPLIT_NODE);
        return (s.node.fs?.availableBytes ?? Gi) < 300 * Mi ? s : undefined;
      },
      60_000,
      'the node disk filled',
    );
    expect(full.node.runtime?.containerFs).to.deep.include({
      usedBytes: 800 * Mi,
      availableBytes: full.node.fs?.availableBytes,
    });
    expect(full.node.runtime?.imageFs?.availableBytes).to.be.greaterThan(7 * Gi);
    const pod = await evicted('split-filler');
    expect(pod.status?.message).to.match(
      /^The node was low on resource: ephemeral-storage\. Threshold quantity: 300Mi, available: \d+(Ki|Mi)?\. $/,
    );
    // The evicted container's layer stays until the container is removed (node-level reclaim: the container
    // GC); then the pressure ends after the transition period.
    await eventually(
      async () => ((await diskPressure(SPLIT_NODE))?.status === 'True' ? true : undefined),
      30_000,
      'DiskPressure=True',
    );
    const relieved = await eventually(
      async () => {
        const c = await diskPressure(SPLIT_NODE);
        return c?.status === 'False' ? c : undefined;
      },
      120_000,
      'DiskPressure=False',
    );
    expect(relieved).to.deep.include({ reason: 'KubeletHasNoDiskPressure' });
    expect((await summary(SPLIT_NODE)).node.runtime?.containerFs?.usedBytes).to.equal(0);
  });
});
