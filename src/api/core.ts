/**
 * The subset of core/v1 that kubelet-operator reads and writes, in its JSON wire shape.
 *
 * Times are RFC3339 strings exactly as the API server sends them, so objects from a watch can be passed in
 * unchanged and status patches are written without re-serialisation. Optional fields are optional here as
 * they are on the wire; code must treat `undefined` and the zero value alike, as Go does.
 */

import type { Volume, VolumeMount } from './volumes.js';
export type { Volume, VolumeMount } from './volumes.js';

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
/** A container's own restart policy (ContainerRestartRules): `Always` on an init container makes it a sidecar. */
export type ContainerRestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
export type ConditionStatus = 'True' | 'False' | 'Unknown';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export interface ObjectMeta {
  name?: string;
  /** The prefix of a name the API server makes up at creation (when `name` is unset). */
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ExecAction {
  command?: string[];
}
export interface HTTPHeader {
  name: string;
  value: string;
}
export interface HTTPGetAction {
  path?: string;
  port: number | string;
  host?: string;
  scheme?: 'HTTP' | 'HTTPS';
  httpHeaders?: HTTPHeader[];
}
export interface TCPSocketAction {
  port: number | string;
  host?: string;
}
export interface GRPCAction {
  port: number;
  service?: string;
}

export interface ProbeHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  grpc?: GRPCAction;
}

export interface Probe extends ProbeHandler {
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
  terminationGracePeriodSeconds?: number;
}

export interface LifecycleHandler {
  exec?: ExecAction;
  httpGet?: HTTPGetAction;
  tcpSocket?: TCPSocketAction;
  sleep?: { seconds: number };
}

export interface Lifecycle {
  postStart?: LifecycleHandler;
  preStop?: LifecycleHandler;
}

export interface EnvVarSource {
  fieldRef?: { fieldPath: string; apiVersion?: string };
  resourceFieldRef?: { resource: string; containerName?: string; divisor?: string | number };
  configMapKeyRef?: { name: string; key: string; optional?: boolean };
  secretKeyRef?: { name: string; key: string; optional?: boolean };
  /** A key of an env file in an emptyDir volume (EnvFiles, Beta since 1.35); `path` is relative to the volume. */
  fileKeyRef?: FileKeySelector;
}
export interface FileKeySelector {
  volumeName: string;
  path: string;
  key: string;
  optional?: boolean;
}
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: EnvVarSource;
}
export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name: string; optional?: boolean };
  secretRef?: { name: string; optional?: boolean };
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
  hostIP?: string;
  protocol?: 'TCP' | 'UDP' | 'SCTP';
}

export interface ResourceRequirements {
  limits?: Record<string, string | number>;
  requests?: Record<string, string | number>;
}

/** How a container takes a resize of one resource: in place (NotRequired, the default) or by a restart. */
export interface ContainerResizePolicy {
  resourceName: string;
  restartPolicy: 'NotRequired' | 'RestartContainer';
}

export interface SecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  privileged?: boolean;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  capabilities?: { add?: string[]; drop?: string[] };
  seccompProfile?: { type: 'RuntimeDefault' | 'Unconfined' | 'Localhost'; localhostProfile?: string };
  /** `Default` (masked and read-only /proc paths) or `Unmasked` (none; the API server allows it with hostUsers: false). */
  procMount?: string;
}

export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: PullPolicy;
  command?: string[];
  args?: string[];
  workingDir?: string;
  env?: EnvVar[];
  envFrom?: EnvFromSource[];
  ports?: ContainerPort[];
  resources?: ResourceRequirements;
  resizePolicy?: ContainerResizePolicy[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: Lifecycle;
  /**
   * The container's own restart policy, over the pod's. On an init container `Always` makes it a sidecar
   * (restartable init container); `OnFailure` and `Never` (and any value on a regular container) are
   * ContainerRestartRules.
   */
  restartPolicy?: ContainerRestartPolicy;
  /** Actions by exit code, tried in order before `restartPolicy`; only read when `restartPolicy` is set. */
  restartPolicyRules?: ContainerRestartRule[];
  securityContext?: SecurityContext;
  volumeMounts?: VolumeMount[];
  terminationMessagePath?: string;
  terminationMessagePolicy?: 'File' | 'FallbackToLogsOnError';
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
}

/** What a matching restart rule does (`RestartAllContainers`: RestartAllContainersOnContainerExits). */
export type ContainerRestartRuleAction = 'Restart' | 'RestartAllContainers';

/** One rule of `restartPolicyRules`: its action applies when the exit code matches `exitCodes`. */
export interface ContainerRestartRule {
  action: ContainerRestartRuleAction;
  exitCodes?: ContainerRestartRuleOnExitCodes;
}

/** `In`: the exit code is one of `values`; `NotIn`: it is none of them. */
export interface ContainerRestartRuleOnExitCodes {
  operator: 'In' | 'NotIn';
  values?: number[];
}

/** An ephemeral container has the shape of a container plus the name of the container it targets. */
export interface EphemeralContainer extends Container {
  targetContainerName?: string;
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

export interface PodSpec {
  nodeName?: string;
  restartPolicy?: RestartPolicy;
  hostNetwork?: boolean;
  hostIPC?: boolean;
  hostPID?: boolean;
  hostname?: string;
  subdomain?: string;
  initContainers?: Container[];
  containers: Container[];
  ephemeralContainers?: EphemeralContainer[];
  readinessGates?: { conditionType: string }[];
  terminationGracePeriodSeconds?: number;
  activeDeadlineSeconds?: number;
  tolerations?: Toleration[];
  volumes?: Volume[];
  serviceAccountName?: string;
  /** Secrets with registry credentials for pulling the pod's images (the ServiceAccount admission adds its own). */
  imagePullSecrets?: { name?: string }[];
  priority?: number;
  securityContext?: PodSecurityContext;
  nodeSelector?: Record<string, string>;
  dnsPolicy?: DNSPolicy;
  dnsConfig?: PodDNSConfig;
  hostAliases?: HostAlias[];
  setHostnameAsFQDN?: boolean;
  /** The pod's hostname instead of spec.hostname or its name (HostnameOverride, on by default since 1.35). */
  hostnameOverride?: string;
  /** Default true: the pod's namespace's services become environment variables. */
  enableServiceLinks?: boolean;
  automountServiceAccountToken?: boolean;
  os?: { name: string };
  schedulerName?: string;
  /** false: the pod gets a user namespace of its own (UserNamespacesSupport). Absent or true: the host's. */
  hostUsers?: boolean;
  /**
   * Pod-level requests and limits (PodLevelResources): only cpu, memory and hugepages-* count (the API
   * server refuses others). They bound the pod as a whole: its cgroup, its QoS class, admission's fit.
   */
  resources?: ResourceRequirements;
}

export type DNSPolicy = 'ClusterFirst' | 'ClusterFirstWithHostNet' | 'Default' | 'None';

export interface PodDNSConfig {
  nameservers?: string[];
  searches?: string[];
  options?: { name: string; value?: string }[];
}

export interface HostAlias {
  ip: string;
  hostnames?: string[];
}

export interface PodSecurityContext {
  runAsUser?: number;
  runAsGroup?: number;
  runAsNonRoot?: boolean;
  fsGroup?: number;
  fsGroupChangePolicy?: 'OnRootMismatch' | 'Always';
  supplementalGroups?: number[];
  /** Merge (the default) adds the image's /etc/group groups of the user; Strict does not. */
  supplementalGroupsPolicy?: 'Merge' | 'Strict';
  sysctls?: { name: string; value: string }[];
  seccompProfile?: SecurityContext['seccompProfile'];
}

export interface ContainerStateWaiting {
  reason?: string;
  message?: string;
}
export interface ContainerStateRunning {
  startedAt?: string;
}
export interface ContainerStateTerminated {
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
  startedAt?: string;
  finishedAt?: string;
  containerID?: string;
}
export interface ContainerState {
  waiting?: ContainerStateWaiting;
  running?: ContainerStateRunning;
  terminated?: ContainerStateTerminated;
}

export interface ContainerStatus {
  name: string;
  state?: ContainerState;
  lastState?: ContainerState;
  ready: boolean;
  restartCount: number;
  image?: string;
  imageID?: string;
  containerID?: string;
  started?: boolean;
  /** The resources the runtime applied (running containers), else the allocated ones. */
  resources?: ResourceRequirements;
  /** The requests the node allocated to the container (in-place resize). */
  allocatedResources?: Record<string, string | number>;
  /** The container's volume mounts as the kubelet reports them (RecursiveReadOnlyMounts). */
  volumeMounts?: VolumeMountStatus[];
  /** Who the process runs as, when the runtime reports it (SupplementalGroupsPolicy). */
  user?: { linux?: { uid: number; gid: number; supplementalGroups?: number[] } };
  /** The health of the devices the container holds, per resource (ResourceHealthStatus). */
  allocatedResourcesStatus?: ResourceStatus[];
}

/** core/v1 ResourceStatus: one resource's devices and their health. */
export interface ResourceStatus {
  name: string;
  resources?: { resourceID: string; health?: string; message?: string }[];
}

/** core/v1 VolumeMountStatus. */
export interface VolumeMountStatus {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  /** Set for a read-only mount: Disabled, or Enabled when the mount is read-only recursively. */
  recursiveReadOnly?: 'Disabled' | 'Enabled';
}

export interface PodCondition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface PodIP {
  ip: string;
}

export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

export interface PodStatus {
  phase?: PodPhase;
  conditions?: PodCondition[];
  message?: string;
  reason?: string;
  hostIP?: string;
  hostIPs?: PodIP[];
  podIP?: string;
  podIPs?: PodIP[];
  startTime?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  ephemeralContainerStatuses?: ContainerStatus[];
  qosClass?: PodQOSClass;
  nominatedNodeName?: string;
  observedGeneration?: number;
  resourceClaimStatuses?: unknown[];
  /** The scheduler's claim for the pod's DRA extended resources (src/kubelet/cm/dra/extendedresource.ts). */
  extendedResourceClaimStatus?: unknown;
  /** The pod's requests as allocated, pod-level resources over the containers' sum (in-place resize). */
  allocatedResources?: Record<string, string | number>;
  /** The pod-level resources applied (the pod cgroup's, for a running pod), else as allocated. */
  resources?: ResourceRequirements;
}

export interface Pod {
  apiVersion?: 'v1';
  kind?: 'Pod';
  metadata: ObjectMeta;
  spec: PodSpec;
  status?: PodStatus;
}

/** Condition types the kubelet owns (it writes them and may overwrite them). */
export const PodScheduled = 'PodScheduled';
export const PodReady = 'Ready';
export const PodInitialized = 'Initialized';
export const ContainersReady = 'ContainersReady';
export const PodReadyToStartContainers = 'PodReadyToStartContainers';
/** True while the pod restarts all its containers in place (RestartAllContainersOnContainerExits). */
export const AllContainersRestarting = 'AllContainersRestarting';
/** Shared: set by the kubelet and by others (eviction, preemption). */
export const DisruptionTarget = 'DisruptionTarget';

export function isRestartableInitContainer(c: Pick<Container, 'restartPolicy'>): boolean {
  return c.restartPolicy === 'Always';
}

/** The pod's restart policy with the API default applied (unset behaves as Always). */
export function podRestartPolicy(spec: Pick<PodSpec, 'restartPolicy'>): RestartPolicy {
  return spec.restartPolicy ?? 'Always';
}

export function isTerminalPhase(phase: PodPhase | undefined): boolean {
  return phase === 'Succeeded' || phase === 'Failed';
}
