/**
 * Volumes as the rest of a cluster sees them, against a real kube-apiserver, on a simulated VirtualNode (the
 * whole operator in-process): a pod whose ConfigMap is missing stays Pending with its containers in
 * ContainerCreating and the kubelet's FailedMount events, then runs once the ConfigMap is created; a volume
 * type the operator does not support is refused with the kubelet's words and the pod never starts; the
 * `kube-api-access-*` volume the API server adds to every pod mounts (simulated token, the namespace's CA
 * bundle) and the pod runs; a missing Secret that is optional does not hold the pod.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { CoreEvent } from '../../src/kube/events.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import {
  createPodOn,
  expectContainerCreating,
  type SimNodeEnv,
  startSimNodeEnv,
  waitPodStatus,
} from '../support/operator.js';

const NODE = 'vn-volumes';
const NS = 'default';

describe('volumes on a simulated VirtualNode (real apiserver)', function () {
  this.timeout(20 * 60_000);
  let env: SimNodeEnv | undefined;
  let client: KubeClient;

  const createPod = (name: string, spec: Record<string, unknown>): Promise<Pod> =>
    createPodOn(client, NS, NODE, name, spec);
  const events = (name: string): Promise<CoreEvent[]> => eventsOf(client, NS, name);
  const getPod = (name: string): Promise<Pod> =>
    client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${NS}/pods/${name}` });

  before(async () => {
    env = await startSimNodeEnv({ node: NODE, podCIDR: '10.77.0.0/24' });
    client = env.client;
  });

  after(async () => {
    await env?.stop();
  });

  it('waits in ContainerCreating with FailedMount for a missing ConfigMap, then runs once it exists', async () => {
    await createPod('wants-cm', {
      volumes: [{ name: 'cfg', configMap: { name: 'late-cm' } }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          command: ['sleep', 'infinity'],
          volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }],
        },
      ],
    });
    const failed = await eventually(
      async () => (await events('wants-cm')).find((e) => e.reason === 'FailedMount'),
      30_000,
      'a FailedMount event',
    );
    expect(failed.type).to.equal('Warning');
    expect(failed.message).to.equal(
      'MountVolume.SetUp failed for volume "cfg" : configmap "late-cm" not found',
    );
    expect(failed.source?.component).to.equal('kubelet');
    const waiting = await getPod('wants-cm');
    expect(waiting.status?.phase).to.equal('Pending');
    expect(waiting.status?.containerStatuses?.[0]?.state?.waiting?.reason).to.equal('ContainerCreating');
    // Nothing started without its volume.
    expect((await events('wants-cm')).some((e) => e.reason === 'Started')).to.equal(false);

    await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/configmaps`,
      body: { metadata: { name: 'late-cm' }, data: { a: '1' } },
    });
    // The pod worker retries with its back-off (10 s) and the object cache's TTL (10 s).
    await waitPodStatus(client, NS, 'wants-cm', (s) => s.phase === 'Running', 'Running', 60_000);
  });

  it('refuses a volume type it does not support with the kubelet words; the pod never starts', async () => {
    await createPod('wants-nfs', {
      volumes: [{ name: 'share', nfs: { server: '10.9.9.9', path: '/exports' } }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          command: ['sleep', 'infinity'],
          volumeMounts: [{ name: 'share', mountPath: '/share' }],
        },
      ],
    });
    const e = await eventually(
      async () =>
        (await events('wants-nfs')).find(
          (ev) => ev.reason === 'FailedMount' && ev.message?.startsWith('Unable to attach or mount volumes'),
        ),
      30_000,
      'an Unable to attach or mount volumes event',
    );
    expect(e.message).to.equal(
      'Unable to attach or mount volumes: unmounted volumes=[share], unattached volumes=[], failed to process ' +
        'volumes=[share]: failed to get Plugin from volumeSpec for volume "share" err=no volume plugin matched: ' +
        'kubelet-operator does not support nfs volumes (supported: emptyDir, hostPath, configMap, secret, ' +
        'downwardAPI, projected, persistentVolumeClaim, csi, image)',
    );
    await expectContainerCreating(client, NS, 'wants-nfs');
  });

  it('mounts the kube-api-access volume the API server adds, and an optional Secret that is missing', async () => {
    const created = await createPod('with-token', {
      volumes: [{ name: 'maybe', secret: { secretName: 'nope', optional: true } }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          command: ['sleep', 'infinity'],
          volumeMounts: [{ name: 'maybe', mountPath: '/maybe' }],
        },
      ],
    });
    // The ServiceAccount admission plugin added the projected token volume and its mount.
    const access = created.spec.volumes?.find((v) => v.name.startsWith('kube-api-access-'));
    expect(access?.projected, 'kube-api-access volume').to.not.equal(undefined);
    await waitPodStatus(client, NS, 'with-token', (s) => s.phase === 'Running', 'Running', 30_000);
    expect((await events('with-token')).filter((e) => e.reason === 'FailedMount')).to.deep.equal([]);
  });
});
