/**
 * What every volume plugin's SetUp gets and returns (kubelet: volume.Mounter SetUp with its VolumeHost), so the
 * volume manager can treat emptyDir, hostPath, configMap, secret, downwardAPI, projected and
 * persistentVolumeClaim alike. All I/O goes through the injected seams: VolumeFS for files, Mounter for tmpfs,
 * VolumeSources for API objects, the token source for service-account tokens.
 */
import type { Pod } from '../../api/core.js';
import type { ServiceAccountTokenProjection, Volume } from '../../api/volumes.js';
import type { Clock } from '../../util/clock.js';
import type { CSIHost } from './csi.js';
import type { VolumeFS } from './fs.js';
import type { Mounter } from './shell/mounter.js';
import type { VolumeKind } from './plugins.js';
import type { VolumeSources } from './sources.js';

/** A set-up volume as a plugin's SetUp returns it and makeMounts reads it. */
export interface MountedVolume {
  /** The volume's directory (or file, for a hostPath) on the node. */
  hostPath: string;
  /** The plugin mounts it read-only whatever the volumeMount says (configMap, secret, ...). */
  readOnly: boolean;
  /** The runtime may relabel it for SELinux (volumes the kubelet manages). */
  selinuxRelabel: boolean;
  /**
   * A hostPath the pod named under `/var/lib/kubelet` that is this node's own root (`hostPath` elsewhere): the
   * path the pod named, for makeMounts' mirror mount (a node plugin's pod sees the node's real paths too).
   */
  kubeletPath?: string;
}

/**
 * A service-account token for a projected volume: a TokenRequest bound to the pod (the kubelet's token
 * manager), or a placeholder on nodes that simulate tokens. Rejects with the API server's message.
 */
export type ServiceAccountTokenSource = (
  pod: Pod,
  projection: ServiceAccountTokenProjection,
) => Promise<string>;

export interface PluginLogger {
  info(msg: string, meta?: Record<string, unknown>): void;
  warn(msg: string, meta?: Record<string, unknown>): void;
}

export interface PluginContext {
  podsDir: string;
  fs: VolumeFS;
  mounter: Mounter;
  clock: Pick<Clock, 'now'>;
  sources: VolumeSources;
  tokens: ServiceAccountTokenSource;
  /** Node allocatable: the default of downward API limits, and the cap of memory-backed emptyDirs. */
  nodeAllocatable: () => Readonly<Record<string, string | number>>;
  logger: PluginLogger;
  /**
   * Whether tmpfs mounts may be attempted (secret and projected volumes and `medium: Memory` emptyDirs live on
   * tmpfs, as on a kubelet). When a mount is refused (no CAP_SYS_ADMIN), secret and projected volumes fall
   * back to a plain directory and say so once in the log; a Memory emptyDir fails instead, since its size
   * limit cannot be honoured.
   */
  tmpfs: { allowed: boolean; refusedLogged: boolean };
  /**
   * The node's kubelet root directory (src/kubelet/rootdir.ts): a hostPath at or under `/var/lib/kubelet`
   * resolves into it. Unset: hostPaths are used as they are.
   */
  kubeletRootDir?: string;
  /**
   * The node's registered CSI drivers and the API objects CSI volumes need (csimounter.ts). Unset: CSI
   * volumes are refused as a kubelet without the plugin refuses them (nodes whose volumes are simulated).
   */
  csi?: CSIHost;
}

export interface SetUpRequest {
  pod: Pod;
  volume: Volume;
  kind: VolumeKind;
  /** Maximum age of cached API objects the contents are made from (a resync wants fresher copies). */
  maxAgeMs?: number;
}

/**
 * `process`: the kubelet could not even add the volume to its desired state (no plugin, an unbound claim): the
 * pod waits, and the error is reported at once rather than after the mount timeout.
 */
export type SetUpResult =
  | { ok: true; volume: MountedVolume }
  | {
      ok: false;
      message: string;
      stage: 'mount' | 'process';
      /** Not attached yet (the kubelet's `unattached volumes`); `limit`: the node's attach limit is reached. */
      attach?: 'unattached' | 'limit';
    };

export function mountFailure(message: string): SetUpResult {
  return { ok: false, message, stage: 'mount' };
}

export function processFailure(message: string): SetUpResult {
  return { ok: false, message, stage: 'process' };
}
