/**
 * Pure mapping between the Runtime types (src/runtime/types.ts) and the CRI v1 wire messages
 * (messages.ts). No I/O; every function returns a fresh object.
 *
 * Choices that matter on the wire (TEST-ENVIRONMENT.md, containerd 1.6.20):
 * - Seccomp is always sent: an absent SecurityProfile means unconfined to containerd, so an unspecified
 *   profile becomes an explicit RuntimeDefault.
 * - Absent namespace modes take the kubelet's defaults (network POD, pid CONTAINER, ipc POD); a container
 *   without its own namespace options inherits the sandbox's, as the kubelet builds them.
 * - int64 values travel as decimal strings and timestamps come back as bigint, so nothing is rounded.
 * - A host-network sandbox gets no hostname: it shares the node's UTS namespace, and runc refuses to set
 *   one there ("unable to set hostname without a private UTS namespace"). The kubelet never sends it.
 */
import { KindError } from '../../util/errors.js';
import type {
  Container,
  ContainerConfig,
  ContainerFilter,
  ContainerState,
  ContainerStatus,
  ExecSyncResult,
  Image,
  LinuxContainerResources,
  Mount,
  MountPropagation,
  NamespaceMode,
  PodSandbox,
  PodSandboxConfig,
  PodSandboxMetadata,
  PodSandboxStatus,
  RuntimeCondition,
  RuntimeStatus,
  RuntimeVersion,
  SandboxFilter,
  SandboxState,
  SecurityProfile,
  UserNamespace,
} from '../types.js';
import type {
  Int64,
  WireContainer,
  WireContainerConfig,
  WireContainerFilter,
  WireContainerResources,
  WireContainerSecurityContext,
  WireContainerState,
  WireContainerStatus,
  WireExecSyncResponse,
  WireImage,
  WireMount,
  WireMountPropagation,
  WireNamespaceOption,
  WirePodSandbox,
  WirePodSandboxConfig,
  WirePodSandboxStatus,
  WireRuntimeCondition,
  WireSandboxFilter,
  WireSandboxMetadata,
  WireSandboxSecurityContext,
  WireSandboxState,
  WireSecurityProfile,
  WireStatusResponse,
  WireUserNamespace,
  WireVersionResponse,
} from './messages.js';

type NamespaceOptions = {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  userNamespace?: UserNamespace;
};

const KUBELET_NAMESPACE_DEFAULTS: WireNamespaceOption = { network: 'POD', pid: 'CONTAINER', ipc: 'POD' };

// ------------------------------------------------------------------------------------ scalars

/** An int64 wire value (decimal string, as proto-loader decodes with `longs: String`) as bigint. */
export function int64ToBigint(v: string | number | null | undefined): bigint {
  if (v === null || v === undefined || v === '') return 0n;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v))
      throw new KindError('Internal', `int64 value ${v} lost precision in transit`);
    return BigInt(v);
  }
  if (!/^-?\d+$/.test(v)) throw new KindError('Internal', `malformed int64 value ${JSON.stringify(v)}`);
  return BigInt(v);
}

/** A bigint (or safe integer) as an int64 wire value. */
export function bigintToInt64(v: bigint | number): Int64 {
  if (typeof v === 'number') return numberToInt64(v, 'value');
  if (v > 0x7fffffffffffffffn || v < -0x8000000000000000n) {
    throw new KindError('InvalidArgument', `${v} does not fit an int64`);
  }
  return v.toString(10);
}

function numberToInt64(v: number, what: string): Int64 {
  if (!Number.isSafeInteger(v))
    throw new KindError('InvalidArgument', `${what} must be an integer, got ${v}`);
  return String(v);
}

function uint32(v: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) {
    throw new KindError('InvalidArgument', `${what} must be a uint32, got ${v}`);
  }
  return v;
}

function int32(v: number, what: string): number {
  if (!Number.isInteger(v) || v < -0x80000000 || v > 0x7fffffff) {
    throw new KindError('InvalidArgument', `${what} must be an int32, got ${v}`);
  }
  return v;
}

// ------------------------------------------------------------------------------------ enums

const SANDBOX_STATE_TO_WIRE = {
  ready: 'SANDBOX_READY',
  notready: 'SANDBOX_NOTREADY',
} as const satisfies Record<SandboxState, WireSandboxState>;

const CONTAINER_STATE_TO_WIRE = {
  created: 'CONTAINER_CREATED',
  running: 'CONTAINER_RUNNING',
  exited: 'CONTAINER_EXITED',
  unknown: 'CONTAINER_UNKNOWN',
} as const satisfies Record<ContainerState, WireContainerState>;

export function sandboxStateFromWire(s: string): SandboxState {
  return s === 'SANDBOX_READY' ? 'ready' : 'notready';
}

export function containerStateFromWire(s: string): ContainerState {
  switch (s) {
    case 'CONTAINER_CREATED':
      return 'created';
    case 'CONTAINER_RUNNING':
      return 'running';
    case 'CONTAINER_EXITED':
      return 'exited';
    default:
      return 'unknown';
  }
}

function namespaceModeFromWire(s: string | undefined): NamespaceMode {
  return s === 'NODE' || s === 'CONTAINER' ? s : 'POD';
}

function namespaceOptionsToWire(
  opts: NamespaceOptions | undefined,
  defaults: WireNamespaceOption,
): WireNamespaceOption {
  const wire: WireNamespaceOption = {
    network: opts?.network ?? defaults.network,
    pid: opts?.pid ?? defaults.pid,
    ipc: opts?.ipc ?? defaults.ipc,
  };
  // Only a user namespace of the pod's own is sent: without one the runtime uses the host's, as NODE asks.
  // A container that names none inherits the sandbox's (the defaults), as the kubelet builds both alike.
  if (opts?.userNamespace) {
    if (opts.userNamespace.mode === 'POD') wire.userns_options = userNamespaceToWire(opts.userNamespace);
  } else if (defaults.userns_options) {
    wire.userns_options = defaults.userns_options;
  }
  return wire;
}

function userNamespaceToWire(u: UserNamespace): WireUserNamespace {
  const ids = (list: UserNamespace['uids'], what: string) =>
    (list ?? []).map((m) => ({
      host_id: uint32(m.hostId, `${what} hostId`),
      container_id: uint32(m.containerId, `${what} containerId`),
      length: uint32(m.length, `${what} length`),
    }));
  return { mode: u.mode, uids: ids(u.uids, 'uid mapping'), gids: ids(u.gids, 'gid mapping') };
}

/** Unspecified means RuntimeDefault, sent explicitly: containerd reads an absent profile as unconfined. */
export function securityProfileToWire(p: SecurityProfile | undefined): WireSecurityProfile {
  const profileType = p?.profileType ?? 'RuntimeDefault';
  if (profileType === 'Localhost' && !p?.localhostRef) {
    throw new KindError('InvalidArgument', 'a Localhost seccomp profile needs localhostRef');
  }
  return {
    profile_type: profileType,
    localhost_ref: profileType === 'Localhost' ? (p?.localhostRef ?? '') : '',
  };
}

// ------------------------------------------------------------------------------------ requests

function metadataToWire(m: PodSandboxMetadata): WireSandboxMetadata {
  if (!m.name || !m.uid || !m.namespace) {
    throw new KindError('InvalidArgument', 'sandbox metadata needs name, uid and namespace', { metadata: m });
  }
  return { name: m.name, uid: m.uid, namespace: m.namespace, attempt: uint32(m.attempt, 'sandbox attempt') };
}

export function sandboxConfigToWire(c: PodSandboxConfig): WirePodSandboxConfig {
  const sc = c.linux?.securityContext;
  const security: WireSandboxSecurityContext = {
    namespace_options: namespaceOptionsToWire(sc?.namespaceOptions, KUBELET_NAMESPACE_DEFAULTS),
    readonly_rootfs: sc?.readonlyRootfs ?? false,
    supplemental_groups: (sc?.supplementalGroups ?? []).map((g) => numberToInt64(g, 'supplemental group')),
    privileged: sc?.privileged ?? false,
    seccomp: securityProfileToWire(sc?.seccomp),
  };
  if (sc?.runAsUser !== undefined) security.run_as_user = { value: numberToInt64(sc.runAsUser, 'runAsUser') };
  if (sc?.runAsGroup !== undefined)
    security.run_as_group = { value: numberToInt64(sc.runAsGroup, 'runAsGroup') };
  if (sc?.supplementalGroupsPolicy === 'Strict') security.supplemental_groups_policy = 'Strict';

  const wire: WirePodSandboxConfig = {
    metadata: metadataToWire(c.metadata),
    hostname: security.namespace_options.network === 'NODE' ? '' : (c.hostname ?? ''),
    log_directory: c.logDirectory ?? '',
    port_mappings: (c.portMappings ?? []).map((p) => ({
      protocol: p.protocol,
      container_port: int32(p.containerPort, 'containerPort'),
      host_port: int32(p.hostPort ?? 0, 'hostPort'),
      host_ip: p.hostIp ?? '',
    })),
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    linux: {
      cgroup_parent: c.linux?.cgroupParent ?? '',
      security_context: security,
      sysctls: { ...c.linux?.sysctls },
      ...(c.linux?.resources ? { resources: resourcesToWire(c.linux.resources) } : {}),
    },
  };
  if (c.dnsConfig) {
    wire.dns_config = {
      servers: [...(c.dnsConfig.servers ?? [])],
      searches: [...(c.dnsConfig.searches ?? [])],
      options: [...(c.dnsConfig.options ?? [])],
    };
  }
  return wire;
}

export function resourcesToWire(r: LinuxContainerResources): WireContainerResources {
  return {
    cpu_period: numberToInt64(r.cpuPeriod ?? 0, 'cpuPeriod'),
    cpu_quota: numberToInt64(r.cpuQuota ?? 0, 'cpuQuota'),
    cpu_shares: numberToInt64(r.cpuShares ?? 0, 'cpuShares'),
    memory_limit_in_bytes: numberToInt64(r.memoryLimitInBytes ?? 0, 'memoryLimitInBytes'),
    oom_score_adj: numberToInt64(r.oomScoreAdj ?? 0, 'oomScoreAdj'),
    ...(r.unified && Object.keys(r.unified).length > 0 ? { unified: { ...r.unified } } : {}),
    ...(r.cpusetCpus ? { cpuset_cpus: r.cpusetCpus } : {}),
    ...(r.memorySwapLimitInBytes
      ? { memory_swap_limit_in_bytes: numberToInt64(r.memorySwapLimitInBytes, 'memorySwapLimitInBytes') }
      : {}),
  };
}

/**
 * `sandbox` is the config the sandbox was run with: the container inherits its namespace modes when it
 * names none of its own.
 */
export function containerConfigToWire(c: ContainerConfig, sandbox: PodSandboxConfig): WireContainerConfig {
  if (!c.metadata.name) throw new KindError('InvalidArgument', 'container metadata needs a name');
  if (!c.image) throw new KindError('InvalidArgument', `container ${c.metadata.name} has no image`);
  const sc = c.linux?.securityContext;
  const podNamespaces = namespaceOptionsToWire(
    sandbox.linux?.securityContext?.namespaceOptions,
    KUBELET_NAMESPACE_DEFAULTS,
  );
  const security: WireContainerSecurityContext = {
    privileged: sc?.privileged ?? false,
    namespace_options: namespaceOptionsToWire(sc?.namespaceOptions, podNamespaces),
    readonly_rootfs: sc?.readonlyRootfs ?? false,
    no_new_privs: sc?.noNewPrivs ?? false,
    seccomp: securityProfileToWire(sc?.seccomp),
  };
  if (sc?.capabilities) {
    security.capabilities = {
      add_capabilities: [...(sc.capabilities.addCapabilities ?? [])],
      drop_capabilities: [...(sc.capabilities.dropCapabilities ?? [])],
    };
  }
  if (sc?.runAsUser !== undefined) security.run_as_user = { value: numberToInt64(sc.runAsUser, 'runAsUser') };
  if (sc?.runAsGroup !== undefined)
    security.run_as_group = { value: numberToInt64(sc.runAsGroup, 'runAsGroup') };
  if (sc?.supplementalGroups && sc.supplementalGroups.length > 0)
    security.supplemental_groups = sc.supplementalGroups.map((g) => numberToInt64(g, 'supplementalGroups'));
  if (sc?.supplementalGroupsPolicy === 'Strict') security.supplemental_groups_policy = 'Strict';
  if (sc?.maskedPaths) security.masked_paths = [...sc.maskedPaths];
  if (sc?.readonlyPaths) security.readonly_paths = [...sc.readonlyPaths];

  const wire: WireContainerConfig = {
    metadata: { name: c.metadata.name, attempt: uint32(c.metadata.attempt, 'container attempt') },
    image: { image: c.image },
    command: [...(c.command ?? [])],
    args: [...(c.args ?? [])],
    working_dir: c.workingDir ?? '',
    envs: (c.envs ?? []).map((e) => ({ key: e.key, value: e.value })),
    mounts: (c.mounts ?? []).map(mountToWire),
    devices: (c.devices ?? []).map((d) => ({
      container_path: d.containerPath,
      host_path: d.hostPath,
      permissions: d.permissions,
    })),
    CDI_devices: (c.cdiDevices ?? []).map((name) => ({ name })),
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    log_path: c.logPath ?? '',
    stdin: c.stdin ?? false,
    stdin_once: c.stdinOnce ?? false,
    tty: c.tty ?? false,
    linux: { security_context: security },
  };
  if (c.linux?.resources) wire.linux.resources = resourcesToWire(c.linux.resources);
  if (c.devices && c.devices.length > 0) {
    wire.devices = c.devices.map((d) => ({
      container_path: d.containerPath,
      host_path: d.hostPath,
      permissions: d.permissions,
    }));
  }
  if (c.cdiDevices && c.cdiDevices.length > 0) wire.CDI_devices = c.cdiDevices.map((name) => ({ name }));
  return wire;
}

export function sandboxFilterToWire(f: SandboxFilter | undefined): WireSandboxFilter {
  const wire: WireSandboxFilter = {};
  if (f?.id) wire.id = f.id;
  if (f?.state) wire.state = { state: SANDBOX_STATE_TO_WIRE[f.state] };
  if (f?.labelSelector) wire.label_selector = { ...f.labelSelector };
  return wire;
}

export function containerFilterToWire(f: ContainerFilter | undefined): WireContainerFilter {
  const wire: WireContainerFilter = {};
  if (f?.id) wire.id = f.id;
  if (f?.podSandboxId) wire.pod_sandbox_id = f.podSandboxId;
  if (f?.state) wire.state = { state: CONTAINER_STATE_TO_WIRE[f.state] };
  if (f?.labelSelector) wire.label_selector = { ...f.labelSelector };
  return wire;
}

// ------------------------------------------------------------------------------------ responses

function sandboxMetadataFromWire(m: WireSandboxMetadata | null | undefined): PodSandboxMetadata {
  return { name: m?.name ?? '', uid: m?.uid ?? '', namespace: m?.namespace ?? '', attempt: m?.attempt ?? 0 };
}

export function sandboxFromWire(s: WirePodSandbox): PodSandbox {
  return {
    id: s.id,
    metadata: sandboxMetadataFromWire(s.metadata),
    state: sandboxStateFromWire(s.state),
    createdAt: int64ToBigint(s.created_at),
    labels: { ...s.labels },
    annotations: { ...s.annotations },
  };
}

export function sandboxStatusFromWire(s: WirePodSandboxStatus): PodSandboxStatus {
  const status: PodSandboxStatus = {
    ...sandboxFromWire(s),
    networkMode: namespaceModeFromWire(s.linux?.namespaces?.options?.network),
  };
  if (s.network) {
    status.network = { ip: s.network.ip, additionalIps: (s.network.additional_ips ?? []).map((a) => a.ip) };
  }
  return status;
}

export function containerFromWire(c: WireContainer): Container {
  return {
    id: c.id,
    podSandboxId: c.pod_sandbox_id,
    metadata: { name: c.metadata?.name ?? '', attempt: c.metadata?.attempt ?? 0 },
    image: c.image?.image ?? '',
    imageRef: c.image_ref,
    state: containerStateFromWire(c.state),
    createdAt: int64ToBigint(c.created_at),
    labels: { ...c.labels },
    annotations: { ...c.annotations },
  };
}

/** The Linux resources a runtime reports as applied; undefined when it reports none (older runtimes). */
export function resourcesFromWire(
  r: WireContainerResources | null | undefined,
): LinuxContainerResources | undefined {
  if (!r) return undefined;
  const n = (v: Int64 | undefined): number => Number(int64ToBigint(v));
  const out: LinuxContainerResources = {
    cpuPeriod: n(r.cpu_period),
    cpuQuota: n(r.cpu_quota),
    cpuShares: n(r.cpu_shares),
    memoryLimitInBytes: n(r.memory_limit_in_bytes),
  };
  const adj = n(r.oom_score_adj);
  if (adj !== 0) out.oomScoreAdj = adj;
  if (r.cpuset_cpus) out.cpusetCpus = r.cpuset_cpus;
  return out;
}

/**
 * `podSandboxId` is not part of CRI's ContainerStatus; the caller passes it when known (from the
 * container's list entry), "" otherwise.
 */
export function containerStatusFromWire(c: WireContainerStatus, podSandboxId = ''): ContainerStatus {
  return {
    id: c.id,
    podSandboxId,
    metadata: { name: c.metadata?.name ?? '', attempt: c.metadata?.attempt ?? 0 },
    image: c.image?.image ?? '',
    imageRef: c.image_ref,
    state: containerStateFromWire(c.state),
    createdAt: int64ToBigint(c.created_at),
    startedAt: int64ToBigint(c.started_at),
    finishedAt: int64ToBigint(c.finished_at),
    exitCode: c.exit_code,
    reason: c.reason,
    message: c.message,
    labels: { ...c.labels },
    annotations: { ...c.annotations },
    // containerd already joins the sandbox's log directory and the container's log path.
    logPath: c.log_path,
    mounts: (c.mounts ?? []).map(mountFromWire),
    ...(c.resources?.linux ? { resources: resourcesFromWire(c.resources.linux) } : {}),
    ...(c.user?.linux
      ? {
          user: {
            linux: {
              uid: Number(int64ToBigint(c.user.linux.uid)),
              gid: Number(int64ToBigint(c.user.linux.gid)),
              supplementalGroups: (c.user.linux.supplemental_groups ?? []).map((g) =>
                Number(int64ToBigint(g)),
              ),
            },
          },
        }
      : {}),
  };
}

const PROPAGATION_TO_WIRE = {
  PRIVATE: 'PROPAGATION_PRIVATE',
  HOST_TO_CONTAINER: 'PROPAGATION_HOST_TO_CONTAINER',
  BIDIRECTIONAL: 'PROPAGATION_BIDIRECTIONAL',
} as const satisfies Record<MountPropagation, WireMountPropagation>;

export function mountToWire(m: Mount): WireMount {
  const wire: WireMount = {
    container_path: m.containerPath,
    host_path: m.hostPath,
    readonly: m.readonly ?? false,
    selinux_relabel: m.selinuxRelabel ?? false,
    propagation: PROPAGATION_TO_WIRE[m.propagation ?? 'PRIVATE'],
  };
  // Fields containerd 1.6 does not know are sent only when used, so its requests stay as they were.
  if (m.recursiveReadOnly) wire.recursive_read_only = true;
  if (m.image) {
    wire.image = { image: m.image };
    if (m.imageSubPath) wire.image_sub_path = m.imageSubPath;
  }
  return wire;
}

export function mountFromWire(m: WireMount): Mount {
  const out: Mount = { containerPath: m.container_path, hostPath: m.host_path, readonly: m.readonly };
  if (m.recursive_read_only) out.recursiveReadOnly = true;
  if (m.image?.image) out.image = m.image.image;
  if (m.image_sub_path) out.imageSubPath = m.image_sub_path;
  if (m.selinux_relabel) out.selinuxRelabel = true;
  if (m.propagation === 'PROPAGATION_HOST_TO_CONTAINER') out.propagation = 'HOST_TO_CONTAINER';
  else if (m.propagation === 'PROPAGATION_BIDIRECTIONAL') out.propagation = 'BIDIRECTIONAL';
  else out.propagation = 'PRIVATE';
  return out;
}

export function imageFromWire(i: WireImage): Image {
  const out: Image = {
    id: i.id,
    repoTags: [...i.repo_tags],
    repoDigests: [...i.repo_digests],
    size: Number(int64ToBigint(i.size)),
  };
  // The runtime sets uid for a numeric USER and username for a named one (kubelet getImageUser: uid first).
  if (i.uid) out.uid = Number(int64ToBigint(i.uid.value));
  else if (i.username) out.username = i.username;
  if (i.pinned) out.pinned = true;
  return out;
}

export function conditionFromWire(c: WireRuntimeCondition): RuntimeCondition {
  return { type: c.type, status: c.status, reason: c.reason, message: c.message };
}

/** The runtime's Status: conditions, and the handlers and features a runtime newer than containerd 1.6 adds. */
export function runtimeStatusFromWire(r: WireStatusResponse): RuntimeStatus {
  const status: RuntimeStatus = {
    conditions: (r.status?.conditions ?? []).map(conditionFromWire),
    handlers: (r.runtime_handlers ?? []).map((h) => ({
      name: h.name ?? '',
      recursiveReadOnlyMounts: h.features?.recursive_read_only_mounts === true,
      userNamespaces: h.features?.user_namespaces === true,
    })),
  };
  if (r.features)
    status.features = { supplementalGroupsPolicy: r.features.supplemental_groups_policy === true };
  return status;
}

export function versionFromWire(v: WireVersionResponse): RuntimeVersion {
  return {
    version: v.version,
    runtimeName: v.runtime_name,
    runtimeVersion: v.runtime_version,
    runtimeApiVersion: v.runtime_api_version,
  };
}

export function execSyncFromWire(r: WireExecSyncResponse): ExecSyncResult {
  return {
    stdout: Buffer.from(r.stdout ?? Buffer.alloc(0)),
    stderr: Buffer.from(r.stderr ?? Buffer.alloc(0)),
    exitCode: r.exit_code,
  };
}
