/**
 * A container's mounts from its volumeMounts and the pod's set-up volumes (kubelet: kubelet_pods.go makeMounts,
 * translateMountPropagation; subpath handling of pkg/volume/util/subpath). Pure: the host paths come in already
 * resolved, and the one I/O step (creating a missing subPath directory) is done by the caller with the path this
 * returns.
 *
 * As the kubelet:
 * - configMap, secret, downwardAPI and projected volumes are always mounted read-only;
 * - `subPathExpr` expands `$(VAR)` from the container's environment; an absolute subPath, or one with a `..`
 *   element, is refused with the kubelet's message;
 * - `/etc/hosts` is the kubelet-managed file unless the container mounts something there itself;
 * - propagation: None (default) is private, HostToContainer and Bidirectional as named.
 */
import { isAbsolutePath, joinPath } from '../volume/paths.js';
import type { Container } from '../../api/core.js';
import type { VolumeMount } from '../../api/volumes.js';
import type { Mount, MountPropagation } from '../../runtime/types.js';
import { expand } from '../envvars.js';

/** A set-up volume as makeMounts needs it. */
export interface MountedVolume {
  /** The volume's directory (or file, for a hostPath) on the node. */
  hostPath: string;
  /** The plugin mounts it read-only whatever the volumeMount says (configMap, secret, ...). */
  readOnly: boolean;
  /** The runtime may relabel it for SELinux (volumes the kubelet manages). */
  selinuxRelabel: boolean;
}

export interface MakeMountsInput {
  container: Pick<Container, 'name' | 'volumeMounts'>;
  volumes: ReadonlyMap<string, MountedVolume>;
  /** The container's resolved environment, for subPathExpr. */
  env: readonly { name: string; value: string }[];
  /** The kubelet-managed hosts file, when the pod gets one (shouldMountHostsFile). */
  etcHostsPath?: string;
}

/** A subPath directory that does not exist yet: the caller creates it (with the volume's mode) first. */
export interface SubPathToCreate {
  volumePath: string;
  subPath: string;
  mountName: string;
  /** The mount (index into `mounts`) whose host path is this subPath. */
  mountIndex: number;
}

export type MakeMountsResult =
  { ok: true; mounts: Mount[]; subPaths: SubPathToCreate[] } | { ok: false; message: string };

const ETC_HOSTS = '/etc/hosts';

/** kubelet translateMountPropagation. */
export function translateMountPropagation(
  mode: VolumeMount['mountPropagation'],
): MountPropagation | undefined {
  switch (mode) {
    case undefined:
    case 'None':
      return 'PRIVATE';
    case 'HostToContainer':
      return 'HOST_TO_CONTAINER';
    case 'Bidirectional':
      return 'BIDIRECTIONAL';
    default:
      return undefined;
  }
}

/** The kubelet's check of a subPath: relative, without `..` elements. Undefined when fine. */
export function subPathError(subPath: string): string | undefined {
  if (isAbsolutePath(subPath)) return `error SubPath \`${subPath}\` must not be an absolute path`;
  if (subPath.split(/[\\/]/).includes('..'))
    return `unable to provision SubPath \`${subPath}\`: must not contain '..'`;
  return undefined;
}

export function makeMounts(input: MakeMountsInput): MakeMountsResult {
  const mounts: Mount[] = [];
  const subPaths: SubPathToCreate[] = [];
  let mountEtcHosts = input.etcHostsPath !== undefined;
  const envMap = new Map<string, string>();
  for (const e of input.env) envMap.set(e.name, e.value);

  for (const m of input.container.volumeMounts ?? []) {
    if (m.mountPath === ETC_HOSTS) mountEtcHosts = false;
    const vol = input.volumes.get(m.name);
    if (!vol) {
      return {
        ok: false,
        message: `cannot find volume ${JSON.stringify(m.name)} to mount into container ${JSON.stringify(input.container.name)}`,
      };
    }
    let hostPath = vol.hostPath;
    let subPath = m.subPath ?? '';
    if (m.subPathExpr) {
      // kubelet ExpandContainerVolumeMounts: every referenced variable must be set and non-empty.
      const missing = new Set<string>();
      subPath = expand(m.subPathExpr, (name) => {
        const v = envMap.get(name);
        if (v === undefined || v === '') missing.add(name);
        return v ?? '';
      });
      if (missing.size > 0)
        return { ok: false, message: `missing value for ${[...missing].sort().join(', ')}` };
    }
    if (subPath !== '') {
      const bad = subPathError(subPath);
      if (bad) return { ok: false, message: bad };
      hostPath = joinPath(vol.hostPath, subPath);
      subPaths.push({ volumePath: vol.hostPath, subPath, mountName: m.name, mountIndex: mounts.length });
    }
    const propagation = translateMountPropagation(m.mountPropagation);
    if (!propagation)
      return { ok: false, message: `invalid MountPropagation mode: ${JSON.stringify(m.mountPropagation)}` };
    const containerPath = isAbsolutePath(m.mountPath) ? m.mountPath : `/${m.mountPath}`;
    const mount: Mount = {
      containerPath,
      hostPath,
      readonly: (m.readOnly ?? false) || vol.readOnly,
      propagation,
    };
    if (vol.selinuxRelabel) mount.selinuxRelabel = true;
    mounts.push(mount);
  }
  if (mountEtcHosts && input.etcHostsPath) {
    mounts.push({
      containerPath: ETC_HOSTS,
      hostPath: input.etcHostsPath,
      readonly: false,
      propagation: 'PRIVATE',
    });
  }
  return { ok: true, mounts, subPaths };
}
