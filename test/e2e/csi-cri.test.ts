/**
 * CSI volumes on a containerd-backed VirtualNode (issue #59 item 4) with the real hostpath CSI driver and
 * node-driver-registrar, run as host processes on the node's kubelet root (as test/integration/
 * pluginmanager.test.ts runs them; test/cluster/csi-scenarios.ts runs them as a DaemonSet).
 *
 * A volume is made through the driver's controller service (CreateVolume on its socket, as an
 * external-provisioner would), then a static CSI PersistentVolume and its claim: a pod writes a file, is
 * deleted, and a pod re-created on the node reads it back; at the end the volume is unpublished and unstaged
 * (no mount left under the node root, the staging directory gone). An inline ephemeral CSI volume is
 * published, used and unpublished. A running pod's CSI volume is in /stats/summary (NodeGetVolumeStats), read
 * through the API server's node proxy. A claim grown by the controller side (what an external-resizer does:
 * ControllerExpandVolume, the PV's capacity, the claim's status NodeResizePending) is grown on the node
 * (NodeExpandVolume) and its status finished: the new capacity, the resize status cleared. Root on Linux is required (containerd, the CNI bridge, the driver's
 * bind mounts).
 */
import { expect } from 'chai';
import { type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PodStatus } from '../../src/api/core.js';
import { PatchTypes, type KubeClient } from '../../src/kube/client.js';
import { kubeletRootPaths, pluginDir } from '../../src/kubelet/rootdir.js';
import { stagingDataDir } from '../../src/kubelet/volume/csi.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { busybox, sh } from '../support/podspec.js';
import { csiPluginBinaries, startHostpathPlugin, stopProcess } from '../support/csiplugins.js';
import { controllerExpand, createVolume, mountsUnder } from '../support/csicontroller.js';
import { eventsOf } from '../support/events.js';
import { eventually } from '../support/eventually.js';
import { isGone } from '../support/operator.js';

const NS = 'csi-e2e';
const NODE = 'vn-csi';
const DRIVER = 'hostpath.csi.k8s.io';

describe('CSI volumes on containerd (real hostpath driver and registrar)', function () {
  this.timeout(5 * 60_000);
  let env: CriNodeEnv | undefined;
  let client: KubeClient;
  let driver: ChildProcess | undefined;
  let registrar: ChildProcess | undefined;
  let driverState = '';
  let root = '';
  let csiSocket = '';
  let volumeID = '';
  const logs: string[] = [];

  const waitPod = (name: string, pred: (s: PodStatus) => boolean, what: string, timeoutMs = 90_000) =>
    env!.waitPod(name, pred, what, timeoutMs);
  const succeeded = (s: PodStatus) => s.phase === 'Succeeded' || s.phase === 'Failed';
  const deletePod = async (name: string): Promise<void> => {
    await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/${name}` });
    await eventually(() => isGone(client, `/api/v1/namespaces/${NS}/pods/${name}`), 60_000, `${name} gone`);
  };
  /** A pod that sleeps with the claim `data` mounted at /data. */
  const createSleeperOnClaim = (name: string): Promise<unknown> =>
    env!.createPod(name, {
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      containers: [busybox('c', ['sleep', '3600'], { volumeMounts: [{ name: 'data', mountPath: '/data' }] })],
    });
  const runPod = async (name: string, volume: Record<string, unknown>, script: string): Promise<void> => {
    await env!.createPod(name, {
      restartPolicy: 'Never',
      volumes: [{ name: 'data', ...volume }],
      containers: [busybox('c', sh(script), { volumeMounts: [{ name: 'data', mountPath: '/data' }] })],
    });
    const pod = await waitPod(name, succeeded, `${name} finished`);
    if (pod.status?.phase !== 'Succeeded') {
      const events = (await eventsOf(client, NS, name)).map((e) => `${e.reason}: ${e.message}`);
      expect.fail(
        `${name} ${pod.status?.phase}: ${JSON.stringify(pod.status?.containerStatuses)} ${events.join('\n')}`,
      );
    }
  };

  before(async function () {
    this.timeout(25 * 60_000);
    const bins = await csiPluginBinaries();
    env = await startCriNodeEnv({ node: NODE, namespace: NS, podNetwork: 'cni' });
    client = env.client;
    root = nodeRootDir(env.stateDir, NODE);
    csiSocket = path.join(pluginDir(root, 'csi-hostpath'), 'csi.sock');
    await mkdir(path.dirname(csiSocket), { recursive: true });
    driverState = await mkdtemp(path.join(tmpdir(), 'ko-hostpath-'));
    ({ driver, registrar } = await startHostpathPlugin({
      bins,
      socket: csiSocket,
      node: NODE,
      driver: DRIVER,
      stateDir: driverState,
      registrationDir: kubeletRootPaths(root).pluginsRegistry,
      logs,
      verbosity: 4,
    }));
    // As the driver's deployment declares it: no attach, pod info, both lifecycle modes.
    await client.request({
      method: 'POST',
      path: '/apis/storage.k8s.io/v1/csidrivers',
      body: {
        metadata: { name: DRIVER },
        spec: {
          attachRequired: false,
          podInfoOnMount: true,
          volumeLifecycleModes: ['Persistent', 'Ephemeral'],
          fsGroupPolicy: 'File',
        },
      },
    });
    await eventually(
      async () => {
        const n = await client
          .request<{ spec: { drivers: { name: string }[] | null } }>({
            method: 'GET',
            path: `/apis/storage.k8s.io/v1/csinodes/${NODE}`,
          })
          .catch(() => undefined);
        return n?.spec.drivers?.some((d) => d.name === DRIVER);
      },
      60_000,
      'the driver registered in the CSINode',
    );
  });

  after(async () => {
    await stopProcess(registrar);
    await env?.stop();
    await stopProcess(driver);
    if (driverState) await rm(driverState, { recursive: true, force: true });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') console.log(logs.join('').slice(-6000));
  });

  it('a static CSI PV: written by one pod, read by the next after a delete, unpublished and unstaged at the end', async () => {
    volumeID = await createVolume(csiSocket, 'pv-csi-e2e');
    const claim = await client.request<{ metadata: { uid: string } }>({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/persistentvolumeclaims`,
      body: {
        metadata: { name: 'data' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          volumeName: 'pv-csi-e2e',
          resources: { requests: { storage: '1Mi' } },
        },
      },
    });
    await client.request({
      method: 'POST',
      path: '/api/v1/persistentvolumes',
      body: {
        metadata: { name: 'pv-csi-e2e' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          capacity: { storage: '1Mi' },
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: '',
          claimRef: { namespace: NS, name: 'data', uid: claim.metadata.uid },
          csi: { driver: DRIVER, volumeHandle: volumeID },
        },
      },
    });
    // No PV controller runs here: the claim is marked bound as it would mark it.
    await client.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${NS}/persistentvolumeclaims/data/status`,
      contentType: PatchTypes.merge,
      body: { status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Mi' } } },
    });

    const claimVolume = { persistentVolumeClaim: { claimName: 'data' } };
    await runPod('writer', claimVolume, 'echo kept-by-csi > /data/f && cat /data/f');
    expect((await readFile(path.join(driverState, volumeID, 'f'), 'utf8')).trim()).to.equal('kept-by-csi');
    const staging = stagingDataDir(kubeletRootPaths(root).plugins, DRIVER, volumeID);
    await deletePod('writer');

    await runPod('reader', claimVolume, 'test "$(cat /data/f)" = kept-by-csi');
    await deletePod('reader');
    // Unpublished from both pods, then unstaged: no mount under the node root, the staging directory gone.
    await eventually(async () => !existsSync(staging), 30_000, 'the staging directory removed (unstaged)');
    expect(await mountsUnder(root)).to.deep.equal([]);
    const driverLog = logs.join('');
    expect(driverLog).to.match(/NodeUnpublishVolume/);
    expect(driverLog).to.match(/NodeUnstageVolume/);
  });

  it('an inline ephemeral CSI volume is published, used and unpublished', async () => {
    await runPod(
      'inline',
      { csi: { driver: DRIVER, volumeAttributes: { size: '1Mi' } } },
      'echo hi > /data/g && test "$(cat /data/g)" = hi',
    );
    await deletePod('inline');
    expect(await mountsUnder(root)).to.deep.equal([]);
  });

  it("a running pod's CSI volume in /stats/summary with its claim (NodeGetVolumeStats)", async () => {
    await createSleeperOnClaim('stats');
    await waitPod('stats', (s) => s.phase === 'Running', 'stats running');
    interface Vol {
      name: string;
      capacityBytes?: number;
      usedBytes?: number;
      pvcRef?: { name: string; namespace: string };
    }
    const vol = await eventually(
      async () => {
        const summary = JSON.parse(
          await env!.k(['get', '--raw', `/api/v1/nodes/${NODE}/proxy/stats/summary`]),
        ) as { pods: { podRef: { name: string }; volume?: Vol[] }[] };
        return summary.pods.find((p) => p.podRef.name === 'stats')?.volume?.find((v) => v.name === 'data');
      },
      60_000,
      'the CSI volume in the Summary',
      1_000,
    );
    expect(vol.pvcRef).to.deep.equal({ name: 'data', namespace: NS });
    expect(vol.capacityBytes).to.be.greaterThan(0);
    expect(vol.usedBytes).to.be.a('number');
    await deletePod('stats');
    expect(await mountsUnder(root)).to.deep.equal([]);
  });

  it('node expansion of a mounted claim: NodeResizePending -> NodeExpandVolume -> the new capacity, status cleared', async () => {
    await createSleeperOnClaim('grow');
    await waitPod('grow', (s) => s.phase === 'Running', 'grow running');
    // The external-resizer's part, by hand: the volume and the PV grown, the claim asking the node.
    await controllerExpand(csiSocket, volumeID, 2 << 20);
    await client.request({
      method: 'PATCH',
      path: '/api/v1/persistentvolumes/pv-csi-e2e',
      contentType: PatchTypes.merge,
      body: { spec: { capacity: { storage: '2Mi' } } },
    });
    await client.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${NS}/persistentvolumeclaims/data/status`,
      contentType: PatchTypes.merge,
      body: {
        status: {
          allocatedResources: { storage: '2Mi' },
          allocatedResourceStatuses: { storage: 'NodeResizePending' },
        },
      },
    });
    interface Claim {
      status: { capacity?: { storage?: string }; allocatedResourceStatuses?: Record<string, string> };
    }
    // The pod's next sync (its resync, or this touch of its labels) grows it.
    await client.request({
      method: 'PATCH',
      path: `/api/v1/namespaces/${NS}/pods/grow`,
      contentType: PatchTypes.merge,
      body: { metadata: { labels: { grow: 'now' } } },
    });
    const claim = await eventually(
      async () => {
        const c = await client.request<Claim>({
          method: 'GET',
          path: `/api/v1/namespaces/${NS}/persistentvolumeclaims/data`,
        });
        return c.status.capacity?.storage === '2Mi' ? c : undefined;
      },
      // Well inside the pod's 60 s resync: the update's sync reads the claim and the PV afresh.
      30_000,
      'the claim at its new capacity',
      1_000,
    );
    expect(claim.status.allocatedResourceStatuses ?? {}).to.deep.equal({});
    expect(logs.join('')).to.match(/NodeExpandVolume/);
    const events = (await eventsOf(client, NS, 'grow')).map((e) => e.reason);
    expect(events).to.include('FileSystemResizeSuccessful');
    await deletePod('grow');
  });
});
