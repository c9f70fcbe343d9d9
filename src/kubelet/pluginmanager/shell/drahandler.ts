/**
 * The DRA plugin manager's registration half (kubelet: pkg/kubelet/cm/dra/plugin dra_plugin_manager.go): a
 * DRA driver's kubelet plugin that registers through `plugins_registry/` is recorded with its endpoint and the
 * DRA service chosen (dradrivers.ts), for the DRA manager to call. When a driver's last plugin goes, its
 * ResourceSlices of this node are deleted after 30 s unless it comes back meanwhile, as the kubelet wipes
 * them (DeleteCollection by spec.nodeName and spec.driver, retried with a back-off). At start, once the Node
 * exists, every driver's slices of the node are wiped (wipeAtStart), unless a list of the process's shows the
 * node has none (resourceslices.ts). A plugin that offers a health service is handed to the stream handler
 * (the DRA manager) to watch its devices' health until it goes.
 */
import type { KubeClient } from '../../../kube/client.js';
import { errorKind, errorMessage } from '../../../util/errors.js';
import type { Logger } from '../../../util/logger.js';
import {
  chooseDRAHealthService,
  chooseDRAService,
  DRAPluginStore,
  DRAWipingDelayMs,
  invalidDRAServicesMessage,
  type DRAPlugin,
} from '../dradrivers.js';
import type { PluginHandler } from './manager.js';
import type { NodeResourceSlices } from './resourceslices.js';

export interface DRAPluginHandlerDeps {
  client: Pick<KubeClient, 'request'>;
  nodeName: string;
  logger: Logger;
  /** Default DRAWipingDelayMs. */
  wipingDelayMs?: number;
  now?: () => number;
  /** Watches a registered plugin's device health (the kubelet's streamHandler, the DRA manager). */
  streamHandler?: DRAHealthStreamHandler;
}

/** The DRA manager's health half as the plugin manager sees it. */
export interface DRAHealthStreamHandler {
  watchHealth(plugin: DRAPlugin): void;
  unwatchHealth(driverName: string, endpoint: string): Promise<void>;
}

const WIPE_TRIES = 8;

export class DRAPluginHandler implements PluginHandler {
  readonly store = new DRAPluginStore();
  private readonly pendingWipes = new Map<string, NodeJS.Timeout>();
  private stopped = false;
  private readonly log: Logger;

  constructor(private readonly d: DRAPluginHandlerDeps) {
    this.log = d.logger.child({ component: 'dra_plugin_manager' });
  }

  /** The plugin to call for a driver (GetPlugin). */
  plugin(driverName: string): DRAPlugin | undefined {
    return this.store.get(driverName);
  }

  validatePlugin(name: string, endpoint: string, versions: readonly string[]): Promise<void> {
    const c = chooseDRAService(versions);
    if (!c.ok) return Promise.reject(new Error(invalidDRAServicesMessage(name, endpoint, c.error)));
    return Promise.resolve();
  }

  registerPlugin(name: string, endpoint: string, versions: readonly string[]): Promise<void> {
    const c = chooseDRAService(versions);
    if (!c.ok) return Promise.reject(new Error(invalidDRAServicesMessage(name, endpoint, c.error)));
    const p: DRAPlugin = {
      driverName: name,
      endpoint,
      chosenService: c.service,
      chosenHealthService: chooseDRAHealthService(versions),
      registeredAt: (this.d.now ?? Date.now)(),
    };
    const added = this.store.add(p);
    if (!added.ok) return Promise.reject(new Error(added.error));
    this.cancelWipe(name);
    if (p.chosenHealthService) this.d.streamHandler?.watchHealth(p);
    this.log.info('Registered DRA plugin', {
      driverName: name,
      endpoint,
      chosenService: c.service,
      ...(p.chosenHealthService ? { chosenHealthService: p.chosenHealthService } : {}),
    });
    return Promise.resolve();
  }

  deregisterPlugin(name: string, endpoint: string): Promise<void> {
    const left = this.store.remove(name, endpoint);
    void this.d.streamHandler?.unwatchHealth(name, endpoint);
    this.log.info('Unregistered DRA plugin', { driverName: name, endpoint, numPlugins: left });
    if (left === 0) this.scheduleWipe(name);
    return Promise.resolve();
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.pendingWipes.values()) clearTimeout(t);
    this.pendingWipes.clear();
  }

  private cancelWipe(driver: string): void {
    const t = this.pendingWipes.get(driver);
    if (t) clearTimeout(t);
    this.pendingWipes.delete(driver);
  }

  private scheduleWipe(driver: string): void {
    if (this.stopped || this.pendingWipes.has(driver)) return;
    const t = setTimeout(() => {
      this.pendingWipes.delete(driver);
      void this.wipeResourceSlices(driver);
    }, this.d.wipingDelayMs ?? DRAWipingDelayMs);
    t.unref();
    this.pendingWipes.set(driver, t);
  }

  /**
   * The start's wipe of every driver's slices (the kubelet's DRA plugin manager, in the background): once the
   * Node exists (`nodeRegistered`; the kubelet polls its node informer), the node's slices are deleted. When
   * `slices` is given and a list of it begun now shows none for this node, there is nothing to delete and no
   * DeleteCollection is sent; a failed list falls back to it.
   */
  async wipeAtStart(nodeRegistered: Promise<unknown>, slices?: NodeResourceSlices): Promise<void> {
    await nodeRegistered;
    if (this.stopped) return;
    if (slices) {
      const nodes = await slices.nodesWithSlices().catch(() => undefined);
      if (this.stopped) return;
      if (nodes && !nodes.has(this.d.nodeName)) {
        this.log.debug('No ResourceSlices of the node to delete', { node: this.d.nodeName });
        return;
      }
    }
    await this.wipeResourceSlices('');
  }

  /** wipeResourceSlices: this node's slices of a driver ('' every driver) deleted, retried with a back-off. */
  async wipeResourceSlices(driver: string): Promise<void> {
    const selector = `spec.nodeName=${this.d.nodeName}${driver ? `,spec.driver=${driver}` : ''}`;
    let delay = 1_000;
    for (let i = 0; i < WIPE_TRIES && !this.stopped; i++) {
      try {
        await this.d.client.request({
          method: 'DELETE',
          path: '/apis/resource.k8s.io/v1/resourceslices',
          query: { fieldSelector: selector },
          ignoreAnswer: true,
        });
        this.log.info('Deleted ResourceSlices', { fieldSelector: selector });
        return;
      } catch (err) {
        if (errorKind(err) === 'NotFound') return;
        this.log.info('Deleting ResourceSlice failed, retrying', {
          fieldSelector: selector,
          err: errorMessage(err),
        });
      }
      await new Promise((r) => setTimeout(r, delay).unref());
      delay = Math.min(delay * 2, 5 * 60_000);
    }
  }
}
