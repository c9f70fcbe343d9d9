/**
 * A real CSI driver as a DaemonSet on a containerd-backed VirtualNode (issue #59): the hostpath CSI driver
 * (github.com/kubernetes-csi/csi-driver-host-path) and node-driver-registrar, each in its image (stand-ins
 * holding the upstream binaries, `scripts/upstream-e2e.sh import <sock> --csi-node`), run as a DaemonSet
 * pinned to `cri-1`, with the hostPaths and the Bidirectional propagation of the driver's upstream manifest.
 *
 * The registrar announces the driver in the node root's plugins_registry/ and the Node's CSINode lists it. A
 * volume is made on the driver's controller service (CreateVolume on its socket, which the node root holds:
 * what an external-provisioner would do), bound by the PV controller as a static PV to its claim; a pod writes
 * a file, is deleted, and a re-created pod on the node reads it. The driver's bind mounts at the target paths,
 * made inside its container, reach the node and the pods through the node root's shared mount; at the end no
 * CSI mount is left under the node root and the staging directory is gone. An inline ephemeral CSI volume is
 * published, used and unpublished the same way.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { kubeletRootPaths, pluginDir } from '../../src/kubelet/rootdir.js';
import { stagingDataDir } from '../../src/kubelet/volume/csi.js';
import { createVolume, mountsUnder } from '../support/csicontroller.js';
import { busybox, sh } from '../support/podspec.js';
import { eventually } from '../support/eventually.js';
import { CRI_TAINT, NS, type ClusterEnv } from './env.js';

const NODE = 'cri-1';
const DRIVER = 'hostpath.csi.k8s.io';
const LABEL = 'cluster-test/csi';
const IMPORT = fileURLToPath(new URL('../../scripts/upstream-e2e.sh', import.meta.url));
const TOLERATE_CRI = [
  { key: CRI_TAINT.key, operator: 'Equal', value: CRI_TAINT.value, effect: 'NoSchedule' },
];
const ON_NODE = { 'kubernetes.io/hostname': NODE };

/** Imports the two images into the suite's containerd: their references, by binary name. */
async function importNodePluginImages(endpoint: string): Promise<Record<string, string>> {
  const { stdout } = await promisify(execFile)(
    'bash',
    [IMPORT, 'import', endpoint.replace(/^unix:\/\//, ''), '--csi-node'],
    { maxBuffer: 1 << 20, timeout: 20 * 60_000 },
  );
  const refs: Record<string, string> = {};
  for (const line of stdout.trim().split('\n')) {
    const ref = line.split(' ')[1] ?? '';
    const name = ref.replace(/^.*\//, '').replace(/:.*$/, '');
    if (name) refs[name] = ref;
  }
  return refs;
}

/** The driver's DaemonSet, as its upstream manifest (deploy/kubernetes-*\/hostpath/csi-hostpath-plugin.yaml). */
function daemonSet(images: Record<string, string>, dataDir: string): unknown {
  const hostPath = (name: string, p: string) => ({ name, hostPath: { path: p, type: 'DirectoryOrCreate' } });
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'csi-hostpath', namespace: NS, labels: { [LABEL]: 'driver' } },
    spec: {
      selector: { matchLabels: { app: 'csi-hostpath' } },
      template: {
        metadata: { labels: { app: 'csi-hostpath', [LABEL]: 'driver' } },
        spec: {
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 2,
          tolerations: TOLERATE_CRI,
          nodeSelector: ON_NODE,
          containers: [
            {
              name: 'hostpath',
              image: images.hostpathplugin,
              imagePullPolicy: 'IfNotPresent',
              args: [
                `--drivername=${DRIVER}`,
                '--v=5',
                '--endpoint=unix:///csi/csi.sock',
                '--nodeid=$(KUBE_NODE_NAME)',
                '--statedir=/csi-data-dir',
              ],
              env: [{ name: 'KUBE_NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }],
              securityContext: { privileged: true },
              volumeMounts: [
                { name: 'socket-dir', mountPath: '/csi' },
                {
                  name: 'mountpoint-dir',
                  mountPath: '/var/lib/kubelet/pods',
                  mountPropagation: 'Bidirectional',
                },
                {
                  name: 'plugins-dir',
                  mountPath: '/var/lib/kubelet/plugins',
                  mountPropagation: 'Bidirectional',
                },
                { name: 'csi-data-dir', mountPath: '/csi-data-dir' },
              ],
            },
            {
              name: 'node-driver-registrar',
              image: images['csi-node-driver-registrar'],
              imagePullPolicy: 'IfNotPresent',
              args: [
                '--v=5',
                '--csi-address=/csi/csi.sock',
                '--kubelet-registration-path=/var/lib/kubelet/plugins/csi-hostpath/csi.sock',
              ],
              volumeMounts: [
                { name: 'socket-dir', mountPath: '/csi' },
                { name: 'registration-dir', mountPath: '/registration' },
              ],
            },
          ],
          volumes: [
            hostPath('socket-dir', '/var/lib/kubelet/plugins/csi-hostpath'),
            hostPath('mountpoint-dir', '/var/lib/kubelet/pods'),
            hostPath('plugins-dir', '/var/lib/kubelet/plugins'),
            hostPath('registration-dir', '/var/lib/kubelet/plugins_registry'),
            hostPath('csi-data-dir', dataDir),
          ],
        },
      },
    },
  };
}

export function csiDaemonSetScenario(getEnv: () => ClusterEnv): void {
  describe('a CSI driver DaemonSet on a containerd-backed VirtualNode', () => {
    const env = (): ClusterEnv => getEnv();
    const root = (): string => nodeRootDir(env().stateDir, NODE);
    const dataDir = (): string => path.join(env().stateDir, 'csi-hostpath-data');

    const runPod = async (name: string, volume: Record<string, unknown>, script: string): Promise<Pod> => {
      await env().apply({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: NS, labels: { [LABEL]: 'user' } },
        spec: {
          automountServiceAccountToken: false,
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          tolerations: TOLERATE_CRI,
          nodeSelector: ON_NODE,
          volumes: [{ name: 'data', ...volume }],
          containers: [busybox('c', sh(script), { volumeMounts: [{ name: 'data', mountPath: '/data' }] })],
        },
      });
      const pod = await eventually(
        async () => {
          const p = await env().pod(name);
          return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
        },
        120_000,
        `${name} finished`,
      );
      if (pod.status?.phase !== 'Succeeded') {
        const events = (await env().events(name)).map((e) => `${e.reason}: ${e.message}`);
        expect.fail(
          `${name} ${pod.status?.phase}: ${JSON.stringify(pod.status?.containerStatuses)}\n${events.join('\n')}`,
        );
      }
      return pod;
    };
    const deletePod = async (name: string): Promise<void> => {
      await env().k(['delete', 'pod', name, '--wait=true', '--timeout=90s']);
    };
    /** The host's CSI mounts under the node root: targets (pods/.../kubernetes.io~csi/...) and staging paths. */
    const csiMounts = async (): Promise<string[]> =>
      (await mountsUnder(root())).filter(
        (m) => m.includes('kubernetes.io~csi') || m.includes('/kubernetes.io/csi/'),
      );
    const driverLogs = async (): Promise<string> =>
      env()
        .k(['logs', '-l', 'app=csi-hostpath', '-c', 'hostpath', '--tail=-1'])
        .catch((err: unknown) => String(err));

    before(async function () {
      this.timeout(20 * 60_000); // a cold machine builds the two binaries and their images
      const images = await importNodePluginImages(env().containerd.endpoint);
      expect(images).to.have.keys('hostpathplugin', 'csi-node-driver-registrar');
      await mkdir(dataDir(), { recursive: true });
      // As the driver's deployment declares it: no attach, pod info on mount, both lifecycle modes.
      await env().apply({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIDriver',
        metadata: { name: DRIVER },
        spec: {
          attachRequired: false,
          podInfoOnMount: true,
          volumeLifecycleModes: ['Persistent', 'Ephemeral'],
          fsGroupPolicy: 'File',
        },
      });
      await env().apply(daemonSet(images, dataDir()));
      await registered().catch(async (err: unknown) => {
        // What kept the driver from registering: its pod's state and the node's Events about it.
        const pods = await env().pods('app=csi-hostpath');
        const why = await Promise.all(
          pods.map(async (p) =>
            [
              `${p.metadata.name} on ${p.spec.nodeName}: ${JSON.stringify(p.status?.containerStatuses?.map((c) => c.state))}`,
              ...(await env().events(p.metadata.name!)).map((e) => `  ${e.reason}: ${e.message}`),
            ].join('\n'),
          ),
        );
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${why.join('\n')}`);
      });
    });
    const registered = (): Promise<unknown> =>
      eventually(
        async () => {
          const n = await env()
            .get<{ spec: { drivers: { name: string; nodeID: string }[] | null } }>(
              `/apis/storage.k8s.io/v1/csinodes/${NODE}`,
            )
            .catch(() => undefined);
          return n?.spec.drivers?.find((d) => d.name === DRIVER);
        },
        120_000,
        'the DaemonSet driver registered in the CSINode',
      );

    after(async function () {
      this.timeout(3 * 60_000);
      const k = (args: string[]) =>
        env()
          .k(args)
          .catch(() => undefined);
      await k(['delete', 'pod', '-l', `${LABEL}=user`, '--ignore-not-found', '--wait=true', '--timeout=60s']);
      await k(['delete', 'pvc', 'csi-data', '--ignore-not-found', '--wait=false']);
      await k(['delete', 'pv', 'pv-csi-ds', '--ignore-not-found', '--wait=false']);
      await k(['delete', 'daemonset', 'csi-hostpath', '--ignore-not-found', '--wait=false']);
      await k(['delete', 'csidriver', DRIVER, '--ignore-not-found', '--wait=false']);
      await k([
        'delete',
        'pod',
        '-l',
        'app=csi-hostpath',
        '--ignore-not-found',
        '--wait=true',
        '--timeout=60s',
      ]);
    });

    afterEach(async function () {
      if (this.currentTest?.state === 'failed') console.log((await driverLogs()).slice(-6000));
    });

    it('CSINode lists the driver with the node ID it was given', async () => {
      const n = await env().get<{ spec: { drivers: { name: string; nodeID: string }[] } }>(
        `/apis/storage.k8s.io/v1/csinodes/${NODE}`,
      );
      expect(n.spec.drivers.find((d) => d.name === DRIVER)?.nodeID).to.equal(NODE);
      // Its socket is in the node root, where the registrar said the kubelet's host has it.
      expect(existsSync(path.join(pluginDir(root(), 'csi-hostpath'), 'csi.sock'))).to.equal(true);
    });

    it('a static CSI PV: written by one pod, read by a re-created pod on the node, unpublished and unstaged', async () => {
      const volumeID = await createVolume(
        path.join(pluginDir(root(), 'csi-hostpath'), 'csi.sock'),
        'pv-csi-ds',
      );
      await env().apply({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'pv-csi-ds' },
        spec: {
          accessModes: ['ReadWriteOnce'],
          capacity: { storage: '1Mi' },
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: '',
          claimRef: { namespace: NS, name: 'csi-data' },
          csi: { driver: DRIVER, volumeHandle: volumeID },
        },
      });
      await env().apply({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'csi-data', namespace: NS },
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: '',
          volumeName: 'pv-csi-ds',
          resources: { requests: { storage: '1Mi' } },
        },
      });
      // The PV controller binds the pre-bound pair.
      await eventually(
        async () =>
          (
            await env().get<{ status?: { phase?: string } }>(
              `/api/v1/namespaces/${NS}/persistentvolumeclaims/csi-data`,
            )
          ).status?.phase === 'Bound' || undefined,
        60_000,
        'the claim Bound',
      );

      const claim = { persistentVolumeClaim: { claimName: 'csi-data' } };
      const writer = await runPod('csi-writer', claim, 'echo kept-by-the-daemonset > /data/f && cat /data/f');
      expect(writer.spec.nodeName).to.equal(NODE);
      // Written through the driver's bind mount into its data dir on the host.
      expect((await readFile(path.join(dataDir(), volumeID, 'f'), 'utf8')).trim()).to.equal(
        'kept-by-the-daemonset',
      );
      await deletePod('csi-writer');

      const reader = await runPod('csi-reader', claim, 'test "$(cat /data/f)" = kept-by-the-daemonset');
      expect(reader.spec.nodeName).to.equal(NODE);
      await deletePod('csi-reader');

      const staging = stagingDataDir(kubeletRootPaths(root()).plugins, DRIVER, volumeID);
      await eventually(
        async () => !existsSync(staging) || undefined,
        60_000,
        'the staging directory removed (unstaged)',
      );
      expect(await csiMounts()).to.deep.equal([]);
      const logs = await driverLogs();
      expect(logs).to.match(/NodePublishVolume/);
      expect(logs).to.match(/NodeUnpublishVolume/);
      expect(logs).to.match(/NodeUnstageVolume/);
    });

    it('an inline ephemeral CSI volume is published, used and unpublished', async () => {
      const pod = await runPod(
        'csi-inline',
        { csi: { driver: DRIVER, volumeAttributes: { size: '1Mi' } } },
        'echo hi > /data/g && test "$(cat /data/g)" = hi && grep -q " /data " /proc/mounts',
      );
      expect(pod.spec.nodeName).to.equal(NODE);
      await deletePod('csi-inline');
      expect(await csiMounts()).to.deep.equal([]);
    });
  });
}
