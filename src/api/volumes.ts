/**
 * core/v1 volume sources, as far as the kubelet-operator reads them. Fields the API server defaults (modes,
 * `medium`, `expirationSeconds`) may still be absent here: objects from older servers or from tests omit them,
 * and every reader applies the API's default itself.
 */

/** `items` of a configMap, secret or projected source: one key to one relative path. */
export interface KeyToPath {
  key: string;
  path: string;
  /** Octal file mode bits (0-0777); the source's defaultMode when absent. */
  mode?: number;
}

export interface ConfigMapVolumeSource {
  name?: string;
  items?: KeyToPath[];
  /** Default 0644 (420). */
  defaultMode?: number;
  optional?: boolean;
}

export interface SecretVolumeSource {
  secretName?: string;
  items?: KeyToPath[];
  /** Default 0644 (420). */
  defaultMode?: number;
  optional?: boolean;
}

export interface ObjectFieldSelector {
  fieldPath: string;
  apiVersion?: string;
}

export interface ResourceFieldSelector {
  resource: string;
  containerName?: string;
  divisor?: string | number;
}

export interface DownwardAPIVolumeFile {
  path: string;
  fieldRef?: ObjectFieldSelector;
  resourceFieldRef?: ResourceFieldSelector;
  mode?: number;
}

export interface DownwardAPIVolumeSource {
  items?: DownwardAPIVolumeFile[];
  /** Default 0644 (420). */
  defaultMode?: number;
}

export interface ServiceAccountTokenProjection {
  audience?: string;
  /** Default 3600; the API server requires at least 600. */
  expirationSeconds?: number;
  path: string;
}

/**
 * A podCertificate source of a projected volume: the kubelet makes a key pair and asks `signerName` for a
 * certificate with a PodCertificateRequest, then writes the key and the issued chain at the paths given.
 */
export interface PodCertificateProjection {
  signerName: string;
  /** RSA3072, RSA4096, ECDSAP256, ECDSAP384, ECDSAP521 or ED25519. */
  keyType: string;
  /** Copied into the request (the API server defaults it to 24 h there). */
  maxExpirationSeconds?: number;
  /** One file: the PRIVATE KEY block, then the CERTIFICATE blocks of the chain. */
  credentialBundlePath?: string;
  keyPath?: string;
  certificateChainPath?: string;
  /** Copied into the request's unverifiedUserAnnotations, for the signer. */
  userAnnotations?: Record<string, string>;
}

export interface VolumeProjection {
  configMap?: Omit<ConfigMapVolumeSource, 'defaultMode'>;
  secret?: Omit<SecretVolumeSource, 'defaultMode' | 'secretName'> & { name?: string };
  downwardAPI?: Omit<DownwardAPIVolumeSource, 'defaultMode'>;
  serviceAccountToken?: ServiceAccountTokenProjection;
  clusterTrustBundle?: Record<string, unknown>;
  podCertificate?: PodCertificateProjection;
}

export interface ProjectedVolumeSource {
  sources?: VolumeProjection[] | null;
  /** Default 0644 (420). */
  defaultMode?: number;
}

export type HostPathType =
  '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

export interface HostPathVolumeSource {
  path: string;
  type?: HostPathType;
}

export interface EmptyDirVolumeSource {
  /** '' (the node's disk) or 'Memory' (tmpfs); 'HugePages*' are not supported. */
  medium?: string;
  sizeLimit?: string | number;
}

export interface PersistentVolumeClaimVolumeSource {
  claimName: string;
  readOnly?: boolean;
}

export interface Volume {
  name: string;
  emptyDir?: EmptyDirVolumeSource;
  hostPath?: HostPathVolumeSource;
  configMap?: ConfigMapVolumeSource;
  secret?: SecretVolumeSource;
  downwardAPI?: DownwardAPIVolumeSource;
  projected?: ProjectedVolumeSource;
  persistentVolumeClaim?: PersistentVolumeClaimVolumeSource;
  /** An OCI image mounted read-only (ImageVolume): the kubelet pulls it, the runtime mounts it. */
  image?: ImageVolumeSource;
  /** Every other source (csi, nfs, iscsi, ephemeral, ...): present, and refused by the volume manager. */
  [other: string]: unknown;
}

export interface ImageVolumeSource {
  reference?: string;
  /** The API server defaults it from the reference's tag, as a container's imagePullPolicy. */
  pullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  subPathExpr?: string;
  mountPropagation?: 'None' | 'HostToContainer' | 'Bidirectional';
  recursiveReadOnly?: 'Disabled' | 'IfPossible' | 'Enabled';
}

/** core/v1 PersistentVolume, the fields a hostPath- or local-backed claim needs. */
export interface PersistentVolume {
  metadata: { name?: string; uid?: string };
  spec: {
    hostPath?: HostPathVolumeSource;
    local?: { path: string; fsType?: string };
    claimRef?: { namespace?: string; name?: string; uid?: string };
    [other: string]: unknown;
  };
  status?: { phase?: string };
}

/** core/v1 PersistentVolumeClaim, the fields the volume manager reads. */
export interface PersistentVolumeClaim {
  metadata: { name?: string; namespace?: string; uid?: string };
  spec: { volumeName?: string };
  status?: { phase?: string };
}
