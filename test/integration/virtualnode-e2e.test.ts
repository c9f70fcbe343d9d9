/**
 * The whole operator in-process against a real kube-apiserver, with simulated runtimes: a VirtualNode becomes
 * a Ready Node with a renewed Lease, a pod bound to it runs and goes Ready, a deleted pod disappears (final
 * delete), and deleting the VirtualNode drains its pods and removes the Node and Lease.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { Lease } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import {
  adminClient,
  isGone,
  postVirtualNode,
  startTestOperator,
  VN_PATH,
  waitNodeReady,
} from '../support/operator.js';

describe('kubelet-operator end to end (real apiserver, sim runtime)', function () {
  this.timeout(20 * 60_000);
  let cp: ControlPlane;
  let client: KubeClient;
  let op: Operator;

  const gone = (p: string) => isGone(client, p);

  before(async () => {
    cp = await startControlPlane();
    client = await adminClient(cp);
    op = await startTestOperator({ client, clock: new RealClock(), logger: silentLogger });
  });

  after(async () => {
    await op?.stop();
    client?.close();
    await cp?.stop();
  });

  it('registers a Ready Node with a Lease owned by it, renewed on time', async () => {
    await postVirtualNode(client, 'vn-e2e', {
      runtime: { type: 'sim' },
      heartbeat: { renewIntervalSeconds: 2, leaseDurationSeconds: 10 },
    });
    const node = await waitNodeReady(client, 'vn-e2e', 15_000);
    expect(node.metadata.labels).to.include({ 'kubernetes.io/hostname': 'vn-e2e', type: 'virtual-kubelet' });
    const lease1 = await client.request<Lease>({
      method: 'GET',
      path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vn-e2e',
    });
    expect(lease1.metadata.ownerReferences?.[0]).to.include({
      kind: 'Node',
      name: 'vn-e2e',
      uid: node.metadata.uid,
    });
    expect(lease1.spec.holderIdentity).to.equal('vn-e2e');
    await new Promise((r) => setTimeout(r, 2500));
    const lease2 = await client.request<Lease>({
      method: 'GET',
      path: '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vn-e2e',
    });
    expect(Date.parse(lease2.spec.renewTime!)).to.be.greaterThan(Date.parse(lease1.spec.renewTime!));
  });

  it('runs a bound pod to Running and Ready with kubelet-shaped status', async () => {
    await client.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods',
      body: {
        metadata: { name: 'web' },
        spec: {
          nodeName: 'vn-e2e',
          terminationGracePeriodSeconds: 5,
          containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'] }],
        },
      },
    });
    const pod = await eventually(async () => {
      const p = await client.request<Pod>({ method: 'GET', path: '/api/v1/namespaces/default/pods/web' });
      return p.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? p : undefined;
    });
    expect(pod.status?.phase).to.equal('Running');
    expect(pod.status?.hostIP).to.equal('127.0.0.1');
    expect(pod.status?.podIP).to.be.a('string').and.not.equal('');
    expect(pod.status?.qosClass).to.equal('BestEffort');
    const cs = pod.status?.containerStatuses?.[0];
    expect(cs).to.include({ name: 'app', ready: true, started: true, restartCount: 0 });
    expect(cs?.state?.running?.startedAt).to.be.a('string');
    expect(cs?.containerID).to.match(/^[a-z-]+:\/\//);
    expect(pod.status?.conditions?.map((c) => c.type).sort()).to.deep.equal(
      ['ContainersReady', 'Initialized', 'PodReadyToStartContainers', 'PodScheduled', 'Ready'].sort(),
    );
  });

  it('a deleted pod is terminated and its object removed (final delete)', async () => {
    await client.request({ method: 'DELETE', path: '/api/v1/namespaces/default/pods/web' });
    await eventually(() => gone('/api/v1/namespaces/default/pods/web'), 20_000);
  });

  it('deleting the VirtualNode drains its pods and removes the Node and Lease', async () => {
    await client.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods',
      body: {
        metadata: { name: 'left-behind' },
        spec: {
          nodeName: 'vn-e2e',
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'c', image: 'busybox', command: ['sleep', '3600'] }],
        },
      },
    });
    await eventually(async () => {
      const p = await client.request<Pod>({
        method: 'GET',
        path: '/api/v1/namespaces/default/pods/left-behind',
      });
      return p.status?.phase === 'Running' ? true : undefined;
    });
    await client.request({ method: 'DELETE', path: `${VN_PATH}/vn-e2e` });
    await eventually(() => gone(`${VN_PATH}/vn-e2e`), 60_000);
    expect(await gone('/api/v1/namespaces/default/pods/left-behind')).to.equal(true);
    expect(await gone('/api/v1/nodes/vn-e2e')).to.equal(true);
    expect(await gone('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vn-e2e')).to.equal(
      true,
    );
  });
});
