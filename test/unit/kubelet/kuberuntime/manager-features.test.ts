// KubeGenericRuntimeManager.syncPod with the kubelet's runtime helper, on the simulated runtime as it is (every
// feature honoured) and posing as containerd 1.6's CRI (no runtime handlers, no image mounts): user namespaces,
// recursive read-only mounts and image volumes are refused there as a v1.37 kubelet on containerd 1.6 refuses
// them (results, waiting reasons and Events), and honoured on the simulated runtime.
import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { KubeletPods } from '../../../../src/kubelet/kubelet_pods.js';
import { KubeGenericRuntimeManager } from '../../../../src/kubelet/kuberuntime/shell/manager.js';
import { MemoryVolumeFS } from '../../../../src/kubelet/volume/memfs.js';
import type { MountedVolume } from '../../../../src/kubelet/volume/plugin.js';
import type { RuntimeHandler } from '../../../../src/runtime/types.js';
import { container, Harness, IMAGE, makePod, summary } from './manager-fixtures.js';
import { likeContainerd16 } from '../../../support/likecontainerd16.js';

const forever = ['sleep', 'infinity'];
const SIM_HANDLERS: RuntimeHandler[] = [{ name: '', recursiveReadOnlyMounts: true, userNamespaces: true }];

interface Flavour {
  h: Harness;
  /** The volumes the volume manager set up, by pod UID (the helper mounts these). */
  volumes: Map<string, Map<string, MountedVolume>>;
}

function flavour(kind: 'sim' | 'containerd16', profiles?: unknown): Flavour {
  const h = new Harness({ images: [IMAGE, 'registry.local/data:1'], profiles });
  const volumes = new Map<string, Map<string, MountedVolume>>();
  const helper = new KubeletPods({
    podsDir: '/pods',
    fs: new MemoryVolumeFS(),
    volumes: { mountedVolumes: (uid) => volumes.get(uid) },
    clusterDNS: [],
    clusterDomain: 'cluster.local',
    hostResolvConf: () => Promise.resolve(undefined),
    nodeHostsFile: () => Promise.resolve(''),
    nodeIPs: ['10.0.0.2'],
    record: () => undefined,
    random: () => 0,
  });
  h.manager = new KubeGenericRuntimeManager({
    ...h.deps,
    runtime: kind === 'sim' ? h.runtime : likeContainerd16(h.runtime),
    runtimeHelper: helper,
    runtimeHandlers: () => (kind === 'sim' ? SIM_HANDLERS : []),
  });
  return { h, volumes };
}

function withVolumes(f: Flavour, pod: Pod, vols: Record<string, MountedVolume>): Pod {
  f.volumes.set(pod.metadata.uid!, new Map(Object.entries(vols)));
  return pod;
}

const EMPTY_DIR: MountedVolume = {
  hostPath: '/pods/x/volumes/kubernetes.io~empty-dir/d',
  readOnly: false,
  selinuxRelabel: true,
};
const IMAGE_VOLUME: MountedVolume = { hostPath: '', readOnly: true, selinuxRelabel: false };

describe('KubeGenericRuntimeManager.syncPod: runtime features', function () {
  this.timeout(10_000);

  describe('hostUsers: false', () => {
    const userns = (): Pod => {
      const p = makePod({ containers: [container('app', forever)] });
      p.spec.hostUsers = false;
      return p;
    };

    it('containerd 1.6: no sandbox, FailedCreatePodSandBox with the kubelet message', async () => {
      const { h } = flavour('containerd16');
      const pod = userns();
      const r = await h.sync(pod);
      const desc = `${pod.metadata.name}_default(${pod.metadata.uid})`;
      expect(summary(r)).to.deep.equal([
        `KillPodSandbox ${pod.metadata.uid}`,
        `CreatePodSandbox ${desc} CreatePodSandboxError`,
      ]);
      expect(r.results[1]!.message).to.equal(
        `Failed to generate sandbox config for pod "${desc}": can't set \`spec.hostUsers: false\`, runtime does not support user namespaces`,
      );
      expect(h.takeEvents()).to.deep.equal([
        "FailedCreatePodSandBox: Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces",
      ]);
      expect(await h.runtime.listPodSandbox()).to.deep.equal([]);
    });

    it('sim: the pod runs in a user namespace of its own; the containers show its mappings', async () => {
      const { h } = flavour('sim');
      const pod = userns();
      const r = await h.sync(pod);
      expect(r.error).to.equal(undefined);
      const mapping = [{ hostId: 65536, containerId: 0, length: 65536 }];
      expect(h.createdConfigs[0]!.linux?.securityContext?.namespaceOptions?.userNamespace).to.deep.equal({
        mode: 'POD',
        uids: mapping,
        gids: mapping,
      });
      const id = (await h.status(pod)).containers[0]!.id;
      const out = await h.runtime.execSync(id, ['cat', '/proc/self/uid_map'], 5);
      expect(out.stdout.toString()).to.equal('         0      65536      65536\n');
      // A pod without hostUsers: false keeps the host's.
      const plain = makePod({ containers: [container('app', forever)] });
      await h.sync(plain);
      const plainId = (await h.status(plain)).containers[0]!.id;
      const host = await h.runtime.execSync(plainId, ['cat', '/proc/self/gid_map'], 5);
      expect(host.stdout.toString()).to.equal('         0          0 4294967295\n');
    });
  });

  describe('recursiveReadOnly', () => {
    const rro = (mode: 'Enabled' | 'IfPossible'): Container =>
      container('app', forever, {
        volumeMounts: [{ name: 'd', mountPath: '/d', readOnly: true, recursiveReadOnly: mode }],
      });

    it('containerd 1.6: Enabled is refused (CreateContainerConfigError, Failed event); IfPossible runs read-only', async () => {
      const f = flavour('containerd16');
      const pod = withVolumes(f, makePod({ containers: [rro('Enabled')] }), { d: EMPTY_DIR });
      const r = await f.h.sync(pod);
      const message =
        'failed to resolve recursive read-only mode: volume "d" requested recursive read-only mode, but it is not supported by the runtime';
      const start = r.results.find((x) => x.action === 'StartContainer')!;
      expect([start.error, start.message]).to.deep.equal(['CreateContainerConfigError', message]);
      expect(f.h.takeEvents()).to.deep.equal([
        `Pulled: Container image "${IMAGE}" already present on machine`,
        `Failed: Error: ${message}`,
      ]);
      const soft = withVolumes(f, makePod({ containers: [rro('IfPossible')] }), { d: EMPTY_DIR });
      expect((await f.h.sync(soft)).error).to.equal(undefined);
      const mount = f.h.createdConfigs.at(-1)!.mounts!.find((m) => m.containerPath === '/d')!;
      expect(mount.readonly).to.equal(true);
      expect(mount.recursiveReadOnly).to.equal(undefined);
    });

    it('sim: Enabled runs, the mount is recursive read-only as created and as reported', async () => {
      const f = flavour('sim');
      const pod = withVolumes(f, makePod({ containers: [rro('Enabled')] }), { d: EMPTY_DIR });
      expect((await f.h.sync(pod)).error).to.equal(undefined);
      const id = (await f.h.status(pod)).containers[0]!.id;
      const mounts = (await f.h.runtime.containerStatus(id)).mounts!;
      expect(mounts.find((m) => m.containerPath === '/d')).to.include({
        readonly: true,
        recursiveReadOnly: true,
      });
    });
  });

  describe('image volumes', () => {
    const imagePod = (f: Flavour, reference: string, pullPolicy?: 'Always' | 'IfNotPresent'): Pod => {
      const p = makePod({
        containers: [container('app', forever, { volumeMounts: [{ name: 'vol', mountPath: '/volume' }] })],
      });
      p.spec.volumes = [{ name: 'vol', image: { reference, ...(pullPolicy ? { pullPolicy } : {}) } }];
      return withVolumes(f, p, { vol: IMAGE_VOLUME });
    };

    it("sim: the volume's image is pulled with its policy (events on the pod) and mounted by ID", async () => {
      const f = flavour('sim');
      const pod = imagePod(f, 'registry.local/data:1', 'Always');
      expect((await f.h.sync(pod)).error).to.equal(undefined);
      const imageId = (await f.h.runtime.imageStatus('registry.local/data:1'))!.id;
      const volumeEvents = f.h.events.filter((e) => e.fieldPath === undefined).map((e) => e.reason);
      expect(volumeEvents).to.deep.equal(['Pulling', 'Pulled']);
      const created = f.h.createdConfigs[0]!.mounts!.find((m) => m.containerPath === '/volume');
      expect(created).to.deep.equal({
        containerPath: '/volume',
        hostPath: '',
        readonly: true,
        propagation: 'PRIVATE',
        image: imageId,
      });
      const id = (await f.h.status(pod)).containers[0]!.id;
      expect((await f.h.runtime.containerStatus(id)).mounts).to.deep.include(created);
    });

    it('containerd 1.6: pulled, then the container is refused at creation (CreateContainerError, ImageVolumeMountFailed)', async () => {
      const f = flavour('containerd16');
      const pod = imagePod(f, 'registry.local/data:1', 'IfNotPresent');
      const r = await f.h.sync(pod);
      const start = r.results.find((x) => x.action === 'StartContainer')!;
      const imageId = (await f.h.runtime.imageStatus('registry.local/data:1'))!.id;
      const message = `ImageVolumeMountFailed: cannot mount image "${imageId}" at "/volume": the container runtime does not support image volumes (CRI Mount.image: containerd 2.1 or later)`;
      expect([start.error, start.message]).to.deep.equal(['CreateContainerError', message]);
      expect(f.h.takeEvents()).to.deep.equal([
        'Pulled: Container image "registry.local/data:1" already present on machine',
        `Pulled: Container image "${IMAGE}" already present on machine`,
        `Failed: Error: ${message}`,
      ]);
      expect(await f.h.runtime.listContainers()).to.deep.equal([]);
    });

    it('a failed pull of the volume image holds the container with ErrImagePull, then ImagePullBackOff', async () => {
      const f = flavour('sim');
      const pod = imagePod(f, 'registry.invalid/data:1', 'Always');
      const r = await f.h.sync(pod);
      const start = r.results.find((x) => x.action === 'StartContainer')!;
      expect(start.error).to.equal('ErrImagePull');
      const events = f.h.takeEvents();
      expect(events[0]).to.equal('Pulling: Pulling image "registry.invalid/data:1"');
      expect(events[1]).to.match(/^Failed: Failed to pull image "registry.invalid\/data:1": /);
      expect(events.slice(2)).to.deep.equal(['Failed: Error: ErrImagePull']);
      const again = await f.h.sync(pod);
      expect(again.results.find((x) => x.action === 'StartContainer')!.error).to.equal('ImagePullBackOff');
      expect(f.h.takeEvents()).to.deep.equal([
        'BackOff: Back-off pulling image "registry.invalid/data:1"',
        'Failed: Error: ImagePullBackOff',
      ]);
    });
  });

  describe('supplemental groups', () => {
    const profiles = { images: { [IMAGE]: { user: '1000', groups: [50000] } } };
    const groupsPod = (policy?: 'Merge' | 'Strict'): Pod => {
      const p = makePod({ containers: [container('app', forever)] });
      p.spec.securityContext = {
        runAsUser: 1000,
        runAsGroup: 1000,
        supplementalGroups: [60000],
        ...(policy ? { supplementalGroupsPolicy: policy } : {}),
      };
      return p;
    };

    for (const [policy, groups] of [
      [undefined, [1000, 50000, 60000]],
      ['Merge', [1000, 50000, 60000]],
      ['Strict', [1000, 60000]],
    ] as const) {
      it(`sim: ${policy ?? 'no policy'} gives the process the groups ${groups.join(' ')} (status user and id -G)`, async () => {
        const f = flavour('sim', profiles);
        const pod = groupsPod(policy);
        expect((await f.h.sync(pod)).error).to.equal(undefined);
        const sc = f.h.createdConfigs[0]!.linux?.securityContext;
        expect(sc?.supplementalGroupsPolicy).to.equal(policy);
        const rec = (await f.h.status(pod)).containers[0]!;
        expect(rec.user).to.deep.equal({ linux: { uid: 1000, gid: 1000, supplementalGroups: [...groups] } });
        const out = await f.h.runtime.execSync(rec.id, ['id', '-G'], 5);
        expect(out.stdout.toString()).to.equal(`${groups.join(' ')}\n`);
      });
    }
  });
});
