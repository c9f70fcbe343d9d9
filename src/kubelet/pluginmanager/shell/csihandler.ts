/**
 * The CSI plugin's registration handler (kubelet: pkg/volume/csi csi_plugin.go RegistrationHandler and
 * nodeinfomanager): a CSI driver that registers through `plugins_registry/` is asked NodeGetInfo on its
 * endpoint, then the node's CSINode gets the driver's entry (node ID, topology keys, allocatable count) and
 * the Node its topology labels and the `csi.volume.kubernetes.io/nodeid` annotation; deregistration takes the
 * entry and the node ID out again. The decisions are csinodeinfo.ts; this is their I/O.
 *
 * The Node is written here as the kubelet's nodeinfomanager writes it, beside the node agent: a merge patch
 * of the labels and the annotation it adds, nothing else (the node agent's own labels are remembered apart and
 * these stay).
 */
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type { KubeClient } from '../../../kube/client.js';
import { PatchTypes } from '../../../kube/client.js';
import { errorKind, errorMessage } from '../../../util/errors.js';
import { loadProtoPackage } from '../../../util/grpcmodules.js';
import type { Logger } from '../../../util/logger.js';
import {
  installDriverToCSINode,
  installDriverToNode,
  newCSINode,
  nodeAllocatableUpdatePeriodMs,
  uninstallDriverFromCSINode,
  uninstallDriverFromNode,
  validateCSIVersions,
  type CSIDriverObject,
  type CSINode,
  type CSINodeInfo,
  type NodeMeta,
} from '../csinodeinfo.js';
import { dialUnix, unary, type PluginHandler } from './manager.js';

/** csiTimeout: how long a NodeGetInfo may take. */
const CSI_TIMEOUT_MS = 2 * 60_000;
const CONFLICT_RETRIES = 5;
/**
 * initializeCSINode's waits between attempts (the kubelet's 30 ms times 8 per step, about 140 s in all);
 * after the last the kubelet exits to start again, we keep trying at the last step's pace.
 */
const INIT_RETRY_MS = [30, 240, 1_920, 15_360, 122_880];

function csiNodeClientCtor(): grpc.ServiceClientConstructor {
  const pkg = loadProtoPackage(
    fileURLToPath(new URL('../proto/csi_node.proto', import.meta.url)),
  ) as unknown as {
    csi: { v1: { Node: grpc.ServiceClientConstructor } };
  };
  return pkg.csi.v1.Node;
}

/** NodeGetInfo on a CSI driver's endpoint (a unix socket path, or `unix://` address). */
export async function csiNodeGetInfo(endpoint: string, timeoutMs = CSI_TIMEOUT_MS): Promise<CSINodeInfo> {
  const socket = endpoint.replace(/^unix:\/\//, '');
  const client = await dialUnix(csiNodeClientCtor(), socket, Math.min(timeoutMs, 10_000));
  try {
    const res = await unary<{
      node_id: string;
      max_volumes_per_node: string;
      accessible_topology: { segments: Record<string, string> } | null;
    }>(client, 'NodeGetInfo', {}, timeoutMs);
    return {
      nodeID: res.node_id,
      maxVolumesPerNode: Number(res.max_volumes_per_node),
      topology: { ...(res.accessible_topology?.segments ?? {}) },
    };
  } finally {
    client.close();
  }
}

interface ObjectWithMeta {
  metadata: { uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

/** What a registration told about the node's Node: its UID, and whether this registration created it. */
export interface RegisteredNode {
  uid: string;
  created: boolean;
}

export interface CSIPluginHandlerDeps {
  client: KubeClient;
  nodeName: string;
  logger: Logger;
  /** NodeGetInfo; default over gRPC (tests pass a fake). */
  nodeGetInfo?: (endpoint: string) => Promise<CSINodeInfo>;
  /**
   * How often a registered driver's CSIDriver is read again while it sets no
   * nodeAllocatableUpdatePeriodSeconds (the kubelet watches CSIDrivers; we look); default 60 s.
   */
  csiDriverRecheckMs?: number;
}

function isStatus(err: unknown, code: 404 | 409): boolean {
  const kind = errorKind(err);
  return code === 404 ? kind === 'NotFound' : kind === 'Conflict' || kind === 'AlreadyExists';
}

/** The CSIPlugin handler of one node. */
export class CSIPluginHandler implements PluginHandler {
  /** Registered drivers: endpoint and highest supported version (csiDrivers). */
  private readonly drivers = new Map<string, { endpoint: string; version: string }>();
  /** The CSI node updater's timer of each registered driver (MutableCSINodeAllocatableCount). */
  private readonly updaters = new Map<string, NodeJS.Timeout>();
  private stopped = false;
  /** Drivers whose updater has read their CSIDriver once: the next tick refreshes. */
  private readonly refreshed = new Map<string, boolean>();
  private readonly log: Logger;
  private initTimer: NodeJS.Timeout | undefined;

  constructor(private readonly d: CSIPluginHandlerDeps) {
    this.log = d.logger.child({ component: 'csi_plugin' });
  }

  /** The endpoint of a registered driver, for the volume manager's CSI calls. */
  endpoint(driverName: string): string | undefined {
    return this.drivers.get(driverName)?.endpoint;
  }

  validatePlugin(name: string, endpoint: string, versions: readonly string[]): Promise<void> {
    this.log.info(
      `kubernetes.io/csi: Trying to validate a new CSI Driver with name: ${name} endpoint: ${endpoint} versions: ${versions.join(',')}`,
    );
    const v = validateCSIVersions('ValidatePlugin', name, versions, this.drivers.get(name)?.version);
    if (!v.ok)
      return Promise.reject(
        new Error(`validation failed for CSI Driver ${name} at endpoint ${endpoint}: ${v.error}`),
      );
    return Promise.resolve();
  }

  async registerPlugin(name: string, endpoint: string, versions: readonly string[]): Promise<void> {
    this.log.info(`kubernetes.io/csi: Register new plugin with name: ${name} at endpoint: ${endpoint}`);
    const v = validateCSIVersions('RegisterPlugin', name, versions, this.drivers.get(name)?.version);
    if (!v.ok) throw new Error(v.error);
    this.drivers.set(name, { endpoint, version: v.highest });
    try {
      const info = await (this.d.nodeGetInfo ?? csiNodeGetInfo)(endpoint);
      await this.installCSIDriver(name, info);
      this.syncDriverUpdater(name, 0);
    } catch (err) {
      await this.unregisterDriver(name).catch((e: unknown) =>
        this.log.warn(
          `kubernetes.io/csi: registrationHandler.RegisterPlugin failed to unregister plugin due to previous error: ${errorMessage(e)}`,
        ),
      );
      throw err;
    }
  }

  async deregisterPlugin(name: string, endpoint: string): Promise<void> {
    this.log.info(
      `kubernetes.io/csi: registrationHandler.DeRegisterPlugin request for plugin ${name}, endpoint ${endpoint}`,
    );
    try {
      await this.unregisterDriver(name);
    } catch (err) {
      this.log.warn(`kubernetes.io/csi: registrationHandler.DeRegisterPlugin failed: ${errorMessage(err)}`);
    }
  }

  /**
   * VerifyExhaustedResource's refresh (MutableCSINodeAllocatableCount): when the driver's CSIDriver sets
   * nodeAllocatableUpdatePeriodSeconds, NodeGetInfo again and the CSINode entry updated at once; false (and
   * nothing done) when it sets none or the driver is not registered.
   */
  async refreshAllocatable(name: string): Promise<boolean> {
    const driver = this.drivers.get(name);
    if (!driver) return false;
    let obj: CSIDriverObject | undefined;
    try {
      obj = await this.d.client.request<CSIDriverObject>({
        method: 'GET',
        path: `/apis/storage.k8s.io/v1/csidrivers/${name}`,
      });
    } catch (err) {
      this.log.warn('Failed to retrieve CSIDriver', { pluginName: name, err: errorMessage(err) });
      return false;
    }
    if (nodeAllocatableUpdatePeriodMs(obj) === 0) return false;
    this.log.info('Detected ResourceExhausted error for volume', { pluginName: name });
    try {
      const info = await (this.d.nodeGetInfo ?? csiNodeGetInfo)(driver.endpoint);
      if (this.drivers.get(name) === driver) {
        await this.updateCSINode((n) => installDriverToCSINode(n, name, info).csiNode, false);
      }
    } catch (err) {
      this.log.warn('Failed to update CSIDriver', {
        pluginName: name,
        err: `failed to update driver ${JSON.stringify(name)}: ${errorMessage(err)}`,
      });
    }
    return true;
  }

  /**
   * kubelet initializeCSINode (csi_plugin.go): the node's CSINode is created, owned by its Node, once the
   * Node is there (a CSINode another Node of the name owned is replaced), whether or not a driver ever
   * registers. The kubelet also holds its Node NotReady until then (a storage error); ours does not: its first
   * status would wait for a round trip after registration, and a Node taken over from another replica would
   * drop from Ready. Its first attempt waits for `nodeRegistered` (the registration's own): the kubelet's
   * attempts before its Node exists only find no Node (a GET of the CSINode and one of the Node each) and
   * retry, which at 1,000 nodes starting at once was thousands of requests in front of the registrations.
   * A Node this registration created has no CSINode of its own yet: the first attempt creates it at once,
   * owned by the UID the registration returned, and reads what is there only when the name is taken.
   */
  initializeCSINode(onInitialized?: () => void, nodeRegistered?: Promise<RegisteredNode | undefined>): void {
    let attempt = 0;
    let fresh: RegisteredNode | undefined;
    const run = async (): Promise<void> => {
      this.initTimer = undefined;
      if (this.stopped) return;
      try {
        const created = fresh?.created && fresh.uid ? await this.createCSINode(fresh.uid) : false;
        fresh = undefined;
        // No in-tree plugin is migrated on our nodes, so the migrated-plugins annotation asks no update.
        if (!created) await this.updateCSINode(() => undefined, true);
        onInitialized?.();
        return;
      } catch (err) {
        this.log.warn(`Failed to initialize CSINode: ${errorMessage(err)}`);
      }
      if (this.stopped) return;
      const wait = INIT_RETRY_MS[Math.min(attempt++, INIT_RETRY_MS.length - 1)]!;
      this.initTimer = setTimeout(() => void run(), wait);
    };
    if (nodeRegistered)
      void nodeRegistered.then((r) => {
        fresh = r;
        return run();
      });
    else void run();
  }

  /** A new CSINode owned by `nodeUID`; false when the name is taken (the caller looks at what is there). */
  private async createCSINode(nodeUID: string): Promise<boolean> {
    try {
      await this.d.client.request({
        method: 'POST',
        path: '/apis/storage.k8s.io/v1/csinodes',
        body: newCSINode(this.d.nodeName, nodeUID),
        ignoreAnswer: true,
      });
      return true;
    } catch (err) {
      if (isStatus(err, 409)) return false;
      throw err;
    }
  }

  /** Stops the drivers' periodic refreshes and the CSINode's initialization. */
  stop(): void {
    this.stopped = true;
    if (this.initTimer) clearTimeout(this.initTimer);
    for (const t of this.updaters.values()) clearTimeout(t);
    this.updaters.clear();
  }

  /**
   * The CSI node updater (csi_node_updater.go): while the driver is registered, its CSIDriver's
   * nodeAllocatableUpdatePeriodSeconds says how often NodeGetInfo is asked again and the CSINode entry
   * updated (UpdateCSIDriver); a CSIDriver without a period (or none) is looked at again later.
   */
  private syncDriverUpdater(name: string, delayMs: number): void {
    const old = this.updaters.get(name);
    if (old) clearTimeout(old);
    this.updaters.delete(name);
    if (this.stopped || !this.drivers.has(name)) return;
    const t = setTimeout(() => void this.driverUpdaterTick(name), delayMs);
    t.unref();
    this.updaters.set(name, t);
  }

  private async driverUpdaterTick(name: string): Promise<void> {
    const driver = this.drivers.get(name);
    if (!driver || this.stopped) return;
    let period = 0;
    try {
      const obj = await this.d.client.request<CSIDriverObject>({
        method: 'GET',
        path: `/apis/storage.k8s.io/v1/csidrivers/${name}`,
      });
      period = nodeAllocatableUpdatePeriodMs(obj);
    } catch (err) {
      if (errorKind(err) !== 'NotFound')
        this.log.warn('Error retrieving CSIDriver', { driver: name, err: errorMessage(err) });
    }
    if (period === 0) {
      this.syncDriverUpdater(name, this.d.csiDriverRecheckMs ?? 60_000);
      return;
    }
    if (this.updaters.has(name) && this.refreshed.get(name) !== undefined) {
      try {
        const info = await (this.d.nodeGetInfo ?? csiNodeGetInfo)(driver.endpoint);
        if (this.drivers.get(name) !== driver) return;
        await this.updateCSINode((n) => installDriverToCSINode(n, name, info).csiNode, false);
      } catch (err) {
        this.log.warn('Failed to update CSIDriver', {
          driver: name,
          err: `failed to update driver ${JSON.stringify(name)}: ${errorMessage(err)}`,
        });
      }
    }
    this.refreshed.set(name, true);
    this.syncDriverUpdater(name, period);
  }

  private async unregisterDriver(name: string): Promise<void> {
    this.drivers.delete(name);
    this.refreshed.delete(name);
    this.syncDriverUpdater(name, 0);
    try {
      await this.updateCSINode((n) => uninstallDriverFromCSINode(n, name), false);
    } catch (err) {
      throw new Error(
        `Error uninstalling CSI driver: error uninstalling CSI driver from CSINode object ${errorMessage(err)}`,
      );
    }
    const node = await this.getNode();
    const p = uninstallDriverFromNode(node.metadata, name);
    if (!p.ok) throw new Error(`Error uninstalling CSI driver: ${p.error}`);
    if (p.patch) await this.patchNode(p.patch);
  }

  /** InstallCSIDriver: the Node first (labels, node ID), then the CSINode entry. */
  private async installCSIDriver(name: string, info: CSINodeInfo): Promise<void> {
    const node = await this.getNode();
    const p = installDriverToNode(node.metadata as NodeMeta, name, info);
    if (!p.ok) throw new Error(p.error);
    if (p.patch) await this.patchNode(p.patch);
    try {
      await this.updateCSINode((n) => {
        const r = installDriverToCSINode(n, name, info);
        for (const w of r.warnings) this.log.warn(w, { driver: name });
        return r.csiNode;
      }, true);
    } catch (err) {
      throw new Error(`error updating CSINode object with CSI driver node info: ${errorMessage(err)}`);
    }
  }

  private getNode(): Promise<ObjectWithMeta> {
    return this.d.client.request<ObjectWithMeta>({ method: 'GET', path: `/api/v1/nodes/${this.d.nodeName}` });
  }

  private async patchNode(patch: unknown): Promise<void> {
    await this.d.client.request({
      method: 'PATCH',
      path: `/api/v1/nodes/${this.d.nodeName}`,
      body: patch,
      contentType: PatchTypes.merge,
      ignoreAnswer: true,
    });
  }

  /**
   * Reads the node's CSINode (created owned by the Node when absent, or re-created when another Node of the
   * name owned it: ensureNodeOwnsCSINode) and writes what `change` makes of it, again on a conflict.
   */
  private async updateCSINode(change: (n: CSINode) => CSINode | undefined, create: boolean): Promise<void> {
    const path = `/apis/storage.k8s.io/v1/csinodes/${this.d.nodeName}`;
    for (let attempt = 0; ; attempt++) {
      let current: CSINode | undefined;
      try {
        current = await this.d.client.request<CSINode>({ method: 'GET', path });
      } catch (err) {
        if (!isStatus(err, 404)) throw err;
      }
      if (current) {
        const node = await this.getNode();
        const owner = current.metadata.ownerReferences?.find((o) => o.kind === 'Node');
        if (owner && node.metadata.uid && owner.uid !== node.metadata.uid) {
          await this.d.client.request({ method: 'DELETE', path, ignoreAnswer: true });
          this.log.warn(
            `CSINode "${this.d.nodeName}" was owned by different node (oldNodeID="${owner.uid}", newNodeID="${node.metadata.uid}"), deleted it`,
          );
          current = undefined;
        }
      }
      if (!current) {
        if (!create) return;
        const node = await this.getNode();
        try {
          current = await this.d.client.request<CSINode>({
            method: 'POST',
            path: '/apis/storage.k8s.io/v1/csinodes',
            body: newCSINode(this.d.nodeName, node.metadata.uid ?? ''),
          });
        } catch (err) {
          if (isStatus(err, 409) && attempt < CONFLICT_RETRIES) continue;
          throw err;
        }
      }
      const next = change(current);
      if (!next) return;
      try {
        await this.d.client.request({ method: 'PUT', path, body: next, ignoreAnswer: true });
        return;
      } catch (err) {
        if (isStatus(err, 409) && attempt < CONFLICT_RETRIES) continue;
        throw err;
      }
    }
  }
}
