import { expect } from 'chai';
import {
  PluginDirs,
  podContainerDir,
  podDir,
  podEtcHostsPath,
  podPluginDir,
  podVolumeDir,
} from '../../../../src/kubelet/volume/podpaths.js';

describe('volumemanager/paths', () => {
  it('names the plugin directories as the kubelet escapes them', () => {
    expect(PluginDirs).to.deep.equal({
      emptyDir: 'kubernetes.io~empty-dir',
      configMap: 'kubernetes.io~configmap',
      secret: 'kubernetes.io~secret',
      downwardAPI: 'kubernetes.io~downward-api',
      projected: 'kubernetes.io~projected',
      local: 'kubernetes.io~local-volume',
    });
  });

  const table: [string, string, string][] = [
    ['podDir', podDir('/var/lib/kubelet/pods', 'u1'), '/var/lib/kubelet/pods/u1'],
    ['podDir with a trailing slash', podDir('/var/lib/kubelet/pods/', 'u1'), '/var/lib/kubelet/pods/u1'],
    [
      'podVolumeDir',
      podVolumeDir('/pods', 'u1', PluginDirs.configMap, 'cfg'),
      '/pods/u1/volumes/kubernetes.io~configmap/cfg',
    ],
    [
      'podPluginDir',
      podPluginDir('/pods', 'u1', PluginDirs.emptyDir, 'cache'),
      '/pods/u1/plugins/kubernetes.io~empty-dir/cache',
    ],
    ['podContainerDir', podContainerDir('/pods', 'u1', 'app'), '/pods/u1/containers/app'],
    ['podEtcHostsPath', podEtcHostsPath('/pods', 'u1'), '/pods/u1/etc-hosts'],
  ];
  for (const [what, got, want] of table) {
    it(`${what} -> ${want}`, () => expect(got).to.equal(want));
  }
});
