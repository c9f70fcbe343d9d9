/**
 * Where a pod's files live on the node, laid out as the kubelet's root directory (kubelet_getters.go):
 *
 *   <podsDir>/<uid>/volumes/kubernetes.io~<plugin>/<volume>   a volume's contents
 *   <podsDir>/<uid>/plugins/kubernetes.io~<plugin>/<volume>   a plugin's metadata (emptyDir's `ready` marker)
 *   <podsDir>/<uid>/containers/<container>/<id>               one termination-message file per container start
 *   <podsDir>/<uid>/etc-hosts                                 the kubelet-managed /etc/hosts
 *
 * Pure path arithmetic; nothing here touches the disk.
 */
import { joinPath } from './paths.js';

/** The kubelet's plugin names, escaped as they appear in directory names (`kubernetes.io/foo` -> `kubernetes.io~foo`). */
export const PluginDirs = {
  emptyDir: 'kubernetes.io~empty-dir',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
  local: 'kubernetes.io~local-volume',
} as const;

export type PluginDir = (typeof PluginDirs)[keyof typeof PluginDirs];

export function podDir(podsDir: string, uid: string): string {
  return joinPath(podsDir, uid);
}

export function podVolumeDir(podsDir: string, uid: string, plugin: PluginDir, volume: string): string {
  return joinPath(podsDir, uid, 'volumes', plugin, volume);
}

export function podPluginDir(podsDir: string, uid: string, plugin: PluginDir, volume: string): string {
  return joinPath(podsDir, uid, 'plugins', plugin, volume);
}

export function podContainerDir(podsDir: string, uid: string, container: string): string {
  return joinPath(podsDir, uid, 'containers', container);
}

export function podEtcHostsPath(podsDir: string, uid: string): string {
  return joinPath(podsDir, uid, 'etc-hosts');
}
