/**
 * The operator: watches VirtualNodes and the pods bound to nodes, and keeps one ManagedNode (NodeAgent +
 * Kubelet + Runtime) per VirtualNode.
 *
 * VirtualNode controller, level-triggered by key through a work queue:
 * - a new or changed VirtualNode gets the drain finalizer, then its spec is validated; an invalid spec
 *   sets Ready=False/InvalidSpec naming the field and starts nothing; a valid one starts (or updates) its
 *   ManagedNode;
 * - a VirtualNode being deleted is drained (its pods deleted and waited for), its Node and Lease removed,
 *   then the finalizer is dropped;
 * - status (conditions with observedGeneration, node name, pod counts, runtime, heartbeat) is written to
 *   the status subresource only when it changed.
 * Pod events are routed by spec.nodeName to the ManagedNode of that node. One bad object never stops the
 * loop: its sync fails, is logged and retried with back-off.
 */
import type { Pod } from './api/core.js';
import {
  FINALIZER,
  GROUP,
  PLURAL,
  VERSION,
  nodeNameOf,
  parseVirtualNodeSpec,
  type VirtualNode,
  type VirtualNodeCondition,
  type VirtualNodeSpec,
  type VirtualNodeStatus,
} from './api/virtualnode.js';
import { PatchTypes, type KubeClient } from './kube/client.js';
import { Informer, objectKey, restListWatcher, stripManagedFields } from './kube/informer.js';
import type { Service } from './api/service.js';
import { WorkQueue, runWorkers } from './kube/workqueue.js';
import { PodsByNodeIndex } from './kubelet/podmanager.js';
import { allocatePodCIDR } from './node/podcidr.js';
import { canonicalJSON } from './util/canonical.js';
import type { Clock } from './util/clock.js';
import { errorMessage, isNotFound } from './util/errors.js';
import type { Logger } from './util/logger.js';

/** What the controller needs from one served node. */
export interface ManagedNode {
  readonly nodeName: string;
  /** Starts the node; resolves once the Node is registered. May be called once. */
  start(): Promise<void>;
  /** Applies a changed spec that does not need a restart (labels, taints, capacity). */
  update(spec: VirtualNodeSpec): Promise<void>;
  /** Deletes this node's pods; resolves true once none is left. Safe to call repeatedly. */
  drain(): Promise<boolean>;
  /** Deletes the Node and its Lease. */
  remove(): Promise<void>;
  /** Stops every loop without touching API objects (process shutdown or before remove). */
  stop(): Promise<void>;
  /** Pod events for pods bound to this node. */
  podAdded(pod: Pod): void;
  podUpdated(oldPod: Pod, pod: Pod): void;
  podDeleted(pod: Pod): void;
  /** Current health for the VirtualNode status. */
  observe(): ManagedNodeObservation;
}

export interface ManagedNodeObservation {
  registered: boolean;
  /** Problems that make the node NotReady (empty = Ready). */
  problems: string[];
  runtimeReady: boolean;
  runtimeMessage?: string;
  runtime?: { name: string; version: string };
  internalIP?: string;
  lastHeartbeatTime?: string;
  pods: { total: number; running: number; pending: number };
}

export interface ManagedNodeFactory {
  /** `pods` is the operator's shared informer of bound pods, indexed by node name (PodsByNodeIndex). */
  create(
    vn: VirtualNode,
    spec: VirtualNodeSpec,
    nodeName: string,
    pods: Informer<Pod>,
    services?: (namespace: string) => readonly Service[],
  ): ManagedNode;
  /** Whether a spec change needs a fresh ManagedNode (e.g. another runtime). */
  needsRestart(oldSpec: VirtualNodeSpec, newSpec: VirtualNodeSpec): boolean;
}

export interface OperatorOptions {
  client: KubeClient;
  factory: ManagedNodeFactory;
  clock: Clock;
  logger: Logger;
  workers?: number;
  /** Label selector limiting the VirtualNodes this process serves. */
  virtualNodeSelector?: string;
  /** How often each VirtualNode's status is re-observed (default 10 s). */
  statusPeriodMs?: number;
  /** Delay between drain checks while a VirtualNode is being deleted (default 1 s). */
  drainRecheckMs?: number;
}

const VN_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;

const ServicesByNamespaceIndex = 'namespace';

interface Served {
  node: ManagedNode;
  spec: VirtualNodeSpec;
  started: Promise<void>;
  startError?: string;
}

export class Operator {
  readonly vnInformer: Informer<VirtualNode>;
  readonly podInformer: Informer<Pod>;
  /** Every Service, by namespace: the service link variables of pods (as the kubelet's service informer). */
  readonly serviceInformer: Informer<Service>;
  private readonly queue: WorkQueue<string>;
  private readonly served = new Map<string, Served>();
  /** Node name -> VirtualNode name, for routing pods. */
  private readonly byNode = new Map<string, string>();
  /** VirtualNode name -> pod CIDR this process defaulted for it (see withPodCIDR). */
  private readonly podCIDRs = new Map<string, string>();
  private workersDone: Promise<void> | undefined;
  private readonly statusPeriodMs: number;
  private readonly drainRecheckMs: number;
  private stopping = false;

  constructor(private readonly opts: OperatorOptions) {
    this.statusPeriodMs = opts.statusPeriodMs ?? 10_000;
    this.drainRecheckMs = opts.drainRecheckMs ?? 1000;
    this.queue = new WorkQueue<string>(opts.clock, { baseDelayMs: 500, maxDelayMs: 60_000 });
    const log = opts.logger;
    this.vnInformer = new Informer<VirtualNode>(
      restListWatcher(
        opts.client,
        VN_PATH,
        opts.virtualNodeSelector ? { labelSelector: opts.virtualNodeSelector } : {},
      ),
      { clock: opts.clock, name: 'virtualnodes', logger: log, transform: stripManagedFields },
    );
    // One watch for every bound pod; routed to nodes by spec.nodeName.
    this.podInformer = new Informer<Pod>(
      restListWatcher(opts.client, '/api/v1/pods', { fieldSelector: 'spec.nodeName!=' }),
      { clock: opts.clock, name: 'pods', logger: log, transform: stripManagedFields },
    );
    this.podInformer.addIndex(PodsByNodeIndex, (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    this.serviceInformer = new Informer<Service>(restListWatcher(opts.client, '/api/v1/services', {}), {
      clock: opts.clock,
      name: 'services',
      logger: log,
      transform: stripManagedFields,
    });
    this.serviceInformer.addIndex(ServicesByNamespaceIndex, (svc) => [svc.metadata.namespace ?? '']);
    this.vnInformer.addHandlers({
      add: (vn) => this.queue.add(objectKey(vn)),
      update: (_o, vn) => this.queue.add(objectKey(vn)),
      delete: (vn) => this.queue.add(objectKey(vn)),
    });
    this.podInformer.addHandlers({
      add: (p) => this.routePod(p)?.podAdded(p),
      update: (o, p) => this.routePod(p)?.podUpdated(o, p),
      delete: (p) => this.routePod(p)?.podDeleted(p),
    });
  }

  private routePod(p: Pod): ManagedNode | undefined {
    const vnName = p.spec?.nodeName ? this.byNode.get(p.spec.nodeName) : undefined;
    return vnName ? this.served.get(vnName)?.node : undefined;
  }

  /** Pods of a node from the shared cache (for ManagedNodes). */
  podsOfNode(nodeName: string): Pod[] {
    return this.podInformer.byIndex(PodsByNodeIndex, nodeName);
  }

  async start(): Promise<void> {
    this.podInformer.start();
    this.vnInformer.start();
    this.serviceInformer.start();
    await Promise.all([
      this.podInformer.waitForSync(),
      this.vnInformer.waitForSync(),
      this.serviceInformer.waitForSync(),
    ]);
    this.workersDone = runWorkers(
      this.queue,
      this.opts.workers ?? 4,
      (key) => this.sync(key),
      (key, err) =>
        this.opts.logger.warn('virtual node sync failed; will retry', {
          virtualNode: key,
          error: errorMessage(err),
        }),
    );
  }

  /** Ready once both informers synced. */
  ready(): string | undefined {
    if (!this.vnInformer.hasSynced()) return 'virtual node informer not synced';
    if (!this.podInformer.hasSynced()) return 'pod informer not synced';
    return undefined;
  }

  servedNodes(): string[] {
    return [...this.served.keys()];
  }

  /** Stops loops and every ManagedNode; Nodes and pods stay as they are (another process takes over). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.queue.shutDown();
    await this.workersDone;
    await Promise.all([this.vnInformer.stop(), this.podInformer.stop(), this.serviceInformer.stop()]);
    await Promise.all([...this.served.values()].map((s) => s.node.stop().catch(() => undefined)));
    this.served.clear();
    this.byNode.clear();
  }

  /** One reconcile of one VirtualNode, by name. Throws to be retried with back-off. */
  async sync(name: string): Promise<void> {
    if (this.stopping) return;
    const vn = this.vnInformer.get(name);
    if (!vn) {
      // Gone without our finalizer (or after it): just stop serving it.
      await this.forget(name);
      return;
    }
    if (vn.metadata.deletionTimestamp) {
      await this.finalize(vn);
      return;
    }
    if (!(vn.metadata.finalizers ?? []).includes(FINALIZER)) {
      await this.patchFinalizers(vn, [...(vn.metadata.finalizers ?? []), FINALIZER]);
      return; // the update event brings us back with the finalizer in place
    }
    const parsed = parseVirtualNodeSpec(vn.spec);
    if (!parsed.ok) {
      await this.forget(name);
      await this.writeStatus(vn, {
        ready: { status: 'False', reason: 'InvalidSpec', message: parsed.message },
        runtimeReady: { status: 'Unknown', reason: 'InvalidSpec', message: 'not started' },
      });
      return;
    }
    let spec: VirtualNodeSpec;
    try {
      spec = this.withPodCIDR(vn, parsed.spec);
    } catch (err) {
      await this.forget(name);
      await this.writeStatus(vn, {
        ready: { status: 'False', reason: 'PodCIDRUnavailable', message: errorMessage(err) },
        runtimeReady: { status: 'Unknown', reason: 'PodCIDRUnavailable', message: 'not started' },
      });
      return;
    }
    let served = this.served.get(name);
    if (served && this.opts.factory.needsRestart(served.spec, spec)) {
      await this.forget(name);
      served = undefined;
    }
    if (!served) {
      served = this.serve(vn, spec);
    } else if (canonicalJSON(served.spec) !== canonicalJSON(spec)) {
      served.spec = spec;
      await served.node.update(spec);
    }
    await this.writeObservedStatus(vn, served);
    // Level-triggered status refresh.
    this.queue.addAfter(name, this.statusPeriodMs);
  }

  /**
   * A simulated node without spec podCIDR gets its own block (kept in status.podCIDR across restarts), so
   * two nodes never hand out the same pod IP. Blocks named by any other VirtualNode, in spec or status, or
   * reserved by this process are avoided.
   */
  private withPodCIDR(vn: VirtualNode, spec: VirtualNodeSpec): VirtualNodeSpec {
    const rt = spec.runtime;
    if (rt.type !== 'sim' || rt.sim.podCIDR) return spec;
    const name = vn.metadata.name ?? '';
    let cidr = this.podCIDRs.get(name) ?? vn.status?.podCIDR;
    if (!cidr) {
      const taken: string[] = [];
      for (const other of this.vnInformer.list()) {
        if (other.metadata.name === name) continue;
        const raw = (other.spec as { runtime?: { sim?: { podCIDR?: unknown } } } | undefined)?.runtime?.sim
          ?.podCIDR;
        if (typeof raw === 'string') taken.push(raw);
        if (other.status?.podCIDR) taken.push(other.status.podCIDR);
      }
      for (const [other, c] of this.podCIDRs) if (other !== name) taken.push(c);
      cidr = allocatePodCIDR(name, spec.capacity.pods, taken);
    }
    this.podCIDRs.set(name, cidr);
    return { ...spec, runtime: { ...rt, sim: { ...rt.sim, podCIDR: cidr } } };
  }

  /** Creates and starts the ManagedNode of a VirtualNode, and hands it the pods already bound to it. */
  private serve(vn: VirtualNode, spec: VirtualNodeSpec): Served {
    const name = vn.metadata.name ?? '';
    const nodeName = nodeNameOf(vn, spec);
    const node = this.opts.factory.create(vn, spec, nodeName, this.podInformer, (ns) =>
      this.serviceInformer.byIndex(ServicesByNamespaceIndex, ns),
    );
    const entry: Served = { node, spec, started: Promise.resolve() };
    entry.started = node.start().catch((err: unknown) => {
      entry.startError = errorMessage(err);
      this.opts.logger.warn('virtual node failed to start', { virtualNode: name, error: entry.startError });
    });
    this.served.set(name, entry);
    this.byNode.set(nodeName, name);
    // Hand over pods that are already bound to the node (restart safety).
    for (const p of this.podsOfNode(nodeName)) node.podAdded(p);
    return entry;
  }

  private async finalize(vn: VirtualNode): Promise<void> {
    const name = vn.metadata.name ?? '';
    if (!(vn.metadata.finalizers ?? []).includes(FINALIZER)) {
      await this.forget(name);
      return;
    }
    let served = this.served.get(name);
    if (!served) {
      // Deleted while no process served it (or before this one got to it): serve it now, so that a kubelet
      // terminates its pods, then drain and remove it like any other. Only an invalid spec, which never
      // started anything, goes without.
      const parsed = parseVirtualNodeSpec(vn.spec);
      if (parsed.ok) served = this.serve(vn, parsed.spec);
    }
    if (served) {
      await served.started;
      const empty = await served.node.drain();
      if (!empty) {
        await this.writeStatus(vn, {
          ready: { status: 'False', reason: 'Draining', message: 'deleting the pods bound to this node' },
        });
        this.queue.addAfter(name, this.drainRecheckMs);
        return;
      }
      await served.node.stop();
      await served.node.remove();
      this.served.delete(name);
      this.byNode.delete(served.node.nodeName);
    }
    this.podCIDRs.delete(name);
    await this.patchFinalizers(
      vn,
      (vn.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
    );
  }

  private async forget(name: string): Promise<void> {
    const served = this.served.get(name);
    if (!served) return;
    this.served.delete(name);
    this.byNode.delete(served.node.nodeName);
    await served.node.stop();
  }

  private async patchFinalizers(vn: VirtualNode, finalizers: string[]): Promise<void> {
    try {
      await this.opts.client.request({
        method: 'PATCH',
        path: `${VN_PATH}/${vn.metadata.name}`,
        contentType: PatchTypes.merge,
        body: { metadata: { finalizers, resourceVersion: vn.metadata.resourceVersion } },
      });
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }

  private async writeObservedStatus(vn: VirtualNode, served: Served): Promise<void> {
    const o = served.node.observe();
    const ready =
      served.startError !== undefined
        ? { status: 'False' as const, reason: 'StartFailed', message: served.startError }
        : !o.registered
          ? { status: 'False' as const, reason: 'Registering', message: 'registering the Node' }
          : o.problems.length > 0
            ? { status: 'False' as const, reason: 'NodeNotReady', message: o.problems.join(', ') }
            : { status: 'True' as const, reason: 'NodeReady', message: 'the Node is registered and ready' };
    const runtimeReady = o.runtimeReady
      ? {
          status: 'True' as const,
          reason: 'RuntimeReady',
          message: `${o.runtime?.name ?? ''} ${o.runtime?.version ?? ''}`.trim(),
        }
      : {
          status: 'False' as const,
          reason: 'RuntimeUnavailable',
          message: o.runtimeMessage ?? 'runtime not ready',
        };
    await this.writeStatus(vn, {
      ready,
      runtimeReady,
      extra: {
        nodeName: served.node.nodeName,
        internalIP: o.internalIP,
        lastHeartbeatTime: o.lastHeartbeatTime,
        runtime: o.runtime,
        pods: o.pods,
        ...(served.spec.runtime.type === 'sim' && served.spec.runtime.sim.podCIDR
          ? { podCIDR: served.spec.runtime.sim.podCIDR }
          : {}),
      },
    });
  }

  /** Writes status via the status subresource when it differs from what is stored. */
  private async writeStatus(
    vn: VirtualNode,
    s: {
      ready: Omit<VirtualNodeCondition, 'type'>;
      runtimeReady?: Omit<VirtualNodeCondition, 'type'>;
      extra?: Omit<VirtualNodeStatus, 'conditions' | 'observedGeneration'>;
    },
  ): Promise<void> {
    const now = new Date(this.opts.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const generation = vn.metadata.generation;
    const old = vn.status?.conditions ?? [];
    const cond = (type: string, c: Omit<VirtualNodeCondition, 'type'>): VirtualNodeCondition => {
      const prev = old.find((x) => x.type === type);
      return {
        type,
        status: c.status,
        reason: c.reason,
        message: c.message,
        lastTransitionTime: prev && prev.status === c.status ? (prev.lastTransitionTime ?? now) : now,
        observedGeneration: generation,
      };
    };
    const conditions = [cond('Ready', s.ready)];
    if (s.runtimeReady) conditions.push(cond('RuntimeReady', s.runtimeReady));
    const status: VirtualNodeStatus = {
      ...(vn.status ?? {}),
      ...(s.extra ?? {}),
      observedGeneration: generation,
      conditions,
    };
    // Heartbeat times move every renewal; they alone do not justify a write more often than the period.
    const comparable = (x: VirtualNodeStatus | undefined) =>
      canonicalJSON({ ...(x ?? {}), lastHeartbeatTime: undefined });
    if (comparable(status) === comparable(vn.status)) return;
    try {
      await this.opts.client.request({
        method: 'PATCH',
        path: `${VN_PATH}/${vn.metadata.name}/status`,
        contentType: PatchTypes.merge,
        body: { status },
      });
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }
}
