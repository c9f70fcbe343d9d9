/**
 * Which volume plugin serves a pod volume (kubelet: VolumePluginMgr.FindPluginBySpec), and the kubelet's words
 * when none does. kubelet-operator serves the plugins that need nothing but the node's filesystem and the API
 * server: emptyDir, hostPath, configMap, secret, downwardAPI, projected, persistentVolumeClaim when the
 * claim is bound to a hostPath, local or (on nodes with real volumes) CSI PersistentVolume, inline csi
 * volumes on such nodes (csimounter.ts refuses them elsewhere), and image (the kubelet's stub plugin: nothing to set
 * up, the runtime manager pulls the image and the runtime mounts it). Every other source (nfs, iscsi,
 * ephemeral, ...) is refused: the pod stays in ContainerCreating with a FailedMount event that names the
 * source, as a kubelet without that plugin would leave it. Pure.
 */
import type { Volume } from '../../api/volumes.js';

export type VolumeKind =
  | 'emptyDir'
  | 'hostPath'
  | 'configMap'
  | 'secret'
  | 'downwardAPI'
  | 'projected'
  | 'persistentVolumeClaim'
  | 'csi'
  | 'image';

const SUPPORTED: readonly VolumeKind[] = [
  'emptyDir',
  'hostPath',
  'configMap',
  'secret',
  'downwardAPI',
  'projected',
  'persistentVolumeClaim',
  'csi',
  'image',
];

export type PluginMatch = { ok: true; kind: VolumeKind } | { ok: false; source: string; message: string };

/** The kubelet's message when no plugin can serve a volume (desired_state_of_world.go AddPodToVolume). */
export function noPluginMessage(volume: string, detail: string): string {
  return `failed to get Plugin from volumeSpec for volume ${JSON.stringify(volume)} err=no volume plugin matched: ${detail}`;
}

/** The plugin for `vol`. A volume with no source at all is an emptyDir, as the API server defaults it. */
export function findPlugin(vol: Volume): PluginMatch {
  const sources = Object.keys(vol).filter((k) => k !== 'name' && vol[k] !== undefined && vol[k] !== null);
  if (sources.length === 0) return { ok: true, kind: 'emptyDir' };
  const supported = sources.filter((s): s is VolumeKind => (SUPPORTED as readonly string[]).includes(s));
  if (sources.length === 1 && supported.length === 1) return { ok: true, kind: supported[0]! };
  const source = sources.find((s) => !(SUPPORTED as readonly string[]).includes(s)) ?? sources.join(', ');
  const detail =
    sources.length > 1
      ? `the volume has more than one source (${sources.join(', ')})`
      : `kubelet-operator does not support ${source} volumes (supported: ${SUPPORTED.join(', ')})`;
  return { ok: false, source, message: noPluginMessage(vol.name, detail) };
}

/**
 * Volumes whose contents follow their sources (kubelet: RequiresRemount): SetUp runs again on every pod sync so
 * that ConfigMap, Secret, token and pod-metadata changes reach the files.
 */
export function requiresRemount(kind: VolumeKind): boolean {
  return kind === 'configMap' || kind === 'secret' || kind === 'downwardAPI' || kind === 'projected';
}
