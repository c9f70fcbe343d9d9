/**
 * The CRI v1 messages as @grpc/proto-loader hands them over and accepts them, loaded with
 * `{ keepCase: true, longs: String, enums: String, defaults: true }`: snake_case field names, enums as
 * their names, int64/uint64 as decimal strings (nanosecond timestamps exceed 2^53), absent sub-messages as
 * null. Only the fields kubelet-operator sends or reads are declared; see proto/api.proto.
 */

export type WireNamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';
export type WireProtocol = 'TCP' | 'UDP' | 'SCTP';
export type WireSandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type WireContainerState =
  'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';
export type WireProfileType = 'RuntimeDefault' | 'Unconfined' | 'Localhost';

/** int64 on the way out: a decimal string keeps every bit; proto-loader also takes numbers. */
export type Int64 = string;

export interface WireKeyValue {
  key: string;
  value: string;
}

export interface WirePortMapping {
  protocol: WireProtocol;
  container_port: number;
  host_port: number;
  host_ip: string;
}

export type WireMountPropagation =
  'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';

export interface WireMount {
  container_path: string;
  host_path: string;
  readonly: boolean;
  selinux_relabel?: boolean;
  propagation?: WireMountPropagation;
  recursive_read_only?: boolean;
  image?: WireImageSpec | null;
  image_sub_path?: string;
}

export interface WireIDMapping {
  host_id: number;
  container_id: number;
  length: number;
}

export interface WireUserNamespace {
  mode: WireNamespaceMode;
  uids: WireIDMapping[];
  gids: WireIDMapping[];
}

export interface WireNamespaceOption {
  network: WireNamespaceMode;
  pid: WireNamespaceMode;
  ipc: WireNamespaceMode;
  userns_options?: WireUserNamespace | null;
}

export type WireSupplementalGroupsPolicy = 'Merge' | 'Strict';

export interface WireInt64Value {
  value: Int64;
}

export interface WireSecurityProfile {
  profile_type: WireProfileType;
  localhost_ref: string;
}

export interface WireSandboxSecurityContext {
  namespace_options: WireNamespaceOption;
  run_as_user?: WireInt64Value | null;
  run_as_group?: WireInt64Value | null;
  readonly_rootfs: boolean;
  supplemental_groups: Int64[];
  privileged: boolean;
  seccomp: WireSecurityProfile;
  supplemental_groups_policy?: WireSupplementalGroupsPolicy;
}

export interface WireLinuxSandboxConfig {
  cgroup_parent: string;
  security_context: WireSandboxSecurityContext;
  sysctls: Record<string, string>;
  /** The pod's requests and limits as one container's (kubelet: calculateSandboxResources). */
  resources?: WireContainerResources;
}

export interface WireSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface WireDnsConfig {
  servers: string[];
  searches: string[];
  options: string[];
}

export interface WirePodSandboxConfig {
  metadata: WireSandboxMetadata;
  hostname: string;
  log_directory: string;
  dns_config?: WireDnsConfig | null;
  port_mappings: WirePortMapping[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  linux: WireLinuxSandboxConfig;
}

export interface WireContainerResources {
  cpu_period: Int64;
  cpu_quota: Int64;
  cpu_shares: Int64;
  memory_limit_in_bytes: Int64;
  oom_score_adj: Int64;
  unified?: Record<string, string>;
  memory_swap_limit_in_bytes?: Int64;
}

export interface WireContainerSecurityContext {
  capabilities?: { add_capabilities: string[]; drop_capabilities: string[] } | null;
  privileged: boolean;
  namespace_options: WireNamespaceOption;
  run_as_user?: WireInt64Value | null;
  run_as_group?: WireInt64Value | null;
  readonly_rootfs: boolean;
  supplemental_groups?: string[];
  no_new_privs: boolean;
  seccomp: WireSecurityProfile;
  supplemental_groups_policy?: WireSupplementalGroupsPolicy;
  masked_paths?: string[];
  readonly_paths?: string[];
}

export interface WireContainerMetadata {
  name: string;
  attempt: number;
}

export interface WireImageSpec {
  image: string;
}

export interface WireContainerConfig {
  metadata: WireContainerMetadata;
  image: WireImageSpec;
  command: string[];
  args: string[];
  working_dir: string;
  envs: WireKeyValue[];
  mounts: WireMount[];
  devices: { container_path: string; host_path: string; permissions: string }[];
  CDI_devices: { name: string }[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  log_path: string;
  stdin: boolean;
  stdin_once: boolean;
  tty: boolean;
  linux: {
    resources?: WireContainerResources | null;
    security_context: WireContainerSecurityContext;
  };
}

export interface WireSandboxFilter {
  id?: string;
  state?: { state: WireSandboxState } | null;
  label_selector?: Record<string, string>;
}

export interface WireContainerFilter {
  id?: string;
  pod_sandbox_id?: string;
  state?: { state: WireContainerState } | null;
  label_selector?: Record<string, string>;
}

// ---------------------------------------------------------------------------- responses (as decoded)

export interface WirePodSandbox {
  id: string;
  metadata: WireSandboxMetadata | null;
  state: WireSandboxState;
  created_at: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface WirePodSandboxStatus extends WirePodSandbox {
  network: { ip: string; additional_ips: { ip: string }[] } | null;
  linux: { namespaces: { options: WireNamespaceOption | null } | null } | null;
}

export interface WireContainer {
  id: string;
  pod_sandbox_id: string;
  metadata: WireContainerMetadata | null;
  image: WireImageSpec | null;
  image_ref: string;
  state: WireContainerState;
  created_at: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface WireContainerStatus {
  id: string;
  metadata: WireContainerMetadata | null;
  state: WireContainerState;
  created_at: string;
  started_at: string;
  finished_at: string;
  exit_code: number;
  image: WireImageSpec | null;
  image_ref: string;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts?: WireMount[] | null;
  /** What the runtime applied (containerd 1.6.9+); absent from older runtimes. */
  resources?: { linux?: WireContainerResources | null } | null;
  log_path: string;
  /** The process's identity as the runtime resolved it (newer than containerd 1.6). */
  user?: { linux?: { uid: Int64; gid: Int64; supplemental_groups: Int64[] } | null } | null;
}

export interface WireImage {
  id: string;
  repo_tags: string[];
  repo_digests: string[];
  size: string;
  uid?: WireInt64Value | null;
  username?: string;
  /** Newer than containerd 1.6: the runtime keeps the image (its sandbox image). */
  pinned?: boolean;
}

export interface WireRuntimeCondition {
  type: string;
  status: boolean;
  reason: string;
  message: string;
}

export interface WireRuntimeHandler {
  name: string;
  features: { recursive_read_only_mounts: boolean; user_namespaces: boolean } | null;
}

/** StatusResponse as decoded; runtime_handlers and features are newer than containerd 1.6. */
export interface WireStatusResponse {
  status: { conditions: WireRuntimeCondition[] } | null;
  runtime_handlers?: WireRuntimeHandler[] | null;
  features?: { supplemental_groups_policy: boolean } | null;
}

export interface WireVersionResponse {
  version: string;
  runtime_name: string;
  runtime_version: string;
  runtime_api_version: string;
}

export interface WireExecSyncResponse {
  stdout: Buffer;
  stderr: Buffer;
  exit_code: number;
}
