/**
 * A VirtualNode's kubelet root directory (the kubelet's --root-dir, `/var/lib/kubelet`), laid out as
 * kubelet_getters.go and the kubelet's config defaults lay it out:
 *
 *   <root>/pods/                 pod directories (their layout: src/kubelet/volume/podpaths.ts)
 *   <root>/plugins_registry/     node plugins put their registration sockets here (the plugin watcher's dir)
 *   <root>/plugins/<name>/       a node plugin's own data (CSI drivers' sockets, `csi.sock`)
 *   <root>/device-plugins/       the device manager's `kubelet.sock` and device plugins' sockets
 *   <root>/checkpoints/          checkpoints
 *   <root>/pod-resources/, <root>/pods-api/   the local gRPC APIs (src/kubelet/apis/shell/server.ts)
 *
 * One kubelet owns one `/var/lib/kubelet`; one operator process plays many kubelets on one host, so each
 * VirtualNode has its own root (`<stateDir>/nodes/<node>`, src/app/podenvironment.ts nodeRootDir) and node-plugin
 * pods bound to it find their `/var/lib/kubelet/...` hostPaths there (resolveKubeletHostPath).
 *
 * Pure path arithmetic; nothing here touches the disk.
 */
import { joinPath } from './volume/paths.js';

/** The root directory a kubelet uses when it is given none, and that node plugins' manifests name. */
export const DefaultKubeletRootDir = '/var/lib/kubelet';

/** The kubelet's directory names under its root (kubeletconfig.DefaultKubelet*DirName). */
export const KubeletRootDirNames = {
  pods: 'pods',
  plugins: 'plugins',
  pluginsRegistry: 'plugins_registry',
  devicePlugins: 'device-plugins',
  checkpoints: 'checkpoints',
} as const;

/** The device manager's registration socket's file name (deviceplugin v1beta1 KubeletSocket). */
export const DevicePluginKubeletSocket = 'kubelet.sock';

export interface KubeletRootPaths {
  root: string;
  pods: string;
  plugins: string;
  pluginsRegistry: string;
  devicePlugins: string;
  checkpoints: string;
}

/** Every node-level directory of a root (getPodsDir, getPluginsDir, getPluginsRegistrationDir, ...). */
export function kubeletRootPaths(root: string): KubeletRootPaths {
  const r = root.replace(/\/+$/, '') || '/';
  return {
    root: r,
    pods: joinPath(r, KubeletRootDirNames.pods),
    plugins: joinPath(r, KubeletRootDirNames.plugins),
    pluginsRegistry: joinPath(r, KubeletRootDirNames.pluginsRegistry),
    devicePlugins: joinPath(r, KubeletRootDirNames.devicePlugins),
    checkpoints: joinPath(r, KubeletRootDirNames.checkpoints),
  };
}

/** A node plugin's data directory (kubelet getPluginDir). */
export function pluginDir(root: string, pluginName: string): string {
  return joinPath(kubeletRootPaths(root).plugins, pluginName);
}

/**
 * Where a pod's `hostPath` is on this node: a path at or under `/var/lib/kubelet` names the node's own kubelet
 * root (so a node plugin's DaemonSet, written for a kubelet, registers with this VirtualNode and no other);
 * any other path is the host's, as it is. `root` undefined (no root directory, or one that is
 * `/var/lib/kubelet` itself) leaves every path as it is.
 */
export function resolveKubeletHostPath(path: string, root: string | undefined): string {
  if (root === undefined) return path;
  const r = root.replace(/\/+$/, '') || '/';
  if (r === DefaultKubeletRootDir) return path;
  const p = path.replace(/\/+$/, '') || '/';
  if (p === DefaultKubeletRootDir) return r;
  if (p.startsWith(`${DefaultKubeletRootDir}/`))
    return joinPath(r, p.slice(DefaultKubeletRootDir.length + 1));
  return path;
}
