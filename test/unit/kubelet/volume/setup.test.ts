import { expect } from 'chai';
import type { Volume } from '../../../../src/api/volumes.js';
import { PluginDirs } from '../../../../src/kubelet/volume/podpaths.js';
import { findPlugin } from '../../../../src/kubelet/volume/plugins.js';
import { datavolumePlugins, setUpVolume, tearDownVolume } from '../../../../src/kubelet/volume/setup.js';
import { ctxOf, dirs, harness, NS, PODS, podWith, UID } from '../volumemanager/fixtures.js';

describe('volumemanager/setup', () => {
  it('tears down the plugin directories the operator creates (not hostPath or local PVs)', () => {
    expect(datavolumePlugins()).to.deep.equal([
      PluginDirs.emptyDir,
      PluginDirs.configMap,
      PluginDirs.secret,
      PluginDirs.downwardAPI,
      PluginDirs.projected,
    ]);
  });

  const table: [Volume, string][] = [
    [{ name: 'v' }, dirs.emptyDir('v')],
    [{ name: 'v', emptyDir: {} }, dirs.emptyDir('v')],
    [{ name: 'v', hostPath: { path: '/srv/x' } }, '/srv/x'],
    [{ name: 'v', configMap: { name: 'cm' } }, dirs.configMap('v')],
    [{ name: 'v', secret: { secretName: 's' } }, dirs.secret('v')],
    [{ name: 'v', downwardAPI: {} }, dirs.downwardAPI('v')],
    [{ name: 'v', projected: {} }, dirs.projected('v')],
    [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }, '/srv/pv'],
  ];
  for (const [vol, hostPath] of table) {
    const kind = Object.keys(vol).find((k) => k !== 'name') ?? 'no source';
    it(`dispatches ${kind} to its plugin (${hostPath})`, async () => {
      const h = harness();
      h.sources.configMaps.set(`${NS}/cm`, { data: {} });
      h.sources.secrets.set(`${NS}/s`, { data: {} });
      h.sources.claims.set(`${NS}/c`, {
        metadata: { uid: 'claim-uid' },
        spec: { volumeName: 'pv' },
        status: { phase: 'Bound' },
      });
      h.sources.volumes.set('pv', {
        metadata: { name: 'pv' },
        spec: { hostPath: { path: '/srv/pv' }, claimRef: { namespace: NS, name: 'c', uid: 'claim-uid' } },
      });
      const match = findPlugin(vol);
      if (!match.ok) return expect.fail(match.message);
      const r = await setUpVolume(ctxOf(h), { pod: podWith([vol]), volume: vol, kind: match.kind });
      if (!r.ok) return expect.fail(r.message);
      expect(r.volume.hostPath).to.equal(hostPath);
    });
  }

  it('tearDownVolume removes one volume directory', async () => {
    const h = harness();
    await h.fs.mkdir(dirs.configMap('cfg'));
    await h.fs.mkdir(dirs.configMap('other'));
    await tearDownVolume(ctxOf(h), UID, PluginDirs.configMap, 'cfg');
    expect(await h.fs.readdir(`${PODS}/${UID}/volumes/kubernetes.io~configmap`)).to.deep.equal(['other']);
  });
});
