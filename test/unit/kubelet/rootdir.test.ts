import { expect } from 'chai';
import { kubeletRootPaths, pluginDir, resolveKubeletHostPath } from '../../../src/kubelet/rootdir.js';

describe('kubelet/rootdir', () => {
  it('lays out a root as the kubelet does (kubelet_getters.go)', () => {
    expect(kubeletRootPaths('/state/nodes/vn-a/')).to.deep.equal({
      root: '/state/nodes/vn-a',
      pods: '/state/nodes/vn-a/pods',
      plugins: '/state/nodes/vn-a/plugins',
      pluginsRegistry: '/state/nodes/vn-a/plugins_registry',
      devicePlugins: '/state/nodes/vn-a/device-plugins',
      checkpoints: '/state/nodes/vn-a/checkpoints',
    });
    expect(pluginDir('/var/lib/kubelet', 'csi-hostpath')).to.equal('/var/lib/kubelet/plugins/csi-hostpath');
  });

  const table: [string, string | undefined, string][] = [
    ['/var/lib/kubelet/plugins_registry', '/s/nodes/a', '/s/nodes/a/plugins_registry'],
    ['/var/lib/kubelet//pods/x', '/s/nodes/a/', '/s/nodes/a/pods/x'],
    ['/var/lib/kubelet', '/s/nodes/a', '/s/nodes/a'],
    ['/var/lib/kubeletx', '/s/nodes/a', '/var/lib/kubeletx'],
    ['/etc/kubernetes', '/s/nodes/a', '/etc/kubernetes'],
    ['/var/lib/kubelet/plugins', undefined, '/var/lib/kubelet/plugins'],
    ['/var/lib/kubelet/plugins', '/var/lib/kubelet/', '/var/lib/kubelet/plugins'],
  ];
  for (const [path, root, want] of table) {
    it(`resolveKubeletHostPath(${path}, ${root ?? '-'}) = ${want}`, () => {
      expect(resolveKubeletHostPath(path, root)).to.equal(want);
    });
  }
});
