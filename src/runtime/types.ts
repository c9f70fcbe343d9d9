/**
 * The Runtime seam: what kubelet-operator needs from a container runtime, shaped by the CRI v1 API.
 *
 * Two implementations: `cri` (gRPC to containerd / CRI-O over a unix socket) and `sim` (in memory, for
 * scale tests and demos). Both keep these contracts:
 * - Every method may be called concurrently and more than once; none blocks past its deadline.
 * - Failures are KindErrors (src/util/errors.ts): `NotFound` for an unknown ID, `Unavailable` when the runtime
 *   cannot be reached, `DeadlineExceeded` when a call ran out of time, `InvalidArgument` for a request the
 *   runtime refused as malformed, `AlreadyExists` for a reserved name. Callers branch on the kind.
 * - Returned objects belong to the caller; the runtime never mutates them afterwards.
 * - Timestamps are nanoseconds since the epoch as bigint (CRI int64 values exceed 2^53).
 * - Labels and annotations round-trip unchanged; the kubelet's labels (labels.ts) are how state is rebuilt
 *   after a restart, so a runtime must never drop them.
 */

export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE';

export interface KeyValue {
  key: string;
  value: string;
}

export interface PortMapping {
  protocol: 'TCP' | 'UDP' | 'SCTP';
  containerPort: number;
  hostPort?: number;
  hostIp?: string;
}

/** CRI MountPropagation: PRIVATE (no propagation), HOST_TO_CONTAINER (rslave), BIDIRECTIONAL (rshared). */
export type MountPropagation = 'PRIVATE' | 'HOST_TO_CONTAINER' | 'BIDIRECTIONAL';

export interface Mount {
  containerPath: string;
  /** "" for an image mount (`image` set). */
  hostPath: string;
  readonly?: boolean;
  /**
   * Read-only all the way down, submounts included (CRI recursive_read_only; the kubelet asks only when the
   * runtime handler reports support). Implies `readonly`.
   */
  recursiveReadOnly?: boolean;
  /** Relabel for SELinux (the runtime ignores it without SELinux). */
  selinuxRelabel?: boolean;
  /** Default PRIVATE. */
  propagation?: MountPropagation;
  /**
   * An image volume (CRI Mount.image): the image (its ID, as the pull returned it) is mounted read-only in
   * place of a host path. Only for a runtime whose capabilities say `imageVolumes`.
   */
  image?: string;
  /** The directory of the image mounted instead of its root (CRI image_sub_path); "" or absent: the root. */
  imageSubPath?: string;
}

/** One ID range of a user namespace (CRI IDMapping): container IDs from containerId map to host IDs from hostId. */
export interface IDMapping {
  hostId: number;
  containerId: number;
  length: number;
}

/**
 * The pod's user namespace (CRI UserNamespace): NODE is the host's (no mapping), POD a namespace of its own
 * with one UID and one GID mapping.
 */
export interface UserNamespace {
  mode: 'NODE' | 'POD';
  uids?: readonly IDMapping[];
  gids?: readonly IDMapping[];
}

/** The namespaces of a sandbox or container (CRI NamespaceOption). */
export interface NamespaceOptions {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
  /** Absent: the host's user namespace (what the runtime does without one). */
  userNamespace?: UserNamespace;
}

/**
 * How the process's groups are made (CRI SupplementalGroupsPolicy): Merge adds the groups the image's
 * /etc/group gives the user to the pod's; Strict takes the pod's only.
 */
export type SupplementalGroupsPolicy = 'Merge' | 'Strict';

export interface SecurityProfile {
  /** RuntimeDefault, Unconfined or Localhost (with a path). */
  profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostRef?: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  /** Directory for the pod's container logs (kubelet: `<root>/<ns>_<pod>_<uid>`); "" = no log files. */
  logDirectory?: string;
  dnsConfig?: { servers?: string[]; searches?: string[]; options?: string[] };
  portMappings?: PortMapping[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  linux?: {
    cgroupParent?: string;
    securityContext?: {
      namespaceOptions?: NamespaceOptions;
      runAsUser?: number;
      runAsGroup?: number;
      readonlyRootfs?: boolean;
      supplementalGroups?: number[];
      /** Absent: Merge. */
      supplementalGroupsPolicy?: SupplementalGroupsPolicy;
      privileged?: boolean;
      seccomp?: SecurityProfile;
    };
    sysctls?: Record<string, string>;
    /**
     * The whole pod's requests and limits, pod-level resources included, as one container's (CRI
     * LinuxPodSandboxConfig.resources; informational for runtimes such as containerd 1.6 that ignore it).
     */
    resources?: LinuxContainerResources;
  };
}

export interface ContainerMetadata {
  name: string;
  attempt: number;
}

/** A host device node made available in a container (CRI Device); permissions: any of "rwm". */
export interface Device {
  containerPath: string;
  hostPath: string;
  permissions: string;
}

export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  /** Memory plus swap (cgroup v1 `memory.memsw.limit_in_bytes`); absent or 0: the runtime's default. */
  memorySwapLimitInBytes?: number;
  /** cgroup v2 files to write, by name (e.g. `memory.swap.max`). */
  unified?: Record<string, string>;
  /** CPUs the container may run on, in the kernel's list format (the CPU manager's); absent: unchanged. */
  cpusetCpus?: string;
}

export interface ContainerConfig {
  metadata: ContainerMetadata;
  image: string;
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: KeyValue[];
  mounts?: Mount[];
  /** Device nodes (CRI devices; here those of CDI specs the kubelet applied for a runtime without CDI). */
  devices?: Device[];
  /** Fully qualified CDI device names the runtime resolves (CRI CDI_devices), from DRA drivers. */
  cdiDevices?: string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Relative to the sandbox's logDirectory (kubelet: `<container>/<attempt>.log`). */
  logPath?: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: {
    resources?: LinuxContainerResources;
    securityContext?: {
      capabilities?: { addCapabilities?: string[]; dropCapabilities?: string[] };
      privileged?: boolean;
      namespaceOptions?: NamespaceOptions;
      runAsUser?: number;
      runAsGroup?: number;
      readonlyRootfs?: boolean;
      /** The pod's fsGroup and supplementalGroups (the runtime adds them to the process's groups). */
      supplementalGroups?: number[];
      /** Absent: Merge. */
      supplementalGroupsPolicy?: SupplementalGroupsPolicy;
      noNewPrivs?: boolean;
      seccomp?: SecurityProfile;
      /** Paths the runtime masks (procMount); an empty list masks none, absent leaves the runtime's default. */
      maskedPaths?: string[];
      /** Paths the runtime mounts read-only (procMount), as maskedPaths. */
      readonlyPaths?: string[];
    };
  };
}

export type SandboxState = 'ready' | 'notready';
export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata;
  state: SandboxState;
  createdAt: bigint;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface PodSandboxStatus extends PodSandbox {
  /** Absent when the runtime reported no network status (host network sandboxes may still have one). */
  network?: { ip: string; additionalIps: string[] };
  /** The network namespace mode the sandbox was created with. */
  networkMode: NamespaceMode;
}

export interface Container {
  id: string;
  podSandboxId: string;
  metadata: ContainerMetadata;
  image: string;
  imageRef: string;
  state: ContainerState;
  createdAt: bigint;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface ContainerStatus extends Container {
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  /** Completed, Error, OOMKilled, ... as the runtime words it; "" while not exited. */
  reason: string;
  message: string;
  /** Absolute log path (sandbox log directory + container log path); "" when there is no log file. */
  logPath: string;
  /** The container's mounts as created (the termination-message file is found here). */
  mounts?: Mount[];
  /**
   * The Linux resources the runtime has applied (CRI ContainerStatus.resources): those it was created with,
   * or the last UpdateContainerResources. Absent when the runtime does not report them.
   */
  resources?: LinuxContainerResources;
  /**
   * The identity the container's process runs with (CRI ContainerStatus.user), as the runtime resolved it:
   * uid, primary gid and every group (the gid first). Absent when the runtime does not report it
   * (containerd 1.6).
   */
  user?: ContainerUser;
}

export interface ContainerUser {
  linux?: { uid: number; gid: number; supplementalGroups: number[] };
}

/** CPU use at `timestamp` (CRI CpuUsage). */
export interface CpuUsage {
  /** Nanoseconds since the epoch when the sample was taken. */
  timestamp: bigint;
  /** Cumulative CPU time over all cores since the container (or sandbox) started, in core-nanoseconds. */
  usageCoreNanoSeconds?: number;
  /** Rate over a recent window, in nano-cores (1e9 = one core busy); absent when the runtime has no window. */
  usageNanoCores?: number;
}

/** Memory use at `timestamp` (CRI MemoryUsage). */
export interface MemoryUsage {
  timestamp: bigint;
  /** Usage minus inactive file pages: what the OOM killer weighs, and what metrics-server reports. */
  workingSetBytes?: number;
  /** Limit minus working set; absent without a limit. */
  availableBytes?: number;
  /** Total memory in use, page cache included (cgroup memory.usage_in_bytes / memory.current). */
  usageBytes?: number;
  /** Anonymous and swap cache memory. */
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** Disk use of one filesystem or layer at `timestamp` (CRI FilesystemUsage). */
export interface FilesystemUsage {
  timestamp: bigint;
  /** The filesystem's mountpoint, when the runtime names it. */
  mountpoint?: string;
  usedBytes?: number;
  inodesUsed?: number;
}

/** Which container or sandbox a stats record belongs to (CRI ContainerAttributes / PodSandboxAttributes). */
export interface StatsAttributes<M> {
  id: string;
  metadata: M;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/**
 * A container's usage as CRI ContainerStats reports it; a field the runtime does not report is absent.
 * `attributes` is set by listContainerStats and may be absent from containerStats(id).
 */
export interface ContainerStats {
  attributes?: StatsAttributes<ContainerMetadata>;
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  /** The container's writable layer (its rootfs changes). */
  writableLayer?: FilesystemUsage;
}

/** One network interface's counters (CRI NetworkInterfaceUsage). */
export interface NetworkInterfaceUsage {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** A sandbox's usage: the pod's cgroup and network namespace (CRI PodSandboxStats, Linux part). */
export interface PodSandboxStats {
  attributes: StatsAttributes<PodSandboxMetadata>;
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  network?: {
    timestamp: bigint;
    defaultInterface?: NetworkInterfaceUsage;
    interfaces: NetworkInterfaceUsage[];
  };
  process?: { timestamp: bigint; processCount: number };
  /** The sandbox's containers, as listContainerStats would report them. */
  containers: ContainerStats[];
}

export interface ContainerStatsFilter {
  id?: string;
  podSandboxId?: string;
  labelSelector?: Record<string, string>;
}

export interface PodSandboxStatsFilter {
  id?: string;
  labelSelector?: Record<string, string>;
}

export interface ExecSyncResult {
  stdout: Buffer;
  stderr: Buffer;
  exitCode: number;
}

export interface Image {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  /** The image's USER when it is numeric (CRI Image.uid); at most one of uid and username is set. */
  uid?: number;
  /** The image's USER when it is a name (CRI Image.username). Neither set: the image runs as root. */
  username?: string;
  /** The runtime keeps it whatever happens (CRI Image.pinned: containerd's sandbox image); never collected. */
  pinned?: boolean;
}

/**
 * Where the runtime keeps images and containers' writable layers and what they take (CRI ImageFsInfo). A
 * runtime with one filesystem for both names the same mountpoint in each list (or no container list).
 */
export interface ImageFsInfo {
  imageFilesystems: FilesystemUsage[];
  containerFilesystems: FilesystemUsage[];
}

export interface RuntimeCondition {
  type: 'RuntimeReady' | 'NetworkReady' | string;
  status: boolean;
  reason: string;
  message: string;
}

/** One runtime handler (CRI RuntimeHandler): what it supports. */
export interface RuntimeHandler {
  /** "" for the default handler (pods without a RuntimeClass). */
  name: string;
  recursiveReadOnlyMounts: boolean;
  userNamespaces: boolean;
}

/** Features of the runtime as a whole (CRI RuntimeFeatures). */
export interface RuntimeFeatures {
  supplementalGroupsPolicy: boolean;
}

/** What the runtime's Status reports (CRI StatusResponse, not verbose). */
export interface RuntimeStatus {
  /** RuntimeReady and NetworkReady. */
  conditions: RuntimeCondition[];
  /** Empty when the runtime reports none (containerd 1.6: the field is newer than it). */
  handlers: RuntimeHandler[];
  /** Absent when the runtime reports none (containerd 1.6). */
  features?: RuntimeFeatures;
}

export interface RuntimeVersion {
  /** CRI API version, e.g. "v1". */
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface SandboxFilter {
  id?: string;
  state?: SandboxState;
  labelSelector?: Record<string, string>;
}

export interface ContainerFilter {
  id?: string;
  podSandboxId?: string;
  state?: ContainerState;
  labelSelector?: Record<string, string>;
}

/** Streaming requests return a URL that the node API proxies to (CRI streaming server). */
export interface StreamingRequest {
  containerId: string;
  cmd?: string[];
  tty?: boolean;
  stdin?: boolean;
  stdout?: boolean;
  stderr?: boolean;
}

/** What a network probe of a container's port would see now, worded as the kubelet's probers word it. */
export interface PortProbeOutcome {
  result: 'success' | 'failure';
  /** Why it failed (e.g. `dial tcp <ip>:<port>: connect: connection refused`); "" on success. */
  output: string;
}

/**
 * Answers an http or tcp probe of `port` on the container without touching the network. Synchronous and
 * cheap (the prober calls it every period for every probed container); throws NotFound for an unknown ID.
 */
export type PortProber = (containerId: string, port: number, protocol: 'http' | 'tcp') => PortProbeOutcome;

/**
 * The container's log as CRI-format lines (`<RFC3339Nano> <stdout|stderr> <P|F> <text>`), as written so far.
 * Synchronous; throws NotFound for an unknown ID. The caller owns the returned array.
 */
export type LogLineReader = (containerId: string) => string[];

/**
 * What an implementation asks of, or offers to, the kubelet around it beyond the CRI calls. The kubelet
 * branches on these and never on which implementation it has (`kind`), so a third runtime is a new set of
 * answers here, not a hunt for `kind === ...` checks. Fixed for the runtime's lifetime.
 */
export interface RuntimeCapabilities {
  /**
   * The kubelet lays out pod log directories (`<podLogsRoot>/<ns>_<pod>_<uid>/<container>/`) on this host
   * before the runtime writes log files into them, and deletes them with the pod, as it does for a CRI
   * runtime. False: logs never touch this host's disk (see readLogs).
   */
  readonly hostLogDirectories: boolean;
  /** The kubelet removes the pod cgroup that the runtime leaves behind on this host (containerd does). */
  readonly hostPodCgroups: boolean;
  /**
   * Present when the runtime answers network probes itself: its pod IPs are not reachable from this host
   * (the simulated runtime's are made up). Absent: http, tcp and grpc probes go over the network.
   */
  readonly probePort?: PortProber;
  /** Present when the runtime hands out log lines itself; absent: they are read from ContainerStatus.logPath. */
  readonly readLogs?: LogLineReader;
  /**
   * Pod annotations whose keys start with this prefix are copied onto every container's config, for a
   * runtime that reads per-container settings from them (the simulated runtime's behaviour profiles).
   */
  readonly podAnnotationPrefix?: string;
  /**
   * The runtime type that container IDs carry in the API (`<type>://<id>`) when the implementation fixes
   * it (`sim`). Absent: the `runtimeName` that version() reports (containerd, cri-o).
   */
  readonly runtimeType?: string;
  /**
   * Present when the runtime keeps its containers in the process (the simulated runtime): a new process has
   * none of them, and rebuilds them from what the API recorded (kubelet/kubelet_adopt.ts). Absent: the
   * runtime keeps its state itself and the kubelet adopts it by labels (cri).
   */
  readonly adopt?: RuntimeAdopter;
  /**
   * Present when the runtime can tell that nothing its listings report has changed (the simulated runtime):
   * a number that moves whenever a sandbox or container is added or removed or changes state. While it stands,
   * the kubelet's relist reuses its last listing without asking (kuberuntime/shell/manager.ts getPods). Undefined
   * from it: ask this time. Absent (cri): every relist lists.
   */
  readonly listingRevision?: () => number | undefined;
  /**
   * True when the runtime mounts image volumes itself (a mount that names an `image` instead of a host path,
   * CRI Mount.image). No CRI call reports it; containerd before 2.1 ignores the field and would get a mount
   * without a source. Absent: it cannot, and the kubelet does not hand it such a mount.
   */
  readonly imageVolumes?: boolean;
  /**
   * True when the runtime resolves CDI device names (ContainerConfig.cdiDevices) into the container itself
   * (containerd 1.7+ with enable_cdi, 2.x). Absent: it ignores them (Debian's containerd 1.6; the simulated
   * runtime), and the kubelet applies the CDI specs' env, device nodes and mounts to the config itself.
   */
  readonly cdi?: boolean;
}

/** How the sandbox being adopted was: its pod IP (pod network only) and when it was created. */
export interface AdoptedSandbox {
  /** Reserved exactly; ignored for a host-network sandbox (it has the node's). */
  ip?: string;
  createdAtMs: number;
}

/** How the container instance being adopted was, as the pod's API status recorded it. */
export interface AdoptedContainer {
  /** The ID it had (without the `<type>://` prefix); it keeps it. */
  id: string;
  state: 'running' | 'exited';
  startedAtMs: number;
  /** Exited only: when, with which code (default 0), reason (default the runtime's for the code), message. */
  finishedAtMs?: number;
  exitCode?: number;
  reason?: string;
  message?: string;
}

/**
 * Recreates a runtime's records as they were before the process that held them went away: the records
 * exactly as RunPodSandbox, CreateContainer and StartContainer (and the exit) would have left them, with the
 * IDs, IP and times given, without pulling, waiting or starting anything anew. Synchronous. Throws
 * KindErrors: AlreadyExists for an ID, name or IP already taken, InvalidArgument for an IP outside the pod
 * range or a malformed config or time, NotFound for an unknown sandbox, Unavailable once closed.
 */
export interface RuntimeAdopter {
  /** Resolves to the (new) sandbox ID. */
  adoptSandbox(config: PodSandboxConfig, fixed: AdoptedSandbox): string;
  /**
   * Adopts one instance of a container into a ready sandbox (oldest instances first: the order of adoption
   * is the order of creation). A running one exits, as its behaviour says, counting from `startedAtMs`; one
   * whose run ended meanwhile exits at the next tick. Resolves to its ID.
   */
  adoptContainer(
    sandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
    fixed: AdoptedContainer,
  ): string;
}

export interface Runtime {
  /** Short implementation name: "cri" or "sim". For logs and status only: behaviour follows `capabilities`. */
  readonly kind: 'cri' | 'sim';
  /** What the kubelet must do for this runtime, or may ask of it, beyond the calls below. */
  readonly capabilities: RuntimeCapabilities;

  version(): Promise<RuntimeVersion>;
  /** RuntimeReady and NetworkReady conditions, and the handlers and features the runtime reports. */
  status(): Promise<RuntimeStatus>;
  /**
   * The node's pod CIDR (comma-separated when dual-stack), as the control plane assigned it (Node
   * spec.podCIDRs): CRI UpdateRuntimeConfig, with which containerd writes its CNI configuration from its
   * template. Absent for a runtime with its own addressing (sim).
   */
  updatePodCIDR?(podCIDR: string): Promise<void>;

  /** Creates and starts a sandbox; resolves to its ID. */
  runPodSandbox(config: PodSandboxConfig): Promise<string>;
  /** Stops every container of the sandbox and the sandbox itself. Stopping a stopped sandbox succeeds. */
  stopPodSandbox(id: string): Promise<void>;
  /** Removes a sandbox and its containers. Removing an unknown ID succeeds (idempotent, like CRI). */
  removePodSandbox(id: string): Promise<void>;
  podSandboxStatus(id: string): Promise<PodSandboxStatus>;
  listPodSandbox(filter?: SandboxFilter): Promise<readonly PodSandbox[]>;

  /** `sandboxConfig` is the config the sandbox was run with (containerd needs it on every create). */
  createContainer(
    podSandboxId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
  ): Promise<string>;
  startContainer(id: string): Promise<void>;
  /** SIGTERM, then SIGKILL after `timeoutSeconds`. Stopping an exited container succeeds. */
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  /** Removing an unknown ID succeeds. */
  removeContainer(id: string): Promise<void>;
  listContainers(filter?: ContainerFilter): Promise<readonly Container[]>;
  containerStatus(id: string): Promise<ContainerStatus>;
  /**
   * In-place resize: applies new cpu and memory settings to a created or running container without restarting
   * it (CRI UpdateContainerResources). NotFound for an unknown ID.
   */
  updateContainerResources(id: string, resources: LinuxContainerResources): Promise<void>;
  /** What one container uses now (CRI ContainerStats). NotFound for an unknown ID. */
  containerStats(id: string): Promise<ContainerStats>;
  /** Usage of every container that matches (CRI ListContainerStats), `attributes` set; exited ones may be left out. */
  listContainerStats(filter?: ContainerStatsFilter): Promise<ContainerStats[]>;
  /**
   * Usage of every ready sandbox that matches, with its containers (CRI ListPodSandboxStats). A runtime that
   * cannot measure a sandbox as a whole leaves its cpu and memory absent; the kubelet then sums the containers.
   */
  listPodSandboxStats(filter?: PodSandboxStatsFilter): Promise<PodSandboxStats[]>;

  /** Runs a command in a running container. A non-zero exit is data; running out of time is DeadlineExceeded. */
  execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecSyncResult>;
  exec(req: StreamingRequest): Promise<{ url: string }>;
  attach(req: StreamingRequest): Promise<{ url: string }>;
  portForward(podSandboxId: string, ports: number[]): Promise<{ url: string }>;

  /** Resolves to the image reference (ID) that was pulled; `auth`: the registry credentials to pull with. */
  pullImage(image: string, sandboxConfig?: PodSandboxConfig, auth?: AuthConfig): Promise<string>;
  /** Null when the image is not present. */
  imageStatus(image: string): Promise<Image | null>;
  listImages(): Promise<Image[]>;
  removeImage(image: string): Promise<void>;
  /** The image and container filesystems and their usage (CRI ImageFsInfo). */
  imageFsInfo(): Promise<ImageFsInfo>;

  /** Releases connections and timers. The runtime is unusable afterwards. */
  close(): Promise<void>;
}

/** Registry credentials for a pull (CRI AuthConfig). */
export interface AuthConfig {
  username?: string;
  password?: string;
  /** base64 of `username:password`. */
  auth?: string;
  serverAddress?: string;
  identityToken?: string;
  registryToken?: string;
}
