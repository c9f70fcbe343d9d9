/**
 * The CSI plugin's node info (kubelet: pkg/volume/csi/nodeinfomanager and the RegistrationHandler's version
 * check in pkg/volume/csi/csi_plugin.go): what a registered CSI driver's NodeGetInfo answer makes of the
 * node's CSINode object and of the Node's metadata. Pure: each function takes the object as read and returns
 * the object to write, or undefined when nothing changes.
 */

/** storage.k8s.io/v1 CSINodeDriver. */
export interface CSINodeDriver {
  name: string;
  nodeID: string;
  topologyKeys?: string[] | null;
  allocatable?: { count?: number | null } | null;
}

/** storage.k8s.io/v1 CSINode, the fields the kubelet keeps. */
export interface CSINode {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec: { drivers: CSINodeDriver[] | null };
}

/** The Node annotation holding every registered driver's node ID, as JSON (driver name -> node ID). */
export const NodeIDAnnotation = 'csi.volume.kubernetes.io/nodeid';
/** The CSINode annotation naming the in-tree plugins migrated to CSI (none on our nodes). */
export const MigratedPluginsAnnotation = 'storage.alpha.kubernetes.io/migrated-plugins';

const MAX_INT32 = 2_147_483_647;

/** The NodeGetInfo answer, as the CSI client returns it. */
export interface CSINodeInfo {
  nodeID: string;
  maxVolumesPerNode: number;
  topology: Record<string, string>;
}

/** The CSINode a kubelet creates for its node (CreateCSINode): owned by the Node, no drivers. */
export function newCSINode(nodeName: string, nodeUID: string): CSINode {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSINode',
    metadata: {
      name: nodeName,
      annotations: { [MigratedPluginsAnnotation]: '' },
      ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: nodeName, uid: nodeUID }],
    },
    spec: { drivers: [] },
  };
}

function sameKeys(a: readonly string[] | null | undefined, b: readonly string[]): boolean {
  const x = new Set(a ?? []);
  return x.size === b.length && b.every((k) => x.has(k));
}

function keepAllocatableCount(d: CSINodeDriver, maxAttachLimit: number): boolean {
  const count = d.allocatable?.count;
  if (maxAttachLimit === 0) return count === undefined || count === null;
  return count === maxAttachLimit;
}

export interface InstallResult {
  /** The CSINode to write, undefined when it already says this. */
  csiNode?: CSINode;
  /** Log lines the kubelet writes on the way (an attach limit truncated or refused). */
  warnings: string[];
}

/**
 * installDriverToCSINode: the driver's entry replaced by one with its node ID, its topology keys (sorted) and
 * its attach limit as allocatable count (capped at MaxInt32; a negative limit is left out and logged);
 * unchanged when the entry already says all this.
 */
export function installDriverToCSINode(
  csiNode: CSINode,
  driverName: string,
  info: CSINodeInfo,
): InstallResult {
  const keys = Object.keys(info.topology).sort();
  const drivers = csiNode.spec.drivers ?? [];
  const others = drivers.filter((d) => d.name !== driverName);
  const existing = drivers.find((d) => d.name === driverName);
  const annotations = csiNode.metadata.annotations ?? {};
  const annotationModified = !(MigratedPluginsAnnotation in annotations);
  if (
    existing &&
    existing.nodeID === info.nodeID &&
    sameKeys(existing.topologyKeys, keys) &&
    keepAllocatableCount(existing, info.maxVolumesPerNode) &&
    !annotationModified
  ) {
    return { warnings: [] };
  }
  const warnings: string[] = [];
  const entry: CSINodeDriver = { name: driverName, nodeID: info.nodeID, topologyKeys: keys };
  if (info.maxVolumesPerNode > 0) {
    let m = info.maxVolumesPerNode;
    if (m > MAX_INT32) {
      warnings.push(`Exceeded max supported attach limit value, truncating it to ${MAX_INT32}`);
      m = MAX_INT32;
    }
    entry.allocatable = { count: m };
  } else if (info.maxVolumesPerNode !== 0) {
    warnings.push(
      `Invalid attach limit value ${info.maxVolumesPerNode} cannot be added to CSINode object for "${driverName}"`,
    );
  }
  return {
    csiNode: {
      ...csiNode,
      metadata: {
        ...csiNode.metadata,
        annotations: {
          ...annotations,
          [MigratedPluginsAnnotation]: annotations[MigratedPluginsAnnotation] ?? '',
        },
      },
      spec: { drivers: [...others, entry] },
    },
    warnings,
  };
}

/** tryUninstallDriverFromCSINode: the CSINode without the driver's entry, undefined when it has none. */
export function uninstallDriverFromCSINode(csiNode: CSINode, driverName: string): CSINode | undefined {
  const drivers = csiNode.spec.drivers ?? [];
  if (!drivers.some((d) => d.name === driverName)) return undefined;
  return { ...csiNode, spec: { drivers: drivers.filter((d) => d.name !== driverName) } };
}

/** The Node metadata the CSI plugin keeps: its labels and annotations as read. */
export interface NodeMeta {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A merge patch of the Node's metadata (null removes a key), or the error that stops the install. */
export type NodeMetaPatch =
  | {
      ok: true;
      patch?: { metadata: { labels?: Record<string, string>; annotations?: Record<string, string | null> } };
    }
  | { ok: false; error: string };

function nodeIDMap(node: NodeMeta): { ok: true; map: Record<string, string> } | { ok: false; error: string } {
  const raw = node.annotations?.[NodeIDAnnotation];
  if (raw === undefined || raw === '') return { ok: true, map: {} };
  try {
    const parsed = JSON.parse(raw) as unknown;
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Error('not an object');
    const map: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) map[k] = String(v);
    return { ok: true, map };
  } catch (e) {
    return {
      ok: false,
      error: `failed to parse node's "${NodeIDAnnotation}" annotation value (${JSON.stringify(raw)}) err=${e instanceof Error ? e.message : String(e)}`,
    };
  }
}

/**
 * InstallCSIDriver's Node half (updateNodeIDInNode, updateTopologyLabels): the driver's node ID in the
 * node-ID annotation and the topology segments as labels; a segment whose label the Node already has with
 * another value is a collision and stops the install, as on a kubelet.
 */
export function installDriverToNode(node: NodeMeta, driverName: string, info: CSINodeInfo): NodeMetaPatch {
  if (info.nodeID === '') {
    return { ok: false, error: 'error adding CSI driver node info: driverNodeID must not be empty' };
  }
  const labels: Record<string, string> = {};
  for (const [k, v] of Object.entries(info.topology)) {
    const cur = node.labels?.[k];
    if (cur !== undefined && cur !== v) {
      return {
        ok: false,
        error: `error updating Node object with CSI driver node info: detected topology value collision: driver reported "${k}":"${v}" but existing label is "${k}":"${cur}"`,
      };
    }
    if (cur === undefined) labels[k] = v;
  }
  const ids = nodeIDMap(node);
  if (!ids.ok)
    return { ok: false, error: `error updating Node object with CSI driver node info: ${ids.error}` };
  const annotations: Record<string, string> = {};
  if (ids.map[driverName] !== info.nodeID) {
    annotations[NodeIDAnnotation] = JSON.stringify({ ...ids.map, [driverName]: info.nodeID });
  }
  const metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } = {};
  if (Object.keys(labels).length > 0) metadata.labels = labels;
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  return Object.keys(metadata).length > 0 ? { ok: true, patch: { metadata } } : { ok: true };
}

/**
 * UninstallCSIDriver's Node half (removeNodeIDFromNode): the driver's node ID out of the annotation, the
 * annotation gone with its last driver. Topology labels stay, as on a kubelet.
 */
export function uninstallDriverFromNode(node: NodeMeta, driverName: string): NodeMetaPatch {
  const ids = nodeIDMap(node);
  if (!ids.ok)
    return { ok: false, error: `error removing CSI driver node info from Node object ${ids.error}` };
  if (!(driverName in ids.map)) return { ok: true };
  const rest = Object.fromEntries(Object.entries(ids.map).filter(([k]) => k !== driverName));
  const value = Object.keys(rest).length === 0 ? null : JSON.stringify(rest);
  return { ok: true, patch: { metadata: { annotations: { [NodeIDAnnotation]: value } } } };
}

/** A plugin version as utilversion.ParseGeneric reads it: `[v]X.Y[.Z]`. */
function parseGeneric(v: string): number[] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?$/.exec(v.trim());
  if (!m) return undefined;
  return [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
}

function less(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  return false;
}

/**
 * The CSI RegistrationHandler's validateVersions: the highest version of major 1 or less the driver names,
 * and refusal when a driver of that name is registered with a version at least as high.
 */
export function validateCSIVersions(
  caller: 'ValidatePlugin' | 'RegisterPlugin',
  driverName: string,
  versions: readonly string[],
  registered: string | undefined,
): { ok: true; highest: string } | { ok: false; error: string } {
  if (versions.length === 0) {
    return {
      ok: false,
      error: `kubernetes.io/csi: ${caller} for CSI driver "${driverName}" failed. Plugin returned an empty list for supported versions`,
    };
  }
  let best: number[] | undefined;
  for (const v of versions) {
    const p = parseGeneric(v);
    if (!p || (p[0] ?? 0) > 1) continue;
    if (!best || less(best, p)) best = p;
  }
  if (!best) {
    return {
      ok: false,
      error: `kubernetes.io/csi: ${caller} for CSI driver "${driverName}" failed. None of the versions specified ${JSON.stringify(versions.join(' '))} are supported`,
    };
  }
  const highest = best.join('.');
  const have = registered !== undefined ? parseGeneric(registered) : undefined;
  if (have && !less(have, best)) {
    return {
      ok: false,
      error: `kubernetes.io/csi: ${caller} for CSI driver "${driverName}" failed. Another driver with the same name is already registered with a higher supported version: "${registered}"`,
    };
  }
  return { ok: true, highest };
}

/** storage.k8s.io/v1 CSIDriver, the field the CSI node updater reads. */
export interface CSIDriverObject {
  spec?: { nodeAllocatableUpdatePeriodSeconds?: number | null };
}

/**
 * getNodeAllocatableUpdatePeriod (MutableCSINodeAllocatableCount): how often a registered driver's
 * NodeGetInfo is asked again to refresh its CSINode allocatable count, in ms; 0 when the CSIDriver sets no
 * period (or there is no CSIDriver), which turns the refresh off.
 */
export function nodeAllocatableUpdatePeriodMs(driver: CSIDriverObject | undefined): number {
  const s = driver?.spec?.nodeAllocatableUpdatePeriodSeconds;
  return typeof s === 'number' && s > 0 ? s * 1000 : 0;
}
