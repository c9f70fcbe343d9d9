/**
 * The kubelet's ContainerConfig for (re)starting a container of a pod (kuberuntime_container.go
 * generateContainerConfig, labels.go), as our Runtime types. Pure: the caller resolves what needs I/O
 * (environment values, volume mounts, the pulled image).
 *
 * Conventions kept:
 * - Log path `<name>/<restartCount>.log`, relative to the sandbox's log directory; the restart count is
 *   also the CRI attempt.
 * - Labels and annotations the kubelet reads back after a restart (hash, restart count, termination
 *   message settings, grace periods, ports).
 * - Seccomp: the container's profile, else the pod's, else RuntimeDefault.
 * - Resources (cgroup v1): cpu shares from the request (the limit when only a limit is set),
 *   milliCPU*1024/1000, at least 2; CFS period 100000 us and quota from the cpu limit (0 = none, at
 *   least 1000); memory limit in bytes; oom_score_adj by QoS class when the node's memory is known.
 */
import type { Container, Pod } from '../../api/core.js';
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
} from '../../runtime/labels.js';
import type { ContainerConfig, KeyValue, LinuxContainerResources, Mount } from '../../runtime/types.js';
import type { SwapController } from '../../node/swap.js';
import { KindError } from '../../util/errors.js';
import { quantityMilliValue, quantityValue } from '../../util/quantity.js';
import { hashContainer } from '../container/helpers.js';
import type { ContainerResources } from '../container/types.js';
import { linuxResources, quotaToMilliCPU, sharesToMilliCPU } from '../cm/cpu.js';
import { getPodQOS } from '../qos.js';
import { procMountPaths } from './securitycontext.js';
import {
  aggregateContainerRequests,
  isPodLevelRequestsSet,
  isPodLevelResourcesSet,
} from '../../api/resources.js';
import {
  podIdentity,
  podNamespaceOptions,
  seccompFrom,
  supplementalGroups,
  type NodeSettings,
} from './sandboxconfig.js';

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

/** oom_score_adj values of pkg/kubelet/qos. */
const GUARANTEED_OOM_SCORE_ADJ = -997;
const BESTEFFORT_OOM_SCORE_ADJ = 1000;

/** `<name>/<restartCount>.log`, relative to the pod's log directory (kubelet BuildContainerLogsPath). */
export function containerLogPath(containerName: string, restartCount: number): string {
  return `${containerName}/${restartCount}.log`;
}

/**
 * What the runtime reports as applied, in the kubelet's terms (kubelet: toKubeContainerStatus's resources):
 * cpu limit from quota and period, cpu request from shares, memory limit in bytes; zero means not set.
 */
export function toKubeContainerResources(r: LinuxContainerResources): ContainerResources {
  const out: ContainerResources = {};
  if ((r.cpuPeriod ?? 0) > 0) {
    const milli = quotaToMilliCPU(r.cpuQuota ?? 0, r.cpuPeriod ?? 0);
    if (milli > 0) out.cpuLimitMilli = milli;
  }
  if ((r.cpuShares ?? 0) > 0) {
    const milli = sharesToMilliCPU(r.cpuShares ?? 0);
    if (milli > 0) out.cpuRequestMilli = milli;
  }
  if ((r.memoryLimitInBytes ?? 0) > 0) out.memoryLimitBytes = r.memoryLimitInBytes;
  return out;
}

function quantityOf(
  list: Record<string, string | number> | undefined,
  name: string,
): string | number | undefined {
  return list?.[name];
}

/**
 * The pod's memory request that no container requests, shared equally among its containers (init ones
 * included): kubelet remainingPodMemReqPerContainer, read when pod-level requests are set. 0 without a
 * pod-level memory request or when the containers request as much.
 */
function remainingPodMemoryPerContainer(pod: Pod): number {
  const podLevel = quantityOf(pod.spec.resources?.requests, 'memory');
  const total = podLevel === undefined ? 0 : quantityValue(podLevel);
  if (total === 0) return 0;
  const count = pod.spec.containers.length + (pod.spec.initContainers?.length ?? 0);
  const remaining = Math.max(total - (aggregateContainerRequests(pod.spec).get('memory') ?? 0), 0);
  return Math.floor(remaining / count);
}

function memoryRequestOf(container: Container): number {
  const request = quantityOf(container.resources?.requests, 'memory');
  return request === undefined ? 0 : quantityValue(request);
}

/**
 * kubelet GetContainerOOMScoreAdjust (without the node-critical case). A Burstable container's score comes
 * from its memory request, plus its share of a pod-level memory request its pod's containers leave
 * unrequested; a sidecar scores no higher than the regular container with the least memory request.
 */
export function containerOOMScoreAdj(pod: Pod, container: Container, memoryCapacityBytes: number): number {
  switch (getPodQOS(pod)) {
    case 'Guaranteed':
      return GUARANTEED_OOM_SCORE_ADJ;
    case 'BestEffort':
      return BESTEFFORT_OOM_SCORE_ADJ;
    case 'Burstable': {
      const share = isPodLevelRequestsSet(pod.spec) ? remainingPodMemoryPerContainer(pod) : 0;
      let adj = 1000 - Math.floor((1000 * (memoryRequestOf(container) + share)) / memoryCapacityBytes);
      const isSidecar =
        container.restartPolicy === 'Always' &&
        (pod.spec.initContainers ?? []).some((c) => c.name === container.name);
      if (isSidecar) {
        const minRegular = Math.min(...pod.spec.containers.map(memoryRequestOf));
        const minAdj = 1000 - Math.floor((1000 * (minRegular + share)) / memoryCapacityBytes);
        adj = Math.min(adj, minAdj);
      }
      if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
      if (adj === BESTEFFORT_OOM_SCORE_ADJ) return adj - 1;
      return adj;
    }
  }
}

/**
 * The limit of `name` (cpu or memory) a container's cgroup gets (kubelet getCPULimit / getMemoryLimit): its
 * own; with pod-level resources set and no limit (or a zero one) of its own, the pod-level limit.
 */
function effectiveLimit(pod: Pod, container: Container, name: 'cpu' | 'memory'): string | number | undefined {
  const own = quantityOf(container.resources?.limits, name);
  if (isPodLevelResourcesSet(pod.spec) && (own === undefined || quantityValueOf(name, own) === 0)) {
    return quantityOf(pod.spec.resources?.limits, name);
  }
  return own;
}

function quantityValueOf(name: string, q: string | number | undefined): number {
  if (q === undefined) return 0;
  return name === 'cpu' ? quantityMilliValue(q) : quantityValue(q);
}

/**
 * kubelet ConfigureNoSwap (NodeSwap with `memorySwap.swapBehavior` NoSwap, the default and the only behaviour
 * here): where the host has a swap controller, cgroup v1 gets memory+swap equal to the memory limit (0 when
 * there is none, which leaves it unlimited as the limit is), cgroup v2 gets `memory.swap.max` 0. Without a
 * swap controller the kubelet sets nothing.
 */
export function configureNoSwap(r: LinuxContainerResources, controller: SwapController | undefined): void {
  if (controller === 'cgroupv1') r.memorySwapLimitInBytes = r.memoryLimitInBytes ?? 0;
  else if (controller === 'cgroupv2') r.unified = { ...r.unified, 'memory.swap.max': '0' };
}

/**
 * The Linux resources the kubelet sets for a container (generateLinuxContainerResources). Without a cpu
 * request of its own, the shares come from the cpu limit (pod-level included); swap as NoSwap sets it.
 */
export function containerResources(
  pod: Pod,
  container: Container,
  node?: Pick<NodeSettings, 'memoryCapacityBytes' | 'cpuCFSQuotaPeriodUs' | 'swapController' | 'cpuAffinity'>,
): LinuxContainerResources {
  const cpuRequestQ = quantityOf(container.resources?.requests, 'cpu');
  const cpuLimit = quantityValueOf('cpu', effectiveLimit(pod, container, 'cpu'));
  const r = linuxResources(
    cpuRequestQ === undefined ? undefined : quantityMilliValue(cpuRequestQ),
    cpuLimit,
    quantityValueOf('memory', effectiveLimit(pod, container, 'memory')),
    node?.cpuCFSQuotaPeriodUs,
  );
  if (node?.memoryCapacityBytes)
    r.oomScoreAdj = containerOOMScoreAdj(pod, container, node.memoryCapacityBytes);
  configureNoSwap(r, node?.swapController);
  const uid = pod.metadata.uid;
  if (node?.cpuAffinity && uid) {
    // kubelet PreCreateContainer: the container's exclusive CPUs or the shared pool.
    const cpus = node.cpuAffinity.cpusetFor(uid, container.name);
    if (cpus) r.cpusetCpus = cpus;
    // DisableCPUQuotaWithExclusiveCPUs (locked on in v1.37): exclusive CPUs are not throttled.
    if (node.cpuAffinity.hasExclusiveCPUs(uid, container.name)) r.cpuQuota = -1;
  }
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
  if (psc?.supplementalGroupsPolicy) security.supplementalGroupsPolicy = psc.supplementalGroupsPolicy;
  if (csc?.capabilities) {
    security.capabilities = {
      addCapabilities: [...(csc.capabilities.add ?? [])],
      dropCapabilities: [...(csc.capabilities.drop ?? [])],
    };
  }
  Object.assign(security, procMountPaths(container, node.thermalThrottlePaths));

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
