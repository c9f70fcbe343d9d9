/**
 * The kubelet's PodSandboxConfig and ContainerConfig for a pod (kuberuntime_sandbox.go
 * generatePodSandboxConfig, kuberuntime_container.go generateContainerConfig, labels.go), as our Runtime
 * types. Pure: the caller resolves what needs I/O (environment values, volume mounts, the pulled image).
 *
 * Conventions kept:
 * - Hostname: spec.hostname or the pod name, cut to 63 characters without a trailing '-' or '.';
 *   none for a host-network pod (the runtime gives it the node's).
 * - Logs: `<podLogsRoot>/<namespace>_<name>_<uid>`, each container at `<name>/<restartCount>.log`.
 * - Cgroup parent `<cgroupRoot>/pod<uid>`.
 * - Namespaces: network NODE for hostNetwork else POD; pid CONTAINER unless shareProcessNamespace (POD) or
 *   hostPID (NODE); ipc POD unless hostIPC (NODE). Containers get the pod's modes.
 * - Seccomp: the container's profile, else the pod's, else RuntimeDefault. The sandbox uses the pod's.
 * - Privileged sandbox when any container (init and ephemeral included) is privileged.
 * - Resources (cgroup v1): cpu shares from the request (the limit when only a limit is set),
 *   milliCPU*1024/1000, at least 2; CFS period 100000 us and quota from the cpu limit (0 = none, at
 *   least 1000); memory limit in bytes; oom_score_adj by QoS class when the node's memory is known.
 */
import type { Container, Pod, SecurityContext } from '../../api/core.js';
import { hashContainer } from '../../kubelet/container/helpers.js';
import { getPodQOS } from '../../kubelet/qos.js';
import { KindError } from '../../util/errors.js';
import { quantityMilliValue, quantityValue } from '../../util/quantity.js';
import {
  ContainerHashAnnotation,
  ContainerNameLabel,
  ContainerPortsAnnotation,
  ContainerRestartCountAnnotation,
  ContainerTerminationMessagePathAnnotation,
  ContainerTerminationMessagePolicyAnnotation,
  ManagedByLabel,
  PodDeletionGracePeriodAnnotation,
  PodNameLabel,
  PodNamespaceLabel,
  PodTerminationGracePeriodAnnotation,
  PodUIDLabel,
} from '../labels.js';
import type {
  ContainerConfig,
  KeyValue,
  LinuxContainerResources,
  Mount,
  NamespaceMode,
  PodSandboxConfig,
  PortMapping,
  SecurityProfile,
} from '../types.js';

/** The node-level inputs (kubelet flags / config). */
export interface NodeSettings {
  /** The node's name; written as ManagedByLabel on everything created for it. */
  nodeName: string;
  /** kubelet: /var/log/pods. */
  podLogsRoot: string;
  /** cgroupfs parent of the pod cgroups, e.g. "/kubepods". */
  cgroupRoot: string;
  /** Node memory capacity in bytes; enables oom_score_adj by QoS class. */
  memoryCapacityBytes?: number;
  /** resolv.conf settings for pods (cluster DNS); absent = the runtime's default. */
  dnsConfig?: PodSandboxConfig['dnsConfig'];
}

/** What the caller resolved for one container start. */
export interface ContainerInputs {
  /** The container's restart count; it is also the CRI attempt. */
  restartCount: number;
  /** Resolved environment, in order (literal values, downward API, config maps...). */
  envs?: KeyValue[];
  /** Resolved volume mounts (host paths already prepared). */
  mounts?: Mount[];
  /** The image to run, e.g. the reference the pull returned; defaults to the spec's image. */
  image?: string;
}

/** API defaults the kubelet sees already applied by the API server. */
const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';
const DEFAULT_TERMINATION_MESSAGE_POLICY = 'File';
const HOSTNAME_MAX = 63;

/** kubelet cm: MinShares, MaxShares, SharesPerCPU, QuotaPeriod, MinQuotaPeriod. */
export const MIN_SHARES = 2;
export const MAX_SHARES = 262_144;
export const SHARES_PER_CPU = 1024;
export const QUOTA_PERIOD_US = 100_000;
export const MIN_QUOTA_PERIOD_US = 1_000;

/** oom_score_adj values of pkg/kubelet/qos. */
const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;

/** Fields of core/v1 PodSpec the shared types leave out; the API server sends them. */
interface PodSpecExtras {
  hostPID?: boolean;
  hostIPC?: boolean;
  shareProcessNamespace?: boolean;
  securityContext?: { supplementalGroups?: number[]; sysctls?: { name: string; value: string }[] };
}

function podIdentity(pod: Pod): { name: string; namespace: string; uid: string } {
  const { name, namespace, uid } = pod.metadata;
  if (!name || !namespace || !uid) {
    throw new KindError('InvalidArgument', 'pod needs metadata.name, namespace and uid', {
      pod: `${namespace ?? ''}/${name ?? ''}`,
    });
  }
  return { name, namespace, uid };
}

/** kubelet GeneratePodHostNameAndDomain's hostname, truncated as truncatePodHostnameIfNeeded. */
export function podHostname(pod: Pod): string {
  const hostname = pod.spec.hostname || pod.metadata.name || '';
  if (hostname.length <= HOSTNAME_MAX) return hostname;
  return hostname.slice(0, HOSTNAME_MAX).replace(/[-.]+$/, '');
}

/** `<root>/<namespace>_<name>_<uid>` (kubelet BuildPodLogsDirectory). */
export function podLogsDirectory(root: string, namespace: string, name: string, uid: string): string {
  return `${root.replace(/\/+$/, '')}/${namespace}_${name}_${uid}`;
}

/** `<name>/<restartCount>.log`, relative to the pod's log directory (kubelet BuildContainerLogsPath). */
export function containerLogPath(containerName: string, restartCount: number): string {
  return `${containerName}/${restartCount}.log`;
}

export function podCgroupParent(cgroupRoot: string, uid: string): string {
  return `${cgroupRoot.replace(/\/+$/, '')}/pod${uid}`;
}

export function podNamespaceOptions(pod: Pod): {
  network: NamespaceMode;
  pid: NamespaceMode;
  ipc: NamespaceMode;
} {
  const spec = pod.spec as Pod['spec'] & PodSpecExtras;
  return {
    network: spec.hostNetwork ? 'NODE' : 'POD',
    pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER',
    ipc: spec.hostIPC ? 'NODE' : 'POD',
  };
}

function allContainers(pod: Pod): Container[] {
  return [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...(pod.spec.ephemeralContainers ?? []),
  ];
}

export function hasPrivilegedContainer(pod: Pod): boolean {
  return allContainers(pod).some((c) => c.securityContext?.privileged === true);
}

function seccompFrom(profile: SecurityContext['seccompProfile'] | undefined): SecurityProfile | undefined {
  if (!profile) return undefined;
  if (profile.type === 'Localhost') {
    return { profileType: 'Localhost', localhostRef: profile.localhostProfile ?? '' };
  }
  return { profileType: profile.type };
}

function supplementalGroups(pod: Pod): number[] | undefined {
  const sc = pod.spec.securityContext as
    (Pod['spec']['securityContext'] & PodSpecExtras['securityContext']) | undefined;
  const groups = [...(sc?.fsGroup !== undefined ? [sc.fsGroup] : []), ...(sc?.supplementalGroups ?? [])];
  return groups.length > 0 ? groups : undefined;
}

/** Every container port as the kubelet's MakePortMappings lists it (hostPort 0 = none), duplicates once. */
export function podPortMappings(pod: Pod): PortMapping[] {
  const seen = new Set<string>();
  const out: PortMapping[] = [];
  for (const c of pod.spec.containers) {
    for (const p of c.ports ?? []) {
      const m: PortMapping = { protocol: p.protocol ?? 'TCP', containerPort: p.containerPort };
      if (p.hostPort) m.hostPort = p.hostPort;
      if (p.hostIP) m.hostIp = p.hostIP;
      const key = `${m.protocol}/${m.containerPort}/${m.hostPort ?? 0}/${m.hostIp ?? ''}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(m);
    }
  }
  return out;
}

/**
 * What the kubelet around the runtime decides for a sandbox (hostname, DNS); when given, it replaces the
 * defaults below (the pod name as hostname, the node's dnsConfig).
 */
export interface SandboxOverrides {
  hostname?: string;
  dnsConfig?: PodSandboxConfig['dnsConfig'];
}

/** The sandbox config for the pod's `attempt`-th sandbox. */
export function buildPodSandboxConfig(
  pod: Pod,
  node: NodeSettings,
  attempt: number,
  overrides?: SandboxOverrides,
): PodSandboxConfig {
  const { name, namespace, uid } = podIdentity(pod);
  const spec = pod.spec as Pod['spec'] & PodSpecExtras;
  const psc = pod.spec.securityContext;
  const security: NonNullable<NonNullable<PodSandboxConfig['linux']>['securityContext']> = {
    namespaceOptions: podNamespaceOptions(pod),
    privileged: hasPrivilegedContainer(pod),
    seccomp: seccompFrom(psc?.seccompProfile) ?? { profileType: 'RuntimeDefault' },
  };
  if (psc?.runAsUser !== undefined) security.runAsUser = psc.runAsUser;
  if (psc?.runAsGroup !== undefined) security.runAsGroup = psc.runAsGroup;
  const groups = supplementalGroups(pod);
  if (groups) security.supplementalGroups = groups;

  const config: PodSandboxConfig = {
    metadata: { name, namespace, uid, attempt },
    logDirectory: podLogsDirectory(node.podLogsRoot, namespace, name, uid),
    portMappings: podPortMappings(pod),
    labels: {
      ...pod.metadata.labels,
      [PodNameLabel]: name,
      [PodNamespaceLabel]: namespace,
      [PodUIDLabel]: uid,
      [ManagedByLabel]: node.nodeName,
    },
    annotations: { ...pod.metadata.annotations },
    linux: { cgroupParent: podCgroupParent(node.cgroupRoot, uid), securityContext: security },
  };
  if (overrides) {
    if (overrides.hostname !== undefined) config.hostname = overrides.hostname;
    if (overrides.dnsConfig) config.dnsConfig = structuredClone(overrides.dnsConfig);
  } else {
    if (!pod.spec.hostNetwork) config.hostname = podHostname(pod);
    if (node.dnsConfig) config.dnsConfig = structuredClone(node.dnsConfig);
  }
  const sysctls = spec.securityContext?.sysctls;
  if (sysctls && sysctls.length > 0 && config.linux) {
    config.linux.sysctls = Object.fromEntries(sysctls.map((s) => [s.name, s.value]));
  }
  return config;
}

/** kubelet MilliCPUToShares. */
export function milliCPUToShares(milliCPU: number): number {
  if (milliCPU <= 0) return MIN_SHARES;
  const shares = Math.floor((milliCPU * SHARES_PER_CPU) / 1000);
  return Math.min(MAX_SHARES, Math.max(MIN_SHARES, shares));
}

/** kubelet milliCPUToQuota: 0 (no limit) for 0, else at least MIN_QUOTA_PERIOD_US. */
export function milliCPUToQuota(milliCPU: number, periodUs: number): number {
  if (milliCPU <= 0) return 0;
  return Math.max(MIN_QUOTA_PERIOD_US, Math.floor((milliCPU * periodUs) / 1000));
}

function quantityOf(
  list: Record<string, string | number> | undefined,
  name: string,
): string | number | undefined {
  return list?.[name];
}

/** kubelet GetContainerOOMScoreAdjust (without the node-critical and sidecar special cases). */
export function containerOOMScoreAdj(pod: Pod, container: Container, memoryCapacityBytes: number): number {
  switch (getPodQOS(pod)) {
    case 'Guaranteed':
      return GUARANTEED_OOM_SCORE_ADJ;
    case 'BestEffort':
      return BESTEFFORT_OOM_SCORE_ADJ;
    case 'Burstable': {
      const request = quantityOf(container.resources?.requests, 'memory');
      const memoryRequest = request === undefined ? 0 : quantityValue(request);
      const adj = 1000 - Math.floor((1000 * memoryRequest) / memoryCapacityBytes);
      if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
      if (adj === BESTEFFORT_OOM_SCORE_ADJ) return adj - 1;
      return adj;
    }
  }
}

/** The Linux resources the kubelet sets for a container (cgroup v1). */
export function containerResources(
  pod: Pod,
  container: Container,
  node?: Pick<NodeSettings, 'memoryCapacityBytes'>,
): LinuxContainerResources {
  const cpuRequestQ = quantityOf(container.resources?.requests, 'cpu');
  const cpuLimitQ = quantityOf(container.resources?.limits, 'cpu');
  const memLimitQ = quantityOf(container.resources?.limits, 'memory');
  const cpuRequest = cpuRequestQ === undefined ? 0 : quantityMilliValue(cpuRequestQ);
  const cpuLimit = cpuLimitQ === undefined ? 0 : quantityMilliValue(cpuLimitQ);
  const r: LinuxContainerResources = {
    cpuShares: milliCPUToShares(cpuRequest === 0 && cpuLimit !== 0 ? cpuLimit : cpuRequest),
    cpuPeriod: QUOTA_PERIOD_US,
    cpuQuota: milliCPUToQuota(cpuLimit, QUOTA_PERIOD_US),
  };
  const memLimit = memLimitQ === undefined ? 0 : quantityValue(memLimitQ);
  if (memLimit > 0) r.memoryLimitInBytes = memLimit;
  if (node?.memoryCapacityBytes)
    r.oomScoreAdj = containerOOMScoreAdj(pod, container, node.memoryCapacityBytes);
  return r;
}

/** Go's json.Marshal of []ContainerPort (field order and omitempty as in core/v1), for the annotation. */
function portsAnnotation(container: Container): string {
  const ports = (container.ports ?? []).map((p) => ({
    ...(p.name ? { name: p.name } : {}),
    ...(p.hostPort ? { hostPort: p.hostPort } : {}),
    containerPort: p.containerPort,
    ...(p.protocol ? { protocol: p.protocol } : {}),
    ...(p.hostIP ? { hostIP: p.hostIP } : {}),
  }));
  return JSON.stringify(ports);
}

/** The config for (re)starting `container` of `pod`; `inputs.restartCount` is the CRI attempt. */
export function buildContainerConfig(
  pod: Pod,
  container: Container,
  inputs: ContainerInputs,
  node: NodeSettings,
): ContainerConfig {
  const { name, namespace, uid } = podIdentity(pod);
  if (!Number.isInteger(inputs.restartCount) || inputs.restartCount < 0) {
    throw new KindError(
      'InvalidArgument',
      `restartCount must be a non-negative integer, got ${inputs.restartCount}`,
    );
  }
  const image = inputs.image ?? container.image;
  if (!image) {
    throw new KindError(
      'InvalidArgument',
      `container ${container.name} of pod ${namespace}/${name} has no image`,
    );
  }
  const csc = container.securityContext;
  const psc = pod.spec.securityContext;

  const security: NonNullable<NonNullable<ContainerConfig['linux']>['securityContext']> = {
    namespaceOptions: podNamespaceOptions(pod),
    privileged: csc?.privileged ?? false,
    readonlyRootfs: csc?.readOnlyRootFilesystem ?? false,
    // kubelet AddNoNewPrivileges: only an explicit allowPrivilegeEscalation=false sets it.
    noNewPrivs: csc?.allowPrivilegeEscalation === false,
    seccomp: seccompFrom(csc?.seccompProfile) ??
      seccompFrom(psc?.seccompProfile) ?? { profileType: 'RuntimeDefault' },
  };
  const runAsUser = csc?.runAsUser ?? psc?.runAsUser;
  if (runAsUser !== undefined) security.runAsUser = runAsUser;
  const runAsGroup = csc?.runAsGroup ?? psc?.runAsGroup;
  if (runAsGroup !== undefined) security.runAsGroup = runAsGroup;
  // kubelet determineEffectiveSecurityContext: the pod's fsGroup and supplementalGroups reach every container.
  const groups = supplementalGroups(pod);
  if (groups) security.supplementalGroups = groups;
  if (csc?.capabilities) {
    security.capabilities = {
      addCapabilities: [...(csc.capabilities.add ?? [])],
      dropCapabilities: [...(csc.capabilities.drop ?? [])],
    };
  }

  const annotations: Record<string, string> = {
    [ContainerHashAnnotation]: hashContainer(container),
    [ContainerRestartCountAnnotation]: String(inputs.restartCount),
    [ContainerTerminationMessagePathAnnotation]:
      container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH,
    [ContainerTerminationMessagePolicyAnnotation]:
      container.terminationMessagePolicy ?? DEFAULT_TERMINATION_MESSAGE_POLICY,
  };
  if (pod.metadata.deletionGracePeriodSeconds !== undefined) {
    annotations[PodDeletionGracePeriodAnnotation] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec.terminationGracePeriodSeconds !== undefined) {
    annotations[PodTerminationGracePeriodAnnotation] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.ports && container.ports.length > 0)
    annotations[ContainerPortsAnnotation] = portsAnnotation(container);

  const config: ContainerConfig = {
    metadata: { name: container.name, attempt: inputs.restartCount },
    image,
    labels: {
      [PodNameLabel]: name,
      [PodNamespaceLabel]: namespace,
      [PodUIDLabel]: uid,
      [ContainerNameLabel]: container.name,
      [ManagedByLabel]: node.nodeName,
    },
    annotations,
    logPath: containerLogPath(container.name, inputs.restartCount),
    linux: { resources: containerResources(pod, container, node), securityContext: security },
  };
  if (container.command) config.command = [...container.command];
  if (container.args) config.args = [...container.args];
  if (container.workingDir) config.workingDir = container.workingDir;
  if (inputs.envs) config.envs = inputs.envs.map((e) => ({ ...e }));
  if (inputs.mounts) config.mounts = inputs.mounts.map((m) => ({ ...m }));
  if (container.stdin) config.stdin = true;
  if (container.stdinOnce) config.stdinOnce = true;
  if (container.tty) config.tty = true;
  return config;
}
