/**
 * The dependencies of the runtime manager, as its parts (sandboxes, containers, hooks, GC) share them.
 * Internal to kuberuntime: the public surface is KubeGenericRuntimeManager (manager.ts).
 */
import type { Pod } from '../../../api/core.js';
import type { Runtime, RuntimeHandler } from '../../../runtime/types.js';
import type { Clock } from '../../../util/clock.js';
import type { Backoff } from '../../backoff.js';
import type { ImagePullBackOff } from '../../images/pullbackoff.js';
import type { RuntimeHelper } from '../../container/runtimehelper.js';
import type { DeviceRunContainerOptionsSource } from '../../cm/devicemanager/types.js';
import { containerFieldPath, type EventRecorderFunc, type EventType } from '../../container/ref.js';
import type { HookHttpGet, HookRunnerDeps } from './hooks.js';
import type { PodLeftovers } from '../podleftovers.js';
import type { NodeSettings } from '../sandboxconfig.js';
import type { ContainerFileReader } from '../terminationmessage.js';
import type { PodCgroupAccess } from '../../cm/shell/podcgroup.js';
import type { PodResourceConfig } from '../../cm/resourceconfig.js';
import type { PullSecret, TrackedAuthConfig } from '../../credentialprovider/keyring.js';
import type { ImagePullManager } from '../../images/shell/pullrecords.js';

export interface RuntimeManagerLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Where referenced ConfigMaps and Secrets come from (an informer cache, or a GET). Resolves undefined when the
 * object does not exist; rejects on any other failure. Secret values are already base64-decoded.
 */
export interface EnvSource {
  getConfigMap(namespace: string, name: string): Promise<Record<string, string> | undefined>;
  getSecret(namespace: string, name: string): Promise<Record<string, string> | undefined>;
}

/** The node-level inputs: the kubelet flags that shape sandboxes and containers. */
export interface RuntimeManagerNodeSettings extends NodeSettings {
  /** `host`: every pod runs in the node's network namespace, whatever its spec says. `cni`: as the spec says. */
  podNetwork: 'host' | 'cni';
  /** The node's primary IP: `status.hostIP` for the downward API and the pod IP of host-network pods. */
  nodeIP: string;
  /** All node IPs (dual stack), primary first; defaults to `[nodeIP]`. */
  nodeIPs?: string[];
  /** Node allocatable, for `resourceFieldRef` on `limits.*` of a container without that limit. */
  allocatable?: Record<string, string | number>;
}

export interface ManagerContext {
  runtime: Runtime;
  clock: Clock;
  node: RuntimeManagerNodeSettings;
  record: EventRecorderFunc;
  logger: RuntimeManagerLogger;
  envSource: EnvSource;
  httpGet: HookHttpGet;
  hookHttpTimeoutMs: number;
  crashLoopBackOff: Backoff;
  imagePullBackOff: ImagePullBackOff;
  /** Create and remove log directories and files on this host (the runtime writes the files). */
  manageLogDirectories: boolean;
  /** rmdir the pod cgroup left behind by the runtime when a pod is removed. */
  removePodCgroups: boolean;
  /** The pods whose log directory or cgroup this node made and has not yet removed. */
  leftovers: PodLeftovers;
  /** The pod cgroups this node limits (pods with pod-level resources): read back and written by resizes. */
  podCgroups: PodCgroupAccess;
  /**
   * By pod UID, the limits last written to the pod cgroup of a pod with pod-level resources (kubelet: the
   * actuated pod-level resources). On a node without host pod cgroups (sim) this record is the pod cgroup.
   */
  actuatedPodCgroups: Map<string, Partial<PodResourceConfig>>;
  /** The runtime name that prefixes container IDs in the API (`containerd://...`). */
  runtimeType(): Promise<string>;
  /** The runtime handlers the runtime reports (KubeGenericRuntimeManagerDeps.runtimeHandlers). */
  runtimeHandlers(): readonly RuntimeHandler[];
  /** Sandbox hostname and DNS, container mounts and service variables; without it, none of those. */
  runtimeHelper?: RuntimeHelper;
  /** Reads termination messages of exited containers. */
  files?: ContainerFileReader;
  /** A pod's imagePullSecret by name (undefined: none such); without it no pull secret is read. */
  getPullSecret?(namespace: string, name: string): Promise<PullSecret | undefined>;
  /** The node's credential provider plugins: credentials for an image (its repository), after the pod's secrets. */
  credentialProviders?(pod: Pod, image: string, repository: string): Promise<TrackedAuthConfig[]>;
  /** KubeletEnsureSecretPulledImages: the node's pull records and verification policy; without it, off. */
  imagePullManager?: ImagePullManager;
  /** The device manager's part of a container's config (GetDeviceRunContainerOptions); absent: none. */
  devices?: DeviceRunContainerOptionsSource;
}

/**
 * Records a container event (kubelet: recordContainerEvent): runtime errors often contain the container ID,
 * which would make every event distinct, so the ID is replaced by the container's name.
 */
export function recordContainerEvent(
  ctx: Pick<ManagerContext, 'record' | 'logger'>,
  pod: Pod,
  containerName: string,
  containerId: string,
  type: EventType,
  reason: string,
  message: string,
): void {
  const text = containerId ? message.split(containerId).join(containerName) : message;
  try {
    ctx.record(pod, type, reason, text, containerFieldPath(pod, containerName));
  } catch (err) {
    ctx.logger.warn('event recorder failed', { reason, err: String(err) });
  }
}

/** Records a pod-level event; a throwing recorder is logged, never propagated. */
export function recordPodEvent(
  ctx: Pick<ManagerContext, 'record' | 'logger'>,
  pod: Pod,
  type: EventType,
  reason: string,
  message: string,
): void {
  try {
    ctx.record(pod, type, reason, message);
  } catch (err) {
    ctx.logger.warn('event recorder failed', { reason, err: String(err) });
  }
}

/** What the lifecycle hook runner needs from the manager (postStart here, preStop in killcontainer.ts). */
export function hookDeps(ctx: ManagerContext): HookRunnerDeps {
  return {
    runtime: ctx.runtime,
    clock: ctx.clock,
    httpGet: ctx.httpGet,
    httpTimeoutMs: ctx.hookHttpTimeoutMs,
  };
}
