// Issue #60 point 3: what a runtime does not allow is refused as a v1.37 kubelet on it refuses it, and what
// it allows is honoured. The pure decisions as tables: user namespaces (userns_manager.go), recursive
// read-only mounts (kubelet_pods.go resolveRecursiveReadOnly, makeMounts, convertToAPIContainerStatuses),
// image volumes (kuberuntime_manager.go toKubeContainerImageVolumes) and the Strict supplemental groups
// policy (lifecycle/predicate.go).
import { expect } from 'chai';
import type { Container, ContainerStatus, Pod } from '../../../src/api/core.js';
import type { VolumeMount } from '../../../src/api/volumes.js';
import type { KubeContainerStatus, RuntimePodStatus } from '../../../src/kubelet/container/types.js';
import { asContainerID } from '../../../src/kubelet/container/types.js';
import { containerImageVolumes, imageMountRefusal } from '../../../src/kubelet/kuberuntime/imagevolumes.js';
import { convertToAPIContainerStatuses, volumeMountStatuses } from '../../../src/kubelet/status/convert.js';
import {
  mappingsFileContent,
  parseMappingsFile,
  userNamespaceRequest,
  UsernsManager,
} from '../../../src/kubelet/userns/manager.js';
import { MemoryVolumeFS } from '../../../src/kubelet/volume/memfs.js';
import {
  handlerSupportsRecursiveReadOnly,
  makeMounts,
  resolveRecursiveReadOnly,
} from '../../../src/kubelet/volumemanager/makemounts.js';
import type { MountedVolume } from '../../../src/kubelet/volume/plugin.js';
import { admitPod, type AdmissionNode } from '../../../src/kubelet/lifecycle/admission.js';
import type { RuntimeHandler } from '../../../src/runtime/types.js';
import { KindError } from '../../../src/util/errors.js';

const DEFAULT_ALL: RuntimeHandler = { name: '', recursiveReadOnlyMounts: true, userNamespaces: true };
const DEFAULT_NONE: RuntimeHandler = { name: '', recursiveReadOnlyMounts: false, userNamespaces: false };
const NOT_SUPPORTED = "can't set `spec.hostUsers: false`, runtime does not support user namespaces";

function pod(spec: Partial<Pod['spec']> = {}, uid = 'uid-1'): Pod {
  return {
    metadata: { name: 'p', namespace: 'ns', uid },
    spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec },
  };
}

/** The error `p` rejects with (a test failure when it resolves). */
const rejection = (p: Promise<unknown>): Promise<KindError> =>
  p.then(
    () => expect.fail('expected a rejection'),
    (err: unknown) => err as KindError,
  );

describe('runtime features (issue #60 point 3)', () => {
  describe('user namespaces: userNamespaceRequest (GetOrCreateUserNamespaceMappings before allocating)', () => {
    const table: [string, Partial<Pod['spec']>, RuntimeHandler[], ReturnType<typeof userNamespaceRequest>][] =
      [
        ['hostUsers unset: the host namespace', {}, [], { mode: 'NODE' }],
        [
          'hostUsers true: the host namespace, whatever the runtime',
          { hostUsers: true },
          [],
          { mode: 'NODE' },
        ],
        [
          'hostUsers false, no handlers reported (containerd 1.6): refused',
          { hostUsers: false },
          [],
          { mode: 'refused', message: NOT_SUPPORTED },
        ],
        [
          'hostUsers false, the default handler without the feature: refused',
          { hostUsers: false },
          [DEFAULT_NONE],
          { mode: 'refused', message: NOT_SUPPORTED },
        ],
        [
          'hostUsers false, only other handlers: refused, the default one not known',
          { hostUsers: false },
          [{ name: 'kata', recursiveReadOnlyMounts: true, userNamespaces: true }],
          { mode: 'refused', message: `${NOT_SUPPORTED}: the handler "" is not known` },
        ],
        [
          'hostUsers false, the default handler supports it: own namespace',
          { hostUsers: false },
          [DEFAULT_ALL],
          { mode: 'POD' },
        ],
      ];
    for (const [what, spec, handlers, want] of table) {
      it(what, () => expect(userNamespaceRequest(pod(spec), handlers)).to.deep.equal(want));
    }

    it('names a RuntimeClass handler as the kubelet does', () => {
      expect(userNamespaceRequest(pod({ hostUsers: false }), [DEFAULT_NONE], 'runc')).to.deep.equal({
        mode: 'refused',
        message:
          'can\'t set `spec.hostUsers: false`, RuntimeClass handler "runc" does not support user namespaces: the handler "runc" is not known',
      });
    });
  });

  describe('user namespaces: UsernsManager (allocation, the pod directory file)', () => {
    const PODS = '/pods';
    const setup = (fs = new MemoryVolumeFS(), random = () => 0) => ({
      fs,
      m: new UsernsManager({ fs, podsDir: PODS, random }),
    });

    it('gives the host namespace without allocating, and refuses what the runtime cannot do', async () => {
      const { m } = setup();
      expect(await m.getOrCreate(pod(), [])).to.deep.equal({ mode: 'NODE' });
      const err = await rejection(m.getOrCreate(pod({ hostUsers: false }), []));
      expect(err.message).to.equal(NOT_SUPPORTED);
      expect(m.allocated).to.equal(0);
    });

    it('allocates 65536 IDs from 65536 on, writes the kubelet file, and keeps the range per pod', async () => {
      const { m, fs } = setup();
      const a = await m.getOrCreate(pod({ hostUsers: false }, 'a'), [DEFAULT_ALL]);
      expect(a).to.deep.equal({
        mode: 'POD',
        uids: [{ hostId: 65536, containerId: 0, length: 65536 }],
        gids: [{ hostId: 65536, containerId: 0, length: 65536 }],
      });
      expect((await fs.readFile(`${PODS}/a/userns`)).toString()).to.equal(
        '{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":0,"length":65536}]}',
      );
      const b = await m.getOrCreate(pod({ hostUsers: false }, 'b'), [DEFAULT_ALL]);
      expect(b.uids?.[0]?.hostId).to.equal(131072);
      // Asked again (every sync builds the config): the same range.
      expect(await m.getOrCreate(pod({ hostUsers: false }, 'a'), [DEFAULT_ALL])).to.deep.equal(a);
      expect(m.allocated).to.equal(2);
    });

    it('starts its search at a random slot, as the kubelet allocator does', async () => {
      const { m } = setup(new MemoryVolumeFS(), () => 0.5);
      const got = await m.getOrCreate(pod({ hostUsers: false }), [DEFAULT_ALL]);
      expect(got.uids?.[0]?.hostId).to.equal((Math.floor(0.5 * 65535) + 1) * 65536);
    });

    it('a new manager (a restarted operator) reads the ranges back from the pod directories', async () => {
      const fs = new MemoryVolumeFS();
      const first = setup(fs).m;
      await first.getOrCreate(pod({ hostUsers: false }, 'a'), [DEFAULT_ALL]);
      const second = setup(fs).m;
      // The other pod does not get a's range, and a keeps it.
      const b = await second.getOrCreate(pod({ hostUsers: false }, 'b'), [DEFAULT_ALL]);
      expect(b.uids?.[0]?.hostId).to.equal(131072);
      const a = await second.getOrCreate(pod({ hostUsers: false }, 'a'), [DEFAULT_ALL]);
      expect(a.uids?.[0]?.hostId).to.equal(65536);
    });

    it('frees the range of a pod whose directory is gone', async () => {
      const { m, fs } = setup();
      await m.getOrCreate(pod({ hostUsers: false }, 'a'), [DEFAULT_ALL]);
      await fs.rm(`${PODS}/a`);
      const b = await m.getOrCreate(pod({ hostUsers: false }, 'b'), [DEFAULT_ALL]);
      expect(b.uids?.[0]?.hostId).to.equal(65536);
      expect(m.allocated).to.equal(1);
    });

    it('refuses a mappings file the kubelet would refuse', async () => {
      const { m, fs } = setup();
      await fs.mkdir(`${PODS}/bad`);
      await fs.writeFile(`${PODS}/bad/userns`, Buffer.from('{"uidMappings":[],"gidMappings":[]}'));
      const err = await rejection(m.getOrCreate(pod({ hostUsers: false }, 'bad'), [DEFAULT_ALL]));
      expect(err.message).to.equal(
        'user namespace: invalid user namespace configuration: no more than one mapping allowed.',
      );
    });

    it('parseMappingsFile: the kubelet checks, in its order', () => {
      const file = (u: object[], g: object[]) => JSON.stringify({ uidMappings: u, gidMappings: g });
      const m = (hostId: number, containerId = 0, length = 65536) => ({ hostId, containerId, length });
      expect(parseMappingsFile(mappingsFileContent(196608))).to.equal(196608);
      const bad: [string, string][] = [
        ['not json', 'invalid user namespace mappings file: '],
        [file([m(65536), m(131072)], [m(65536)]), 'no more than one mapping allowed.'],
        [file([m(65536)], []), 'GID and UID mappings should be identical.'],
        [file([m(65536)], [m(131072)]), 'GID and UID mapping should be identical'],
        [file([m(65536, 1)], [m(65536, 1)]), 'UID 0 must be mapped'],
        [file([m(65536, 0, 10)], [m(65536, 0, 10)]), 'wrong user namespace length 10'],
        [file([m(1000)], [m(1000)]), 'id 1000 is out of range'],
      ];
      for (const [content, why] of bad) {
        expect(() => parseMappingsFile(content), why).to.throw(KindError, why);
      }
    });
  });

  describe('recursive read-only mounts: resolveRecursiveReadOnly (the kubelet test table)', () => {
    type M = Pick<VolumeMount, 'name' | 'readOnly' | 'mountPropagation' | 'recursiveReadOnly'>;
    const table: [string, M, boolean, ReturnType<typeof resolveRecursiveReadOnly>][] = [
      ['unset', { name: 'v' }, false, { ok: true, recursive: false }],
      [
        'Disabled on a read-write mount',
        { name: 'v', recursiveReadOnly: 'Disabled' },
        true,
        { ok: true, recursive: false },
      ],
      [
        'IfPossible on a runtime with support',
        { name: 'v', readOnly: true, recursiveReadOnly: 'IfPossible' },
        true,
        { ok: true, recursive: true },
      ],
      [
        'IfPossible on a runtime without: plain read-only',
        { name: 'v', readOnly: true, recursiveReadOnly: 'IfPossible' },
        false,
        { ok: true, recursive: false },
      ],
      [
        'Enabled on a runtime with support',
        { name: 'v', readOnly: true, recursiveReadOnly: 'Enabled', mountPropagation: 'None' },
        true,
        { ok: true, recursive: true },
      ],
      [
        'Enabled on a runtime without: refused',
        { name: 'v', readOnly: true, recursiveReadOnly: 'Enabled' },
        false,
        {
          ok: false,
          message: 'volume "v" requested recursive read-only mode, but it is not supported by the runtime',
        },
      ],
      [
        'Enabled on a read-write mount',
        { name: 'v', recursiveReadOnly: 'Enabled' },
        true,
        { ok: false, message: 'volume "v" requested recursive read-only mode, but it is not read-only' },
      ],
      [
        'IfPossible with propagation',
        { name: 'v', readOnly: true, recursiveReadOnly: 'IfPossible', mountPropagation: 'HostToContainer' },
        true,
        {
          ok: false,
          message:
            'volume "v" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"',
        },
      ],
      [
        'an unknown mode',
        { name: 'v', readOnly: true, recursiveReadOnly: 'Sometimes' as never },
        true,
        { ok: false, message: 'unknown recursive read-only mode "Sometimes"' },
      ],
    ];
    for (const [what, m, supported, want] of table) {
      it(what, () => expect(resolveRecursiveReadOnly(m, supported)).to.deep.equal(want));
    }

    it("the default handler's feature decides; a runtime without handlers supports nothing", () => {
      expect(handlerSupportsRecursiveReadOnly([DEFAULT_ALL])).to.equal(true);
      expect(handlerSupportsRecursiveReadOnly([DEFAULT_NONE])).to.equal(false);
      expect(handlerSupportsRecursiveReadOnly([])).to.equal(false);
      expect(handlerSupportsRecursiveReadOnly([{ ...DEFAULT_ALL, name: 'kata' }])).to.equal(false);
    });
  });

  describe('makeMounts: recursive read-only and image volumes', () => {
    const volumes = new Map<string, MountedVolume>([
      [
        'data',
        { hostPath: '/pods/u/volumes/kubernetes.io~empty-dir/data', readOnly: false, selinuxRelabel: true },
      ],
      ['img', { hostPath: '', readOnly: true, selinuxRelabel: false }],
    ]);
    const c = (mounts: VolumeMount[]): Pick<Container, 'name' | 'volumeMounts'> => ({
      name: 'app',
      volumeMounts: mounts,
    });

    it('marks a mount recursive where the handler supports it, plain read-only where not (IfPossible)', () => {
      const m: VolumeMount = {
        name: 'data',
        mountPath: '/d',
        readOnly: true,
        recursiveReadOnly: 'IfPossible',
      };
      const on = makeMounts({ container: c([m]), volumes, env: [], supportsRecursiveReadOnly: true });
      const off = makeMounts({ container: c([m]), volumes, env: [] });
      expect(on.ok && on.mounts[0]).to.deep.include({ readonly: true, recursiveReadOnly: true });
      expect(off.ok && off.mounts[0]).to.deep.include({ readonly: true });
      expect(off.ok && off.mounts[0]?.recursiveReadOnly).to.equal(undefined);
    });

    it("refuses Enabled without support with the kubelet's message (CreateContainerConfigError)", () => {
      const m: VolumeMount = { name: 'data', mountPath: '/d', readOnly: true, recursiveReadOnly: 'Enabled' };
      expect(makeMounts({ container: c([m]), volumes, env: [] })).to.deep.equal({
        ok: false,
        message:
          'failed to resolve recursive read-only mode: volume "data" requested recursive read-only mode, but it is not supported by the runtime',
      });
    });

    it('mounts an image volume by image ID without a host path; its subPath is a directory of the image', () => {
      const made = makeMounts({
        container: c([
          { name: 'img', mountPath: '/volume' },
          { name: 'img', mountPath: '/etc-of-image', subPath: 'etc' },
        ]),
        volumes,
        env: [],
        imageVolumes: new Map([['img', 'sha256:abc']]),
      });
      expect(made).to.deep.equal({
        ok: true,
        subPaths: [],
        mounts: [
          {
            containerPath: '/volume',
            hostPath: '',
            readonly: true,
            propagation: 'PRIVATE',
            image: 'sha256:abc',
          },
          {
            containerPath: '/etc-of-image',
            hostPath: '',
            readonly: true,
            propagation: 'PRIVATE',
            image: 'sha256:abc',
            imageSubPath: 'etc',
          },
        ],
      });
    });
  });

  describe('image volumes: containerImageVolumes and imageMountRefusal', () => {
    const pulls = new Map([
      ['ok', { ok: true as const, imageRef: 'sha256:1' }],
      ['bad', { ok: false as const, error: 'ErrImagePull' as const, message: 'failed to pull' }],
      ['off', { ok: false as const, error: 'ImagePullBackOff' as const, message: 'Back-off pulling image' }],
    ]);
    const mounts = (...names: string[]) => ({
      volumeMounts: names.map((name) => ({ name, mountPath: `/${name}` })),
    });

    it("gives the images of the container's image volumes, none of the others", () => {
      expect(containerImageVolumes(pulls, mounts('ok', 'cfg'))).to.deep.equal({
        ok: true,
        images: new Map([['ok', 'sha256:1']]),
      });
      expect(containerImageVolumes(new Map(), mounts('ok'))).to.deep.equal({ ok: true, images: undefined });
    });

    it('fails with every failed pull it mounts (the last one is the reason)', () => {
      expect(containerImageVolumes(pulls, mounts('ok', 'bad', 'off'))).to.deep.equal({
        ok: false,
        failed: [
          { error: 'ErrImagePull', message: 'failed to pull' },
          { error: 'ImagePullBackOff', message: 'Back-off pulling image' },
        ],
      });
    });

    it('a runtime without image mounts refuses the config with the CRI ImageVolumeMountFailed', () => {
      const m = [{ containerPath: '/volume', hostPath: '', image: 'sha256:1' }];
      expect(imageMountRefusal(m, true)).to.equal(undefined);
      expect(imageMountRefusal([{ containerPath: '/x', hostPath: '/h' }], false)).to.equal(undefined);
      expect(imageMountRefusal(m, false)).to.equal(
        'ImageVolumeMountFailed: cannot mount image "sha256:1" at "/volume": the container runtime does not support image volumes (CRI Mount.image: containerd 2.1 or later)',
      );
    });
  });

  describe('admission: SupplementalGroupsPolicy=Strict (predicateAdmitHandler)', () => {
    const node = (features?: AdmissionNode['features']): AdmissionNode => ({
      name: 'n',
      labels: {},
      taints: [],
      allocatable: new Map([['pods', 10]]),
      ...(features ? { features } : {}),
    });
    const refused = {
      admit: false,
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
    };
    const table: [string, 'Merge' | 'Strict' | undefined, AdmissionNode['features'] | undefined, object][] = [
      ['no policy, no features (containerd 1.6)', undefined, undefined, { admit: true }],
      ['Merge, no features', 'Merge', undefined, { admit: true }],
      ['Strict, no features (containerd 1.6)', 'Strict', undefined, refused],
      ['Strict, feature false', 'Strict', { supplementalGroupsPolicy: false }, refused],
      ['Strict, feature true (sim)', 'Strict', { supplementalGroupsPolicy: true }, { admit: true }],
    ];
    for (const [what, policy, features, want] of table) {
      it(what, () => {
        const p = pod(policy ? { securityContext: { supplementalGroupsPolicy: policy } } : {});
        expect(admitPod(p, node(features), [])).to.deep.equal(want);
      });
    }

    it('comes after the OS checks and before the resources, as in the kubelet', () => {
      const strict = { securityContext: { supplementalGroupsPolicy: 'Strict' as const } };
      expect(admitPod(pod({ ...strict, os: { name: 'windows' } }), node(), [])).to.include({
        reason: 'PodOSNotSupported',
      });
      const full = { ...node(), allocatable: new Map([['pods', 0]]) };
      expect(admitPod(pod(strict), full, [])).to.include({ reason: 'SupplementalGroupsPolicyNotSupported' });
    });
  });

  describe('container statuses: volumeMounts and user (convertToAPIContainerStatuses)', () => {
    const app: Container = {
      name: 'app',
      image: 'busybox',
      volumeMounts: [
        { name: 'rw', mountPath: '/rw' },
        { name: 'ro', mountPath: '/ro', readOnly: true },
        { name: 'rro', mountPath: '/rro', readOnly: true, recursiveReadOnly: 'IfPossible' },
        { name: 'must', mountPath: '/must', readOnly: true, recursiveReadOnly: 'Enabled' },
      ],
    };

    it('lists every mount; read-only ones say whether they are recursive on this runtime', () => {
      expect(volumeMountStatuses(app, true)).to.deep.equal([
        { name: 'rw', mountPath: '/rw' },
        { name: 'ro', mountPath: '/ro', readOnly: true, recursiveReadOnly: 'Disabled' },
        { name: 'rro', mountPath: '/rro', readOnly: true, recursiveReadOnly: 'Enabled' },
        { name: 'must', mountPath: '/must', readOnly: true, recursiveReadOnly: 'Enabled' },
      ]);
      expect(volumeMountStatuses(app, false)).to.deep.equal([
        { name: 'rw', mountPath: '/rw' },
        { name: 'ro', mountPath: '/ro', readOnly: true, recursiveReadOnly: 'Disabled' },
        { name: 'rro', mountPath: '/rro', readOnly: true, recursiveReadOnly: 'Disabled' },
        { name: 'must', mountPath: '/must', readOnly: true, recursiveReadOnly: 'Disabled' },
      ]);
      expect(volumeMountStatuses({ name: 'x' } as Container, true)).to.equal(undefined);
    });

    const p = pod({ containers: [app] });
    const record = (over: Partial<KubeContainerStatus> = {}): KubeContainerStatus => ({
      id: asContainerID('c1'),
      name: 'app',
      state: 'running',
      runtimeType: 'sim',
      restartCount: 0,
      hash: 'h',
      createdAt: 1,
      startedAt: 2,
      ...over,
    });
    const runtime = (...containers: KubeContainerStatus[]): Pick<RuntimePodStatus, 'containers'> => ({
      containers,
    });
    const convert = (rt: Pick<RuntimePodStatus, 'containers'>, previous?: ContainerStatus[]) =>
      convertToAPIContainerStatuses(p, rt, {
        containers: [app],
        previousStatuses: previous ?? null,
        hasInitContainers: false,
        isInitContainer: false,
        supportsRecursiveReadOnly: true,
      });

    it('a waiting container shows its mounts; a started one keeps those of its previous status', () => {
      const waiting = convert(runtime());
      expect(waiting[0]?.volumeMounts).to.deep.equal(volumeMountStatuses(app, true));
      const running = convert(runtime(record()), waiting);
      expect(running[0]?.state?.running).to.not.equal(undefined);
      expect(running[0]?.volumeMounts).to.deep.equal(waiting[0]?.volumeMounts);
      // Without a previous status (as the kubelet: the runtime does not know volume names) none are shown.
      expect(convert(runtime(record()))[0]?.volumeMounts).to.equal(undefined);
    });

    it("reports the runtime's user (SupplementalGroupsPolicy), none when the runtime reports none", () => {
      const withUser = record({
        user: { linux: { uid: 1000, gid: 1000, supplementalGroups: [1000, 60000] } },
      });
      expect(convert(runtime(withUser))[0]?.user).to.deep.equal({
        linux: { uid: 1000, gid: 1000, supplementalGroups: [1000, 60000] },
      });
      expect(convert(runtime(record()))[0]?.user).to.equal(undefined);
    });
  });
});
