/**
 * The kubelet's PodSandboxConfig for a pod (kuberuntime_sandbox.go generatePodSandboxConfig, labels.go), as
 * our Runtime types, and the pod-level pieces the container config shares with it. Pure: the caller resolves
 * what needs I/O (hostname and DNS from the runtime helper).
 *
 * Conventions kept:
 * - Hostname: spec.hostname or the pod name, cut to 63 characters without a trailing '-' or '.';
 *   none for a host-network pod (the runtime gives it the node's).
 * - Logs: `<podLogsRoot>/<namespace>_<name>_<uid>`.
 * - Cgroup parent `<cgroupRoot>/pod<uid>`.
 * - Namespaces: network NODE for hostNetwork else POD; pid CONTAINER unless shareProcessNamespace (POD) or
 *   hostPID (NODE); ipc POD unless hostIPC (NODE). Containers get the pod's modes.
 * - Seccomp: the pod's profile, else RuntimeDefault.
 * - Privileged sandbox when any container (init and ephemeral included) is privileged.
 * - Resources: the pod's requests and limits (pod-level resources included) as one container's
 *   (calculateSandboxResources); the pod's own cgroup is sized by cm/resourceconfig.ts.
 */
import type { Container, Pod, SecurityContext } from '../../api/core.js';
import { normalizeSysctlName } from '../lifecycle/sysctl.js';
import { ManagedByLabel, PodNameLabel, PodNamespaceLabel, PodUIDLabel } from '../../runtime/labels.js';
import type {
  LinuxContainerResources,
  NamespaceMode,
  PodSandboxConfig,
  PortMapping,
  SecurityProfile,
} from '../../runtime/types.js';
import { podLimits, podRequests } from '../../api/resources.js';
import { linuxResources, QUOTA_PERIOD_US } from '../cm/cpu.js';
import { KindError } from '../../util/errors.js';
import { cloneData } from '../../util/clone.js';
import type { SwapController } from '../../node/swap.js';

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
  /** The CFS quota period in microseconds (kubelet `cpuCFSQuotaPeriod`); absent = 100 ms. */
  cpuCFSQuotaPeriodUs?: number;
  /** The host's `/sys/devices/system/cpu/cpuN/thermal_throttle` directories, masked with procMount Default. */
  thermalThrottlePaths?: readonly string[];
  /** The host's swap controller (node/swap.ts); absent: none, and containers get no swap settings. */
  swapController?: SwapController;
  /** The CPU manager's answers (src/kubelet/cm/cpumanager/manager.ts); absent: its none policy. */
  cpuAffinity?: CPUAffinity;
}

/** What container and sandbox configs ask the CPU manager (GetCPUAffinity, *HasExclusiveCPUs). */
export interface CPUAffinity {
  cpusetFor(podUID: string, container: string): string | undefined;
  hasExclusiveCPUs(podUID: string, container: string): boolean;
  podHasExclusiveCPUs(podUID: string): boolean;
}

const HOSTNAME_MAX = 63;

/** Fields of core/v1 PodSpec the shared types leave out; the API server sends them. */
export interface PodSpecExtras {
  hostPID?: boolean;
  hostIPC?: boolean;
  shareProcessNamespace?: boolean;
  securityContext?: { supplementalGroups?: number[]; sysctls?: { name: string; value: string }[] };
}

/** The pod's name, namespace and UID; InvalidArgument when one is missing (every config is keyed by them). */
export function podIdentity(pod: Pod): { name: string; namespace: string; uid: string } {
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

/** `<cgroupRoot>/pod<uid>` (the kubelet's pod cgroup under the QoS-less cgroupfs layout). */
export function podCgroupParent(cgroupRoot: string, uid: string): string {
  return `${cgroupRoot.replace(/\/+$/, '')}/pod${uid}`;
}

/** The pod's namespace modes (see the module comment); containers share them. */
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

/** A sandbox is privileged when any of its containers (init and ephemeral included) is. */
export function hasPrivilegedContainer(pod: Pod): boolean {
  return allContainers(pod).some((c) => c.securityContext?.privileged === true);
}

/** A core/v1 seccomp profile as the CRI's SecurityProfile; undefined when none is set. */
export function seccompFrom(
  profile: SecurityContext['seccompProfile'] | undefined,
): SecurityProfile | undefined {
  if (!profile) return undefined;
  if (profile.type === 'Localhost') {
    return { profileType: 'Localhost', localhostRef: profile.localhostProfile ?? '' };
  }
  return { profileType: profile.type };
}

/** The pod's fsGroup, then its supplementalGroups; undefined when there are none. */
export function supplementalGroups(pod: Pod): number[] | undefined {
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
 * The sandbox's resources (kubelet calculateSandboxResources): cpu shares from the pod's cpu request (its
 * cpu limit when it requests none), quota from its cpu limit, its memory limit; PodRequests and PodLimits
 * with pod-level resources, no overhead.
 */
export function sandboxResources(
  pod: Pod,
  periodUs: number = QUOTA_PERIOD_US,
  exclusiveCPUs = false,
): LinuxContainerResources {
  const requests = podRequests(pod.spec);
  const limits = podLimits(pod.spec);
  const r = linuxResources(requests.get('cpu'), limits.get('cpu') ?? 0, limits.get('memory') ?? 0, periodUs);
  // DisableCPUQuotaWithExclusiveCPUs (locked on): a pod holding exclusive CPUs runs without a CFS quota.
  if (exclusiveCPUs) r.cpuQuota = -1;
  return r;
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
  if (psc?.supplementalGroupsPolicy) security.supplementalGroupsPolicy = psc.supplementalGroupsPolicy;

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
    linux: {
      cgroupParent: podCgroupParent(node.cgroupRoot, uid),
      securityContext: security,
      resources: sandboxResources(
        pod,
        node.cpuCFSQuotaPeriodUs,
        node.cpuAffinity?.podHasExclusiveCPUs(pod.metadata.uid ?? '') ?? false,
      ),
    },
  };
  if (overrides) {
    if (overrides.hostname !== undefined) config.hostname = overrides.hostname;
    if (overrides.dnsConfig) config.dnsConfig = cloneData(overrides.dnsConfig);
  } else {
    if (!pod.spec.hostNetwork) config.hostname = podHostname(pod);
    if (node.dnsConfig) config.dnsConfig = cloneData(node.dnsConfig);
  }
  const sysctls = spec.securityContext?.sysctls;
  if (sysctls && sysctls.length > 0 && config.linux) {
    // In dot form, as the kubelet hands them to the runtime (kuberuntime_manager's SyncPod): runc checks a
    // name's kernel namespace by its dotted prefix, so `kernel/shm_rmid_forced` is `kernel.shm_rmid_forced`.
    config.linux.sysctls = Object.fromEntries(sysctls.map((s) => [normalizeSysctlName(s.name), s.value]));
  }
  return config;
}
