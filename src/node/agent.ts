/**
 * NodeAgent: the node half of a kubelet for one VirtualNode. It registers the Node, then runs the Lease
 * heartbeat and the node status loop. Pods are not its business: the pod side hooks in through
 * `onRegistered` (called with the Node each time it is registered) and `nodeUID`.
 *
 * Lifecycle: `start()` once; `ready` resolves when the Node is registered, the Lease renewed once and the
 * first status sync done; `stop()` stops every loop (it never deletes anything: `deleteNode()` in
 * registration.ts does) and resolves with `done`. A Node deleted behind our back is registered again.
 */
import { isIP } from 'node:net';
import os from 'node:os';
import type { Node } from '../api/node.js';
import type { VirtualNodeSpec } from '../api/virtualnode.js';
import type { Runtime } from '../runtime/types.js';
import type { Clock } from '../util/clock.js';
import { KindError, errorMessage } from '../util/errors.js';
import {
  nodeRef,
  silentLogger,
  type NodeAPI,
  type NodeEventRecorder,
  type NodeHeartbeatAPI,
  type NodeLogger,
} from './api.js';
import { LeaseController } from './lease.js';
import type { DevicePluginResources } from './setters.js';
import {
  DEFAULT_KUBELET_PORT,
  KUBELET_VERSION,
  NodeStatusLoop,
  type NodeStatusParams,
} from './nodestatus.js';
import { buildNode, registerNode, type NodeIdentity } from './registration.js';
import type { StartupHold } from '../kube/startuphold.js';
import { RuntimeState } from './runtimestate.js';
import { runningInUserNamespace } from './userns.js';

export interface NodeAgentConfig {
  /** The VirtualNode's name (its label on the Node). */
  virtualNodeName: string;
  /** The Node's name (nodeNameOf(vn, spec)). */
  nodeName: string;
  /** The parsed, defaulted spec. */
  spec: Pick<VirtualNodeSpec, 'labels' | 'taints' | 'capacity' | 'heartbeat'>;
  /** Where the API server reaches the node API: spec.internalIP, else the operator's own address. */
  internalIP: string;
  /** Registration (and everything else not in `heartbeatApi`). */
  api: NodeAPI;
  /**
   * The Lease renewals and node status updates; default `api`. The operator passes one over a client
   * without a rate limit (the kubelet's heartbeat client), so a full bucket of other requests cannot let the
   * Lease expire.
   */
  heartbeatApi?: NodeHeartbeatAPI;
  runtime: Pick<Runtime, 'version' | 'status'>;
  recorder: NodeEventRecorder;
  clock: Clock;
  /** Pods run in the host network namespace: the runtime's NetworkReady does not gate Ready. */
  hostNetwork: boolean;
  /** Extra readiness errors, e.g. PLEG health; empty when healthy (used when no runtimeState is given). */
  healthChecks?: () => readonly string[];
  /** The node's runtime state, shared with the kubelet's sync loop; default one built from runtime and healthChecks. */
  runtimeState?: RuntimeState;
  daemonPort?: number;
  kubeletVersion?: string;
  kernelVersion?: string;
  osImage?: string;
  /** Default: read from /proc/self/uid_map (node/userns.ts). */
  runningInUserNamespace?: boolean;
  /** The node's swap in bytes (nodeInfo.swap): the host's for cri nodes, the declared one for sim; default 0. */
  swapCapacityBytes?: number;
  /** The device manager's resources in capacity and allocatable (kubelet devicePluginResourceCapacityFunc). */
  devicePlugins?: () => DevicePluginResources;
  logger?: NodeLogger;
  /**
   * Called after each (re-)registration with the Node as the API server returned it, and whether this
   * registration created it (false: it was there, and was taken over). Errors are logged.
   */
  onRegistered?: (node: Node, created: boolean) => void | Promise<void>;
  /** See NodeStatusLoopConfig.firstStatusAfter (the kubelet's first PLEG relist). */
  firstStatusAfter?: () => Promise<unknown>;
  /** See NodeStatusLoopConfig.pressure (the eviction manager's node conditions). */
  pressure?: () => readonly string[];
  /** See NodeStatusLoopConfig.shutdown (the shutdown manager's readiness errors). */
  shutdown?: () => readonly string[];
  /**
   * Shared by the nodes of a process: each counts as registering until its Node is registered, and the
   * Lease of a Node just created waits while others register (bounded; see StartupHold).
   */
  leaseHold?: StartupHold;
}

export interface NodeAgentHealth {
  nodeName: string;
  registered: boolean;
  nodeUID: string | undefined;
  /** Ready condition as last computed. */
  ready: boolean;
  readyMessage: string | undefined;
  /** Clock time of the last Lease renewal, and whether it is within the lease duration. */
  lastRenewTime: number | undefined;
  leaseFresh: boolean;
  lastStatusReport: number | undefined;
  statusWrites: number;
  lastError: string | undefined;
}

function invalid(what: string, node?: string): KindError {
  return new KindError('InvalidArgument', `node agent: ${what}`, { node });
}

function validate(cfg: NodeAgentConfig): void {
  if (!cfg || typeof cfg !== 'object') throw invalid('missing config');
  const node = typeof cfg.nodeName === 'string' ? cfg.nodeName : undefined;
  if (!cfg.nodeName) throw invalid('nodeName is required');
  if (!cfg.virtualNodeName) throw invalid('virtualNodeName is required', node);
  if (!cfg.spec?.capacity || !cfg.spec.heartbeat) throw invalid('a parsed spec is required', node);
  if (!cfg.internalIP || !isIP(cfg.internalIP))
    throw invalid(`internalIP ${String(cfg.internalIP)} is not an IP`, node);
  const api = cfg.api as Partial<NodeAPI> | undefined;
  for (const m of [
    'getNode',
    'createNode',
    'patchNode',
    'patchNodeStatus',
    'getLease',
    'createLease',
    'updateLease',
  ] as const) {
    if (typeof api?.[m] !== 'function') throw invalid(`api.${m} is required`, node);
  }
  if (cfg.heartbeatApi !== undefined) {
    const hb = cfg.heartbeatApi as Partial<NodeHeartbeatAPI> | null;
    for (const m of ['getNode', 'patchNodeStatus', 'getLease', 'createLease', 'updateLease'] as const) {
      if (typeof hb?.[m] !== 'function') throw invalid(`heartbeatApi.${m} is required`, node);
    }
  }
  if (typeof cfg.runtime?.version !== 'function' || typeof cfg.runtime.status !== 'function') {
    throw invalid('runtime with version() and status() is required', node);
  }
  if (typeof cfg.recorder?.event !== 'function') throw invalid('recorder is required', node);
  if (typeof cfg.clock?.now !== 'function' || typeof cfg.clock.sleep !== 'function')
    throw invalid('clock is required', node);
  if (typeof cfg.hostNetwork !== 'boolean') throw invalid('hostNetwork must be true or false', node);
  const port = cfg.daemonPort ?? DEFAULT_KUBELET_PORT;
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw invalid(`daemonPort ${port} is not a port`, node);
}

/** Capacity quantities as strings (the spec allows integers). */
function capacityOf(spec: NodeAgentConfig['spec']): Record<string, string> {
  return Object.fromEntries(Object.entries(spec.capacity).map(([k, v]) => [k, String(v)]));
}

/**
 * Invariants: at most one registration runs at a time; the lease and status loops start only after the
 * first registration succeeded; after `stop()` no loop starts and no request is issued by this agent.
 */
export class NodeAgent {
  readonly nodeName: string;
  /** Resolves when registered, heartbeating and status-synced once; rejects if stopped before. */
  readonly ready: Promise<void>;
  /** Resolves once stopped. */
  readonly done: Promise<void>;

  private readonly cfg: NodeAgentConfig;
  private readonly logger: NodeLogger;
  private identity: NodeIdentity;
  private spec: NodeAgentConfig['spec'];
  private readonly params: NodeStatusParams;
  private readonly lease: LeaseController;
  private readonly status: NodeStatusLoop;
  /** What the node knows about its runtime; the node status loop refreshes it. */
  readonly runtimeState: RuntimeState;
  private readonly abort = new AbortController();
  private node: Node | undefined;
  private registering: Promise<void> | undefined;
  private started = false;
  private resolveReady!: () => void;
  private rejectReady!: (err: Error) => void;
  private resolveDone!: () => void;

  constructor(cfg: NodeAgentConfig) {
    validate(cfg);
    this.cfg = cfg;
    this.nodeName = cfg.nodeName;
    this.logger = cfg.logger ?? silentLogger;
    this.spec = cfg.spec;
    this.identity = {
      nodeName: cfg.nodeName,
      virtualNodeName: cfg.virtualNodeName,
      labels: cfg.spec.labels ?? {},
      taints: cfg.spec.taints ?? [],
    };
    const capacity = capacityOf(cfg.spec);
    const params: NodeStatusParams = (this.params = {
      nodeName: cfg.nodeName,
      internalIP: cfg.internalIP,
      capacity,
      allocatable: { ...capacity },
      daemonPort: cfg.daemonPort ?? DEFAULT_KUBELET_PORT,
      kubeletVersion: cfg.kubeletVersion ?? KUBELET_VERSION,
      kernelVersion: cfg.kernelVersion ?? os.release(),
      osImage: cfg.osImage ?? 'kubelet-operator virtual node',
      runningInUserNamespace: cfg.runningInUserNamespace ?? runningInUserNamespace(),
      swapCapacityBytes: cfg.swapCapacityBytes ?? 0,
      ...(cfg.devicePlugins ? { devicePlugins: cfg.devicePlugins } : {}),
    });
    const hb = cfg.spec.heartbeat;
    const heartbeatApi = cfg.heartbeatApi ?? cfg.api;
    this.lease = new LeaseController({
      api: heartbeatApi,
      clock: cfg.clock,
      nodeName: cfg.nodeName,
      nodeUID: () => this.nodeUID,
      leaseDurationSeconds: hb.leaseDurationSeconds,
      renewIntervalMs: hb.renewIntervalSeconds * 1000,
      logger: this.logger,
      ...(cfg.leaseHold ? { createAfter: () => cfg.leaseHold?.wait() } : {}),
    });
    this.runtimeState =
      cfg.runtimeState ??
      new RuntimeState({
        nodeName: cfg.nodeName,
        runtime: cfg.runtime,
        clock: cfg.clock,
        timeoutMs: Math.min(hb.statusUpdateFrequencySeconds * 1000, 5_000),
        ...(cfg.healthChecks ? { healthChecks: cfg.healthChecks } : {}),
        logger: this.logger,
      });
    this.status = new NodeStatusLoop({
      api: heartbeatApi,
      clock: cfg.clock,
      runtimeState: this.runtimeState,
      recorder: cfg.recorder,
      params,
      hostNetwork: cfg.hostNetwork,
      updateFrequencyMs: hb.statusUpdateFrequencySeconds * 1000,
      reportFrequencyMs: hb.statusReportFrequencySeconds * 1000,
      onNodeMissing: () => void this.reregister(),
      ...(cfg.firstStatusAfter ? { firstStatusAfter: cfg.firstStatusAfter } : {}),
      ...(cfg.pressure ? { pressure: cfg.pressure } : {}),
      ...(cfg.shutdown ? { shutdown: cfg.shutdown } : {}),
      logger: this.logger,
    });
    this.ready = new Promise((resolve, reject) => {
      this.resolveReady = resolve;
      this.rejectReady = reject;
    });
    this.ready.catch(() => {});
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  /** UID of the registered Node (changes if the Node is deleted and registered again). */
  get nodeUID(): string | undefined {
    return this.node?.metadata.uid;
  }

  /** The Node as last returned by registration. */
  get registeredNode(): Node | undefined {
    return this.node;
  }

  start(): void {
    if (this.started || this.abort.signal.aborted) return;
    this.started = true;
    this.cfg.recorder.event(nodeRef(this.nodeName), 'Normal', 'Starting', 'Starting kubelet.');
    void this.boot();
  }

  /**
   * Takes a changed spec without a restart: labels and taints are reconciled on the Node at once (the
   * registration's adopt path), capacity shows in the next status. A different heartbeat needs new loops:
   * returns false and changes nothing, and the owner builds a new agent.
   */
  async updateSpec(spec: NodeAgentConfig['spec']): Promise<boolean> {
    if (JSON.stringify(spec.heartbeat) !== JSON.stringify(this.spec.heartbeat)) return false;
    this.spec = spec;
    this.identity = { ...this.identity, labels: spec.labels ?? {}, taints: spec.taints ?? [] };
    const capacity = capacityOf(spec);
    this.params.capacity = capacity;
    this.params.allocatable = { ...capacity };
    if (this.started && !this.abort.signal.aborted) {
      await this.reregister();
      await this.status.syncOnce();
    }
    return true;
  }

  /**
   * Computes and writes the node status now, between the loop's rounds (kubelet syncNodeStatus, which the
   * shutdown manager calls when a shutdown starts). Never throws; a no-op until the Node is registered and
   * after stop.
   */
  async syncStatus(): Promise<void> {
    if (!this.started || this.abort.signal.aborted || !this.node) return;
    await this.status.syncOnce();
  }

  /** Stops the loops; the Node and Lease stay (see deleteNode). */
  async stop(): Promise<void> {
    if (!this.abort.signal.aborted) {
      this.abort.abort();
      this.rejectReady(new KindError('Unavailable', 'node agent stopped', { node: this.nodeName }));
      await Promise.allSettled([this.registering, this.lease.stop(), this.status.stop()]);
      this.resolveDone();
    }
    return this.done;
  }

  /**
   * The Node's allocatable as last computed (the Node as read, with this node's own resources set): admission
   * reads extended resources others advertised from it, as the kubelet's admission reads its Node.
   */
  allocatable(): Readonly<Record<string, string | number>> | undefined {
    return this.status.lastComputed?.allocatable;
  }

  /** The Node's capacity as last computed; the summary provider reads its huge pages from it. */
  capacity(): Readonly<Record<string, string | number>> | undefined {
    return this.status.lastComputed?.capacity;
  }

  health(): NodeAgentHealth {
    const now = this.cfg.clock.now();
    const last = this.lease.lastRenewTime;
    const ready = this.status.readyCondition();
    return {
      nodeName: this.nodeName,
      registered: this.node !== undefined,
      nodeUID: this.nodeUID,
      ready: ready?.status === 'True',
      readyMessage: ready?.message,
      lastRenewTime: last,
      leaseFresh: last !== undefined && now - last < this.spec.heartbeat.leaseDurationSeconds * 1000,
      lastStatusReport: this.status.lastReportTime,
      statusWrites: this.status.writes,
      lastError: this.status.lastError,
    };
  }

  private async boot(): Promise<void> {
    try {
      const registration = this.reregister();
      this.cfg.leaseHold?.track(registration);
      await registration;
      if (this.abort.signal.aborted || !this.node) return;
      this.lease.start();
      this.status.start();
      await Promise.all([this.lease.ready, this.status.ready]);
      this.resolveReady();
    } catch (err) {
      if (!this.abort.signal.aborted) {
        this.logger.warn('node agent failed to start', { node: this.nodeName, error: errorMessage(err) });
        // `ready` settles either way: whoever waits for it (the VirtualNode's start) reports why.
        this.rejectReady(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  /** Registers the Node (single-flight); runs the onRegistered hook. */
  private reregister(): Promise<void> {
    if (this.abort.signal.aborted) return Promise.resolve();
    this.registering ??= (async () => {
      try {
        const status = await this.status.initialStatus();
        let created = false;
        const node = await registerNode(this.cfg.api, buildNode(this.identity, status), this.identity, {
          clock: this.cfg.clock,
          signal: this.abort.signal,
          logger: this.logger,
          onCreated: () => {
            created = true;
            this.lease.expectAbsent();
          },
        });
        this.node = node;
        this.status.seed(node, created);
        this.logger.info('node registered', { node: this.nodeName, uid: node.metadata.uid });
        try {
          await this.cfg.onRegistered?.(node, created);
        } catch (err) {
          this.logger.warn('onRegistered hook failed', { node: this.nodeName, error: errorMessage(err) });
        }
      } catch (err) {
        if (!this.abort.signal.aborted) throw err;
      } finally {
        this.registering = undefined;
      }
    })();
    return this.registering;
  }
}
