import { expect } from 'chai';
import type { VolumeMount } from '../../../../src/api/volumes.js';
import {
  makeMounts,
  subPathError,
  translateMountPropagation,
  type MakeMountsInput,
} from '../../../../src/kubelet/volumemanager/makemounts.js';
import type { MountedVolume } from '../../../../src/kubelet/volume/plugin.js';

const VOLUMES = new Map<string, MountedVolume>([
  [
    'cache',
    { hostPath: '/pods/u/volumes/kubernetes.io~empty-dir/cache', readOnly: false, selinuxRelabel: true },
  ],
  [
    'config',
    { hostPath: '/pods/u/volumes/kubernetes.io~configmap/config', readOnly: true, selinuxRelabel: true },
  ],
  ['host', { hostPath: '/srv/data', readOnly: false, selinuxRelabel: false }],
]);

function input(mounts: VolumeMount[], over: Partial<MakeMountsInput> = {}): MakeMountsInput {
  return {
    container: { name: 'app', volumeMounts: mounts },
    volumes: VOLUMES,
    env: [
      { name: 'POD_NAME', value: 'web-0' },
      { name: 'EMPTY', value: '' },
      { name: 'NS', value: 'prod' },
    ],
    ...over,
  };
}

describe('volumemanager/makemounts', () => {
  describe('translateMountPropagation', () => {
    const table: [VolumeMount['mountPropagation'], string | undefined][] = [
      [undefined, 'PRIVATE'],
      ['None', 'PRIVATE'],
      ['HostToContainer', 'HOST_TO_CONTAINER'],
      ['Bidirectional', 'BIDIRECTIONAL'],
      ['Sideways' as VolumeMount['mountPropagation'], undefined],
    ];
    for (const [mode, want] of table) {
      it(`${mode ?? 'unset'} -> ${want ?? 'invalid'}`, () =>
        expect(translateMountPropagation(mode)).to.equal(want));
    }
  });

  describe('subPathError', () => {
    const table: [string, string | undefined][] = [
      ['logs', undefined],
      ['a/b/c', undefined],
      ['..foo', undefined],
      ['a/..b', undefined],
      ['/etc', 'error SubPath `/etc` must not be an absolute path'],
      ['..', "unable to provision SubPath `..`: must not contain '..'"],
      ['a/../../b', "unable to provision SubPath `a/../../b`: must not contain '..'"],
      ['a/..', "unable to provision SubPath `a/..`: must not contain '..'"],
      ['a\\..\\b', "unable to provision SubPath `a\\..\\b`: must not contain '..'"],
    ];
    for (const [subPath, want] of table) {
      it(`${subPath} -> ${want ?? 'ok'}`, () => expect(subPathError(subPath)).to.equal(want));
    }
  });

  describe('makeMounts', () => {
    it('mounts each volumeMount at its path: private, relabelled when the plugin says so', () => {
      const r = makeMounts(
        input([
          { name: 'cache', mountPath: '/cache' },
          { name: 'host', mountPath: '/data' },
        ]),
      );
      expect(r).to.deep.equal({
        ok: true,
        subPaths: [],
        mounts: [
          {
            containerPath: '/cache',
            hostPath: '/pods/u/volumes/kubernetes.io~empty-dir/cache',
            readonly: false,
            propagation: 'PRIVATE',
            selinuxRelabel: true,
          },
          { containerPath: '/data', hostPath: '/srv/data', readonly: false, propagation: 'PRIVATE' },
        ],
      });
    });

    const readOnly: [string, VolumeMount, boolean][] = [
      ['a writable volume, writable mount', { name: 'cache', mountPath: '/c' }, false],
      ['a writable volume, readOnly mount', { name: 'cache', mountPath: '/c', readOnly: true }, true],
      ['a configMap is always read-only', { name: 'config', mountPath: '/c', readOnly: false }, true],
      ['a configMap with readOnly unset', { name: 'config', mountPath: '/c' }, true],
    ];
    for (const [what, m, want] of readOnly) {
      it(`readOnly: ${what}`, () => {
        const r = makeMounts(input([m]));
        if (!r.ok) return expect.fail(r.message);
        expect(r.mounts[0]!.readonly).to.equal(want);
      });
    }

    it('gives a relative mountPath a leading slash', () => {
      const r = makeMounts(input([{ name: 'cache', mountPath: 'var/cache' }]));
      if (!r.ok) return expect.fail(r.message);
      expect(r.mounts[0]!.containerPath).to.equal('/var/cache');
    });

    const propagation: [VolumeMount['mountPropagation'], string][] = [
      ['HostToContainer', 'HOST_TO_CONTAINER'],
      ['Bidirectional', 'BIDIRECTIONAL'],
      ['None', 'PRIVATE'],
    ];
    for (const [mode, want] of propagation) {
      it(`propagation ${mode} -> ${want}`, () => {
        const r = makeMounts(input([{ name: 'host', mountPath: '/h', mountPropagation: mode }]));
        if (!r.ok) return expect.fail(r.message);
        expect(r.mounts[0]!.propagation).to.equal(want);
      });
    }

    it('refuses an unknown propagation mode', () => {
      const r = makeMounts(
        input([
          { name: 'host', mountPath: '/h', mountPropagation: 'Odd' as VolumeMount['mountPropagation'] },
        ]),
      );
      expect(r).to.deep.equal({ ok: false, message: 'invalid MountPropagation mode: "Odd"' });
    });

    it('refuses a mount of a volume that is not set up', () => {
      expect(makeMounts(input([{ name: 'nope', mountPath: '/x' }]))).to.deep.equal({
        ok: false,
        message: 'cannot find volume "nope" to mount into container "app"',
      });
    });

    const subPaths: [string, Partial<VolumeMount>, string][] = [
      ['subPath', { subPath: 'logs/app' }, 'logs/app'],
      ['subPathExpr from the environment', { subPathExpr: '$(NS)/$(POD_NAME)' }, 'prod/web-0'],
      ['subPathExpr with literal text', { subPathExpr: 'pods-$(POD_NAME).d' }, 'pods-web-0.d'],
      ['subPathExpr without variables', { subPathExpr: 'plain' }, 'plain'],
      ['subPathExpr with an escaped $$', { subPathExpr: '$$(POD_NAME)' }, '$(POD_NAME)'],
    ];
    for (const [what, m, sub] of subPaths) {
      it(`resolves ${what} inside the volume, for the caller to create`, () => {
        const r = makeMounts(input([{ name: 'cache', mountPath: '/c', ...m }]));
        if (!r.ok) return expect.fail(r.message);
        expect(r.mounts[0]!.hostPath).to.equal(`/pods/u/volumes/kubernetes.io~empty-dir/cache/${sub}`);
        expect(r.subPaths).to.deep.equal([
          {
            volumePath: '/pods/u/volumes/kubernetes.io~empty-dir/cache',
            subPath: sub,
            mountName: 'cache',
            mountIndex: 0,
          },
        ]);
      });
    }

    const refusedSubPaths: [string, Partial<VolumeMount>, string][] = [
      ['an undefined variable', { subPathExpr: '$(MISSING)/x' }, 'missing value for MISSING'],
      ['an empty variable', { subPathExpr: '$(EMPTY)' }, 'missing value for EMPTY'],
      [
        'several missing variables, sorted',
        { subPathExpr: '$(ZED)/$(ALPHA)/$(ZED)' },
        'missing value for ALPHA, ZED',
      ],
      ['an absolute subPath', { subPath: '/etc' }, 'error SubPath `/etc` must not be an absolute path'],
      [
        'a subPath with ..',
        { subPath: '../../etc' },
        "unable to provision SubPath `../../etc`: must not contain '..'",
      ],
      [
        'a subPathExpr expanding to ..',
        { subPathExpr: '$(UP)/x' },
        "unable to provision SubPath `../x`: must not contain '..'",
      ],
      [
        'a subPathExpr expanding to an absolute path',
        { subPathExpr: '$(ROOT)etc' },
        'error SubPath `/etc` must not be an absolute path',
      ],
    ];
    for (const [what, m, message] of refusedSubPaths) {
      it(`refuses ${what}: ${message}`, () => {
        const env = [...input([]).env, { name: 'UP', value: '..' }, { name: 'ROOT', value: '/' }];
        expect(makeMounts(input([{ name: 'cache', mountPath: '/c', ...m }], { env }))).to.deep.equal({
          ok: false,
          message,
        });
      });
    }

    it('adds the managed /etc/hosts, read-write and private, after the volume mounts', () => {
      const r = makeMounts(
        input([{ name: 'cache', mountPath: '/c' }], { etcHostsPath: '/pods/u/etc-hosts' }),
      );
      if (!r.ok) return expect.fail(r.message);
      expect(r.mounts.map((m) => m.containerPath)).to.deep.equal(['/c', '/etc/hosts']);
      expect(r.mounts[1]).to.deep.equal({
        containerPath: '/etc/hosts',
        hostPath: '/pods/u/etc-hosts',
        readonly: false,
        propagation: 'PRIVATE',
      });
    });

    it('does not add /etc/hosts when the container mounts something there itself', () => {
      const r = makeMounts(
        input([{ name: 'config', mountPath: '/etc/hosts', subPath: 'hosts' }], {
          etcHostsPath: '/pods/u/etc-hosts',
        }),
      );
      if (!r.ok) return expect.fail(r.message);
      expect(r.mounts).to.have.length(1);
      expect(r.mounts[0]!.hostPath).to.equal('/pods/u/volumes/kubernetes.io~configmap/config/hosts');
    });

    it('does not add /etc/hosts when the pod gets none', () => {
      const r = makeMounts(input([]));
      expect(r).to.deep.equal({ ok: true, mounts: [], subPaths: [] });
    });
  });

  describe("a node plugin's /var/lib/kubelet hostPaths: mounted at the node root's real path as well", () => {
    const root = '/state/nodes/vn-a';
    const volumes = new Map<string, MountedVolume>([
      [
        'pods',
        {
          hostPath: `${root}/pods`,
          readOnly: false,
          selinuxRelabel: false,
          kubeletPath: '/var/lib/kubelet/pods',
        },
      ],
      [
        'sockets',
        {
          hostPath: `${root}/plugins/csi-mock`,
          readOnly: false,
          selinuxRelabel: false,
          kubeletPath: '/var/lib/kubelet/plugins/csi-mock',
        },
      ],
      ['plain', { hostPath: '/var/lib/kubelet/pods', readOnly: false, selinuxRelabel: false }],
    ]);
    const table: [string, VolumeMount, string[]][] = [
      [
        'at the path the pod named: both',
        { name: 'pods', mountPath: '/var/lib/kubelet/pods', mountPropagation: 'Bidirectional' },
        ['/var/lib/kubelet/pods', `${root}/pods`],
      ],
      [
        'at the path the pod named, with a trailing slash: both',
        { name: 'pods', mountPath: '/var/lib/kubelet/pods/' },
        ['/var/lib/kubelet/pods/', `${root}/pods`],
      ],
      ['elsewhere (/csi): only there', { name: 'sockets', mountPath: '/csi' }, ['/csi']],
      [
        'a subPath of it: only there',
        { name: 'pods', mountPath: '/var/lib/kubelet/pods', subPath: 'x' },
        ['/var/lib/kubelet/pods'],
      ],
      [
        'a node whose root is /var/lib/kubelet: once',
        { name: 'plain', mountPath: '/var/lib/kubelet/pods' },
        ['/var/lib/kubelet/pods'],
      ],
    ];
    for (const [name, m, want] of table) {
      it(name, () => {
        const r = makeMounts(input([m], { volumes }));
        if (!r.ok) throw new Error(r.message);
        expect(r.mounts.map((x) => x.containerPath)).to.deep.equal(want);
        // The mirror is the same mount: source, propagation, read-only.
        for (const x of r.mounts) {
          expect(x.hostPath).to.equal(r.mounts[0]!.hostPath);
          expect(x.propagation).to.equal(r.mounts[0]!.propagation);
          expect(x.readonly).to.equal(r.mounts[0]!.readonly);
        }
      });
    }
  });
});
