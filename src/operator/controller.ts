/**
 * The VirtualNode controller: watches VirtualNodes and keeps one ManagedNode (NodeAgent + Kubelet + Runtime)
 * per VirtualNode, with a watch of the pods bound to its node. Level-triggered by key through a work queue:
 * - a new or changed VirtualNode gets the drain finalizer, then its spec is validated; an invalid spec
 *   sets Ready=False/InvalidSpec naming the field and starts nothing; a valid one starts (or updates) its
 *   ManagedNode;
 * - a VirtualNode being deleted is shut down (the kubelet's graceful node shutdown, when configured), drained
 *   (its pods deleted and waited for), its Node and Lease removed, then the finalizer is dropped;
 * - its status is re-observed every status period and written by the status writer (status.ts).
 * Each served node has its own pod informer (field selector spec.nodeName, as a kubelet's), whose events go
 * to that node alone. One bad object never stops the loop: its sync fails, is logged and retried with
 * back-off.
 */
import type { Pod } from '../api/core.js';
import type { Node } from '../api/node.js';
import type { PodCertificateRequest } from '../api/podcertificaterequest.js';
import type { Service } from '../api/service.js';
import {
  FINALIZER,
  nodeNameOf,
  parseVirtualNodeSpec,
  type ParsedSpec,
  type VirtualNode,
  type VirtualNodeSpec,
} from '../api/virtualnode.js';
import type { KubeClient } from '../kube/client.js';
import { Informer, objectKey, stripManagedFields } from '../kube/informer.js';
import { WorkQueue, runWorkers } from '../kube/workqueue.js';
import { PodsByNodeIndex } from '../kubelet/shell/podmanager.js';
import { hasPodCertificateProjections } from '../kubelet/podcertificate/projection.js';
import { canonicalJSON } from '../util/canonical.js';
import { memoByIdentity } from '../util/memo.js';
import { needsSync } from './predicates.js';
import type { Clock } from '../util/clock.js';
import { KindError, errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';
import { restOperatorAPI, type OperatorAPI, type VirtualNodeWriter } from './api.js';
import type { ManagedNode, ManagedNodeFactory } from './managednode.js';
import { PodCIDRDefaulter } from './podcidr.js';
import { claimedNodeName, nodeNameHolder, nodeNameProblem } from './nodeclaims.js';
import { drainingStatus, notStartedStatus, observedStatus, VirtualNodeStatusWriter } from './status.js';
import { internPod } from './podintern.js';
import { processInterner } from '../util/intern.js';
import type { ShardGate } from './shard/coordinator.js';
import type { ShardNode } from './shard/plan.js';

export interface OperatorOptions {
  /** The API server: every seam of `api` is built over it unless `api` is given. */
  client?: KubeClient;
  /** The watches and writes (default: REST over `client`); unit tests pass in-memory fakes. */
  api?: OperatorAPI;
  factory: ManagedNodeFactory;
  clock: Clock;
  logger: Logger;
  workers?: number;
  /** Label selector limiting the VirtualNodes this process serves (applied by the REST api only). */
  virtualNodeSelector?: string;
  /** How often each VirtualNode's status is re-observed (default 10 s). */
  statusPeriodMs?: number;
  /** Delay between drain checks while a VirtualNode is being deleted (default 1 s). */
  drainRecheckMs?: number;
  /**
   * Shares VirtualNodes with other replicas (shard/coordinator.ts): only those it `owns` are served, and
   * finalized. Absent: this process serves every VirtualNode it sees.
   */
  shard?: ShardGate;
}

const ServicesByNamespaceIndex = 'namespace';
const ClaimedNodeNameIndex = 'claimedNodeName';

interface Served {
  node: ManagedNode;
  /** The pods bound to the node; started with the node, stopped before it. */
  pods: Informer<Pod>;
  /**
   * The node's PodCertificateRequests; started with its first pod that has a podCertificate source (their
   * only reader, the podcertificate manager, waits for it), stopped with `pods`.
   */
  requestInformer: Informer<PodCertificateRequest>;
  spec: VirtualNodeSpec;
  /**
   * The VirtualNode's own spec object `spec` was parsed from (the informer keeps one object until it
   * changes): the same object, with the same pod CIDR defaulted, gives the same spec, so a status round
   * skips the comparisons.
   */
  source: unknown;
  started: Promise<void>;
  /** `started` has settled (a worker never waits on a start that may take long). */
  settled: boolean;
  /** When the start began (clock ms). */
  since: number;
  startError?: string;
}

/** The pod CIDR of a simulated runtime's spec (the one part `withPodCIDR` fills in). */
function simPodCIDR(spec: VirtualNodeSpec): string | undefined {
  return spec.runtime.type === 'sim' ? spec.runtime.sim.podCIDR : undefined;
}

/**
 * How long a starting node's first VirtualNode status waits for the start to settle. A start usually takes
 * well under a second (registration and the first node status); writing `Registering` before it would be one
 * more write per node, and a worker waiting on it, while a hundred nodes start at once. A start that takes
 * longer gets its `Registering` status when this has passed.
 */
const FIRST_STATUS_GRACE_MS = 2_000;

/**
 * Invariants: at most one ManagedNode per VirtualNode name and per node name; `byNode` maps exactly the
 * node names of `served`; a ManagedNode is stopped before it leaves `served`; after `stop()` no sync runs.
 */
export class Operator {
  readonly vnInformer: Informer<VirtualNode>;
  /** Every Service, by namespace: the service link variables of pods (as the kubelet's service informer). */
  readonly serviceInformer: Informer<Service>;
  /** The Nodes of VirtualNodes, by name: each served node reads its own, as a kubelet its node informer. */
  readonly nodeInformer: Informer<Node>;
  private readonly queue: WorkQueue<string>;
  private readonly served = new Map<string, Served>();
  /**
   * Each VirtualNode spec object's parse, kept while the object lives: the informer hands out one object
   * until the VirtualNode changes, and every status round (and every claim check) would parse it again.
   */
  private readonly parses = memoByIdentity((raw: object) => parseVirtualNodeSpec(raw));
  /** Node name -> VirtualNode name. */
  private readonly byNode = new Map<string, string>();
  /**
   * UID, by name, of each VirtualNode this process finalized whose going the cache has not shown yet. A sync
   * in that window reads the copy from before (deleting, finalizer on) and would serve it again to drain it:
   * its Node, just removed, would be registered anew and left behind.
   */
  private readonly finalized = new Map<string, string>();
  private readonly podCIDRs = new PodCIDRDefaulter();
  private readonly writer: VirtualNodeWriter;
  private readonly api: OperatorAPI;
  private readonly status: VirtualNodeStatusWriter;
  private workersDone: Promise<void> | undefined;
  private readonly statusPeriodMs: number;
  private readonly drainRecheckMs: number;
  private stopping = false;

  /** Throws KindError('InvalidArgument') when neither `client` nor `api` is given. */
  constructor(private readonly opts: OperatorOptions) {
    const api =
      opts.api ?? (opts.client ? restOperatorAPI(opts.client, opts.virtualNodeSelector) : undefined);
    if (!api) throw new KindError('InvalidArgument', 'operator: a client or an api is required');
    this.writer = api.writer;
    this.api = api;
    this.status = new VirtualNodeStatusWriter(api.writer, opts.clock);
    this.statusPeriodMs = opts.statusPeriodMs ?? 10_000;
    this.drainRecheckMs = opts.drainRecheckMs ?? 1000;
    this.queue = new WorkQueue<string>(opts.clock, { baseDelayMs: 500, maxDelayMs: 60_000 });
    const common = { clock: opts.clock, logger: opts.logger, transform: stripManagedFields };
    this.vnInformer = new Informer<VirtualNode>(api.virtualNodes, { ...common, name: 'virtualnodes' });
    this.serviceInformer = new Informer<Service>(api.services, { ...common, name: 'services' });
    this.serviceInformer.addIndex(ServicesByNamespaceIndex, (svc) => [svc.metadata.namespace ?? '']);
    this.nodeInformer = new Informer<Node>(api.virtualNodeNodes, { ...common, name: 'nodes' });
    // Which VirtualNodes claim a Node name, and the pod CIDRs they hold: a sync reads the few that may
    // conflict with its own, not every VirtualNode (at 1,000 nodes that was a million reads per round).
    this.vnInformer.addIndex(ClaimedNodeNameIndex, (vn) => [claimedNodeName(vn)]);
    this.vnInformer.addHandlers({
      add: (vn) => {
        this.podCIDRs.track(vn);
        this.queue.add(objectKey(vn));
      },
      update: (old, vn) => {
        this.podCIDRs.track(vn);
        if (needsSync(old, vn)) this.queue.add(objectKey(vn));
      },
      delete: (vn) => {
        this.podCIDRs.untrack(vn.metadata.name ?? '');
        this.queue.add(objectKey(vn));
      },
    });
  }

  /**
   * The informer of one node's pods (not started). Pods are interned across every node's informer
   * (podintern.ts), so replicas on different nodes still share what they have in common.
   */
  private podInformerFor(nodeName: string): Informer<Pod> {
    const pods = new Informer<Pod>(this.api.podsOfNode(nodeName), {
      clock: this.opts.clock,
      logger: this.opts.logger,
      transform: stripManagedFields,
      name: `pods of ${nodeName}`,
      compact: (p, prev) => internPod(p as Pod, prev as Pod | undefined, processInterner),
    });
    pods.addIndex(PodsByNodeIndex, (p) => (p.spec?.nodeName ? [p.spec.nodeName] : []));
    return pods;
  }

  /** The pods of a served node, from its informer (empty for a node not served here). */
  podsOfNode(nodeName: string): Pod[] {
    const vnName = this.byNode.get(nodeName);
    return (vnName ? this.served.get(vnName)?.pods.list() : undefined) ?? [];
  }

  async start(): Promise<void> {
    this.vnInformer.start();
    this.serviceInformer.start();
    // Not waited for: before it has a node's Node, that node's admission reads its last status round.
    this.nodeInformer.start();
    await Promise.all([this.vnInformer.waitForSync(), this.serviceInformer.waitForSync()]);
    await this.opts.shard?.start(
      () => this.shardNodes(),
      (name) => this.queue.add(name),
    );
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

  /** Ready once the VirtualNode informer synced (a node's pods are its own start's business). */
  ready(): string | undefined {
    if (!this.vnInformer.hasSynced()) return 'virtual node informer not synced';
    return undefined;
  }

  servedNodes(): string[] {
    return [...this.served.keys()];
  }

  /** Every VirtualNode, with the host a cri one is pinned to (the shard plan's input). */
  private shardNodes(): ShardNode[] {
    return this.vnInformer.list().map((vn) => {
      const rt = (vn.spec as { runtime?: { type?: unknown; cri?: { host?: unknown } } } | undefined)?.runtime;
      const host = rt?.type === 'cri' && typeof rt.cri?.host === 'string' ? rt.cri.host : '';
      return host ? { name: vn.metadata.name ?? '', host } : { name: vn.metadata.name ?? '' };
    });
  }

  /** Stops loops and every ManagedNode; Nodes and pods stay as they are (another process takes over). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.queue.shutDown();
    await this.workersDone;
    await Promise.all([this.vnInformer.stop(), this.serviceInformer.stop(), this.nodeInformer.stop()]);
    await Promise.all([...this.served.values()].map((s) => stopServed(s).catch(() => undefined)));
    this.served.clear();
    this.finalized.clear();
    this.byNode.clear();
    // Only now, with every node stopped, may another replica take them.
    await this.opts.shard?.stop();
  }

  /** One reconcile of one VirtualNode, by name. Throws to be retried with back-off. */
  async sync(name: string): Promise<void> {
    if (this.stopping) return;
    const shard = this.opts.shard;
    if (shard && !shard.owns(name)) {
      // Served by another replica (or by none yet): stop it here, if it ran here, before its Lease goes.
      await this.forget(name);
      shard.stopped(name);
      return;
    }
    let vn = this.vnInformer.get(name);
    if (!vn) {
      // Gone without our finalizer (or after it): just stop serving it.
      this.finalized.delete(name);
      await this.forget(name);
      return;
    }
    const finalizedUID = this.finalized.get(name);
    if (finalizedUID !== undefined) {
      if (finalizedUID === vn.metadata.uid) return;
      // A new object under the same name.
      this.finalized.delete(name);
    }
    if (vn.metadata.deletionTimestamp) {
      await this.finalize(vn);
      return;
    }
    if (!(vn.metadata.finalizers ?? []).includes(FINALIZER)) {
      const finalizers = [...(vn.metadata.finalizers ?? []), FINALIZER];
      if (!(await this.patchFinalizers(vn, finalizers))) return;
      // Serve it in this same sync: the finalizer is in place (the update event it causes finds the
      // node served and only refreshes the status).
      vn = { ...vn, metadata: { ...vn.metadata, finalizers } };
    }
    const servable = this.servableSpec(vn);
    if (!servable.ok) {
      await this.forget(name);
      await this.status.write(vn, notStartedStatus(servable.reason, servable.message));
      // Level-triggered: the other claim may go away (a conflict, a pod CIDR), or the spec change.
      if (servable.recheck) this.queue.addAfter(name, this.statusPeriodMs);
      return;
    }
    const spec = servable.spec;
    let served = this.served.get(name);
    const unchanged =
      served !== undefined && served.source === vn.spec && simPodCIDR(served.spec) === simPodCIDR(spec);
    if (served && !unchanged && this.opts.factory.needsRestart(served.spec, spec)) {
      await this.forget(name);
      served = undefined;
    }
    if (!served) {
      const started = this.serve(vn, spec);
      if (!started.ok) {
        await this.status.write(vn, notStartedStatus('StartFailed', started.message));
        this.queue.addAfter(name, this.statusPeriodMs);
        return;
      }
      served = started.served;
    } else if (!unchanged) {
      served.source = vn.spec;
      if (canonicalJSON(served.spec) !== canonicalJSON(spec)) {
        served.spec = spec;
        await served.node.update(spec);
      }
    }
    if (!served.settled) {
      const waited = this.opts.clock.now() - served.since;
      if (waited < FIRST_STATUS_GRACE_MS) {
        // Its start settling queues this VirtualNode again (see serve); this is the fallback.
        this.queue.addAfter(name, FIRST_STATUS_GRACE_MS - waited);
        return;
      }
    }
    const rt = served.spec.runtime;
    await this.status.write(
      vn,
      observedStatus(
        served.node.nodeName,
        served.node.observe(),
        served.startError,
        rt.type === 'sim' ? rt.sim.podCIDR : undefined,
      ),
    );
    // Level-triggered status refresh.
    this.queue.addAfter(name, this.statusPeriodMs);
  }

  /** `vn.spec` parsed, once per spec object (see `parses`). */
  private parsed(vn: VirtualNode): ParsedSpec {
    const raw = vn.spec as unknown;
    return raw !== null && typeof raw === 'object' ? this.parses(raw) : parseVirtualNodeSpec(raw);
  }

  /**
   * The spec a VirtualNode is served with (parsed, its pod CIDR defaulted), or why it cannot serve its Node:
   * an invalid spec, a name no Node can register, a Node another (older) VirtualNode serves, no pod CIDR.
   * `recheck`: the reason may go away without a change to this VirtualNode.
   */
  private servableSpec(
    vn: VirtualNode,
  ): { ok: true; spec: VirtualNodeSpec } | { ok: false; reason: string; message: string; recheck: boolean } {
    const parsed = this.parsed(vn);
    if (!parsed.ok) return { ok: false, reason: 'InvalidSpec', message: parsed.message, recheck: false };
    const nodeName = nodeNameOf(vn, parsed.spec);
    const problem = nodeNameProblem(nodeName);
    if (problem) return { ok: false, reason: 'InvalidSpec', message: problem, recheck: false };
    const claimants = this.vnInformer.byIndex(ClaimedNodeNameIndex, nodeName);
    const holder = nodeNameHolder(vn, parsed.spec, claimants, (o) => this.parsed(o).ok);
    if (holder) {
      return {
        ok: false,
        reason: 'NodeNameConflict',
        message: `Node ${nodeName} is served by VirtualNode ${holder.metadata.name ?? ''}, which claimed it first`,
        recheck: true,
      };
    }
    try {
      return { ok: true, spec: this.podCIDRs.withPodCIDR(vn, parsed.spec) };
    } catch (err) {
      return { ok: false, reason: 'PodCIDRUnavailable', message: errorMessage(err), recheck: true };
    }
  }

  /**
   * Creates and starts the ManagedNode of a VirtualNode, and, once its start settles, the informer of the
   * pods bound to its node (its first list hands over the pods already there: restart safety). A node that
   * cannot even be built (a runtime that rejects the spec) is reported, not served.
   */
  private serve(
    vn: VirtualNode,
    spec: VirtualNodeSpec,
  ): { ok: true; served: Served } | { ok: false; message: string } {
    const name = vn.metadata.name ?? '';
    const nodeName = nodeNameOf(vn, spec);
    const current = this.byNode.get(nodeName);
    if (current !== undefined && current !== name) {
      // The claim order decides first; this only keeps the invariant when the cache has not caught up.
      return { ok: false, message: `Node ${nodeName} is served here by VirtualNode ${current}` };
    }
    const pods = this.podInformerFor(nodeName);
    const requestInformer = new Informer<PodCertificateRequest>(
      this.api.podCertificateRequestsOfNode(nodeName),
      {
        clock: this.opts.clock,
        logger: this.opts.logger,
        transform: stripManagedFields,
        name: `podcertificaterequests of ${nodeName}`,
      },
    );
    let node: ManagedNode;
    try {
      node = this.opts.factory.create(vn, spec, nodeName, {
        pods,
        node: this.nodeInformer,
        podCertificateRequests: requestInformer,
        services: (ns) => this.serviceInformer.byIndex(ServicesByNamespaceIndex, ns),
      });
    } catch (err) {
      const message = errorMessage(err);
      this.opts.logger.warn('virtual node cannot be served', { virtualNode: name, error: message });
      return { ok: false, message };
    }
    const entry: Served = {
      node,
      pods,
      requestInformer,
      spec,
      source: vn.spec,
      started: Promise.resolve(),
      settled: false,
      since: this.opts.clock.now(),
    };
    entry.started = node
      .start()
      .catch((err: unknown) => {
        entry.startError = errorMessage(err);
        this.opts.logger.warn('virtual node failed to start', { virtualNode: name, error: entry.startError });
      })
      .finally(() => {
        entry.settled = true;
        if (this.stopping || this.served.get(name) !== entry) return;
        // The node's pods are listed and watched once its Node is registered and reported, as a kubelet
        // watches its pods only after its node has synced: while a hundred nodes start, their lists do not
        // queue in front of the registrations. The first list hands over the pods already bound (restart
        // safety); the Kubelet's PLEG has listed the runtime meanwhile, and its pod workers wait for it.
        pods.start();
        // Its status now tells how the start went.
        this.queue.add(name);
      });
    this.served.set(name, entry);
    this.byNode.set(nodeName, name);
    // Its events go to this node alone.
    pods.addHandlers({
      add: (p) => {
        // Before the node hears of the pod: its podcertificate manager then finds the watch on its way.
        if (hasPodCertificateProjections(p) && this.served.get(name) === entry) requestInformer.start();
        node.podAdded(p);
      },
      update: (o, p) => node.podUpdated(o, p),
      delete: (p) => node.podDeleted(p),
    });
    return { ok: true, served: entry };
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
      // terminates its pods, then drain and remove it like any other. A spec that never served a Node (invalid,
      // a Node another VirtualNode serves, no pod CIDR, a runtime that cannot be built) goes without: the pods
      // bound to that Node are not its own.
      served = this.servedForDrain(vn);
    }
    if (served) {
      // Pods left, or still starting (registering, or waiting for its runtime: not drained yet, as a worker
      // must never wait on a start): look again shortly.
      // The host goes down first: a node with a graceful shutdown configured terminates its pods by
      // priority (they end Failed, reason Terminated), and only then are its pods deleted.
      const shutDown = served.settled && ((await served.node.shutdown?.()) ?? true);
      const empty = shutDown && (await served.node.drain());
      if (!empty) {
        await this.status.write(vn, drainingStatus);
        this.queue.addAfter(name, this.drainRecheckMs);
        return;
      }
      await stopServed(served);
      await served.node.remove();
      this.served.delete(name);
      this.byNode.delete(served.node.nodeName);
    }
    this.podCIDRs.release(name);
    await this.patchFinalizers(
      vn,
      (vn.metadata.finalizers ?? []).filter((f) => f !== FINALIZER),
    );
    if (vn.metadata.uid) this.finalized.set(name, vn.metadata.uid);
  }

  /** The ManagedNode that drains a deleted VirtualNode no process served, or undefined if it never could. */
  private servedForDrain(vn: VirtualNode): Served | undefined {
    // The same spec and pod CIDR it was served with (its status keeps the defaulted one), so its pods are
    // adopted.
    const servable = this.servableSpec(vn);
    if (!servable.ok) return undefined;
    const started = this.serve(vn, servable.spec);
    return started.ok ? started.served : undefined;
  }

  private async forget(name: string): Promise<void> {
    const served = this.served.get(name);
    if (!served) return;
    this.served.delete(name);
    this.byNode.delete(served.node.nodeName);
    await stopServed(served);
  }

  private patchFinalizers(vn: VirtualNode, finalizers: string[]): Promise<boolean> {
    return this.writer.patchFinalizers(vn.metadata.name ?? '', vn.metadata.resourceVersion, finalizers);
  }
}

/** Stops a served node's informers (no event reaches a stopping node), then the node. */
async function stopServed(served: Served): Promise<void> {
  await Promise.all([served.pods.stop(), served.requestInformer.stop()]);
  await served.node.stop();
}
