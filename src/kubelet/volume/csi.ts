/**
 * The CSI volume plugin's decisions (kubelet: pkg/volume/csi, the `kubernetes.io/csi` plugin): which driver
 * and volume handle a pod volume names, where the node stages and publishes it, what NodeStageVolume and
 * NodePublishVolume are asked (volume context with the pod's information when the CSIDriver wants it, the
 * secrets' references, the access mode, read-only), whether the attach-detach controller must have attached
 * it first, whether the kubelet applies the fsGroup, and what `vol_data.json` records for the teardown.
 * csimounter.ts does the calls and the files; this file is pure.
 *
 * Paths, as the kubelet lays them out under its root:
 *   <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount   the staging path
 *   <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/vol_data.json
 *   <root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/mount                     the publish target
 *   <root>/pods/<uid>/volumes/kubernetes.io~csi/<name>/vol_data.json
 * where <name> is the PersistentVolume's name for a claim, the pod volume's name for an inline volume.
 */
import type { Pod } from '../../api/core.js';
import type { PersistentVolume } from '../../api/volumes.js';
import { sha256Hex } from '../../util/sha256.js';
import type { ClaimStatusPatch, ExpandableClaim } from './csiexpand.js';
import { joinPath } from './paths.js';

export const CSIPluginName = 'kubernetes.io/csi';
/** The plugin's directory name under a pod's `volumes/` (the plugin name, escaped). */
export const CSIPluginDir = 'kubernetes.io~csi';
export const VolDataFileName = 'vol_data.json';

export interface SecretReference {
  name?: string;
  namespace?: string;
}

/** core/v1 CSIPersistentVolumeSource, the fields the node reads. */
export interface CSIPersistentVolumeSource {
  driver: string;
  volumeHandle: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodeStageSecretRef?: SecretReference;
  nodePublishSecretRef?: SecretReference;
  nodeExpandSecretRef?: SecretReference;
}

/** core/v1 CSIVolumeSource (an inline, ephemeral volume). */
export interface CSIVolumeSource {
  driver: string;
  readOnly?: boolean;
  fsType?: string;
  volumeAttributes?: Record<string, string>;
  nodePublishSecretRef?: { name?: string };
}

export type VolumeLifecycleMode = 'Persistent' | 'Ephemeral';
export type FSGroupPolicy = 'None' | 'File' | 'ReadWriteOnceWithFSType';

/** storage.k8s.io/v1 CSIDriver, the fields the node reads. */
export interface CSIDriver {
  metadata: { name?: string };
  spec?: {
    attachRequired?: boolean | null;
    podInfoOnMount?: boolean | null;
    volumeLifecycleModes?: string[] | null;
    fsGroupPolicy?: string | null;
    tokenRequests?: { audience: string; expirationSeconds?: number }[] | null;
    serviceAccountTokenInSecrets?: boolean | null;
  };
}

/** storage.k8s.io/v1 VolumeAttachment, the fields the node reads. */
export interface VolumeAttachment {
  metadata: { name?: string; deletionTimestamp?: string };
  status?: {
    attached?: boolean;
    attachmentMetadata?: Record<string, string>;
    /** errorCode: the gRPC code of the attacher's failure (8, ResourceExhausted: the node is full). */
    attachError?: { message?: string; errorCode?: number };
  };
}

/** A CSI volume as the node sets it up: everything but the secrets' contents and the driver's capabilities. */
export interface CSIVolumePlan {
  mode: VolumeLifecycleMode;
  driver: string;
  volumeHandle: string;
  /** The volume's directory name under the pod (spec.Name(): the PV's name, or the pod volume's). */
  specVolID: string;
  readOnly: boolean;
  fsType: string;
  /** The PV's first access mode (inline volumes: ReadWriteOnce). */
  accessMode: string;
  /** Every access mode of the PV (fsGroup applies only to ReadWriteOnce ones). */
  accessModes: readonly string[];
  mountOptions: string[];
  volumeContext: Record<string, string>;
  stageSecretRef?: { namespace: string; name: string };
  publishSecretRef?: { namespace: string; name: string };
  /** The VolumeAttachment must say attached before staging (CSIDriver attachRequired, default true). */
  attachRequired: boolean;
  attachmentID: string;
  fsGroupPolicy: FSGroupPolicy;
  /** The CSIDriver asks for service-account tokens (csi.storage.k8s.io/serviceAccount.tokens). */
  tokenRequests: { audience: string; expirationSeconds?: number }[];
  tokensInSecrets: boolean;
}

export type PlanResult = { ok: true; plan: CSIVolumePlan } | { ok: false; message: string };

/** getAttachmentName: the VolumeAttachment the attach-detach controller makes for a volume on a node. */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${sha256Hex(`${volumeHandle}${driver}${nodeName}`)}`;
}

/** makeVolumeHandle: the handle of an inline ephemeral volume, one per pod and volume. */
export function ephemeralVolumeHandle(podUID: string, volumeName: string): string {
  return `csi-${sha256Hex(`${podUID}${volumeName}`)}`;
}

/** The directory of a staged volume (makeDeviceMountPath without the final `globalmount`). */
export function stagingDataDir(pluginsDir: string, driver: string, volumeHandle: string): string {
  return joinPath(pluginsDir, CSIPluginName, driver, sha256Hex(volumeHandle));
}

/** makeDeviceMountPath: where NodeStageVolume stages a volume. */
export function stagingTargetPath(pluginsDir: string, driver: string, volumeHandle: string): string {
  return joinPath(stagingDataDir(pluginsDir, driver, volumeHandle), 'globalmount');
}

/** The directory of a pod's CSI volume (holds `mount` and `vol_data.json`). */
export function podCSIVolumeDir(podsDir: string, uid: string, specVolID: string): string {
  return joinPath(podsDir, uid, 'volumes', CSIPluginDir, specVolID);
}

/** Where NodePublishVolume publishes a pod's volume (the mounter's GetPath). */
export function publishTargetPath(podsDir: string, uid: string, specVolID: string): string {
  return joinPath(podCSIVolumeDir(podsDir, uid, specVolID), 'mount');
}

/** getPodInfoAttrs: the volume context a CSIDriver with podInfoOnMount gets. */
export function podInfoAttrs(pod: Pod, mode: VolumeLifecycleMode): Record<string, string> {
  return {
    'csi.storage.k8s.io/pod.name': pod.metadata.name ?? '',
    'csi.storage.k8s.io/pod.namespace': pod.metadata.namespace ?? '',
    'csi.storage.k8s.io/pod.uid': pod.metadata.uid ?? '',
    'csi.storage.k8s.io/serviceAccount.name': pod.spec.serviceAccountName ?? '',
    'csi.storage.k8s.io/ephemeral': String(mode === 'Ephemeral'),
  };
}

/**
 * supportsVolumeLifecycleMode: a driver without a CSIDriver serves persistent volumes only; one with a
 * CSIDriver serves the modes it lists (the API server defaults the list to Persistent). Undefined: served.
 */
export function lifecycleModeError(
  driverName: string,
  driver: CSIDriver | undefined,
  mode: VolumeLifecycleMode,
): string | undefined {
  if (!driver) {
    return mode === 'Persistent'
      ? undefined
      : `volume mode "${mode}" not supported by driver ${driverName} (no CSIDriver object)`;
  }
  const modes = driver.spec?.volumeLifecycleModes ?? ['Persistent'];
  if (modes.includes(mode)) return undefined;
  return `volume mode "${mode}" not supported by driver ${driverName} (only supports ${JSON.stringify(modes)})`;
}

/** getFSGroupPolicy: the default without a CSIDriver; a CSIDriver must name one (the API server defaults it). */
export function fsGroupPolicyOf(
  driver: CSIDriver | undefined,
): { ok: true; policy: FSGroupPolicy } | { ok: false; message: string } {
  if (!driver) return { ok: true, policy: 'ReadWriteOnceWithFSType' };
  const p = driver.spec?.fsGroupPolicy;
  if (p === 'None' || p === 'File' || p === 'ReadWriteOnceWithFSType') return { ok: true, policy: p };
  return { ok: false, message: 'expected valid fsGroupPolicy, received nil value or empty string' };
}

/** Whether the kubelet itself applies the pod's fsGroup to the published volume (supportsFSGroup). */
export function kubeletAppliesFSGroup(plan: CSIVolumePlan, fsGroup: number | undefined): boolean {
  if (fsGroup === undefined || plan.fsGroupPolicy === 'None' || plan.readOnly) return false;
  if (plan.fsGroupPolicy === 'File') return true;
  if (plan.fsType === '') return false;
  if (plan.mode === 'Ephemeral') return true;
  return plan.accessModes.includes('ReadWriteOnce');
}

/**
 * The CSI access mode of a Kubernetes one (asCSIAccessModeV1, and its variant for drivers with the
 * SINGLE_NODE_MULTI_WRITER node capability).
 */
export function csiAccessMode(accessMode: string, singleNodeMultiWriter: boolean): string {
  switch (accessMode) {
    case 'ReadWriteOnce':
      return singleNodeMultiWriter ? 'SINGLE_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
    case 'ReadOnlyMany':
      return 'MULTI_NODE_READER_ONLY';
    case 'ReadWriteMany':
      return 'MULTI_NODE_MULTI_WRITER';
    case 'ReadWriteOncePod':
      return singleNodeMultiWriter ? 'SINGLE_NODE_SINGLE_WRITER' : 'SINGLE_NODE_WRITER';
    default:
      return 'UNKNOWN';
  }
}

function withPodInfo(
  attrs: Record<string, string> | undefined,
  pod: Pod,
  mode: VolumeLifecycleMode,
  driver: CSIDriver | undefined,
): Record<string, string> {
  const ctx = { ...(attrs ?? {}) };
  if (driver?.spec?.podInfoOnMount === true) Object.assign(ctx, podInfoAttrs(pod, mode));
  return ctx;
}

function driverShared(
  driver: CSIDriver | undefined,
): Pick<CSIVolumePlan, 'attachRequired' | 'tokenRequests' | 'tokensInSecrets'> {
  return {
    attachRequired: driver?.spec?.attachRequired ?? true,
    tokenRequests: [...(driver?.spec?.tokenRequests ?? [])],
    tokensInSecrets: driver?.spec?.serviceAccountTokenInSecrets === true,
  };
}

/** The plan of a persistentVolumeClaim volume whose PersistentVolume is a CSI one. */
export function planPersistent(
  pod: Pod,
  pv: PersistentVolume,
  claimReadOnly: boolean,
  driver: CSIDriver | undefined,
  nodeName: string,
): PlanResult {
  const src = pv.spec.csi as CSIPersistentVolumeSource | undefined;
  if (!src || typeof src !== 'object')
    return { ok: false, message: 'volume source not found in volume.Spec' };
  if (!src.driver) return { ok: false, message: 'CSIPersistentVolumeSource driver name is empty' };
  if (!src.volumeHandle) {
    return { ok: false, message: 'CSIPersistentVolumeSource volume handle is empty' };
  }
  const modeErr = lifecycleModeError(src.driver, driver, 'Persistent');
  if (modeErr)
    return { ok: false, message: `mounter.SetupAt failed to check volume lifecycle mode: ${modeErr}` };
  const policy = fsGroupPolicyOf(driver);
  if (!policy.ok)
    return { ok: false, message: `mounter.SetupAt failed to check fsGroup policy: ${policy.message}` };
  const accessModes = (pv.spec.accessModes as string[] | undefined) ?? [];
  const ref = (r: SecretReference | undefined): { namespace: string; name: string } | undefined =>
    r?.name ? { namespace: r.namespace ?? '', name: r.name } : undefined;
  const stageSecretRef = ref(src.nodeStageSecretRef);
  const publishSecretRef = ref(src.nodePublishSecretRef);
  return {
    ok: true,
    plan: {
      mode: 'Persistent',
      driver: src.driver,
      volumeHandle: src.volumeHandle,
      specVolID: pv.metadata.name ?? '',
      // Read-only when the claim's volume says so or the PV's source does (GetReadOnly of the spec).
      readOnly: claimReadOnly || src.readOnly === true,
      fsType: src.fsType ?? '',
      accessMode: accessModes[0] ?? 'ReadWriteOnce',
      accessModes,
      mountOptions: [...((pv.spec.mountOptions as string[] | undefined) ?? [])],
      volumeContext: withPodInfo(src.volumeAttributes, pod, 'Persistent', driver),
      ...(stageSecretRef ? { stageSecretRef } : {}),
      ...(publishSecretRef ? { publishSecretRef } : {}),
      ...driverShared(driver),
      attachmentID: attachmentName(src.volumeHandle, src.driver, nodeName),
      fsGroupPolicy: policy.policy,
    },
  };
}

/** The plan of an inline `csi:` volume: ephemeral, never attached nor staged. */
export function planEphemeral(
  pod: Pod,
  volumeName: string,
  src: CSIVolumeSource,
  driver: CSIDriver | undefined,
  nodeName: string,
): PlanResult {
  if (!src.driver) return { ok: false, message: 'CSIVolumeSource driver name is empty' };
  const modeErr = lifecycleModeError(src.driver, driver, 'Ephemeral');
  if (modeErr)
    return { ok: false, message: `mounter.SetupAt failed to check volume lifecycle mode: ${modeErr}` };
  const policy = fsGroupPolicyOf(driver);
  if (!policy.ok)
    return { ok: false, message: `mounter.SetupAt failed to check fsGroup policy: ${policy.message}` };
  const handle = ephemeralVolumeHandle(pod.metadata.uid ?? '', volumeName);
  const secret = src.nodePublishSecretRef?.name;
  return {
    ok: true,
    plan: {
      mode: 'Ephemeral',
      driver: src.driver,
      volumeHandle: handle,
      specVolID: volumeName,
      readOnly: src.readOnly === true,
      fsType: src.fsType ?? '',
      accessMode: 'ReadWriteOnce',
      accessModes: ['ReadWriteOnce'],
      mountOptions: [],
      volumeContext: withPodInfo(src.volumeAttributes, pod, 'Ephemeral', driver),
      ...(secret ? { publishSecretRef: { namespace: pod.metadata.namespace ?? '', name: secret } } : {}),
      ...driverShared(driver),
      // CanAttach is false for ephemeral volumes: nothing to wait for.
      attachRequired: false,
      attachmentID: attachmentName(handle, src.driver, nodeName),
      fsGroupPolicy: policy.policy,
    },
  };
}

export type AttachState =
  | { attached: true; publishContext: Record<string, string> }
  /** `exhausted`: the attacher failed with ResourceExhausted (isResourceExhaustError). */
  | { attached: false; message: string; exhausted?: true };

/** gRPC ResourceExhausted, as a VolumeAttachment's attachError.errorCode carries it. */
export const GRPCResourceExhausted = 8;

/**
 * WaitForAttach, one look: the VolumeAttachment the attach-detach controller made must exist and say attached;
 * its attachment metadata is the publish context handed to stage and publish.
 */
export function attachState(
  va: VolumeAttachment | undefined,
  volumeHandle: string,
  attachID: string,
): AttachState {
  if (!va) {
    return {
      attached: false,
      message: `volume ${volumeHandle} has GET error for volume attachment ${attachID}: volumeattachments.storage.k8s.io "${attachID}" not found`,
    };
  }
  if (va.metadata.deletionTimestamp)
    return { attached: false, message: 'volume attachment is being deleted' };
  const attachError = va.status?.attachError;
  if (attachError?.message) {
    return {
      attached: false,
      message: attachError.message,
      ...(attachError.errorCode === GRPCResourceExhausted ? { exhausted: true as const } : {}),
    };
  }
  if (va.status?.attached !== true) {
    return {
      attached: false,
      message: `volume ${volumeHandle} is not attached for volume attachment ${attachID}`,
    };
  }
  return { attached: true, publishContext: { ...(va.status.attachmentMetadata ?? {}) } };
}

/** What `vol_data.json` holds: enough for a teardown after a restart, without the API objects. */
export interface VolData {
  specVolID: string;
  volumeHandle: string;
  driverName: string;
  nodeName: string;
  attachmentID: string;
  volumeLifecycleMode?: string;
}

export function volData(plan: CSIVolumePlan, nodeName: string): VolData {
  return {
    specVolID: plan.specVolID,
    volumeHandle: plan.volumeHandle,
    driverName: plan.driver,
    nodeName,
    attachmentID: plan.attachmentID,
    volumeLifecycleMode: plan.mode,
  };
}

/** A `vol_data.json` as read back; undefined when it is not one (the teardown then cannot call the driver). */
export function parseVolData(text: string): VolData | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.driverName !== 'string' || typeof o.volumeHandle !== 'string' || o.driverName === '') {
    return undefined;
  }
  const s = (k: string): string => (typeof o[k] === 'string' ? (o[k] as string) : '');
  return {
    specVolID: s('specVolID'),
    volumeHandle: o.volumeHandle,
    driverName: o.driverName,
    nodeName: s('nodeName'),
    attachmentID: s('attachmentID'),
    ...(typeof o.volumeLifecycleMode === 'string' ? { volumeLifecycleMode: o.volumeLifecycleMode } : {}),
  };
}

/**
 * Whether a staged volume may be unstaged: no pod of the node still publishes it (the kubelet unmounts the
 * device once the volume is in no pod's actual state). `others` are the vol_data of every other pod volume.
 */
export function stillPublished(others: readonly VolData[], driver: string, volumeHandle: string): boolean {
  return others.some((o) => o.driverName === driver && o.volumeHandle === volumeHandle);
}

/** A Secret's data (base64 values) as the strings a CSI call's secrets carry. */
export function secretStrings(data: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

/** A NodeStageVolume or NodePublishVolume volume capability (always a mounted file system here). */
export interface CSIVolumeCapability {
  fsType: string;
  mountFlags: string[];
  /** The fsGroup handed to drivers with VOLUME_MOUNT_GROUP; '' otherwise. */
  volumeMountGroup: string;
  accessMode: string;
}

export interface NodeStageRequest {
  volumeId: string;
  publishContext: Record<string, string>;
  stagingTargetPath: string;
  capability: CSIVolumeCapability;
  secrets: Record<string, string>;
  volumeContext: Record<string, string>;
}

export interface NodePublishRequest extends Omit<NodeStageRequest, 'stagingTargetPath'> {
  /** '' when the driver does not stage. */
  stagingTargetPath: string;
  targetPath: string;
  readOnly: boolean;
}

export interface NodeExpandRequest {
  volumeId: string;
  volumePath: string;
  /** '' when the driver does not stage. */
  stagingTargetPath: string;
  requiredBytes: number;
  capability: CSIVolumeCapability;
  secrets: Record<string, string>;
}

export interface CSIVolumeUsage {
  unit: 'BYTES' | 'INODES' | 'UNKNOWN';
  available: number;
  total: number;
  used: number;
}

/**
 * The Node service of one CSI driver, as the volume plugin calls it (kubelet: csiClient). Calls reject with
 * the driver's error in the kubelet's words (`rpc error: code = ... desc = ...`).
 */
export interface CSINodeClient {
  /** The node service capabilities' RPC types (STAGE_UNSTAGE_VOLUME, VOLUME_MOUNT_GROUP, ...). */
  nodeGetCapabilities(): Promise<Set<string>>;
  nodeStageVolume(req: NodeStageRequest): Promise<void>;
  nodeUnstageVolume(volumeId: string, stagingTargetPath: string): Promise<void>;
  nodePublishVolume(req: NodePublishRequest): Promise<void>;
  nodeUnpublishVolume(volumeId: string, targetPath: string): Promise<void>;
  nodeGetVolumeStats(
    volumeId: string,
    volumePath: string,
    stagingTargetPath: string,
  ): Promise<CSIVolumeUsage[]>;
  nodeExpandVolume(req: NodeExpandRequest): Promise<void>;
}

/** The capability a plan's volume is staged and published with. */
export function volumeCapability(
  plan: CSIVolumePlan,
  caps: ReadonlySet<string>,
  fsGroup: number | undefined,
): CSIVolumeCapability {
  return {
    fsType: plan.fsType,
    mountFlags: [...plan.mountOptions],
    volumeMountGroup: caps.has('VOLUME_MOUNT_GROUP') && fsGroup !== undefined ? String(fsGroup) : '',
    accessMode: csiAccessMode(plan.accessMode, caps.has('SINGLE_NODE_MULTI_WRITER')),
  };
}

/** What the CSI plugin needs from its node (kubelet: the plugin's VolumeHost, csiDrivers, the listers). */
export interface CSIHost {
  nodeName: string;
  /** The node root's `plugins/` (staging paths live under `plugins/kubernetes.io/csi/`). */
  pluginsDir: string;
  /** The Node service of a registered driver; undefined while the driver is not registered. */
  nodeClient(driver: string): CSINodeClient | undefined;
  /** The driver's CSIDriver object; undefined: there is none. Rejects when it cannot be read. */
  getCSIDriver(name: string): Promise<CSIDriver | undefined>;
  getVolumeAttachment(name: string): Promise<VolumeAttachment | undefined>;
  /**
   * MutableCSINodeAllocatableCount after a ResourceExhausted attach error (VerifyExhaustedResource): when the
   * driver's CSIDriver sets nodeAllocatableUpdatePeriodSeconds, asks NodeGetInfo again and updates the
   * CSINode's allocatable count, and resolves true (the pod is then rejected); false when it sets none.
   */
  refreshAllocatable?(driver: string): Promise<boolean>;
  /** The claims of node expansion, read afresh and their status patched (csiexpand.ts); unset: no expansion. */
  claims?: {
    getClaim(namespace: string, name: string): Promise<ExpandableClaim | undefined>;
    /** The claim's PersistentVolume, read afresh (its capacity is what the resizer grew). */
    getVolume(name: string): Promise<PersistentVolume | undefined>;
    patchClaimStatus(namespace: string, name: string, patch: ClaimStatusPatch): Promise<ExpandableClaim>;
  };
}

/** A volume's figures as the Summary reports them (kubelet: csi_metrics.go, the driver's usage by unit). */
export interface CSIVolumeFigures {
  capacityBytes?: number;
  availableBytes?: number;
  usedBytes?: number;
  inodes?: number;
  inodesFree?: number;
  inodesUsed?: number;
}

export function volumeFigures(usage: readonly CSIVolumeUsage[]): CSIVolumeFigures {
  const out: CSIVolumeFigures = {};
  for (const u of usage) {
    if (u.unit === 'BYTES') {
      out.capacityBytes = u.total;
      out.availableBytes = u.available;
      out.usedBytes = u.used;
    } else if (u.unit === 'INODES') {
      out.inodes = u.total;
      out.inodesFree = u.available;
      out.inodesUsed = u.used;
    }
  }
  return out;
}
