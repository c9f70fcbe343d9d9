/**
 * persistentVolumeClaim volumes (kubelet: the desired-state populator's getPVCExtractPV, then the PV's own
 * plugin). The claim must be Bound; its PersistentVolume must be a `hostPath` or a `local` volume (the data is just a path on
 * this node), or a `csi` one on a node with real volumes (csimounter.ts). Claims bound to anything else (NFS, iSCSI, ...) are refused, as a
 * kubelet without that plugin would refuse them. Errors before the plugin is known are "process" errors: they
 * are reported at once, as the kubelet's `failed to process volumes`.
 */
import type { Pod } from '../../api/core.js';
import type { PersistentVolumeClaimVolumeSource } from '../../api/volumes.js';
import { errorMessage } from '../../util/errors.js';
import { setUpCSIPersistent } from './csimounter.js';
import { setUpHostPath } from './hostpath.js';
import { noPluginMessage } from './plugins.js';
import { mountFailure, processFailure, type PluginContext, type SetUpResult } from './plugin.js';

export async function setUpPersistentVolumeClaim(
  ctx: PluginContext,
  pod: Pod,
  volumeName: string,
  source: PersistentVolumeClaimVolumeSource,
): Promise<SetUpResult> {
  const ns = pod.metadata.namespace ?? '';
  const what = `error processing PVC ${ns}/${source.claimName}`;
  let claim;
  try {
    claim = await ctx.sources.getPersistentVolumeClaim(ns, source.claimName);
  } catch (err) {
    return processFailure(`${what}: failed to fetch PVC from API server: ${errorMessage(err)}`);
  }
  if (!claim) {
    return processFailure(
      `${what}: failed to fetch PVC from API server: persistentvolumeclaims ${JSON.stringify(source.claimName)} not found`,
    );
  }
  const pvName = claim.spec.volumeName ?? '';
  if (claim.status?.phase !== 'Bound') return processFailure(`${what}: PVC is not bound`);
  if (pvName === '') return processFailure(`${what}: PVC has empty pvc.Spec.VolumeName`);
  let pv;
  try {
    pv = await ctx.sources.getPersistentVolume(pvName);
  } catch (err) {
    return processFailure(`${what}: failed to fetch PV ${pvName} from API server: ${errorMessage(err)}`);
  }
  if (!pv) {
    return processFailure(
      `${what}: failed to fetch PV ${pvName} from API server: persistentvolumes ${JSON.stringify(pvName)} not found`,
    );
  }
  const ref = pv.spec.claimRef;
  if (!ref) {
    return processFailure(
      `${what}: found PV object ${pvName} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`,
    );
  }
  if (ref.uid !== claim.metadata.uid) {
    return processFailure(
      `${what}: found PV object ${pvName} but its pv.Spec.ClaimRef.UID ${ref.uid ?? ''} does not point to claim.UID ${claim.metadata.uid ?? ''}`,
    );
  }
  const readOnly = source.readOnly === true;
  if (pv.spec.hostPath) return setUpHostPath(ctx, pv.spec.hostPath, readOnly);
  if (pv.spec.local) {
    const st = await ctx.fs.stat(pv.spec.local.path);
    if (!st) return mountFailure(`path "${pv.spec.local.path}" does not exist`);
    return { ok: true, volume: { hostPath: pv.spec.local.path, readOnly, selinuxRelabel: true } };
  }
  if (pv.spec.csi && ctx.csi) return setUpCSIPersistent(ctx, pod, pv, readOnly);
  const kinds = Object.keys(pv.spec).filter(
    (k) =>
      ![
        'accessModes',
        'capacity',
        'claimRef',
        'persistentVolumeReclaimPolicy',
        'storageClassName',
        'mountOptions',
        'volumeMode',
        'nodeAffinity',
        'volumeAttributesClassName',
      ].includes(k),
  );
  return processFailure(
    noPluginMessage(
      volumeName,
      `PersistentVolume ${pvName} is ${kinds.join(', ') || 'of an unknown kind'}; kubelet-operator mounts only hostPath${ctx.csi ? ', local and csi' : ' and local'} PersistentVolumes`,
    ),
  );
}
