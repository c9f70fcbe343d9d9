/**
 * One served VirtualNode: its Runtime (CRI or simulated), its NodeAgent (Node, Lease, node status) and its
 * Kubelet (pods), assembled from the parsed spec. Implements the controller's ManagedNode seam.
 *
 * Order matters and is fixed here: the runtime first, then the NodeAgent (the Node must exist before pods
 * are admitted against it), then the Kubelet. Stopping goes the other way. Nothing here deletes API objects
 * except `drain` (this node's pods) and `remove` (the Node and its Lease).
 *
 * Three clients, as the kubelet's: the node Lease and node status on `heartbeatClient` (no rate limit), Events
 * on `eventClient`, everything else (registration, pods, volumes, env references) on `client`.
 */
import { randomBytes } from 'node:crypto';
import type { Pod } from '../api/core.js';
import type { VirtualNode, VirtualNodeSpec } from '../api/virtualnode.js';
import { parseGoDuration } from '../util/duration.js';
import { hostThermalThrottlePaths } from '../node/hostcpu.js';
import { hostSwapCapacityBytes, hostSwapController, type SwapController } from '../node/swap.js';
import { quantityMilliValue, quantityValue } from '../util/quantity.js';
import type { KubeClient } from '../kube/client.js';
import { EventRecorder } from '../kube/events.js';
import type { Informer } from '../kube/informer.js';
import { MaxCrashLoopBackOffMs } from '../kubelet/backoff.js';
import { QUOTA_PERIOD_US } from '../kubelet/cm/cpu.js';
import { Kubelet } from '../kubelet/shell/kubelet.js';
import { evictionConfigFrom } from '../kubelet/eviction/settings.js';
import { shutdownConfigFrom, ShutdownDisabled, type ShutdownConfig } from '../kubelet/nodeshutdown/config.js';
import { imageGCPolicyFrom, type ImageGCPolicy } from '../kubelet/images/imagegc.js';
import type { KubeletSettings } from '../kubelet/shell/kubelet_config.js';
import { PodsByNodeIndex } from '../kubelet/shell/podmanager.js';
import { asPodUID } from '../kubelet/container/types.js';
import { podRef } from '../kubelet/shell/kubelet_adapters.js';
import { memoByIdentity } from '../util/memo.js';
import { processSlicer } from '../util/timeslice.js';
import type { Metrics } from '../metrics.js';
import { withLiveNode, type AdmissionNode } from '../kubelet/lifecycle/admission.js';
import type { Node } from '../api/node.js';
import { NodeAgent } from '../node/agent.js';
import { RuntimeState } from '../node/runtimestate.js';
import {
  nodeRef,
  restEventSink,
  restNodeAPI,
  withCachedNodeReads,
  type NodeAPI,
  type NodeHeartbeatAPI,
} from '../node/api.js';
import { StartupHold } from '../kube/startuphold.js';
import { restVolumeSources, type VolumeSources } from '../kubelet/volume/sources.js';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { imagePullCredentialsSettingsFrom } from '../kubelet/images/pullcredentials.js';
import {
  parseCredentialProviderConfig,
  type CredentialProvider,
} from '../kubelet/credentialprovider/plugin.js';
import { nodeLogDir, nodeRootDir, podEnvironmentFor, type NodePodEnvironment } from './podenvironment.js';
import { ShutdownStateFile } from '../kubelet/nodeshutdown/state.js';
import { kubeletLocalApis, type KubeletLocalApis } from '../kubelet/apis/shell/server.js';
import { startNodePluginManager, type NodePluginManager } from '../kubelet/pluginmanager/shell/node.js';
import type { RegisteredNode } from '../kubelet/pluginmanager/shell/csihandler.js';
import {
  restNodeResourceSlices,
  type NodeResourceSlices,
} from '../kubelet/pluginmanager/shell/resourceslices.js';
import { csiHostFor } from '../kubelet/volume/shell/csihost.js';
import { makeRShared } from '../kubelet/volume/shell/mounter.js';
import { DRAManager } from '../kubelet/cm/dra/shell/manager.js';
import { DeviceManager } from '../kubelet/cm/devicemanager/shell/manager.js';
import { findContainerStatusByName } from '../kubelet/container/types.js';
import { kubeletRootPaths } from '../kubelet/rootdir.js';
import { nodeKubeletSettings } from './nodeconfigz.js';
import { resourceManagersFor } from './cpumanager.js';
import { statsProviderFor } from './nodestats.js';
import { volumeStatsAggPeriodFrom } from '../kubelet/stats/settings.js';
import type { StatsProvider } from '../kubelet/stats/shell/provider.js';
import type { SimRuntimeOptions } from '../runtime/sim/runtime.js';
import { deleteNode, desiredLabels } from '../node/registration.js';
import type {
  ManagedNode,
  ManagedNodeFactory,
  ManagedNodeObservation,
  NodeWatches,
} from '../operator/managednode.js';
import { CriRuntime } from '../runtime/cri/index.js';
import { SimRuntime } from '../runtime/sim/index.js';
import type { Runtime } from '../runtime/types.js';
import type { NodeApiRegistry } from '../server/nodeapi/registry.js';
import type { Clock } from '../util/clock.js';
import { errorMessage, isNotFound, KindError } from '../util/errors.js';
import type { Logger } from '../util/logger.js';

export interface ManagedNodeDeps {
  /** Registration, pods, volumes, drain: the process's rate-limited client. */
  client: KubeClient;
  /**
   * The node Lease renewals and node status updates (default `client`). The operator passes a sibling
   * without a rate limit, as the kubelet's heartbeat client, so no backlog of other requests delays them.
   */
  heartbeatClient?: KubeClient;
  /**
   * The node's and its pods' Events (default `client`). The operator gives each node a sibling with a bucket
   * of its own (--event-qps, --event-burst), as each kubelet has its own eventRecordQPS: one node's flood of
   * Events neither fills another's queue nor gets its own dropped for the others'.
   */
  eventClient?: KubeClient | (() => KubeClient);
  clock: Clock;
  logger: Logger;
  metrics?: Metrics;
  /** InternalIP for VirtualNodes that set none. */
  defaultInternalIP: string;
  /** Port advertised as the node API. */
  nodeApiPort: number;
  /**
   * Builds the runtime; tests inject their own (e.g. one SimRuntime shared across restarts). A runtime from
   * here belongs to the caller: the ManagedNode never closes it.
   */
  runtimeFor?: (spec: VirtualNodeSpec, nodeName: string, nodeIP: string) => Runtime;
  /** The process's node API routing table; each started node registers itself (logs, /pods). */
  nodeApi?: NodeApiRegistry;
  /** The operator's state directory: pod directories default to `<stateDir>/nodes/<node>/pods`. */
  stateDir?: string;
  /**
   * Serve the kubelet's local gRPC APIs (pod-resources, pods) on sockets under `<stateDir>/nodes/<node>`
   * (default true; unit tests without a file system turn them off).
   */
  localApis?: boolean;
  /** Cluster DNS servers and domain for nodes whose spec sets none. */
  clusterDNS?: readonly string[];
  clusterDomain?: string;
  /**
   * One cache of ConfigMaps, Secrets and claims for every node of the process, read by volumes and container
   * env references alike. Default: one per node over `client`.
   */
  sources?: VolumeSources;
  /** The image GC's period (kubelet ImageGCPeriod, 5 minutes); tests shorten it. */
  imageGCPeriodMs?: number;
  /** The host's resolv.conf and hosts file for cri nodes (defaults /etc/resolv.conf, /etc/hosts). */
  resolvConf?: string;
  hostsFile?: string;
  /** The token manager's clock (default `clock`): tests run it faster to see token refreshes. */
  tokenClock?: Clock;
  /**
   * Holds every node's Event writes while nodes of the process start (see StartupHold); kubeletNodeFactory
   * makes one for all its nodes. None: Events are written at once.
   */
  eventHold?: StartupHold;
  /**
   * Holds the first Lease of each new Node while nodes of the process register (see StartupHold);
   * kubeletNodeFactory makes one for all its nodes. None: each Lease is created right after its Node.
   */
  leaseHold?: StartupHold;
  /**
   * Which nodes have ResourceSlices, listed for all the process's nodes (resourceslices.ts): a node's start
   * wipes its slices only when it has some. kubeletNodeFactory makes one over `client`. None: every node's
   * start sends its DeleteCollection, as a kubelet's.
   */
  resourceSlices?: NodeResourceSlices;
}

const DEFAULT_STATE_DIR = '/var/lib/kubelet-operator';
/**
 * The longest a new Node's Lease waits for other nodes' registrations: far inside the Lease's 40 s, and a
 * new Node's Ready condition carries its heartbeat until then.
 */
const LEASE_HOLD_MAX_MS = 5_000;
const PROCESS_SALT = randomBytes(8).toString('hex');

function defaultRuntime(
  deps: ManagedNodeDeps,
  spec: VirtualNodeSpec,
  nodeName: string,
  nodeIP: string,
  files?: SimRuntimeOptions['files'],
): Runtime {
  const rt = spec.runtime;
  if (rt.type === 'sim') {
    return new SimRuntime({
      clock: deps.clock,
      podCIDR: rt.sim.podCIDR,
      nodeIP,
      profiles: rt.sim.profile,
      // Unique per process and node: IDs made here never repeat one an earlier process (or another
      // replica serving this node before) handed out, even for containers no status remembers.
      idSeed: `${nodeName}/${PROCESS_SALT}`,
      ...(files ? { files } : {}),
      // Writable layers on the node's disk: the runtime names a container filesystem apart from the images'.
      ...(rt.sim.imageFs?.containerFs === 'nodeFs' ? { containerFilesystem: 'separate' as const } : {}),
    });
  }
  return new CriRuntime({ endpoint: rt.cri.endpoint, logger: deps.logger.child({ node: nodeName }) });
}

function swapControllerSetting(c: SwapController | undefined): { swapController?: SwapController } {
  return c ? { swapController: c } : {};
}

/** Allocatable as admission reads it: cpu in millicores, the rest in whole units. */
function admissionAllocatable(spec: VirtualNodeSpec): Map<string, number> {
  const m = new Map<string, number>();
  for (const [k, v] of Object.entries(spec.capacity))
    m.set(k, k === 'cpu' ? quantityMilliValue(v) : quantityValue(v));
  return m;
}

export class KubeletManagedNode implements ManagedNode {
  readonly nodeName: string;
  private spec: VirtualNodeSpec;
  private readonly internalIP: string;
  private readonly runtime: Runtime;
  /** Whether this node built its runtime (and so closes it on stop). */
  private readonly ownsRuntime: boolean;
  private readonly recorder: EventRecorder;
  private readonly api: NodeAPI;
  private readonly heartbeatApi: NodeHeartbeatAPI;
  private agent: NodeAgent;
  private readonly kubelet: Kubelet;
  /** What the Kubelet was built with (the node API's /configz reads it back). */
  private readonly kubeletSettings: KubeletSettings;
  /** The image GC policy the node runs with (its /configz reports it). */
  private readonly imageGCPolicy: ImageGCPolicy;
  private readonly log: Logger;
  /** The graceful node shutdown the node runs with (spec.kubelet shutdown fields; its /configz reports them). */
  private readonly shutdownConfig: ShutdownConfig;
  /** One per node: the node status, the VirtualNode status and the kubelet's sync loop all read it. */
  private readonly runtimeState: RuntimeState;
  private stopped = false;
  private unregisterNodeApi: (() => void) | undefined;
  /** The pod-resources and pods sockets, from start to stop. */
  private localApis: KubeletLocalApis | undefined;
  /** The plugin watcher and its CSI and DRA handlers, from start to stop (with the local APIs). */
  private pluginManager: NodePluginManager | undefined;
  /**
   * Resolved when the Node is first registered (undefined if the node stops first): the start's CSINode and
   * ResourceSlice wipe wait for it.
   */
  private readonly nodeRegistered = ((): {
    promise: Promise<RegisteredNode | undefined>;
    resolve: (r: RegisteredNode | undefined) => void;
  } => {
    let resolve!: (r: RegisteredNode | undefined) => void;
    const promise = new Promise<RegisteredNode | undefined>((r) => (resolve = r));
    return { promise, resolve };
  })();
  private readonly dra: DRAManager | undefined;
  /** The device manager: device plugins' registration socket and a sim node's simulated devices. */
  private readonly devices: DeviceManager;
  private readonly podEnv: NodePodEnvironment;
  private readonly stats: StatsProvider;
  /** This node's pods (the controller's informer), indexed by PodsByNodeIndex. */
  private readonly pods: Informer<Pod>;
  /** The Node as the API server has it now (the controller's informer; absent in some tests). */
  private readonly liveNode: Informer<Node> | undefined;

  constructor(
    private readonly vn: VirtualNode,
    spec: VirtualNodeSpec,
    nodeName: string,
    private readonly deps: ManagedNodeDeps,
    /**
     * The controller's informers of this node's pods, its Node and its PodCertificateRequests, and its
     * Services (service link variables).
     */
    watches: NodeWatches,
  ) {
    this.pods = watches.pods;
    this.liveNode = watches.node;
    const services = watches.services;
    this.nodeName = nodeName;
    this.spec = spec;
    this.internalIP = spec.internalIP ?? deps.defaultInternalIP;
    this.log = deps.logger.child({ node: nodeName, virtualNode: vn.metadata.name });
    this.api = restNodeAPI(deps.client);
    this.heartbeatApi = withCachedNodeReads(restNodeAPI(deps.heartbeatClient ?? deps.client), (name) =>
      this.liveNode?.hasSynced() ? this.liveNode.get(name) : undefined,
    );
    this.recorder = new EventRecorder(
      restEventSink(
        typeof deps.eventClient === 'function' ? deps.eventClient() : (deps.eventClient ?? deps.client),
      ),
      deps.clock,
      nodeName,
      this.log,
    );
    if (deps.eventHold) this.recorder.holdWith(deps.eventHold);
    // Volumes and env references (kubelet_runtime.ts takes the pod environment's sources) share this cache.
    const sources = deps.sources ?? restVolumeSources(deps.client, deps.clock);
    this.podEnv = podEnvironmentFor(
      spec,
      nodeName,
      {
        client: deps.client,
        clock: deps.clock,
        logger: deps.logger,
        stateDir: deps.stateDir ?? DEFAULT_STATE_DIR,
        clusterDNS: deps.clusterDNS ?? [],
        clusterDomain: deps.clusterDomain ?? 'cluster.local',
        sources,
        ...(services ? { services } : {}),
        ...(deps.resolvConf ? { resolvConf: deps.resolvConf } : {}),
        ...(deps.hostsFile ? { hostsFile: deps.hostsFile } : {}),
        ...(deps.tokenClock ? { tokenClock: deps.tokenClock } : {}),
      },
      (type, reason, message) => this.recorder.event(nodeRef(nodeName), type, reason, message),
    );
    // CSI volumes need files a driver on this host can mount into: only nodes whose volumes are real have them.
    if (!this.podEnv.memory) {
      this.podEnv.env.csi = csiHostFor({
        client: deps.client,
        nodeName,
        rootDir: nodeRootDir(deps.stateDir ?? DEFAULT_STATE_DIR, nodeName),
        endpoint: (driver) => this.pluginManager?.csi.endpoint(driver),
        refreshAllocatable: async (driver) =>
          (await this.pluginManager?.csi.refreshAllocatable(driver)) ?? false,
      });
    }
    const memory = this.podEnv.memory;
    this.ownsRuntime = deps.runtimeFor === undefined;
    this.runtime = (deps.runtimeFor ?? ((s, n, ip) => defaultRuntime(deps, s, n, ip, memory)))(
      spec,
      nodeName,
      this.internalIP,
    );
    this.runtimeState = new RuntimeState({
      nodeName,
      runtime: this.runtime,
      clock: deps.clock,
      timeoutMs: Math.min(spec.heartbeat.statusUpdateFrequencySeconds * 1000, 5_000),
      healthChecks: () => this.kubelet.health(),
      logger: this.log,
    });
    this.devices = new DeviceManager({
      // With the local APIs (as the plugin manager): the registration socket and the checkpoint on disk.
      ...(deps.localApis !== false
        ? { dir: kubeletRootPaths(nodeRootDir(deps.stateDir ?? DEFAULT_STATE_DIR, nodeName)).devicePlugins }
        : {}),
      clock: deps.clock,
      logger: this.log,
      activePods: () => this.kubelet.activePods(),
      containerRunning: (uid, name) =>
        findContainerStatusByName(this.kubelet.podCache.get(uid).status, name)?.state === 'running',
      onPodsNeedSync: (uids) => this.kubelet.resourceHealthChanged(uids),
    });
    this.agent = this.newAgent(spec);
    this.shutdownConfig = this.shutdownConfigOf(spec);
    const volumeStats = volumeStatsAggPeriodFrom(spec.kubelet.volumeStatsAggPeriod);
    this.stats = statsProviderFor({
      spec,
      nodeName,
      volumeStatsAggPeriodMs: volumeStats.periodMs,
      env: this.podEnv.env,
      runtime: this.runtime,
      clock: deps.clock,
      nodesServed: () => deps.nodeApi?.nodes().length ?? 1,
      ownsPod: (uid) => this.kubelet.podManager.getPodByUID(asPodUID(uid)) !== undefined,
      nodeCapacity: () => this.agent.capacity(),
      persistentVolumes: async (uid) =>
        (await this.kubelet.volumeManager.csiVolumeStats(uid)).map(({ timeMs, ...v }) => ({
          ...v,
          time: timeMs,
        })),
    });
    this.kubeletSettings = {
      podNetwork: spec.runtime.type === 'cri' ? spec.runtime.cri.podNetwork : 'cni',
      podLogsRoot: spec.runtime.type === 'cri' ? spec.runtime.cri.logRoot : '/var/log/pods',
      cgroupRoot: spec.runtime.type === 'cri' ? spec.runtime.cri.cgroupRoot : '/kubelet-operator',
      memoryCapacityBytes: quantityValue(spec.capacity.memory),
      cpuCFSQuotaPeriodUs: spec.kubelet.cpuCFSQuotaPeriod
        ? Math.round(parseGoDuration(spec.kubelet.cpuCFSQuotaPeriod) * 1000)
        : QUOTA_PERIOD_US,
      // procMount Default masks the host's per-cpu thermal_throttle directories too (cri: this host's).
      ...(spec.runtime.type === 'cri' ? { thermalThrottlePaths: hostThermalThrottlePaths() } : {}),
      // NodeSwap, NoSwap: containers' swap limits where this host has a swap controller (sim nodes have none).
      ...(spec.runtime.type === 'cri' ? swapControllerSetting(hostSwapController()) : {}),
      // kubelet --allowed-unsafe-sysctls: a pattern that is not namespaced stops this node's start (StartFailed).
      allowedUnsafeSysctls: spec.kubelet.allowedUnsafeSysctls,
      // KubeletCrashLoopBackOffMax is on in v1.37: the node's crashLoopBackOff.maxContainerRestartPeriod caps
      // the restart back-off (default 300 s, the kubelet's).
      crashLoopBackOff: {
        featureGates: { KubeletCrashLoopBackOffMax: true },
        maxContainerRestartPeriodSeconds:
          spec.kubelet.crashLoopBackOff?.maxContainerRestartPeriodSeconds ?? MaxCrashLoopBackOffMs / 1000,
      },
    };
    /** A refused group of spec.kubelet settings: a log line and a Warning Event on the VirtualNode. */
    const settingsRefused = (reason: string, what: string, error: string): void => {
      this.log.warn(`invalid ${what} settings, using the defaults`, { err: error });
      this.recorder.event(
        {
          kind: 'VirtualNode',
          apiVersion: vn.apiVersion,
          name: vn.metadata.name ?? nodeName,
          ...(vn.metadata.uid ? { uid: vn.metadata.uid } : {}),
        },
        'Warning',
        reason,
        `spec.kubelet ${what} settings refused, the kubelet's defaults are used: ${error}`,
      );
    };
    if (volumeStats.error !== undefined)
      settingsRefused('InvalidVolumeStatsSettings', 'volume stats', volumeStats.error);
    const eviction = evictionConfigFrom(spec.kubelet);
    // A kubelet with bad eviction flags does not start; a VirtualNode keeps its node on the defaults.
    if (eviction.error !== undefined) settingsRefused('InvalidEvictionSettings', 'eviction', eviction.error);
    // The containerfs warnings come from the eviction manager once it knows the node's filesystem layout.
    const imageGC = imageGCPolicyFrom(spec.kubelet);
    if (imageGC.error !== undefined) settingsRefused('InvalidImageGCSettings', 'image GC', imageGC.error);
    this.imageGCPolicy = imageGC.policy;
    // The topology and CPU managers: a refused setting or checkpoint stops the node, as it stops a kubelet.
    const resourceManagers = resourceManagersFor(
      spec,
      nodeRootDir(deps.stateDir ?? DEFAULT_STATE_DIR, nodeName),
    );
    const pullCredentials = imagePullCredentialsSettingsFrom(spec.kubelet);
    if ('error' in pullCredentials)
      settingsRefused('InvalidImagePullCredentialsSettings', 'image pull credentials', pullCredentials.error);
    else this.kubeletSettings.imagePullCredentials = pullCredentials;
    const plugins = credentialProvidersFrom(spec.kubelet);
    if ('error' in plugins)
      settingsRefused('InvalidCredentialProviderConfig', 'image credential provider', plugins.error);
    else if (plugins.providers) this.kubeletSettings.credentialProviders = plugins.providers;
    // The DRA manager calls the DRA drivers' kubelet plugins the plugin manager registers (with the local APIs).
    this.dra =
      deps.localApis !== false
        ? new DRAManager({
            client: deps.client,
            rootDir: nodeRootDir(deps.stateDir ?? DEFAULT_STATE_DIR, nodeName),
            plugin: (driver) => this.pluginManager?.dra.plugin(driver),
            logger: this.log,
            // A claim's device health changed: its pods' statuses are generated again (as the device manager's).
            onPodsNeedSync: (uids) => this.kubelet.resourceHealthChanged(uids),
          })
        : undefined;
    this.kubelet = new Kubelet({
      ...(resourceManagers ? { resourceManagers } : {}),
      ...(this.dra ? { dynamicResources: this.dra } : {}),
      imageGC: {
        policy: imageGC.policy,
        imageFsStats: async () => (await this.stats.imageFsStats()).imageFs,
        recordNode: (type, reason, message) => this.recorder.event(nodeRef(nodeName), type, reason, message),
        ...(deps.imageGCPeriodMs !== undefined ? { periodMs: deps.imageGCPeriodMs } : {}),
      },
      eviction: {
        config: eviction.config,
        summary: ({ pods }) => this.stats.summary({ fs: true, pods }),
        filesystemLayout: () => this.stats.filesystemLayout(),
        recordNode: (type, reason, message) => this.recorder.event(nodeRef(nodeName), type, reason, message),
      },
      shutdown: {
        config: this.shutdownConfig,
        stateFile: path.join(
          nodeRootDir(this.deps.stateDir ?? DEFAULT_STATE_DIR, nodeName),
          ShutdownStateFile,
        ),
        recordNode: (type, reason, message) => this.recorder.event(nodeRef(nodeName), type, reason, message),
        syncNodeStatus: () => void this.agent.syncStatus(),
      },
      runtimeState: this.runtimeState,
      nodeName,
      nodeIP: this.internalIP,
      runtime: this.runtime,
      runtimeKind: this.runtime.kind,
      client: deps.client,
      podInformer: this.pods,
      podIndexName: PodsByNodeIndex,
      recorder: this.recorder,
      clock: deps.clock,
      logger: this.log,
      metrics: deps.metrics,
      node: () => this.admissionNode(),
      freshNode: () => this.freshAdmissionNode(),
      ...(watches.podCertificateRequests
        ? {
            podCertificates: {
              requests: watches.podCertificateRequests,
              // As the kubelet's: from the node informer; the registration's answer until it has the Node.
              nodeUID: () => this.liveNode?.get(this.nodeName)?.metadata.uid ?? this.agent.nodeUID,
            },
          }
        : {}),
      podEnvironment: this.podEnv.env,
      devices: this.devices,
      yieldToLoop: () => processSlicer.yield(),
      settings: this.kubeletSettings,
    });
  }

  private newAgent(spec: VirtualNodeSpec): NodeAgent {
    return new NodeAgent({
      virtualNodeName: this.vn.metadata.name ?? this.nodeName,
      nodeName: this.nodeName,
      spec,
      internalIP: this.internalIP,
      api: this.api,
      heartbeatApi: this.heartbeatApi,
      runtime: this.runtime,
      runtimeState: this.runtimeState,
      recorder: this.recorder,
      clock: this.deps.clock,
      hostNetwork: spec.runtime.type === 'cri' && spec.runtime.cri.podNetwork === 'host',
      // NodeSwap: the host's SwapTotal on cri nodes, the declared one on sim nodes.
      swapCapacityBytes:
        spec.runtime.type === 'cri'
          ? hostSwapCapacityBytes()
          : quantityValue(spec.runtime.sim.swapCapacity ?? 0),
      daemonPort: this.deps.nodeApiPort,
      logger: this.log,
      // The PLEG's first relist (before the pods are listed): the first node status then sees it healthy.
      firstStatusAfter: () => this.kubelet.runtimeListed,
      pressure: () => this.kubelet.pressureConditions(),
      shutdown: () => this.kubelet.shutdownErrors(),
      devicePlugins: () => this.devices.capacity(),
      ...(this.deps.leaseHold ? { leaseHold: this.deps.leaseHold } : {}),
      onRegistered: (node, created) => this.nodeRegistered.resolve({ uid: node.metadata.uid ?? '', created }),
    });
  }

  /**
   * The shutdown settings as the kubelet's config: the spec's schema has checked them with the kubelet's
   * rules, so a refusal here is a spec that skipped it; the node then runs without (logged).
   */
  private shutdownConfigOf(spec: VirtualNodeSpec): ShutdownConfig {
    try {
      return shutdownConfigFrom(spec.kubelet);
    } catch (err) {
      this.log.warn('invalid shutdown settings, graceful node shutdown is off', { err: errorMessage(err) });
      return ShutdownDisabled;
    }
  }

  /**
   * The node as admission sees it, built once per spec (admission asks for it at every pod it admits, and
   * the labels and allocatable it derives cost about as much as the rest of an admission).
   */
  private readonly admissionNodeOf = memoByIdentity((spec: VirtualNodeSpec): AdmissionNode => ({
    name: this.nodeName,
    labels: desiredLabels({
      nodeName: this.nodeName,
      virtualNodeName: this.vn.metadata.name ?? this.nodeName,
      labels: spec.labels,
      taints: spec.taints,
    }),
    taints: spec.taints,
    allocatable: admissionAllocatable(spec),
  }));

  /**
   * The node admission decides against: this node's own view with the Node as the informer has it now
   * (labels, taints and extended resources others put there; withLiveNode). Before the informer has the Node,
   * the allocatable of the last status round stands in for its status.
   */
  private admissionNode(): AdmissionNode {
    const own = this.admissionNodeOf(this.spec);
    const live = this.liveNode?.get(this.nodeName);
    if (live) return this.withLive(own, live);
    const seen = this.agent.allocatable();
    return seen ? this.withLive(own, this.lastRoundNode(seen)) : own;
  }

  /** A Node with only the allocatable of the last status round (memoized: a new object per round). */
  private readonly lastRoundNode = memoByIdentity(
    (allocatable: Readonly<Record<string, string | number>>): Node => ({
      metadata: { name: this.nodeName },
      status: { allocatable: { ...allocatable } as Record<string, string> },
    }),
  );

  /** withLiveNode, memoized on both inputs: the kubelet memoizes what it derives from the node by identity. */
  private withLive(own: AdmissionNode, live: Node): AdmissionNode {
    const last = this.lastLive;
    if (last && last.own === own && last.live === live) return last.node;
    const node = withLiveNode(own, live);
    this.lastLive = { own, live, node };
    return node;
  }
  private lastLive: { own: AdmissionNode; live: Node; node: AdmissionNode } | undefined;

  /**
   * The kubelet's second look when node affinity alone refuses a pod: the Node read from the API server (its
   * labels may have changed a moment ago, before the informer heard). Undefined when it cannot be read.
   */
  private async freshAdmissionNode(): Promise<AdmissionNode | undefined> {
    try {
      const node = await this.api.getNode(this.nodeName);
      return withLiveNode(this.admissionNodeOf(this.spec), node);
    } catch (err) {
      this.log.warn('failed to fetch the node for admission', { error: errorMessage(err) });
      return undefined;
    }
  }

  async start(): Promise<void> {
    // In start, not the constructor: a node whose runtime cannot be built never counts.
    this.deps.metrics?.eventRecorders.set(this.nodeName, this.recorder);
    // The first runtime check before the Kubelet starts: its sync loop waits for one.
    await this.runtimeState.update();
    // Stopped meanwhile (its VirtualNode forgotten): nothing may start after the stop, or its kubelet, Node
    // and node API route would outlive it.
    if (this.stopped)
      throw new KindError('Unavailable', 'node stopped while starting', { node: this.nodeName });
    // A node with real volumes makes its root a shared mount, as a kubelet does at start (setupDataDirs):
    // a node plugin's Bidirectional hostPath mounts (a CSI driver's pods/ and plugins/) need it. Not fatal
    // here: without CAP_SYS_ADMIN only those mounts fail, with containerd's "not a shared mount".
    if (!this.podEnv.memory) {
      const root = nodeRootDir(this.deps.stateDir ?? DEFAULT_STATE_DIR, this.nodeName);
      try {
        const steps = await makeRShared(root);
        if (steps !== 'none') this.log.info('made the kubelet root directory rshared', { root, steps });
      } catch (err) {
        this.log.warn(
          'cannot make the kubelet root directory rshared: Bidirectional mounts of it will fail',
          {
            root,
            err: errorMessage(err),
          },
        );
      }
    }
    // The device manager before the Kubelet admits a pod: its checkpoint read, its simulated plugins listed.
    await this.devices.start();
    this.devices.setSimDevices(this.spec.devices);
    // While nodes start, Events wait for their first status (bounded): registration and readiness go first.
    this.deps.eventHold?.track(this.agent.ready);
    // The Kubelet first: its PLEG relists at once, before the node's pods are listed, and the first node
    // status waits for that (bounded), so it sees the PLEG healthy (otherwise the Node would show NotReady
    // for a whole status period; a Node taken over from another replica would drop from Ready). Admission
    // reads the spec, not the Node.
    this.kubelet.start();
    this.agent.start();
    // A host that was shutting down when the process stopped still is (the pods not yet killed are).
    if (this.spec.shutdown) this.kubelet.shutdown();
    if (this.deps.localApis !== false) {
      const series = this.deps.metrics?.forNode(this.nodeName);
      this.localApis = kubeletLocalApis(this.kubelet, {
        rootDir: nodeRootDir(this.deps.stateDir ?? DEFAULT_STATE_DIR, this.nodeName),
        sourcesReady: () => this.pods.hasSynced(),
        clock: this.deps.clock,
        logger: this.log,
        ...(series && {
          podResourcesMetrics: (counter, version) => series.podResourcesEndpoint(counter, version).inc(),
          podsApiMetrics: {
            requests: (counter, version, code) => series.podRequests(counter, version, code).inc(),
            watchEventDropped: () => series.podWatchEventsDropped.inc(),
          },
        }),
        devices: this.devices,
        ...(this.dra ? { dynamicResources: this.dra } : {}),
      });
      await this.localApis.start();
      // Its checkpoints (claims, device health) read before any DRA plugin registers and reports; then claims
      // of pods that went while nobody watched are unprepared (reconcileLoop).
      await this.dra?.start({
        activePodUIDs: () =>
          this.pods.hasSynced()
            ? new Set(
                this.pods
                  .byIndex(PodsByNodeIndex, this.nodeName)
                  .filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed')
                  .map((p) => p.metadata.uid ?? ''),
              )
            : undefined,
      });
      // The plugin manager (CSI and DRA node plugins) on the node root's plugins_registry/.
      this.pluginManager = await startNodePluginManager({
        client: this.deps.client,
        nodeName: this.nodeName,
        rootDir: nodeRootDir(this.deps.stateDir ?? DEFAULT_STATE_DIR, this.nodeName),
        logger: this.log,
        nodeRegistered: this.nodeRegistered.promise,
        ...(this.deps.resourceSlices ? { resourceSlices: this.deps.resourceSlices } : {}),
        ...(this.dra ? { draHealth: this.dra } : {}),
      });
      this.deps.metrics?.pluginManagers.set(this.nodeName, this.pluginManager.manager);
    }
    this.unregisterNodeApi = this.deps.nodeApi?.register({
      nodeName: this.nodeName,
      internalIP: this.internalIP,
      runtime: this.runtime,
      pods: () => this.pods.byIndex(PodsByNodeIndex, this.nodeName),
      pod: (namespace, name) => {
        const p = this.pods.get(`${namespace}/${name}`);
        return p?.spec?.nodeName === this.nodeName ? p : undefined;
      },
      stats: {
        summary: (opts) => this.stats.summary(opts),
        probeMetrics: () => this.kubelet.probeMetrics.render(),
      },
      kubeletSettings: () =>
        nodeKubeletSettings({
          shutdown: this.shutdownConfig,
          spec: this.spec,
          nodeName: this.nodeName,
          nodeIP: this.internalIP,
          settings: this.kubeletSettings,
          env: this.podEnv.env,
          resolvConf: this.podEnv.resolvConf,
          imageGC: this.imageGCPolicy,
        }),
      startTime: this.deps.clock.now(),
      logDir: nodeLogDir(this.deps.stateDir ?? DEFAULT_STATE_DIR, this.nodeName),
    });
    await this.agent.ready;
  }

  async update(spec: VirtualNodeSpec): Promise<void> {
    const shutdownChanged = spec.shutdown !== this.spec.shutdown;
    this.spec = spec;
    this.devices.setSimDevices(spec.devices);
    // spec.shutdown is the host's shutdown event, and clearing it the cancellation.
    if (shutdownChanged) {
      if (spec.shutdown) this.kubelet.shutdown();
      else this.kubelet.cancelShutdown();
    }
    // Labels, taints and capacity: the NodeAgent reconciles them on the Node in place. Only a different
    // heartbeat needs new lease and status loops.
    if (await this.agent.updateSpec(spec)) return;
    const old = this.agent;
    await old.stop();
    this.agent = this.newAgent(spec);
    this.agent.start();
    await this.agent.ready;
  }

  async shutdown(): Promise<boolean> {
    if (this.stopped) return true;
    this.kubelet.shutdown();
    return this.kubelet.shutdownCompleted();
  }

  async drain(): Promise<boolean> {
    // Before its first list the informer knows no pod, which is not "none left".
    if (!this.pods.hasSynced()) return false;
    const pods = this.pods.byIndex(PodsByNodeIndex, this.nodeName);
    for (const p of pods) {
      if (p.metadata.deletionTimestamp) continue;
      try {
        await this.deps.client.request({
          method: 'DELETE',
          path: `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`,
          body: { preconditions: { uid: p.metadata.uid } },
        });
      } catch (err) {
        if (!isNotFound(err))
          this.log.warn('drain: pod delete failed', { pod: p.metadata.name, error: errorMessage(err) });
      }
    }
    return pods.length === 0;
  }

  async remove(): Promise<void> {
    await deleteNode(this.api, this.nodeName);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unregisterNodeApi?.();
    await this.localApis?.stop();
    await this.pluginManager?.stop();
    // Whatever waited for the registration (the plugin handlers, stopped above) stops waiting.
    this.nodeRegistered.resolve(undefined);
    await this.dra?.stop();
    await this.devices.stop();
    if (
      this.pluginManager &&
      this.deps.metrics?.pluginManagers.get(this.nodeName) === this.pluginManager.manager
    )
      this.deps.metrics.pluginManagers.delete(this.nodeName);
    await this.kubelet.stop().catch(() => undefined);
    await this.agent.stop().catch(() => undefined);
    this.recorder.close();
    await this.recorder.flush();
    // A replacement for the same node may have taken the name already.
    if (this.deps.metrics?.eventRecorders.get(this.nodeName) === this.recorder)
      this.deps.metrics.eventRecorders.delete(this.nodeName);
    this.podEnv.stop();
    if (this.ownsRuntime) await this.runtime.close().catch(() => undefined);
  }

  podAdded(pod: Pod): void {
    this.kubelet.handlePodAdd(pod);
  }
  podUpdated(oldPod: Pod, pod: Pod): void {
    this.kubelet.handlePodUpdate(pod, oldPod);
  }
  podDeleted(pod: Pod): void {
    this.kubelet.handlePodDelete(pod);
    // Gone from the API: its UID never recurs, so the correlator's entries and probe series for it can go.
    this.recorder.forget(podRef(pod));
    this.kubelet.probeMetrics.forget(pod.metadata?.uid ?? '');
  }

  observe(): ManagedNodeObservation {
    const runtime = this.runtimeState.runtimeReady();
    const version = this.runtimeState.version;
    const h = this.agent.health();
    const pods = this.pods.byIndex(PodsByNodeIndex, this.nodeName);
    const problems = [
      ...(h.ready ? [] : [h.readyMessage ?? 'node not ready']),
      ...(h.lastError && !h.registered ? [h.lastError] : []),
    ];
    return {
      registered: h.registered,
      problems,
      runtimeReady: runtime.ready,
      runtimeMessage: runtime.message,
      runtime: version ? { name: version.runtimeName, version: version.runtimeVersion } : undefined,
      internalIP: this.internalIP,
      lastHeartbeatTime:
        h.lastRenewTime !== undefined
          ? new Date(h.lastRenewTime).toISOString().replace(/\.\d{3}Z$/, 'Z')
          : undefined,
      pods: {
        total: pods.length,
        running: pods.filter((p) => p.status?.phase === 'Running').length,
        pending: pods.filter((p) => (p.status?.phase ?? 'Pending') === 'Pending').length,
      },
    };
  }
}

export function kubeletNodeFactory(deps: ManagedNodeDeps): ManagedNodeFactory {
  const shared: ManagedNodeDeps = {
    ...deps,
    eventHold: deps.eventHold ?? new StartupHold(deps.clock),
    leaseHold: deps.leaseHold ?? new StartupHold(deps.clock, LEASE_HOLD_MAX_MS),
    resourceSlices: deps.resourceSlices ?? restNodeResourceSlices(deps.client),
  };
  return {
    create: (vn, spec, nodeName, watches) => new KubeletManagedNode(vn, spec, nodeName, shared, watches),
    // A different runtime, endpoint, address, node name or kubelet setting needs a fresh runtime and kubelet.
    needsRestart: (a, b) =>
      JSON.stringify(a.runtime) !== JSON.stringify(b.runtime) ||
      JSON.stringify(a.kubelet) !== JSON.stringify(b.kubelet) ||
      a.internalIP !== b.internalIP ||
      a.nodeName !== b.nodeName,
  };
}

/**
 * The node's credential provider plugins (kubelet RegisterCredentialProviderPlugins): both paths or neither;
 * the config read and checked as the kubelet checks it. A kubelet would not start; the node runs without.
 */
function credentialProvidersFrom(k: {
  imageCredentialProviderConfigPath?: string | undefined;
  imageCredentialProviderBinDir?: string | undefined;
}): { providers?: { providers: CredentialProvider[]; binDir: string } } | { error: string } {
  const configPath = k.imageCredentialProviderConfigPath;
  const binDir = k.imageCredentialProviderBinDir;
  if (!configPath && !binDir) return {};
  if (!configPath || !binDir)
    return { error: 'imageCredentialProviderConfigPath and imageCredentialProviderBinDir go together' };
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (err) {
    return { error: `failed to load external credential provider config: ${errorMessage(err)}` };
  }
  const parsed = parseCredentialProviderConfig(text);
  if ('errors' in parsed)
    return { error: `failed to validate credential provider config: ${parsed.errors.join(', ')}` };
  for (const p of parsed.providers)
    if (!existsSync(path.join(binDir, p.name)))
      return { error: `plugin binary executable ${path.join(binDir, p.name)} did not exist` };
  return { providers: { providers: parsed.providers, binDir } };
}
