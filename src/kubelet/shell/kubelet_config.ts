/**
 * The Kubelet's configuration: its dependencies and node-level settings, checked at construction (a missing
 * or inconsistent dependency is a KindError('InvalidArgument') before anything runs), with the kubelet's
 * default periods.
 */
import type { ImagePullCredentialsVerificationPolicy } from '../images/pullcredentials.js';
import type { CredentialProvider } from '../credentialprovider/plugin.js';
import type { DynamicResources } from '../cm/dra/shell/manager.js';
import { isIP } from 'node:net';
import { release } from 'node:os';
import type { ContainerStatus, Pod } from '../../api/core.js';
import type { PodCertificateRequest } from '../../api/podcertificaterequest.js';
import type { KubeClient } from '../../kube/client.js';
import type { Informer } from '../../kube/informer.js';
import type { Metrics } from '../../metrics.js';
import type { AdmissionNode, AdmitResult } from '../lifecycle/admission.js';
import type { DeviceRunContainerOptionsSource } from '../cm/devicemanager/types.js';
import { SysctlAllowlist } from '../lifecycle/sysctl.js';
import type { PodSandboxConfig, Runtime, RuntimeFeatures, RuntimeHandler } from '../../runtime/types.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage, KindError } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import type { CrashLoopBackOffOptions } from '../backoff.js';
import type { PodEventSink } from './kubelet_adapters.js';
import type { PodCertificateAPI } from '../podcertificate/shell/manager.js';
import type { EnvSource } from '../kuberuntime/shell/context.js';
import type { HookHttpGet } from '../kuberuntime/shell/hooks.js';
import { StatusSyncPeriodMs } from '../status/manager.js';
import type { Service } from '../../api/service.js';
import type { ContainerFileReader } from '../kuberuntime/terminationmessage.js';
import type { DNSConfig } from '../podfiles/dns.js';
import type { VolumeFS } from '../volume/fs.js';
import type { Mounter } from '../volume/shell/mounter.js';
import type { ServiceAccountTokenSource } from '../volume/plugin.js';
import type { CSIHost } from '../volume/csi.js';
import type { VolumeSources } from '../volume/sources.js';
import type { EvictionConfig } from '../eviction/manager.js';
import type { FsLayout } from '../eviction/rank.js';
import type { PressureCondition } from '../eviction/signals.js';
import type { ShutdownConfig } from '../nodeshutdown/config.js';
import type { ImageFsFigures, ImageGCPolicy } from '../images/imagegc.js';
import type { Summary } from '../stats/types.js';
import type { SwapController } from '../../node/swap.js';
import type { ResourceManagers } from '../cm/resourcemanagers.js';

/** Node-level settings (kubelet flags and config). Periods default to the kubelet's. */
export interface KubeletSettings {
  /** `host`: every pod runs in the node's network namespace; `cni`: as its spec says. */
  podNetwork: 'host' | 'cni';
  /** Root of pod log directories (kubelet: /var/log/pods). */
  podLogsRoot: string;
  /** cgroupfs parent of pod cgroups. */
  cgroupRoot: string;
  memoryCapacityBytes?: number;
  /** kubelet cpuCFSQuotaPeriod in microseconds; absent = 100 ms. */
  cpuCFSQuotaPeriodUs?: number;
  /** The host's thermal_throttle directories, masked in containers with procMount Default. */
  thermalThrottlePaths?: readonly string[];
  /** The host's swap controller (node/swap.ts): NoSwap limits in container configs; absent: none set. */
  swapController?: SwapController;
  dnsConfig?: PodSandboxConfig['dnsConfig'];
  /** Pod worker resync after a successful sync (default 60 s). */
  resyncIntervalMs?: number;
  /** Pod worker retry after a failed sync (default 10 s). */
  podWorkerBackOffMs?: number;
  /** PLEG relist period (default 1 s). */
  plegRelistPeriodMs?: number;
  /** Housekeeping period (default 2 s). */
  housekeepingPeriodMs?: number;
  /** Full status reconcile period (default 10 s). */
  statusSyncPeriodMs?: number;
  /** Container garbage collection period (default 1 min). */
  containerGCPeriodMs?: number;
  crashLoopBackOff?: CrashLoopBackOffOptions;
  /**
   * Sysctls beyond the safe set that pods may set (kubelet --allowed-unsafe-sysctls: names or `prefix*`
   * patterns, each known to be namespaced). Default none.
   */
  allowedUnsafeSysctls?: string[];
  /** The kernel release that gates some safe sysctls; default this machine's (os.release()). */
  kernelVersion?: string;
  /**
   * KubeletEnsureSecretPulledImages: imagePullCredentialsVerificationPolicy and its allowlist (checked by the
   * caller). Default the kubelet's NeverVerifyPreloadedImages; records live under the pod environment's rootDir.
   */
  imagePullCredentials?: {
    policy: ImagePullCredentialsVerificationPolicy;
    preloadedImagesVerificationAllowlist: readonly string[];
  };
  /** kubelet --image-credential-provider-config / --image-credential-provider-bin-dir, read and checked. */
  credentialProviders?: { providers: readonly CredentialProvider[]; binDir: string };
}

export interface KubeletDeps {
  nodeName: string;
  /** The node's InternalIP: pods' hostIP, and the pod IP of host-network pods. */
  nodeIP: string;
  /** All node IPs, primary first (dual stack); defaults to [nodeIP]. */
  nodeIPs?: string[];
  runtime: Runtime;
  /** Must equal runtime.kind (a guard against wiring the wrong runtime). */
  runtimeKind: 'cri' | 'sim';
  client: Pick<KubeClient, 'request'>;
  /** The node's pod informer (field selector spec.nodeName), with the PodsByNodeIndex index. */
  podInformer: Pick<Informer<Pod>, 'waitForSync' | 'byIndex'>;
  /** Index name on the informer; defaults to PodsByNodeIndex. */
  podIndexName?: string;
  recorder: PodEventSink;
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  /**
   * The node as admission sees it (allocatable, labels, taints); read at each admission. Never changed in
   * place: a node that changes is a new object (the Kubelet keeps what it derives from it per object).
   */
  node: () => AdmissionNode;
  /**
   * The node read from the API server now, for the kubelet's second look when node affinity alone refuses a
   * pod (its labels may have changed before the informer heard); undefined when it cannot be read.
   */
  freshNode?: () => Promise<AdmissionNode | undefined>;
  /**
   * The eviction manager's configuration (src/kubelet/eviction/settings.ts) and the node's stats Summary it
   * reads every 10 s. Absent: no eviction manager, and the node never reports pressure.
   */
  eviction?: {
    config: EvictionConfig;
    /** With `pods` false, the node's figures alone (no pod's stats, no CPU). */
    summary: (opts: { pods: boolean }) => Promise<Summary>;
    /**
     * The node's filesystem layout from the stats provider (HasDedicatedImageFs, HasDedicatedContainerFs),
     * asked at the manager's first round. Absent: `config`'s layout as given.
     */
    filesystemLayout?: () => Promise<FsLayout>;
    /** The node's pressure conditions changed (the node status reports them at its next update). */
    onPressureChange?: (conditions: readonly PressureCondition[]) => void;
    /** Records an Event about the Node (EvictionThresholdMet). */
    recordNode?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  };
  /**
   * The node shutdown manager's configuration (src/kubelet/nodeshutdown/config.ts). Absent, or without
   * groups: the feature is off (the kubelet's stub), and `Kubelet.shutdown()` does nothing.
   */
  shutdown?: {
    config: ShutdownConfig;
    /** Records an Event about the Node (Shutdown). */
    recordNode?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
    /** Writes the node status now (Ready=False while shutting down); must not block. */
    syncNodeStatus?: () => void;
    /** The state file keeping the last shutdown's times (`<root>/graceful_node_shutdown_state`). */
    stateFile?: string;
  };
  /**
   * The image garbage collector's policy (src/kubelet/images/imagegc.ts) and the image filesystem it reads.
   * Absent: images are never removed (neither by a GC round nor as the eviction manager's reclaim).
   */
  imageGC?: {
    policy: ImageGCPolicy;
    imageFsStats: () => Promise<ImageFsFigures>;
    /** Records an Event about the Node (ImageGCFailed, FreeDiskSpaceFailed, InvalidDiskCapacity). */
    recordNode: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
    /** The kubelet's 5 minutes unless set (tests shorten it). */
    periodMs?: number;
  };
  settings: KubeletSettings;
  /**
   * The container manager's topology and CPU managers (src/kubelet/cm/resourcemanagers.ts), built and started
   * by the node (their start-up errors stop it). Absent: cpuManagerPolicy and topologyManagerPolicy none.
   */
  resourceManagers?: ResourceManagers;
  /**
   * ConfigMaps and Secrets for container environments; defaults to the pod environment's cached sources (the
   * ones volumes read), else GETs through `client`.
   */
  envSource?: EnvSource;
  /** HTTP GET of httpGet lifecycle hooks; defaults to node:http(s). */
  hookHttpGet?: HookHttpGet;
  /** Where pods' volumes and files live; defaults to memory with simulated tokens (a simulated node). */
  podEnvironment?: PodEnvironment;
  /** The node's DRA manager (src/kubelet/cm/dra/shell/manager.ts); absent: pods' ResourceClaims are not prepared. */
  dynamicResources?: DynamicResources;
  /**
   * podCertificate sources of projected volumes (the kubelet's podcertificate manager): the node's
   * PodCertificateRequests (an informer with the field selector spec.nodeName, started and stopped by its
   * owner) and the Node's UID as the node informer has it. Requests are created and ServiceAccounts read
   * through `api` (default: over `client`). Absent: such sources do not mount, and the pod says why.
   */
  podCertificates?: {
    requests: Pick<Informer<PodCertificateRequest>, 'get' | 'addHandlers' | 'waitForSync'>;
    nodeUID: () => string | undefined;
    api?: PodCertificateAPI;
  };
  /**
   * The node's runtime state (node/runtimestate.ts): while it reports errors, pod work waits (kubelet: syncLoop
   * skips iterations while runtimeErrors() is non-empty). Default: only this Kubelet's PLEG health. Its
   * runtime handlers and features (the runtime's last Status) decide user namespaces, recursive read-only
   * mounts and the Strict supplemental groups policy; without them, none is supported.
   */
  runtimeState?: {
    runtimeErrors(): readonly string[];
    runtimeHandlers?(): readonly RuntimeHandler[];
    runtimeFeatures?(): RuntimeFeatures | undefined;
  };
  /**
   * Awaited before every pod sync, to let timers and I/O run between the syncs of a burst: the simulated
   * runtime answers without I/O, so thousands of syncs would otherwise run as one unbroken chain of
   * microtasks that stalls the event loop. The operator passes the process's
   * TimeSlicer (util/timeslice.ts); default none (tests under a FakeClock).
   */
  yieldToLoop?: () => Promise<void>;
  /**
   * The node's device manager (src/kubelet/cm/devicemanager/): device allocation at admission, the devices'
   * part of container configs, allocatedResourcesStatus. Absent: no device plugins.
   */
  devices?: KubeletDevices;
}

/** What the Kubelet asks of its device manager. */
export interface KubeletDevices extends DeviceRunContainerOptionsSource {
  admit(pod: Pod): Promise<AdmitResult>;
  sanitizeAllocatable(allocatable: ReadonlyMap<string, number>): ReadonlyMap<string, number>;
  allocatedResourcesStatus(pod: Pod, statuses: ContainerStatus[]): ContainerStatus[];
}

/**
 * A node's pod directories and what fills them: volumes, /etc/hosts, termination messages, DNS. A cri node
 * passes the node's disk and real mounts; a simulated node keeps it all in memory.
 */
export interface PodEnvironment {
  /** `<podsDir>/<pod UID>/...` (kubelet: /var/lib/kubelet/pods). */
  podsDir: string;
  /**
   * The node's kubelet root directory (kubelet: --root-dir, src/kubelet/rootdir.ts): hostPaths under
   * `/var/lib/kubelet` resolve into it. Unset: they are used as they are.
   */
  rootDir?: string;
  fs: VolumeFS;
  mounter: Mounter;
  /** ConfigMaps, Secrets, claims; default: GETs through the client, cached briefly. */
  sources?: VolumeSources;
  /** Service-account tokens; default: simulated, unsigned ones. */
  tokens?: ServiceAccountTokenSource;
  /** The CSI volume plugin's host (registered drivers, CSIDriver and VolumeAttachment reads); unset: none. */
  csi?: CSIHost;
  /** Called when a pod's volumes are torn down (the token manager forgets the pod's tokens). */
  onPodUnmounted?: (uid: string) => void;
  /** Termination messages; default: read through `fs` (logs only where the runtime can hand them out). */
  files?: ContainerFileReader;
  clusterDNS?: readonly string[];
  /** Default cluster.local. */
  clusterDomain?: string;
  /** The node's parsed resolv.conf; default none (pods with dnsPolicy Default get a loopback resolver). */
  hostResolvConf?: () => Promise<DNSConfig | undefined>;
  /** The node's /etc/hosts, for host-network pods; default a localhost-only file. */
  nodeHostsFile?: () => Promise<string>;
  /** Services for the pods' service link variables; default none (only what the pod defines itself). */
  services?: (namespace: string) => readonly Service[];
  /** Events about the node (MissingClusterDNS). */
  recordNode?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
}

/** The kubelet's periods, used for every setting left unset. */
export const KubeletDefaults = {
  resyncIntervalMs: 60_000,
  podWorkerBackOffMs: 10_000,
  plegRelistPeriodMs: 1_000,
  housekeepingPeriodMs: 2_000,
  statusSyncPeriodMs: StatusSyncPeriodMs,
  containerGCPeriodMs: 60_000,
};

function invalid(what: string, node?: string): KindError {
  return new KindError('InvalidArgument', `kubelet: ${what}`, { node });
}

/** Checks the deps' shape; throws KindError('InvalidArgument') naming the first problem. */
export function validateKubeletDeps(d: KubeletDeps): void {
  if (!d || typeof d !== 'object') throw invalid('missing deps');
  const node = typeof d.nodeName === 'string' ? d.nodeName : undefined;
  if (!d.nodeName) throw invalid('nodeName is required');
  if (!d.nodeIP || !isIP(d.nodeIP)) throw invalid(`nodeIP ${String(d.nodeIP)} is not an IP`, node);
  for (const ip of d.nodeIPs ?? []) if (!isIP(ip)) throw invalid(`nodeIPs: ${String(ip)} is not an IP`, node);
  if (!d.runtime || typeof d.runtime.capabilities !== 'object' || d.runtime.capabilities === null)
    throw invalid('runtime is required', node);
  if (d.runtimeKind !== d.runtime.kind)
    throw invalid(`runtimeKind ${String(d.runtimeKind)} but runtime is ${d.runtime.kind}`, node);
  if (typeof d.client?.request !== 'function') throw invalid('client is required', node);
  if (typeof d.podInformer?.waitForSync !== 'function' || typeof d.podInformer.byIndex !== 'function') {
    throw invalid('podInformer is required', node);
  }
  if (typeof d.recorder?.event !== 'function') throw invalid('recorder is required', node);
  if (typeof d.clock?.now !== 'function' || typeof d.clock.setTimer !== 'function')
    throw invalid('clock is required', node);
  if (typeof d.logger?.info !== 'function') throw invalid('logger is required', node);
  if (typeof d.node !== 'function') throw invalid('node (admission view) is required', node);
  const s = d.settings;
  if (!s || (s.podNetwork !== 'host' && s.podNetwork !== 'cni'))
    throw invalid("settings.podNetwork must be 'host' or 'cni'", node);
  if (!s.podLogsRoot) throw invalid('settings.podLogsRoot is required', node);
  if (!s.cgroupRoot) throw invalid('settings.cgroupRoot is required', node);
  for (const k of Object.keys(KubeletDefaults) as (keyof typeof KubeletDefaults)[]) {
    const v = s[k];
    if (v !== undefined && !(Number.isFinite(v) && v > 0))
      throw invalid(`settings.${k} must be a positive number`, node);
  }
  if (s.allowedUnsafeSysctls !== undefined) {
    if (!Array.isArray(s.allowedUnsafeSysctls))
      throw invalid('settings.allowedUnsafeSysctls must be a list', node);
    try {
      // As the kubelet's NewAllowlist: a pattern that is not one, or not namespaced, stops the start.
      new SysctlAllowlist(s.allowedUnsafeSysctls);
    } catch (err) {
      throw invalid(`settings.allowedUnsafeSysctls: ${errorMessage(err)}`, node);
    }
  }
}

/** The node as admission sees it, with the kubelet's own sysctl settings filled in where the node says nothing. */
export function admissionNodeWithSettings(n: AdmissionNode, s: KubeletSettings): AdmissionNode {
  return {
    ...n,
    allowedUnsafeSysctls: n.allowedUnsafeSysctls ?? s.allowedUnsafeSysctls ?? [],
    kernelVersion: n.kernelVersion ?? s.kernelVersion ?? release(),
  };
}

/** Node allocatable as resourceFieldRef reads it (cpu in millicores, the rest as plain numbers). */
export function allocatableForEnv(node: AdmissionNode): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const [k, v] of node.allocatable) out[k] = k === 'cpu' ? `${v}m` : v;
  return out;
}

export { meaningfulChange } from '../config/podconfig.js';

/** The settings' periods with the defaults filled in. */
export type KubeletPeriods = { [K in keyof typeof KubeletDefaults]: number };

export function kubeletPeriods(s: KubeletSettings): KubeletPeriods {
  const out = { ...KubeletDefaults };
  for (const k of Object.keys(KubeletDefaults) as (keyof typeof KubeletDefaults)[]) {
    const v = s[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}
