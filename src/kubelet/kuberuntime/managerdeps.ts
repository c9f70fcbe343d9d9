/**
 * What KubeGenericRuntimeManager is built from, checked at construction (virtual-kubelet style: constructors
 * check, methods assume), and the ManagerContext its parts share. What the kubelet must do on the host for
 * the runtime (log directories, pod cgroups) follows the runtime's capabilities unless a dep overrides it.
 */
import type { Runtime, RuntimeHandler } from '../../runtime/types.js';
import type { Clock } from '../../util/clock.js';
import { KindError } from '../../util/errors.js';
import type { Backoff } from '../backoff.js';
import type { RuntimeHelper } from '../container/runtimehelper.js';
import type { DeviceRunContainerOptionsSource } from '../cm/devicemanager/types.js';
import type { ImagePullBackOff } from '../images/pullbackoff.js';
import type { ReasonCache } from '../reasoncache.js';
import type { EventRecorderFunc } from '../container/ref.js';
import type {
  EnvSource,
  ManagerContext,
  RuntimeManagerLogger,
  RuntimeManagerNodeSettings,
} from './shell/context.js';
import type { HookHttpGet } from './shell/hooks.js';
import type { ContainerMetricType } from '../status/terminations.js';
import { PodLeftovers } from './podleftovers.js';
import type { PodCgroupAccess } from '../cm/shell/podcgroup.js';
import type { ContainerFileReader } from './terminationmessage.js';

/**
 * The kubelet's start counters, counted where its runtime manager counts them (SyncPod): a sandbox about to
 * be created, one that failed (not when the pod is being deleted), a container about to be started (after
 * its back-off) and one that failed to start, by the kubelet's container type label and the error's reason.
 */
export interface RuntimeStartMetrics {
  podStarted(): void;
  podStartFailed(): void;
  containerStarted(containerType: ContainerMetricType): void;
  containerStartFailed(containerType: ContainerMetricType, code: string): void;
}

export interface KubeGenericRuntimeManagerDeps {
  /** Counts starts (kubelet_started_pods_total and the like); none without it. */
  startMetrics?: RuntimeStartMetrics;
  runtime: Runtime;
  clock: Clock;
  nodeSettings: RuntimeManagerNodeSettings;
  recorder: EventRecorderFunc;
  envSource: EnvSource;
  /** Performs httpGet lifecycle hooks. */
  httpGet: HookHttpGet;
  /** The kubelet's crash-loop back-off (newCrashLoopBackOff). */
  crashLoopBackOff: Backoff;
  imagePullBackOff: ImagePullBackOff;
  /** Pull secrets, credential provider plugins and pull records (ManagerContext's fields of the same names). */
  imageCredentials?: Pick<ManagerContext, 'getPullSecret' | 'credentialProviders' | 'imagePullManager'>;
  /** Updated from every syncPod's StartContainer results. */
  reasonCache: ReasonCache;
  logger: RuntimeManagerLogger;
  /** Create and delete pod/container log directories and files on this host. Default: the runtime's capability. */
  manageLogDirectories?: boolean;
  /** Remove pod cgroups the runtime leaves behind. Default: the runtime's capability. */
  removePodCgroups?: boolean;
  /**
   * Reads and writes the pod cgroups of pods with pod-level resources. Default: this host's cgroup file
   * system where the node manages pod cgroups (removePodCgroups), else nothing (the node's record only).
   */
  podCgroups?: PodCgroupAccess;
  /** Time limit of an httpGet hook request (default 10 s). */
  hookHttpTimeoutMs?: number;
  /** The kubelet's side of sandboxes and containers (hostname, DNS, mounts, service variables). */
  runtimeHelper?: RuntimeHelper;
  /** Reads termination messages of exited containers (the node's disk, or the simulated node's memory). */
  files?: ContainerFileReader;
  /**
   * The runtime handlers the runtime's last Status reported (kubelet runtimeState.runtimeHandlers): whether
   * user namespaces and recursive read-only mounts can be asked for. Default: none (an old runtime).
   */
  runtimeHandlers?: () => readonly RuntimeHandler[];
  /** The device manager's part of each container's config (env, mounts, device nodes, CDI devices). */
  devices?: DeviceRunContainerOptionsSource;
}

const NO_HANDLERS: readonly RuntimeHandler[] = Object.freeze([]);

/**
 * A node whose pods have no cgroups on this host (the simulated runtime): nothing to read, and a write changes
 * nothing but the node's own record of it.
 */
export const noPodCgroupAccess: PodCgroupAccess = {
  read: () => Promise.resolve(undefined),
  set: () => Promise.resolve(),
};

const DEFAULT_HOOK_HTTP_TIMEOUT_MS = 10_000;

function invalid(field: string, what: string): KindError {
  return new KindError('InvalidArgument', `KubeGenericRuntimeManager: ${field} ${what}`, { field });
}

function isFn(v: unknown): boolean {
  return typeof v === 'function';
}

/** Checks the deps' shape; throws KindError('InvalidArgument') naming the first problem. */
export function validateDeps(d: KubeGenericRuntimeManagerDeps): void {
  if (typeof d !== 'object' || d === null) throw invalid('deps', 'are required');
  if (
    typeof d.runtime !== 'object' ||
    d.runtime === null ||
    typeof d.runtime.capabilities !== 'object' ||
    d.runtime.capabilities === null
  ) {
    throw invalid('runtime', 'must be a Runtime');
  }
  if (!d.clock || !isFn(d.clock.now) || !isFn(d.clock.sleep) || !isFn(d.clock.setTimer))
    throw invalid('clock', 'must be a Clock');
  const n = d.nodeSettings;
  if (!n || typeof n.nodeName !== 'string' || n.nodeName === '')
    throw invalid('nodeSettings.nodeName', 'is required');
  if (typeof n.podLogsRoot !== 'string' || n.podLogsRoot === '')
    throw invalid('nodeSettings.podLogsRoot', 'is required');
  if (typeof n.cgroupRoot !== 'string' || n.cgroupRoot === '')
    throw invalid('nodeSettings.cgroupRoot', 'is required');
  if (n.podNetwork !== 'host' && n.podNetwork !== 'cni')
    throw invalid('nodeSettings.podNetwork', "must be 'host' or 'cni'");
  if (typeof n.nodeIP !== 'string' || n.nodeIP === '') throw invalid('nodeSettings.nodeIP', 'is required');
  if (!isFn(d.recorder)) throw invalid('recorder', 'must be a function');
  if (!d.envSource || !isFn(d.envSource.getConfigMap) || !isFn(d.envSource.getSecret)) {
    throw invalid('envSource', 'must have getConfigMap and getSecret');
  }
  if (!isFn(d.httpGet)) throw invalid('httpGet', 'must be a function');
  if (!d.crashLoopBackOff || !isFn(d.crashLoopBackOff.isInBackOffSince) || !isFn(d.crashLoopBackOff.next)) {
    throw invalid('crashLoopBackOff', 'must be a Backoff');
  }
  if (!d.imagePullBackOff || !isFn(d.imagePullBackOff.check) || !isFn(d.imagePullBackOff.recordFailure)) {
    throw invalid('imagePullBackOff', 'must be an ImagePullBackOff');
  }
  if (!d.reasonCache || !isFn(d.reasonCache.update)) throw invalid('reasonCache', 'must be a ReasonCache');
  if (!d.logger || !isFn(d.logger.info) || !isFn(d.logger.warn))
    throw invalid('logger', 'must have info and warn');
  const t = d.hookHttpTimeoutMs;
  if (t !== undefined && !(Number.isFinite(t) && t > 0))
    throw invalid('hookHttpTimeoutMs', 'must be a positive number');
}

/** The context the manager's parts share; `runtimeType` is the manager's (cached) answer. */
export function managerContext(
  deps: KubeGenericRuntimeManagerDeps,
  runtimeType: () => Promise<string>,
): ManagerContext {
  const caps = deps.runtime.capabilities;
  return {
    runtime: deps.runtime,
    clock: deps.clock,
    node: deps.nodeSettings,
    record: deps.recorder,
    logger: deps.logger,
    envSource: deps.envSource,
    httpGet: deps.httpGet,
    hookHttpTimeoutMs: deps.hookHttpTimeoutMs ?? DEFAULT_HOOK_HTTP_TIMEOUT_MS,
    crashLoopBackOff: deps.crashLoopBackOff,
    imagePullBackOff: deps.imagePullBackOff,
    manageLogDirectories: deps.manageLogDirectories ?? caps.hostLogDirectories,
    removePodCgroups: deps.removePodCgroups ?? caps.hostPodCgroups,
    leftovers: new PodLeftovers(),
    // The host's cgroup file system, where the node manages pod cgroups, is given by the manager (manager.ts).
    podCgroups: deps.podCgroups ?? noPodCgroupAccess,
    actuatedPodCgroups: new Map(),
    runtimeType,
    runtimeHandlers: deps.runtimeHandlers ?? (() => NO_HANDLERS),
    ...(deps.runtimeHelper ? { runtimeHelper: deps.runtimeHelper } : {}),
    ...(deps.files ? { files: deps.files } : {}),
    ...deps.imageCredentials,
    ...(deps.devices ? { devices: deps.devices } : {}),
  };
}
