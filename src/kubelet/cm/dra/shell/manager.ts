/**
 * The DRA manager (kubelet: pkg/kubelet/cm/dra manager.go): before a pod's sandbox is created, its
 * ResourceClaims are read, checked (allocated, reserved for the pod), recorded in the claim info cache and its
 * checkpoint, and prepared by each driver's kubelet plugin (NodePrepareResources over the service the plugin
 * registered, dra v1 or v1beta1), with the scheduler's claim for its DRA extended resources
 * (extendedresource.ts); a container gets the CDI devices of the claims it references and of the extended
 * resource claim's requests mapped to it; when a pod has terminated, the claims no other pod uses are unprepared. The checkpoint (`<root>/dra_manager_state`) is what
 * makes a restarted operator prepare nothing twice and still unprepare what a gone pod used (the reconcile).
 * Device health (ResourceHealthStatus): each plugin's NodeWatchResources stream (healthstream.ts) fills the
 * health cache (healthinfo.ts, checkpointed in `<root>/dra_health_state`); a change re-syncs the pods whose
 * prepared claims hold the device, and their containers' allocatedResourcesStatus gets `claim:` entries.
 *
 * One lock for the cache and its calls: the kubelet drops its lock around the gRPC calls; holding it keeps
 * this simpler at the cost of one pod's prepare waiting for another's.
 */
import { readdir, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type { Container, ContainerStatus, Pod } from '../../../../api/core.js';
import type { KubeClient } from '../../../../kube/client.js';
import { errorMessage } from '../../../../util/errors.js';
import { loadProtoPackage } from '../../../../util/grpcmodules.js';
import type { Logger } from '../../../../util/logger.js';
import type { DRAPlugin } from '../../../pluginmanager/dradrivers.js';
import { dialUnix, unary } from '../../../pluginmanager/shell/manager.js';
import {
  buildCDIRegistry,
  inKubeletRoot,
  resolveCDIDevices,
  type CDIEdits,
  type CDISpecFile,
} from '../cdi.js';
import {
  attachPod,
  batchesByDriver,
  checkClaimForPod,
  checkDriverResponse,
  ClaimInfoCache,
  containerCDIDevices,
  containerClaimInfos,
  decodeCheckpoint,
  DRACheckpointFile,
  encodeCheckpoint,
  inactivePodClaims,
  newClaimInfo,
  planUnprepare,
  podClaimName,
  podClaimNames,
  podClaimsToPrepare,
  type ClaimInfoState,
  type DriverBatch,
  type PreparedDevice,
  type ResourceClaim,
} from '../claiminfo.js';
import { sha256Hex } from '../../../../util/sha256.js';
import {
  deviceHealthFromWire,
  DRAHealthCheckpointFile,
  HealthInfoCache,
  podsUsingDevices,
  withClaimsAllocatedResourcesStatus,
  type WireDeviceHealth,
} from '../healthinfo.js';
import { DRAHealthStreams, type OpenHealthStream } from './healthstream.js';
import { replaceFile } from '../../../../util/replacefile.js';

/** How long one NodePrepareResources / NodeUnprepareResources call may take (defaultClientCallTimeout). */
const CLIENT_CALL_TIMEOUT_MS = 45_000;
/** How often claims of pods that are gone are unprepared (defaultReconcilePeriod). */
const RECONCILE_PERIOD_MS = 60_000;

/** What a container gets from the claims it references. */
export interface ContainerDynamicResources {
  /** CDI device names for the runtime (CRI CDI_devices). */
  cdiDevices: string[];
  /** The CDI specs' edits, when asked for (a runtime without CDI). */
  edits?: CDIEdits;
}

/** The DRA manager as the kubelet's pod sync sees it. */
export interface DynamicResources {
  /** PrepareResources; rejects with `prepare dynamic resources: <why>`. */
  prepareResources(pod: Pod): Promise<void>;
  /** UnprepareResources; rejects with `unprepare dynamic resources: <why>`. */
  unprepareResources(pod: Pod): Promise<void>;
  /** GetResources, plus the CDI edits resolved from the node's CDI specs when `applyCDI`. */
  containerResources(pod: Pod, container: Container, applyCDI: boolean): Promise<ContainerDynamicResources>;
  /** UpdateAllocatedResourcesStatus: the claims' device health into the generated container statuses. */
  allocatedResourcesStatus(pod: Pod, statuses: ContainerStatus[]): ContainerStatus[];
}

export interface DRAManagerDeps {
  client: Pick<KubeClient, 'request'>;
  /** The node's kubelet root: the checkpoint lives there, and `<root>/cdi` is searched for CDI specs. */
  rootDir: string;
  /** The registered kubelet plugin of a driver (the plugin manager's DRAPlugin handler). */
  plugin: (driverName: string) => DRAPlugin | undefined;
  logger: Logger;
  /** CDI spec directories, lowest priority first; default `<root>/cdi`, /etc/cdi, /var/run/cdi. */
  cdiSpecDirs?: readonly string[];
  /** The calls to a plugin; default over gRPC. */
  calls?: DRAPluginCalls;
  /** Pods whose claims' device health changed, to be synced again (the container manager's Updates()). */
  onPodsNeedSync?: (podUIDs: string[]) => void;
  /** ResourceHealthStatusMessage (beta, on by default): the drivers' messages in the status entries. */
  resourceHealthStatusMessage?: boolean;
  /** The health streams' opening and retry period; default over gRPC, every 5 s. */
  openHealthStream?: OpenHealthStream;
  healthRetryMs?: number;
  /** Wall clock (ms) for the health cache; default Date.now. */
  now?: () => number;
}

/** NodePrepareResources / NodeUnprepareResources on a plugin; answers keyed by claim UID. */
export interface DRAPluginCalls {
  prepare(
    plugin: DRAPlugin,
    batch: DriverBatch,
  ): Promise<Record<string, { devices?: PreparedDevice[]; error?: string }>>;
  unprepare(plugin: DRAPlugin, batch: DriverBatch): Promise<Record<string, { error?: string }>>;
}

export class DRAManager implements DynamicResources {
  private cache = new ClaimInfoCache();
  private lock: Promise<unknown> = Promise.resolve();
  private readonly log: Logger;
  private readonly calls: DRAPluginCalls;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private health = new HealthInfoCache();
  private readonly healthStreams: DRAHealthStreams;
  /** The health checkpoint's writes, one after the other. */
  private healthWrites: Promise<void> = Promise.resolve();

  constructor(private readonly d: DRAManagerDeps) {
    this.log = d.logger.child({ component: 'dra_manager' });
    this.calls = d.calls ?? grpcPluginCalls;
    this.healthStreams = new DRAHealthStreams({
      logger: d.logger,
      onReport: (driver, devices) => this.healthReport(driver, devices),
      onStreamEnd: (driver) => {
        if (this.health.clearDriver(driver)) this.saveHealth();
      },
      ...(d.openHealthStream ? { open: d.openHealthStream } : {}),
      ...(d.healthRetryMs !== undefined ? { retryMs: d.healthRetryMs } : {}),
    });
  }

  private get checkpointPath(): string {
    return path.join(this.d.rootDir, DRACheckpointFile);
  }

  private get healthCheckpointPath(): string {
    return path.join(this.d.rootDir, DRAHealthCheckpointFile);
  }

  private now(): number {
    return (this.d.now ?? Date.now)();
  }

  /**
   * Reads the checkpoint (a corrupt one is logged and set aside: the claims it held are then not unprepared by
   * this node, as a drained node's), and from then on unprepares the claims of pods no longer active.
   */
  async start(o?: { activePodUIDs?: () => ReadonlySet<string> | undefined }): Promise<void> {
    let text: string | undefined;
    try {
      text = await readFile(this.checkpointPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.log.error('Reading the DRA checkpoint failed', {
          path: this.checkpointPath,
          err: errorMessage(err),
        });
      }
    }
    if (text !== undefined) {
      const got = decodeCheckpoint(text, sha256Hex);
      if (got.ok) {
        this.cache = new ClaimInfoCache(got.entries);
        this.log.info('Restored DRA claim info from the checkpoint', { claims: got.entries.length });
      } else {
        this.log.error('DRA checkpoint ignored', { path: this.checkpointPath, err: got.error });
        await rename(this.checkpointPath, `${this.checkpointPath}.corrupt`).catch(() => undefined);
      }
    }
    await this.loadHealth();
    const active = o?.activePodUIDs;
    if (active) {
      this.reconcileTimer = setInterval(() => void this.reconcile(active()), RECONCILE_PERIOD_MS);
      this.reconcileTimer.unref();
    }
  }

  async stop(): Promise<void> {
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    this.reconcileTimer = undefined;
    await this.healthStreams.stop();
    await this.healthWrites;
  }

  /** A DRA plugin registered (the DRA plugin manager's streamHandler): its device health is watched. */
  watchHealth(plugin: DRAPlugin): void {
    this.healthStreams.watch(plugin);
  }

  /** A DRA plugin deregistered: its health stream is cancelled (its health forgotten as the stream ends). */
  unwatchHealth(driverName: string, endpoint: string): Promise<void> {
    return this.healthStreams.unwatch(driverName, endpoint);
  }

  allocatedResourcesStatus(pod: Pod, statuses: ContainerStatus[]): ContainerStatus[] {
    const now = this.now();
    return withClaimsAllocatedResourcesStatus(
      pod,
      statuses,
      {
        claimInfo: (namespace, name) => this.cache.get(namespace, name),
        health: (driver, pool, device) => this.health.get(driver, pool, device, now),
      },
      this.d.resourceHealthStatusMessage ?? true,
    );
  }

  /** One NodeWatchResources report: the cache updated, and the pods holding a changed device synced again. */
  private healthReport(driver: string, wire: WireDeviceHealth[]): void {
    const now = this.now();
    const devices = wire.map((w) => {
      const got = deviceHealthFromWire(w, now);
      if (got.negativeTimeout) {
        this.log.debug('Ignoring negative health check timeout, using default', {
          driverName: driver,
          poolName: got.device.poolName,
          deviceName: got.device.deviceName,
        });
      }
      return got.device;
    });
    const u = this.health.update(driver, devices, now);
    if (u.ignored > 0) {
      this.log.error(
        'Health report contains more devices than the cache keeps per driver, ignoring new devices beyond the limit',
        { driverName: driver, ignoredDevices: u.ignored },
      );
    }
    if (u.dirty) this.saveHealth();
    if (u.changed.length === 0) return;
    const pods = podsUsingDevices(this.cache.entries(), driver, u.changed);
    if (pods.length === 0) return;
    this.log.info('Sending health update notification for pods', { driverName: driver, pods });
    this.d.onPodsNeedSync?.(pods);
  }

  /** The health checkpoint (loadFromCheckpoint): an unreadable one is logged and the cache starts empty. */
  private async loadHealth(): Promise<void> {
    let text: string;
    try {
      text = await readFile(this.healthCheckpointPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        this.log.error('Failed to load health checkpoint, proceeding with empty cache', {
          err: errorMessage(err),
        });
      }
      return;
    }
    const got = HealthInfoCache.decode(text);
    if (got.ok) this.health = got.cache;
    else this.log.error('Failed to load health checkpoint, proceeding with empty cache', { err: got.error });
  }

  /** Writes the health cache as it is now, after the writes before it (renamed over, as the claim checkpoint). */
  private saveHealth(): void {
    const text = this.health.encode();
    const file = this.healthCheckpointPath;
    this.healthWrites = this.healthWrites.then(async () => {
      try {
        await replaceFile(file, text, 0o600);
      } catch (err) {
        this.log.error(
          'Failed to save health checkpoint after update. Kubelet restart may lose the device health information.',
          { err: errorMessage(err) },
        );
      }
    });
  }

  /** Some cached claim still references the pod (PodMightNeedToUnprepareResources). */
  podMightNeedToUnprepareResources(podUID: string): boolean {
    return this.cache.hasPodReference(podUID);
  }

  /**
   * The cached claims a container uses, for the pod-resources API; on an error none, logged (the container
   * manager's GetDynamicResources).
   */
  containerClaimInfos(pod: Pod, container: Container): ClaimInfoState[] {
    const got = containerClaimInfos(pod, container, this.cache);
    if (got.ok) return got.infos;
    this.log.error('Unable to get container claim info state', {
      pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
      container: container.name,
      err: got.error,
    });
    return [];
  }

  /** The cache's entries, for the pod-resources API and tests. */
  claimInfos(): ClaimInfoState[] {
    return this.cache.entries();
  }

  /** reconcileLoop: pods the cache references that are not active (undefined: sources not ready yet). */
  async reconcile(active: ReadonlySet<string> | undefined): Promise<void> {
    if (!active) return;
    for (const p of inactivePodClaims(this.cache.entries(), active)) {
      try {
        await this.locked(() => this.unprepareClaims(p.podUID, p.namespace, p.claimNames));
      } catch (err) {
        this.log.info('Unpreparing pod resources in reconcile loop failed, will retry', {
          podUID: p.podUID,
          err: errorMessage(err),
        });
      }
    }
  }

  async prepareResources(pod: Pod): Promise<void> {
    if (podClaimsToPrepare(pod).length === 0) return;
    try {
      await this.locked(() => this.prepare(pod));
    } catch (err) {
      throw new Error(`prepare dynamic resources: ${errorMessage(err)}`);
    }
  }

  async unprepareResources(pod: Pod): Promise<void> {
    const uid = pod.metadata.uid ?? '';
    if (!this.cache.hasPodReference(uid) && podClaimsToPrepare(pod).length === 0) return;
    try {
      await this.locked(() => {
        let names = this.cache.claimNamesForPod(uid);
        if (names.length === 0) names = podClaimNames(pod);
        return this.unprepareClaims(uid, pod.metadata.namespace ?? '', names);
      });
    } catch (err) {
      throw new Error(`unprepare dynamic resources: ${errorMessage(err)}`);
    }
  }

  async containerResources(
    pod: Pod,
    container: Container,
    applyCDI: boolean,
  ): Promise<ContainerDynamicResources> {
    const got = containerCDIDevices(pod, container, this.cache);
    if (!got.ok) throw new Error(got.error);
    if (!applyCDI || got.devices.length === 0) return { cdiDevices: got.devices };
    const registry = buildCDIRegistry(await this.readCDISpecs());
    for (const e of registry.errors) this.log.warn('CDI spec skipped', { err: e });
    const resolved = resolveCDIDevices(registry, got.devices);
    if (!resolved.ok) throw new Error(resolved.error);
    if (resolved.edits.notApplied.length > 0) {
      this.log.warn('CDI edits the runtime would apply are not applied (the runtime lacks CDI)', {
        pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
        container: container.name,
        edits: resolved.edits.notApplied,
      });
    }
    return { cdiDevices: got.devices, edits: inKubeletRoot(resolved.edits, this.d.rootDir) };
  }

  private cdiSpecDirs(): readonly string[] {
    return this.d.cdiSpecDirs ?? [path.join(this.d.rootDir, 'cdi'), '/etc/cdi', '/var/run/cdi'];
  }

  /** The spec files of every CDI directory, lowest priority first, in name order within one. */
  private async readCDISpecs(): Promise<CDISpecFile[]> {
    const out: CDISpecFile[] = [];
    for (const dir of this.cdiSpecDirs()) {
      let names: string[];
      try {
        names = (await readdir(dir)).filter((n) => /\.(json|ya?ml)$/.test(n)).sort();
      } catch {
        continue;
      }
      for (const n of names) {
        try {
          out.push({ path: path.join(dir, n), text: await readFile(path.join(dir, n), 'utf8') });
        } catch {
          // Removed between the listing and the read: a claim just unprepared.
        }
      }
    }
    return out;
  }

  private locked<T>(f: () => Promise<T>): Promise<T> {
    const run = this.lock.then(f, f);
    this.lock = run.catch(() => undefined);
    return run;
  }

  private async prepare(pod: Pod): Promise<void> {
    const podUID = pod.metadata.uid ?? '';
    const namespace = pod.metadata.namespace ?? '';
    // A validation pass first, changing nothing: a pod that fails it can be deleted without anything to undo.
    const checked: { claim: ResourceClaim; info: ClaimInfoState }[] = [];
    for (const podClaim of podClaimsToPrepare(pod)) {
      const n = podClaimName(pod, podClaim);
      if (!n.ok) throw new Error(n.error);
      if (n.name === undefined) continue;
      let claim: ResourceClaim;
      try {
        claim = await this.d.client.request<ResourceClaim>({
          method: 'GET',
          path: `/apis/resource.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/resourceclaims/${encodeURIComponent(n.name)}`,
        });
      } catch (err) {
        throw new Error(`fetch ResourceClaim ${n.name}: ${errorMessage(err)}`);
      }
      const c = checkClaimForPod(pod, claim, n.mustCheckOwner);
      if (!c.ok) throw new Error(c.error);
      for (const driver of c.drivers) {
        if (!this.d.plugin(driver)) throw new Error(`DRA driver ${driver} is not registered`);
      }
      checked.push({ claim, info: newClaimInfo(claim, c.drivers) });
    }

    // The pod is recorded on each claim, and checkpointed, before any driver is called.
    const toPrepare: ClaimInfoState[] = [];
    for (const { info } of checked) {
      const a = attachPod(this.cache.get(info.namespace, info.claimName), info, podUID, false);
      if (!a.ok) throw new Error(a.error);
      this.cache.set(a.info);
      if (!a.info.prepared) toPrepare.push(a.info);
    }
    await this.checkpoint('checkpoint ResourceClaim cache');

    for (const batch of batchesByDriver(toPrepare)) {
      const plugin = this.d.plugin(batch.driver);
      if (!plugin) throw new Error(`DRA driver ${batch.driver} is not registered`);
      let answers: Record<string, { devices?: PreparedDevice[]; error?: string }>;
      try {
        answers = await this.calls.prepare(plugin, batch);
      } catch (err) {
        throw new Error(`NodePrepareResources: ${errorMessage(err)}`);
      }
      const ok = checkDriverResponse('NodePrepareResources', batch, answers);
      if (!ok.ok) throw new Error(ok.error);
      for (const c of batch.claims) {
        const info = this.cache.get(c.namespace, c.name)!;
        // The driver's answer replaces what an earlier, partly failed prepare recorded for it.
        this.cache.set({
          ...info,
          driverState: { ...info.driverState, [batch.driver]: { devices: answers[c.uid]?.devices ?? [] } },
        });
      }
    }
    for (const info of toPrepare) {
      const cur = this.cache.get(info.namespace, info.claimName);
      if (cur) this.cache.set({ ...cur, prepared: true });
    }
    await this.checkpoint('checkpoint ResourceClaim state');
    if (toPrepare.length > 0) {
      this.log.info('Prepared dynamic resources', {
        pod: `${namespace}/${pod.metadata.name}`,
        claims: toPrepare.map((i) => i.claimName),
      });
    }
  }

  private async unprepareClaims(
    podUID: string,
    namespace: string,
    claimNames: readonly string[],
  ): Promise<void> {
    const plan = planUnprepare(this.cache, namespace, podUID, claimNames);
    for (const info of plan.dropPod) {
      this.cache.set({ ...info, podUIDs: info.podUIDs.filter((u) => u !== podUID) });
    }
    for (const batch of batchesByDriver(plan.unprepare)) {
      const plugin = this.d.plugin(batch.driver);
      if (!plugin) throw new Error(`DRA driver ${batch.driver} is not registered`);
      let answers: Record<string, { error?: string }>;
      try {
        answers = await this.calls.unprepare(plugin, batch);
      } catch (err) {
        throw new Error(`NodeUnprepareResources: ${errorMessage(err)}`);
      }
      const ok = checkDriverResponse('NodeUnprepareResources', batch, answers);
      if (!ok.ok) throw new Error(ok.error);
    }
    for (const info of plan.unprepare) this.cache.delete(info.namespace, info.claimName);
    if (plan.dropPod.length > 0 || plan.unprepare.length > 0) {
      await this.checkpoint('checkpoint ResourceClaim state');
    }
    if (plan.unprepare.length > 0) {
      this.log.info('Unprepared dynamic resources', {
        podUID,
        claims: plan.unprepare.map((i) => `${i.namespace}/${i.claimName}`),
      });
    }
  }

  /** Writes the cache to the checkpoint: a new file renamed over the old, so a crash leaves one or the other. */
  private async checkpoint(what: string): Promise<void> {
    try {
      await replaceFile(this.checkpointPath, encodeCheckpoint(this.cache.entries(), sha256Hex), 0o600);
    } catch (err) {
      throw new Error(`${what}: ${errorMessage(err)}`);
    }
  }
}

/** The gRPC client constructor of a DRA service the kubelet speaks (`v1.DRAPlugin`, `v1beta1.DRAPlugin`). */
function draClientCtor(service: string): grpc.ServiceClientConstructor {
  const version = service.split('.')[0];
  if (version !== 'v1' && version !== 'v1beta1') {
    throw new Error(`internal error: unsupported chosen service: ${JSON.stringify(service)}`);
  }
  const pkg = loadProtoPackage(
    fileURLToPath(new URL(`../proto/dra_${version}.proto`, import.meta.url)),
  ) as unknown as {
    k8s: {
      io: {
        kubelet: { pkg: { apis: { dra: Record<string, { DRAPlugin: grpc.ServiceClientConstructor }> } } };
      };
    };
  };
  return pkg.k8s.io.kubelet.pkg.apis.dra[version]!.DRAPlugin;
}

interface WireDevice {
  request_names: string[];
  pool_name: string;
  device_name: string;
  cdi_device_ids: string[];
}

async function callPlugin<T>(plugin: DRAPlugin, method: string, batch: DriverBatch): Promise<T> {
  const socket = plugin.endpoint.replace(/^unix:\/\//, '');
  const client = await dialUnix(draClientCtor(plugin.chosenService), socket, 10_000);
  try {
    return await unary<T>(client, method, { claims: batch.claims }, CLIENT_CALL_TIMEOUT_MS);
  } finally {
    client.close();
  }
}

const grpcPluginCalls: DRAPluginCalls = {
  async prepare(plugin, batch) {
    const res = await callPlugin<{ claims: Record<string, { devices: WireDevice[]; error: string }> }>(
      plugin,
      'NodePrepareResources',
      batch,
    );
    const out: Record<string, { devices?: PreparedDevice[]; error?: string }> = {};
    for (const [uid, r] of Object.entries(res.claims ?? {})) {
      out[uid] = {
        devices: (r.devices ?? []).map((d) => ({
          requestNames: [...(d.request_names ?? [])],
          poolName: d.pool_name ?? '',
          deviceName: d.device_name ?? '',
          cdiDeviceIDs: [...(d.cdi_device_ids ?? [])],
        })),
        ...(r.error ? { error: r.error } : {}),
      };
    }
    return out;
  },
  async unprepare(plugin, batch) {
    const res = await callPlugin<{ claims: Record<string, { error: string }> }>(
      plugin,
      'NodeUnprepareResources',
      batch,
    );
    const out: Record<string, { error?: string }> = {};
    for (const [uid, r] of Object.entries(res.claims ?? {})) out[uid] = r.error ? { error: r.error } : {};
    return out;
  },
};
