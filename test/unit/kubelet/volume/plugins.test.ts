import { expect } from 'chai';
import type { Volume } from '../../../../src/api/volumes.js';
import {
  findPlugin,
  noPluginMessage,
  requiresRemount,
  type VolumeKind,
} from '../../../../src/kubelet/volume/plugins.js';

const SUPPORTED =
  'emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim, csi, image';

describe('volumemanager/plugins', () => {
  describe('findPlugin', () => {
    const served: [string, Volume, VolumeKind][] = [
      ['emptyDir', { name: 'v', emptyDir: {} }, 'emptyDir'],
      ['hostPath', { name: 'v', hostPath: { path: '/srv' } }, 'hostPath'],
      ['configMap', { name: 'v', configMap: { name: 'c' } }, 'configMap'],
      ['secret', { name: 'v', secret: { secretName: 's' } }, 'secret'],
      ['downwardAPI', { name: 'v', downwardAPI: { items: [] } }, 'downwardAPI'],
      ['projected', { name: 'v', projected: { sources: [] } }, 'projected'],
      [
        'persistentVolumeClaim',
        { name: 'v', persistentVolumeClaim: { claimName: 'c' } },
        'persistentVolumeClaim',
      ],
      ['image (ImageVolume: the stub plugin)', { name: 'v', image: { reference: 'busybox:1.36' } }, 'image'],
      ['no source at all (the API server defaults emptyDir)', { name: 'v' }, 'emptyDir'],
      [
        'a source set to null next to a real one',
        { name: 'v', nfs: null, configMap: { name: 'c' } },
        'configMap',
      ],
      ['a source set to undefined', { name: 'v', csi: undefined }, 'emptyDir'],
      ['an inline csi volume', { name: 'v', csi: { driver: 'hostpath.csi.k8s.io' } }, 'csi'],
    ];
    for (const [what, vol, kind] of served) {
      it(`serves ${what} with the ${kind} plugin`, () => {
        expect(findPlugin(vol)).to.deep.equal({ ok: true, kind });
      });
    }

    const refused: [string, Volume, string, string][] = [
      [
        'nfs',
        { name: 'data', nfs: { server: 'nfs.local', path: '/exports' } },
        'nfs',
        `kubelet-operator does not support nfs volumes (supported: ${SUPPORTED})`,
      ],
      [
        'ephemeral',
        { name: 'scratch', ephemeral: { volumeClaimTemplate: {} } },
        'ephemeral',
        `kubelet-operator does not support ephemeral volumes (supported: ${SUPPORTED})`,
      ],
      [
        'two supported sources',
        { name: 'both', emptyDir: {}, hostPath: { path: '/x' } },
        'emptyDir, hostPath',
        'the volume has more than one source (emptyDir, hostPath)',
      ],
      [
        'a supported and an unsupported source',
        { name: 'mixed', configMap: { name: 'c' }, iscsi: {} },
        'iscsi',
        'the volume has more than one source (configMap, iscsi)',
      ],
    ];
    for (const [what, vol, source, detail] of refused) {
      it(`refuses ${what} with the kubelet's no-plugin message`, () => {
        expect(findPlugin(vol)).to.deep.equal({
          ok: false,
          source,
          message: `failed to get Plugin from volumeSpec for volume ${JSON.stringify(vol.name)} err=no volume plugin matched: ${detail}`,
        });
      });
    }
  });

  it('noPluginMessage quotes the volume name as Go %q does', () => {
    expect(noPluginMessage('a"b', 'why')).to.equal(
      'failed to get Plugin from volumeSpec for volume "a\\"b" err=no volume plugin matched: why',
    );
  });

  it('requiresRemount: only the volumes made from API data follow their sources', () => {
    const table: [VolumeKind, boolean][] = [
      ['configMap', true],
      ['secret', true],
      ['downwardAPI', true],
      ['projected', true],
      ['emptyDir', false],
      ['hostPath', false],
      ['persistentVolumeClaim', false],
      ['image', false],
    ];
    for (const [kind, want] of table) expect(requiresRemount(kind), kind).to.equal(want);
  });
});
