/**
 * SetUp and TearDown by plugin: the one place that knows which plugin function serves which volume kind.
 */
import type {
  EmptyDirVolumeSource,
  HostPathVolumeSource,
  PersistentVolumeClaimVolumeSource,
} from '../../api/volumes.js';
import type { CSIVolumeSource } from './csi.js';
import { setUpCSIEphemeral } from './csimounter.js';
import { setUpDataVolume } from './datavolumes.js';
import { setUpEmptyDir, tearDownVolumeDir } from './emptydir.js';
import { setUpHostPath } from './hostpath.js';
import { noPluginMessage } from './plugins.js';
import { PluginDirs, type PluginDir } from './podpaths.js';
import { processFailure, type PluginContext, type SetUpRequest, type SetUpResult } from './plugin.js';
import { setUpPersistentVolumeClaim } from './pvc.js';

export function setUpVolume(ctx: PluginContext, req: SetUpRequest): Promise<SetUpResult> {
  const vol = req.volume;
  switch (req.kind) {
    case 'emptyDir':
      return setUpEmptyDir(ctx, req.pod, vol.name, (vol.emptyDir ?? {}) as EmptyDirVolumeSource);
    case 'hostPath':
      return setUpHostPath(ctx, vol.hostPath as HostPathVolumeSource);
    case 'persistentVolumeClaim':
      return setUpPersistentVolumeClaim(
        ctx,
        req.pod,
        vol.name,
        vol.persistentVolumeClaim as PersistentVolumeClaimVolumeSource,
      );
    case 'csi':
      if (!ctx.csi) {
        return Promise.resolve(
          processFailure(
            noPluginMessage(
              vol.name,
              'kubelet-operator does not support csi volumes on nodes without real volumes',
            ),
          ),
        );
      }
      return setUpCSIEphemeral(ctx, req.pod, vol.name, vol.csi as CSIVolumeSource);
    case 'configMap':
    case 'secret':
    case 'downwardAPI':
    case 'projected':
      return setUpDataVolume(ctx, req);
    case 'image':
      // The kubelet's image plugin is a stub: read-only, no host path; the runtime mounts the pulled image.
      return Promise.resolve({ ok: true, volume: { hostPath: '', readOnly: true, selinuxRelabel: false } });
  }
}

/** The plugin directories under `<pod>/volumes/` whose volumes the operator created and tears down. */
export function datavolumePlugins(): PluginDir[] {
  return [
    PluginDirs.emptyDir,
    PluginDirs.configMap,
    PluginDirs.secret,
    PluginDirs.downwardAPI,
    PluginDirs.projected,
  ];
}

/** Unmounts and removes one volume directory (hostPath and PV-backed volumes have none: the data is the node's). */
export function tearDownVolume(
  ctx: PluginContext,
  uid: string,
  plugin: PluginDir,
  name: string,
): Promise<void> {
  return tearDownVolumeDir(ctx, uid, plugin, name);
}
