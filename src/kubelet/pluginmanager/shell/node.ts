/**
 * One VirtualNode's plugin manager as the kubelet starts it once its runtime is up: the watcher on the node
 * root's `plugins_registry/` with the CSIPlugin and DRAPlugin handlers.
 */
import type { KubeClient } from '../../../kube/client.js';
import type { Logger } from '../../../util/logger.js';
import { kubeletRootPaths, resolveKubeletHostPath } from '../../rootdir.js';
import { CSIPluginHandler, type RegisteredNode } from './csihandler.js';
import { DRAPluginHandler, type DRAHealthStreamHandler } from './drahandler.js';
import { PluginManager, type PluginHandler } from './manager.js';
import type { NodeResourceSlices } from './resourceslices.js';

export interface NodePluginManager {
  manager: PluginManager;
  csi: CSIPluginHandler;
  dra: DRAPluginHandler;
  stop(): Promise<void>;
}

export async function startNodePluginManager(o: {
  client: KubeClient;
  nodeName: string;
  /** The node's kubelet root directory (src/app/podenvironment.ts nodeRootDir). */
  rootDir: string;
  logger: Logger;
  /** Watches DRA plugins' device health (the node's DRA manager). */
  draHealth?: DRAHealthStreamHandler;
  /**
   * Resolves once the node's Node exists, with its UID and whether the registration created it (undefined
   * when the node stops first): the start's CSINode and ResourceSlice wipe wait for it.
   */
  nodeRegistered: Promise<RegisteredNode | undefined>;
  /** The process's lists of which nodes have ResourceSlices (absent: the wipe is always sent). */
  resourceSlices?: NodeResourceSlices;
}): Promise<NodePluginManager> {
  const csi = new CSIPluginHandler({ client: o.client, nodeName: o.nodeName, logger: o.logger });
  const dra = new DRAPluginHandler({
    client: o.client,
    nodeName: o.nodeName,
    logger: o.logger,
    ...(o.draHealth ? { streamHandler: o.draHealth } : {}),
  });
  const handlers = new Map<string, PluginHandler>([
    ['CSIPlugin', csi],
    ['DRAPlugin', dra],
  ]);
  const manager = new PluginManager({
    registryDir: kubeletRootPaths(o.rootDir).pluginsRegistry,
    handlers,
    logger: o.logger,
    resolveEndpoint: (endpoint) => resolveKubeletHostPath(endpoint, o.rootDir),
  });
  await manager.start();
  // No driver has registered yet after a start: the node's ResourceSlices are wiped, in the background, so no
  // pod is scheduled onto devices whose driver may never come back (the kubelet's DRA plugin manager start).
  void dra.wipeAtStart(o.nodeRegistered, o.resourceSlices);
  // The node's CSINode, whether or not a CSI driver ever registers (the kubelet's CSI plugin init), once
  // its Node exists.
  csi.initializeCSINode(undefined, o.nodeRegistered);
  return {
    manager,
    csi,
    dra,
    stop: async () => {
      await manager.stop();
      csi.stop();
      dra.stop();
    },
  };
}
