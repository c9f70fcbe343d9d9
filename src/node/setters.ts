/**
 * Node status as a list of small setters (kubelet: nodestatus/setters.go). Each setter takes its inputs as
 * values and turns a status into the next one; adding a field is adding a setter. `computeNodeStatus` runs
 * them in order; `nodeStatusChanged` tells whether a write is due. Pure: time arrives as `now`.
 */
import type { NodeAddress, NodeCondition, NodeStatus, NodeSystemInfo } from '../api/node.js';
import type { RuntimeFeatures, RuntimeHandler } from '../runtime/types.js';
import { parseQuantityNano } from '../util/quantity.js';
import { memoByIdentity } from '../util/memo.js';

export type Setter = (status: NodeStatus, now: string) => NodeStatus;

/** InternalIP then Hostname, the order the API server tries when it dials the node. */
export function nodeAddresses(internalIP: string, hostname: string): Setter {
  return (s) => {
    const addresses: NodeAddress[] = [
      { type: 'InternalIP', address: internalIP },
      { type: 'Hostname', address: hostname },
    ];
    return { ...s, addresses };
  };
}

/**
 * Capacity and allocatable as quantity strings (allocatable = capacity minus reservations), as the kubelet's
 * MachineInfo setter: extended resources that someone else advertised in the Node's capacity (a PATCH of
 * nodes/status, the documented way to advertise one) stay there, and allocatable holds every resource of
 * capacity (an extended resource nobody reserves: all of it). Extended resources gone from capacity leave
 * allocatable too.
 */
export function machineInfo(
  capacity: Record<string, string>,
  allocatable: Record<string, string>,
  devicePlugins?: DevicePluginResources,
): Setter {
  return (s) => {
    const cap: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.capacity ?? {})) if (isExtendedResourceName(k)) cap[k] = String(v);
    Object.assign(cap, capacity);
    // The device manager's resources (kubelet GetCapacity); a removed one stays at 0, which tells it was a
    // device plugin's.
    if (devicePlugins) {
      Object.assign(cap, devicePlugins.capacity);
      for (const k of devicePlugins.removed) if (!(k in devicePlugins.capacity)) cap[k] = '0';
    }
    const alloc: Record<string, string> = {};
    for (const [k, v] of Object.entries(cap)) alloc[k] = allocatable[k] ?? devicePlugins?.allocatable[k] ?? v;
    return { ...s, capacity: cap, allocatable: alloc };
  };
}

/**
 * The device manager's resources for the node status: capacity counts every device, allocatable the healthy
 * ones, and `removed` names resources whose plugin has gone for good.
 */
export interface DevicePluginResources {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  removed: readonly string[];
}

/**
 * v1helper.IsExtendedResourceName: a fully qualified name outside the kubernetes.io domain (and not a
 * requests.-prefixed quota name); a node's own resources (cpu, memory, pods, ephemeral-storage, hugepages-*)
 * are not.
 */
export function isExtendedResourceName(name: string): boolean {
  if (!name.includes('/') || name.startsWith('requests.')) return false;
  const domain = name.slice(0, name.indexOf('/'));
  return domain !== 'kubernetes.io' && !domain.endsWith('.kubernetes.io');
}

/**
 * nodeInfo as `info` says. Its `swap` (NodeSwap) is written only for a host with swap and never cleared, as
 * the kubelet's MachineInfo setter leaves a Node's earlier value when the host reports none.
 */
export function versionInfo(info: NodeSystemInfo): Setter {
  return (s) => {
    const nodeInfo = { ...info };
    if (nodeInfo.swap === undefined && s.nodeInfo?.swap) nodeInfo.swap = s.nodeInfo.swap;
    return { ...s, nodeInfo };
  };
}

/**
 * kubelet RuntimeHandlers: each handler the runtime reports, with both features stated. A runtime that reports
 * none (containerd 1.6) leaves the list empty, which the API leaves out: a list written earlier is removed
 * (null in the patch).
 */
export function runtimeHandlers(handlers: readonly RuntimeHandler[]): Setter {
  return (s) => {
    if (handlers.length === 0) {
      if (s.runtimeHandlers === undefined) return s;
      const { runtimeHandlers: _old, ...rest } = s;
      return { ...rest, runtimeHandlers: null };
    }
    return {
      ...s,
      runtimeHandlers: handlers.map((h) => ({
        name: h.name,
        features: { recursiveReadOnlyMounts: h.recursiveReadOnlyMounts, userNamespaces: h.userNamespaces },
      })),
    };
  };
}

/**
 * kubelet NodeFeatures: what the runtime supports as a whole. A runtime that reports no features (containerd
 * 1.6) leaves the field as it was, as the kubelet does; admission then reads it as unsupported.
 */
export function nodeFeatures(features: RuntimeFeatures | undefined): Setter {
  return (s) =>
    features ? { ...s, features: { supplementalGroupsPolicy: features.supplementalGroupsPolicy } } : s;
}

export function daemonEndpoints(port: number): Setter {
  return (s) => ({ ...s, daemonEndpoints: { kubeletEndpoint: { Port: port } } });
}

/**
 * Replaces (or adds) a condition, keeping its lastTransitionTime unless the status flipped. The heartbeat
 * time is always `now`.
 */
export function setCondition(
  conditions: NodeCondition[] | undefined,
  next: Omit<NodeCondition, 'lastHeartbeatTime' | 'lastTransitionTime'>,
  now: string,
): NodeCondition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const prev = i >= 0 ? list[i] : undefined;
  const cond: NodeCondition = {
    ...next,
    lastHeartbeatTime: now,
    lastTransitionTime: prev && prev.status === next.status ? (prev.lastTransitionTime ?? now) : now,
  };
  if (i >= 0) list[i] = cond;
  else list.push(cond);
  return list;
}

/**
 * Ready: True with KubeletReady when nothing is wrong, else False with KubeletNotReady and the problems
 * joined with ", " (runtime down, network not ready, PLEG unhealthy...), as the kubelet words it.
 */
export function readyCondition(errors: string[]): Setter {
  return (s, now) => {
    const ready = errors.length === 0;
    return {
      ...s,
      conditions: setCondition(
        s.conditions,
        ready
          ? {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              message: 'kubelet is posting ready status',
            }
          : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: errors.join(', ') },
        now,
      ),
    };
  };
}

/** The kubelet's words for each pressure condition, without pressure and with it. */
const pressureWords: Record<
  NodePressure,
  { False: { reason: string; message: string }; True: { reason: string; message: string } }
> = {
  MemoryPressure: {
    False: { reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
    True: { reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' },
  },
  DiskPressure: {
    False: { reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
    True: { reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' },
  },
  PIDPressure: {
    False: { reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
    True: { reason: 'KubeletHasInsufficientPID', message: 'kubelet has insufficient PID available' },
  },
};

/** A node pressure condition type (the eviction manager's node conditions). */
export type NodePressure = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/**
 * The three pressure conditions a kubelet reports (MemoryPressureCondition, DiskPressureCondition,
 * PIDPressureCondition): True for those the eviction manager reports in `pressure`, False otherwise, with
 * the kubelet's reasons and messages; lastTransitionTime moves only on a flip.
 */
export function pressureConditions(pressure: readonly string[] = []): Setter {
  return (s, now) => {
    let conditions = s.conditions;
    for (const type of ['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const) {
      const status = pressure.includes(type) ? 'True' : 'False';
      conditions = setCondition(conditions, { type, status, ...pressureWords[type][status] }, now);
    }
    return { ...s, conditions: conditions ?? [] };
  };
}

/** Condition order as kubectl shows it for a kubelet's node. */
const conditionOrder = ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'];

export function computeNodeStatus(
  previous: NodeStatus | undefined,
  setters: Setter[],
  now: string,
): NodeStatus {
  let s: NodeStatus = { ...(previous ?? {}) };
  for (const set of setters) s = set(s, now);
  if (s.conditions) {
    s.conditions = [...s.conditions].sort(
      (a, b) => (conditionOrder.indexOf(a.type) >>> 0) - (conditionOrder.indexOf(b.type) >>> 0),
    );
  }
  return s;
}

/** Canonical form of a quantity, so "1Gi" and "1073741824" compare equal. */
function canonicalQuantity(q: string): string {
  try {
    return parseQuantityNano(q).toString();
  } catch {
    return q;
  }
}

/**
 * A canonical form for comparison: object keys sorted (the API server answers in Go field order, we build
 * in ours), zero values dropped (Go omits them), quantities by value, conditions by type without heartbeats.
 */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) {
    const items = v.map(canonical).filter((x) => x !== undefined);
    return items.length ? items : undefined;
  }
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const c = canonical((v as Record<string, unknown>)[k]);
      if (c !== undefined) out[k] = c;
    }
    return Object.keys(out).length ? out : undefined;
  }
  return v === null || v === '' ? undefined : v;
}

function comparable(s: NodeStatus | undefined): string {
  if (!s) return '';
  const quantities = (m: Record<string, string> | undefined) =>
    m && Object.fromEntries(Object.entries(m).map(([k, q]) => [k, canonicalQuantity(String(q))]));
  const conditions = [...(s.conditions ?? [])]
    .map(({ lastHeartbeatTime: _h, ...rest }) => rest)
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
  return JSON.stringify(
    canonical({
      ...s,
      capacity: quantities(s.capacity),
      allocatable: quantities(s.allocatable),
      conditions,
    }) ?? null,
  );
}

/**
 * Whether a node status write is due: something other than heartbeat times changed, or the last report
 * is older than the report frequency (kubelet: nodeStatusReportFrequency, 5 minutes, since the Lease is
 * the heartbeat). `reported` is usually the Node as read back from the API server, so the comparison is
 * semantic: key order, omitted zero values, quantity spelling and condition order do not count.
 */
export function nodeStatusChanged(
  reported: NodeStatus | undefined,
  next: NodeStatus,
  lastReportMs: number | undefined,
  nowMs: number,
  reportFrequencyMs = 5 * 60_000,
): boolean {
  if (lastReportMs === undefined || nowMs - lastReportMs >= reportFrequencyMs) return true;
  return reportedComparable(reported) !== comparable(next);
}

/**
 * The reported status's comparable form, once per object: the Node as last read is the node informer's
 * object, the same until the Node changes, and every node compares against it every 10 s.
 */
const reportedForm = memoByIdentity((s: NodeStatus) => comparable(s));
const reportedComparable = (s: NodeStatus | undefined): string => (s ? reportedForm(s) : comparable(s));
