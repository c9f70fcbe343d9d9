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
 * - propagation: None (default) is private, HostToContainer and Bidirectional as named;
 * - `recursiveReadOnly` (resolveRecursiveReadOnly): Enabled needs a read-only mount without propagation and a
 *   runtime handler that reports support, else the container is not created; IfPossible is recursive only
 *   where the handler supports it, plain read-only elsewhere;
 * - an image volume (ImageVolume) mounts the pulled image (its ID) with no host path, `subPath` naming the
 *   directory of the image to mount.
 *
 * Not in the kubelet: a node's `/var/lib/kubelet` is a directory of its own here (src/kubelet/rootdir.ts), and
 * the paths the node hands a CSI driver (staging and target paths) are its real ones. A container that mounts
 * a hostPath under `/var/lib/kubelet` at that same path (a node plugin's pod, written for a kubelet) gets the
 * directory at its real path as well, so those paths resolve in the plugin's container too.
 */
import { isAbsolutePath, joinPath } from '../volume/paths.js';
import type { Container } from '../../api/core.js';
import type { VolumeMount } from '../../api/volumes.js';
import type { Mount, MountPropagation, RuntimeHandler } from '../../runtime/types.js';
import { expand } from '../envvars.js';
import type { MountedVolume } from '../volume/plugin.js';

export interface MakeMountsInput {
  container: Pick<Container, 'name' | 'volumeMounts'>;
  volumes: ReadonlyMap<string, MountedVolume>;
  /** The container's resolved environment, for subPathExpr. */
  env: readonly { name: string; value: string }[];
  /** The kubelet-managed hosts file, when the pod gets one (shouldMountHostsFile). */
  etcHostsPath?: string;
  /** The pod's runtime handler mounts read-only recursively (its `recursiveReadOnlyMounts` feature). */
  supportsRecursiveReadOnly?: boolean;
  /** The pod's image volumes as pulled: volume name to image ID (the kubelet's imageVolumes). */
  imageVolumes?: ReadonlyMap<string, string>;
}

/**
 * kubelet runtimeHandlerSupportsRecursiveReadOnlyMounts: the named handler ("" the default; RuntimeClass
 * handlers are not looked up, every pod uses the default) reports support. A runtime that reports no handlers
 * (containerd 1.6) supports nothing.
 */
export function handlerSupportsRecursiveReadOnly(handlers: readonly RuntimeHandler[], name = ''): boolean {
  return handlers.find((h) => h.name === name)?.recursiveReadOnlyMounts === true;
}

/**
 * kubelet resolveRecursiveReadOnly: whether `m` is mounted read-only recursively on a runtime that does (or
 * does not) support it, or why it cannot be mounted at all.
 */
export function resolveRecursiveReadOnly(
  m: Pick<VolumeMount, 'name' | 'readOnly' | 'mountPropagation' | 'recursiveReadOnly'>,
  runtimeSupportsRRO: boolean,
): { ok: true; recursive: boolean } | { ok: false; message: string } {
  const mode = m.recursiveReadOnly;
  if (mode === undefined || mode === 'Disabled') return { ok: true, recursive: false };
  const name = JSON.stringify(m.name);
  if (!m.readOnly)
    return {
      ok: false,
      message: `volume ${name} requested recursive read-only mode, but it is not read-only`,
    };
  if (m.mountPropagation !== undefined && m.mountPropagation !== 'None') {
    return {
      ok: false,
      message: `volume ${name} requested recursive read-only mode, but it is not compatible with propagation ${JSON.stringify(m.mountPropagation)}`,
    };
  }
  switch (mode) {
    case 'IfPossible':
      return { ok: true, recursive: runtimeSupportsRRO };
    case 'Enabled':
      return runtimeSupportsRRO
        ? { ok: true, recursive: true }
        : {
            ok: false,
            message: `volume ${name} requested recursive read-only mode, but it is not supported by the runtime`,
          };
    default:
      return { ok: false, message: `unknown recursive read-only mode ${JSON.stringify(mode)}` };
  }
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

/**
 * Where a container mounting `vol` at `containerPath` also gets it mounted: at its real host path, when the
 * volume is a hostPath the pod named under `/var/lib/kubelet` (resolved to this node's root) and mounted at
 * that very path, whole. Undefined otherwise.
 */
function kubeletRootMirror(
  vol: MountedVolume,
  m: VolumeMount,
  containerPath: string,
  subPath: string,
  image: boolean,
): string | undefined {
  if (vol.kubeletPath === undefined || image || subPath !== '' || m.subPathExpr) return undefined;
  const trim = (p: string): string => p.replace(/\/+$/, '') || '/';
  if (trim(containerPath) !== trim(vol.kubeletPath) || trim(vol.hostPath) === trim(containerPath))
    return undefined;
  return vol.hostPath;
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
    }
    const image = input.imageVolumes?.get(m.name);
    if (image !== undefined) {
      // The runtime mounts the image itself; the subPath is a directory inside it, never a host path.
      hostPath = '';
    } else if (subPath !== '') {
      hostPath = joinPath(vol.hostPath, subPath);
      subPaths.push({ volumePath: vol.hostPath, subPath, mountName: m.name, mountIndex: mounts.length });
    }
    const propagation = translateMountPropagation(m.mountPropagation);
    if (!propagation)
      return { ok: false, message: `invalid MountPropagation mode: ${JSON.stringify(m.mountPropagation)}` };
    const rro = resolveRecursiveReadOnly(m, input.supportsRecursiveReadOnly === true);
    if (!rro.ok) return { ok: false, message: `failed to resolve recursive read-only mode: ${rro.message}` };
    const containerPath = isAbsolutePath(m.mountPath) ? m.mountPath : `/${m.mountPath}`;
    const mount: Mount = {
      containerPath,
      hostPath,
      readonly: (m.readOnly ?? false) || vol.readOnly,
      propagation,
    };
    if (rro.recursive) mount.recursiveReadOnly = true;
    if (image !== undefined) {
      mount.image = image;
      if (subPath !== '') mount.imageSubPath = subPath;
    }
    if (vol.selinuxRelabel) mount.selinuxRelabel = true;
    mounts.push(mount);
    const mirror = kubeletRootMirror(vol, m, containerPath, subPath, image !== undefined);
    if (mirror) mounts.push({ ...mount, containerPath: mirror });
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
