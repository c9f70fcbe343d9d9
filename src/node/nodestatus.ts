/**
 * Node status for one node: the inputs the setters need (runtime version and conditions, health checks), the
 * kubelet's wording for what makes a node NotReady, the Node events the kubelet records on condition
 * changes, and `NodeStatusLoop`, which every statusUpdateFrequency reads the Node, computes its status and
 * writes `nodes/<name>/status` only when `nodeStatusChanged` says a write is due (kubelet:
 * kubelet_node_status.go syncNodeStatus / tryUpdateNodeStatus, nodestatus/setters.go).
 *
 * The functions above the loop are pure; the loop is the shell (Clock, API, the node's RuntimeState).
 */
import { declaredFeaturesSetter } from './declaredfeatures.js';
import { createHash } from 'node:crypto';
import type { Node, NodeCondition, NodeStatus, NodeSystemInfo } from '../api/node.js';
import type { RuntimeFeatures, RuntimeHandler, RuntimeVersion } from '../runtime/types.js';
import type { Clock } from '../util/clock.js';
import { KindError, errorKind, errorMessage } from '../util/errors.js';
import { formatRFC3339 } from '../util/rfc3339.js';
import {
  computeNodeStatus,
  daemonEndpoints,
  machineInfo,
  type DevicePluginResources,
  nodeAddresses,
  nodeFeatures,
  nodeStatusChanged,
  pressureConditions,
  readyCondition,
  runtimeHandlers,
  versionInfo,
  type Setter,
} from './setters.js';
import { nodeRef, silentLogger, type NodeAPI, type NodeEventRecorder, type NodeLogger } from './api.js';
import type { RuntimeState } from './runtimestate.js';

/** Kubernetes release we implement, and our own version: `kubectl get nodes` shows both. */
export const KUBE_VERSION = 'v1.37.2';
export const OPERATOR_VERSION = '0.1.0';
export const KUBELET_VERSION = `${KUBE_VERSION}-kubelet-operator-${OPERATOR_VERSION}`;
export const DEFAULT_KUBELET_PORT = 10250;
export const DEFAULT_STATUS_UPDATE_FREQUENCY_MS = 10_000;
export const DEFAULT_STATUS_REPORT_FREQUENCY_MS = 5 * 60_000;
/** Tries per node status round (the kubelet's nodeStatusUpdateRetry). */
export const NODE_STATUS_UPDATE_RETRY = 5;
/**
 * kubelet fastStatusUpdateOnce: until a new node is first Ready, or this long has passed (the kubelet's
 * nodeReadyGracePeriod), its status rounds come every FAST_STATUS_PERIOD_MS instead of the update frequency,
 * so a pod CIDR assigned a moment after registration, or a network turning ready, shows at once.
 */
export const NODE_READY_GRACE_MS = 120_000;
/** The kubelet polls its Node lister every 100 ms; a GET each time here, so a second. */
export const FAST_STATUS_PERIOD_MS = 1_000;

export {
  RUNTIME_DOWN,
  RUNTIME_NOT_CHECKED,
  readinessErrors,
  withTimeout,
  type RuntimeCheck,
} from './runtimestate.js';

/** A UUID-shaped stable digest of `seed` (version-4 layout, so tools that parse UUIDs accept it). */
function stableUUID(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export interface SystemInfoParams {
  nodeName: string;
  kubeletVersion: string;
  /** The runtime's own report; undefined until it has answered once (the field is then left empty). */
  runtimeVersion: RuntimeVersion | undefined;
  kernelVersion: string;
  osImage: string;
  /** Whether the process runs in a user namespace (KubeletInUserNamespace); left out when unknown. */
  runningInUserNamespace?: boolean;
  /** The host's swap in bytes (NodeSwap: nodeInfo.swap.capacity); 0 or absent: no swap, field left out. */
  swapCapacityBytes?: number;
}

/**
 * nodeInfo: our kubelet version, `<runtimeName>://<runtimeVersion>`, linux/amd64, and IDs derived from the
 * node name so that they are stable across operator restarts and distinct between nodes.
 */
export function systemInfo(p: SystemInfoParams): NodeSystemInfo {
  return {
    machineID: createHash('sha256').update(`machine-id/${p.nodeName}`).digest('hex').slice(0, 32),
    systemUUID: stableUUID(`system-uuid/${p.nodeName}`),
    bootID: stableUUID(`boot-id/${p.nodeName}`),
    kernelVersion: p.kernelVersion,
    osImage: p.osImage,
    containerRuntimeVersion: p.runtimeVersion
      ? `${p.runtimeVersion.runtimeName}://${p.runtimeVersion.runtimeVersion}`
      : '',
    kubeletVersion: p.kubeletVersion,
    // Deprecated upstream; kubelets no longer fill it.
    kubeProxyVersion: '',
    operatingSystem: 'linux',
    architecture: 'amd64',
    ...(p.runningInUserNamespace === undefined ? {} : { runningInUserNamespace: p.runningInUserNamespace }),
    // The kubelet's MachineInfo setter writes it only for a host with swap (and never clears it).
    ...(p.swapCapacityBytes ? { swap: { capacity: p.swapCapacityBytes } } : {}),
  };
}

/** Everything about the node that does not come from the runtime. */
export interface NodeStatusParams {
  nodeName: string;
  internalIP: string;
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  daemonPort: number;
  kubeletVersion: string;
  kernelVersion: string;
  osImage: string;
  /** Whether the operator runs in a user namespace (KubeletInUserNamespace: nodeInfo.runningInUserNamespace). */
  runningInUserNamespace?: boolean;
  /** The node's swap in bytes (NodeSwap: nodeInfo.swap.capacity when not 0). */
  swapCapacityBytes?: number;
  /** The device manager's resources, read at each status computation (absent: no device manager). */
  devicePlugins?: () => DevicePluginResources;
}

/** What the runtime's last answered Status reported besides its conditions. */
export interface RuntimeReport {
  handlers: readonly RuntimeHandler[];
  features: RuntimeFeatures | undefined;
}

/** The setters in the kubelet's order for one computation (kubelet defaultNodeStatusFuncs). */
export function nodeStatusSetters(
  p: NodeStatusParams,
  runtimeVersion: RuntimeVersion | undefined,
  readyErrors: string[],
  runtime: RuntimeReport = { handlers: [], features: undefined },
  pressure: readonly string[] = [],
): Setter[] {
  return [
    nodeAddresses(p.internalIP, p.nodeName),
    machineInfo(p.capacity, p.allocatable, p.devicePlugins?.()),
    versionInfo(systemInfo({ ...p, runtimeVersion })),
    daemonEndpoints(p.daemonPort),
    pressureConditions(pressure),
    readyCondition(readyErrors),
    runtimeHandlers(runtime.handlers),
    nodeFeatures(runtime.features),
    declaredFeaturesSetter(),
  ];
}

const pressureEvents: Record<string, { False: string; True: string }> = {
  MemoryPressure: { False: 'NodeHasSufficientMemory', True: 'NodeHasInsufficientMemory' },
  DiskPressure: { False: 'NodeHasNoDiskPressure', True: 'NodeHasDiskPressure' },
  PIDPressure: { False: 'NodeHasSufficientPID', True: 'NodeHasInsufficientPID' },
};

/**
 * Event reasons the kubelet records when conditions move from `prev` to `next`: a pressure condition on
 * its first report and on every flip; Ready only on a flip (NodeReady / NodeNotReady), not when it first
 * appears.
 */
export function nodeConditionEvents(prev: NodeCondition[] | undefined, next: NodeCondition[]): string[] {
  const reasons: string[] = [];
  for (const c of next) {
    const before = prev?.find((p) => p.type === c.type);
    const pressure = pressureEvents[c.type];
    if (pressure && c.status !== 'Unknown' && before?.status !== c.status) reasons.push(pressure[c.status]);
    if (c.type === 'Ready' && before && before.status !== c.status) {
      reasons.push(c.status === 'True' ? 'NodeReady' : 'NodeNotReady');
    }
  }
  return reasons;
}

/** The Node's pod CIDRs: spec.podCIDRs, else the single spec.podCIDR of older writers. */
export function podCIDRsOf(node: Pick<Node, 'spec'>): string[] {
  const s = node.spec;
  if (s?.podCIDRs?.length) return s.podCIDRs;
  return s?.podCIDR ? [s.podCIDR] : [];
}

/** The status fields this module owns: the body of the strategic merge patch. */
export function ownedStatus(s: NodeStatus): NodeStatus {
  const { addresses, capacity, allocatable, conditions, daemonEndpoints, nodeInfo } = s;
  const owned: NodeStatus = { addresses, capacity, allocatable, conditions, daemonEndpoints, nodeInfo };
  // Sent only when set (null removes a list the runtime no longer reports).
  if (s.runtimeHandlers !== undefined) owned.runtimeHandlers = s.runtimeHandlers;
  if (s.features !== undefined) owned.features = s.features;
  if (s.declaredFeatures !== undefined) owned.declaredFeatures = s.declaredFeatures;
  return owned;
}

export interface NodeStatusLoopConfig {
  api: Pick<NodeAPI, 'getNode' | 'patchNodeStatus'>;
  clock: Clock;
  /** The node's runtime state; refreshed here before every status computation. */
  runtimeState: RuntimeState;
  recorder: NodeEventRecorder;
  params: NodeStatusParams;
  /** The node's pods use the host network: NetworkReady=false does not make it NotReady. */
  hostNetwork: boolean;
  updateFrequencyMs?: number;
  reportFrequencyMs?: number;
  /** Called when the Node is gone (NotFound on read or write); the owner re-registers it. */
  onNodeMissing?: () => void;
  /**
   * The first round waits for this (the kubelet's first PLEG relist), at most FIRST_STATUS_WAIT_MS: a kubelet
   * relists at once and registers after an API round trip, so its first status sees the PLEG healthy; here
   * registration can win that race, and a Node taken over from another replica turned NotReady ("pleg has yet
   * to be successful") for one status period. A runtime that never answers keeps the wait to its bound.
   */
  firstStatusAfter?: () => Promise<unknown>;
  /** The node's pressure conditions now (the eviction manager's); default none. */
  pressure?: () => readonly string[];
  /**
   * The shutdown manager's readiness errors now ("node is shutting down"), after the runtime's and the
   * network's, as the kubelet's ReadyCondition lists them; default none.
   */
  shutdown?: () => readonly string[];
  logger?: NodeLogger;
}

/** The longest the first status round waits for `firstStatusAfter` (half the default update period). */
export const FIRST_STATUS_WAIT_MS = 5_000;

/**
 * Computes and reports node status. Invariants: one sync at a time; a write happens only when
 * `nodeStatusChanged` holds against the Node as last read; after `stop()` resolves no request starts.
 */
export class NodeStatusLoop {
  /** Resolves after the first sync (whatever it found); rejects if stopped before. */
  readonly ready: Promise<void>;
  readonly done: Promise<void>;
  /** Clock time of the last accepted status write. */
  lastReportTime: number | undefined;
  /** The status as last computed (written or not). */
  lastComputed: NodeStatus | undefined;
  /** Count of accepted status writes, for health and tests. */
  writes = 0;
  lastError: string | undefined;

  private readonly updateFrequencyMs: number;
  private readonly reportFrequencyMs: number;
  private readonly logger: NodeLogger;
  private readonly abort = new AbortController();
  private started = false;
  /** The registered Node, read by the first round instead of a GET (see seed). */
  private seeded: Node | undefined;
  /** Clock time of the status initialStatus last computed (what a Node created by registration carries). */
  private initialAt: number | undefined;
  private firstStatusWaited: Promise<void> | undefined;
  private resolveReady!: () => void;
  private rejectReady!: (err: Error) => void;
  private resolveDone!: () => void;

  constructor(private readonly cfg: NodeStatusLoopConfig) {
    if (!cfg.api || !cfg.clock || !cfg.runtimeState || !cfg.recorder || !cfg.params?.nodeName) {
      throw new KindError(
        'InvalidArgument',
        'node status loop needs api, clock, runtimeState, recorder, params',
        {
          node: cfg.params?.nodeName,
        },
      );
    }
    this.updateFrequencyMs = cfg.updateFrequencyMs ?? DEFAULT_STATUS_UPDATE_FREQUENCY_MS;
    this.reportFrequencyMs = cfg.reportFrequencyMs ?? DEFAULT_STATUS_REPORT_FREQUENCY_MS;
    this.logger = cfg.logger ?? silentLogger;
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => {});
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  private get nodeName(): string {
    return this.cfg.params.nodeName;
  }

  /**
   * The status the Node is registered with (kubelet: initialNode, which runs every status setter): the
   * runtime's version if it answers, and readiness as the runtime state last checked it. Unchecked, the Node
   * registers Ready=False and turns Ready on the first sync. Checked healthy (the owner checks the runtime
   * before it starts the node, as the kubelet runs updateRuntimeUp before it registers), registration first
   * waits for `firstStatusAfter` (the PLEG's first relist, bounded as the first round's wait), so a healthy
   * node is created Ready: no round trip and no status write stand between its creation and its readiness,
   * and, as with a kubelet whose Node is created Ready, no NodeReady Event follows (there was no earlier
   * Ready condition to change from). Records the pressure events.
   */
  async initialStatus(): Promise<NodeStatus> {
    // Unchecked or unhealthy: NotReady whatever the PLEG says, so registration does not wait for it.
    const healthy = this.cfg.runtimeState.runtimeReady().ready;
    await Promise.all([this.cfg.runtimeState.refreshVersion(), healthy ? this.firstStatusWait() : undefined]);
    this.initialAt = this.cfg.clock.now();
    return this.compute(undefined);
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    void this.run();
  }

  stop(): Promise<void> {
    this.abort.abort();
    this.rejectReady(new KindError('Unavailable', 'node status loop stopped', { node: this.nodeName }));
    if (!this.started) this.resolveDone();
    return this.done;
  }

  /** Whether the last computed status says Ready=True. */
  isReady(): boolean {
    return this.readyCondition()?.status === 'True';
  }

  readyCondition(): NodeCondition | undefined {
    return this.lastComputed?.conditions?.find((c) => c.type === 'Ready');
  }

  private async run(): Promise<void> {
    const { clock } = this.cfg;
    try {
      await this.firstStatusWait();
      const fastUntil = clock.now() + NODE_READY_GRACE_MS;
      let everReady = false;
      while (!this.abort.signal.aborted) {
        const began = clock.now();
        await this.syncOnce();
        this.resolveReady();
        if (this.abort.signal.aborted) break;
        everReady ||= this.isReady();
        const period =
          !everReady && clock.now() < fastUntil
            ? Math.min(FAST_STATUS_PERIOD_MS, this.updateFrequencyMs)
            : this.updateFrequencyMs;
        await clock.sleep(Math.max(0, period - (clock.now() - began)), this.abort.signal);
      }
    } catch {
      // Only the abort of a sleep lands here.
    } finally {
      this.resolveDone();
    }
  }

  /**
   * The wait for `firstStatusAfter`, one for the loop's life: when registration waited for it already (see
   * initialStatus), the first round does not wait a second time.
   */
  private firstStatusWait(): Promise<void> {
    if (!this.cfg.firstStatusAfter) return Promise.resolve();
    this.firstStatusWaited ??= this.waitFor(this.cfg.firstStatusAfter());
    return this.firstStatusWaited;
  }

  /** Waits for `p` (its failure counts as done), at most FIRST_STATUS_WAIT_MS; rejects when stopped. */
  private async waitFor(p: Promise<unknown>): Promise<void> {
    const bound = new AbortController();
    const stop = (): void => bound.abort();
    this.abort.signal.addEventListener('abort', stop, { once: true });
    try {
      await Promise.race([
        p.catch(() => undefined),
        this.cfg.clock.sleep(FIRST_STATUS_WAIT_MS, bound.signal).catch(() => undefined),
      ]);
    } finally {
      this.abort.signal.removeEventListener('abort', stop);
      bound.abort();
    }
    if (this.abort.signal.aborted) throw new KindError('Unavailable', 'node status loop stopped');
  }

  /**
   * One round: check the runtime, then read the Node, compute and write if due, tried up to
   * NODE_STATUS_UPDATE_RETRY times as the kubelet's updateNodeStatus does: the first read is served from
   * the API server's watch cache, the retries read etcd (a Node registered a moment ago may not be in the
   * cache yet; waiting a whole update period for it would keep a new node NotReady). Never throws.
   */
  async syncOnce(): Promise<void> {
    await this.cfg.runtimeState.update();
    let err: unknown;
    for (let attempt = 0; attempt < NODE_STATUS_UPDATE_RETRY; attempt++) {
      if (this.abort.signal.aborted) return;
      err = await this.tryUpdate(attempt);
      if (err === undefined) {
        this.lastError = undefined;
        return;
      }
      this.lastError = errorMessage(err);
      this.logger.warn('node status update failed, will retry', {
        node: this.nodeName,
        attempt,
        error: this.lastError,
      });
    }
    if (errorKind(err) === 'NotFound') this.cfg.onNodeMissing?.();
  }

  /**
   * Hands the loop the Node as registration just read or created it: the first round computes on it instead
   * of reading the Node again (one request and one round trip less before a new node can turn Ready; 100
   * nodes starting at once sent 100 GETs for objects they had just created). Retries read as usual.
   */
  seed(node: Node, created = false): void {
    this.seeded = node;
    // A Node registration created carries initialStatus's status: that create was a status report. The first
    // round then writes only what changed since (the kubelet writes once more right after registering, as its
    // report time starts at zero, and sends the status the Node was just created with: 100 nodes starting at
    // once sent 100 such writes).
    if (created && this.initialAt !== undefined) this.lastReportTime = this.initialAt;
  }

  /** One try of the round; the error, or undefined when the status is written or nothing was due. */
  private async tryUpdate(attempt: number): Promise<unknown> {
    const { api, clock } = this.cfg;
    try {
      const seeded = attempt === 0 ? this.seeded : undefined;
      this.seeded = undefined;
      const node = seeded ?? (await api.getNode(this.nodeName, { fromCache: attempt === 0 }));
      // kubelet tryUpdateNodeStatus: the pod CIDR the control plane assigned (node IPAM) goes to the runtime,
      // whose network turns ready with it; the new readiness is in this very round.
      if (await this.cfg.runtimeState.updatePodCIDR(podCIDRsOf(node).join(',')))
        await this.cfg.runtimeState.update();
      const next = this.compute(node.status);
      if (!nodeStatusChanged(node.status, next, this.lastReportTime, clock.now(), this.reportFrequencyMs))
        return undefined;
      if (this.abort.signal.aborted) return undefined;
      await api.patchNodeStatus(this.nodeName, { status: ownedStatus(next) });
      this.lastReportTime = clock.now();
      this.writes++;
      return undefined;
    } catch (err) {
      return err;
    }
  }

  /** Runs the setters on `base`, records events for condition changes since the last computation. */
  private compute(base: NodeStatus | undefined): NodeStatus {
    const { clock, params, hostNetwork } = this.cfg;
    const errors = this.cfg.runtimeState.readinessErrors(hostNetwork);
    const shutdown = this.cfg.shutdown?.() ?? [];
    if (shutdown.length > 0) errors.push(...shutdown);
    const next = computeNodeStatus(
      base,
      nodeStatusSetters(
        params,
        this.cfg.runtimeState.version,
        errors,
        {
          handlers: this.cfg.runtimeState.runtimeHandlers(),
          features: this.cfg.runtimeState.runtimeFeatures(),
        },
        this.cfg.pressure?.() ?? [],
      ),
      formatRFC3339(clock.now()),
    );
    const prev = this.lastComputed ?? base;
    for (const reason of nodeConditionEvents(prev?.conditions, next.conditions ?? [])) {
      this.cfg.recorder.event(
        nodeRef(this.nodeName),
        'Normal',
        reason,
        `Node ${this.nodeName} status is now: ${reason}`,
      );
    }
    this.lastComputed = next;
    return next;
  }
}
