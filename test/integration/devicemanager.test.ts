/**
 * The device manager on a simulated VirtualNode against a real v1.37 kube-apiserver (issue #59 item 5):
 * `spec.devices` declares two example.com/gpu; its in-process plugin goes through the node's device manager
 * as a real plugin's would.
 * - The Node shows capacity and allocatable 2.
 * - A pod asking for both runs with the plugin's env (EXAMPLE_COM_GPU_DEVICES=gpu-0,gpu-1, read back from
 *   its termination message) and the pod-resources answer of the manager; a second pod asking for one more
 *   is refused at admission as the kubelet refuses it (UnexpectedAdmissionError, its message, an Event).
 * - One device turning Unhealthy (the spec's `unhealthy: 1`) shows in the running pod's
 *   containerStatuses[].allocatedResourcesStatus, and the Node's allocatable drops to 1 (capacity stays 2).
 * - Once the first pod is gone its devices are free: a new pod asking for the healthy one is admitted.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import { PatchTypes } from '../../src/kube/client.js';
import { eventually } from '../support/eventually.js';
import {
  postVirtualNode,
  type SimNodeEnv,
  startSimNodeEnv,
  VN_PATH,
  waitNodeReady,
} from '../support/operator.js';

const NODE = 'vn-devices';

/** Retries `check` (assertions) until it passes. */
const until = (check: () => Promise<unknown>, timeoutMs: number): Promise<boolean> =>
  eventually(async () => {
    await check();
    return true;
  }, timeoutMs);
const R = 'example.com/gpu';

describe('device manager (real apiserver, sim node with spec.devices)', function () {
  this.timeout(5 * 60_000);
  let env: SimNodeEnv | undefined;

  before(async () => {
    env = await startSimNodeEnv({ node: 'vn-devices-other', podCIDR: '10.86.0.0/24' });
    await postVirtualNode(env.client, NODE, {
      runtime: { type: 'sim', sim: { podCIDR: '10.86.1.0/24' } },
      devices: [{ resource: R, count: 2 }],
      heartbeat: { statusUpdateFrequencySeconds: 2 },
    });
    await waitNodeReady(env.client, NODE);
  });

  after(async () => {
    await env?.stop();
  });

  const node = async (): Promise<Node> =>
    env!.client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` });
  const pod = async (name: string): Promise<Pod> =>
    env!.client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/default/pods/${name}` });
  const createPod = async (name: string, gpus: number, command: string[]): Promise<void> => {
    await env!.client.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods',
      body: {
        metadata: { name },
        spec: {
          nodeName: NODE,
          restartPolicy: 'Never',
          containers: [
            {
              name: 'c',
              image: 'busybox',
              command,
              terminationMessagePolicy: 'FallbackToLogsOnError',
              resources: { limits: { [R]: String(gpus) }, requests: { [R]: String(gpus) } },
            },
          ],
        },
      },
    });
  };

  it('advertises, allocates, refuses beyond the count, reports health, frees', async () => {
    await until(async () => {
      const n = await node();
      expect(n.status?.capacity?.[R]).to.equal('2');
      expect(n.status?.allocatable?.[R]).to.equal('2');
    }, 30_000);

    // The device's env reaches the container: it prints it and fails, so its logs are its message.
    await createPod('gpu-env', 2, ['sh', '-c', `echo "gpus=$EXAMPLE_COM_GPU_DEVICES"; exit 3`]);
    await until(async () => {
      const p = await pod('gpu-env');
      expect(p.status?.phase).to.equal('Failed');
      expect(p.status?.containerStatuses?.[0]?.state?.terminated?.message).to.contain('gpus=gpu-0,gpu-1');
    }, 60_000);
    await env!.client.request({
      method: 'DELETE',
      path: '/api/v1/namespaces/default/pods/gpu-env',
      query: { gracePeriodSeconds: '0' },
    });

    // A running holder of both devices; a second pod is refused as the kubelet refuses it.
    await createPod('holder', 2, ['sleep', 'infinity']);
    await until(async () => expect((await pod('holder')).status?.phase).to.equal('Running'), 60_000);
    await createPod('one-too-many', 1, ['sleep', 'infinity']);
    await until(async () => {
      const p = await pod('one-too-many');
      expect(p.status).to.deep.include({
        phase: 'Failed',
        reason: 'UnexpectedAdmissionError',
        message: `Pod was rejected: Allocate failed due to requested number of devices unavailable for ${R}. Requested: 1, Available: 0, which is unexpected`,
      });
    }, 60_000);
    const events = await env!.client.request<{ items: { reason?: string; type?: string }[] }>({
      method: 'GET',
      path: '/api/v1/namespaces/default/events',
      query: { fieldSelector: 'involvedObject.name=one-too-many' },
    });
    expect(events.items.map((e) => `${e.type}/${e.reason}`)).to.include('Warning/UnexpectedAdmissionError');

    // The holder's devices are Healthy; the last one turns Unhealthy through the spec.
    await until(async () => {
      const s = (await pod('holder')).status?.containerStatuses?.[0]?.allocatedResourcesStatus;
      expect(s).to.deep.equal([
        {
          name: R,
          resources: [
            { resourceID: 'gpu-0', health: 'Healthy' },
            { resourceID: 'gpu-1', health: 'Healthy' },
          ],
        },
      ]);
    }, 30_000);
    await env!.client.request({
      method: 'PATCH',
      path: `${VN_PATH}/${NODE}`,
      contentType: PatchTypes.merge,
      body: { spec: { devices: [{ resource: R, count: 2, unhealthy: 1 }] } },
    });
    await until(async () => {
      const s = (await pod('holder')).status?.containerStatuses?.[0]?.allocatedResourcesStatus;
      expect(s?.[0]?.resources).to.deep.equal([
        { resourceID: 'gpu-0', health: 'Healthy' },
        { resourceID: 'gpu-1', health: 'Unhealthy' },
      ]);
    }, 30_000);
    await until(async () => {
      const n = await node();
      expect(n.status?.capacity?.[R]).to.equal('2');
      expect(n.status?.allocatable?.[R]).to.equal('1');
    }, 30_000);

    // The holder goes: its healthy device is free for the next pod.
    await env!.client.request({
      method: 'DELETE',
      path: '/api/v1/namespaces/default/pods/holder',
      query: { gracePeriodSeconds: '0' },
    });
    await until(async () => {
      const list = await env!.client.request<{ items: Pod[] }>({
        method: 'GET',
        path: '/api/v1/namespaces/default/pods',
        query: { fieldSelector: 'metadata.name=holder' },
      });
      expect(list.items).to.have.length(0);
    }, 60_000);
    await createPod('after', 1, ['sh', '-c', `echo "gpus=$EXAMPLE_COM_GPU_DEVICES"; exit 3`]);
    await until(async () => {
      const p = await pod('after');
      expect(p.status?.phase).to.equal('Failed');
      expect(p.status?.containerStatuses?.[0]?.state?.terminated?.message).to.contain('gpus=gpu-0');
    }, 60_000);
  });
});
