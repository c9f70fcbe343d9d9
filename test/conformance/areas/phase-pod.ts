/**
 * Building the inputs of the status algorithms from a case: pods (inline or from `fixtures.pods`),
 * API/cached pod statuses, runtime views and reason caches.
 */
import type {
  Container,
  EphemeralContainer,
  Pod,
  PodCondition,
  PodStatus,
  Probe,
} from '../../../src/api/core.js';
import { hashContainer } from '../../../src/kubelet/container/helpers.js';
import {
  asContainerID,
  asPodUID,
  asSandboxID,
  type ContainerState as RuntimeState,
  type KubeContainerStatus,
  type RuntimePodStatus,
  type SandboxStatus,
} from '../../../src/kubelet/container/types.js';
import { ReasonCache } from '../../../src/kubelet/reasoncache.js';
import { Uninterpretable, type CaseFile } from '../types.js';
import {
  bool,
  checkKeys,
  isRecord,
  parseStatusList,
  parseTimeSeconds,
  timeToRFC3339,
} from './phase-tokens.js';
import { POD_ORIGIN_KEYS, POD_STATUS_KEYS } from './case-keys.js';

export const CASE_POD_UID = 'case-pod-uid';

const CONTAINER_KEYS = [
  'name',
  'restartable',
  'restartPolicy',
  'livenessProbe',
  'readinessProbe',
  'startupProbe',
  'image',
  'resources',
];

function probe(v: unknown, where: string): Probe | undefined {
  if (v === undefined || v === false || v === null) return undefined;
  if (v === true) return { exec: { command: ['true'] } };
  if (isRecord(v)) return v as Probe;
  throw new Uninterpretable(`${where}: not a probe: ${JSON.stringify(v)}`);
}

/** A container given as a name or as {name, restartable?, restartPolicy?, *Probe?, image?, resources?}. */
export function parseContainer(v: unknown, where: string): Container {
  if (typeof v === 'string' || typeof v === 'number') return { name: String(v) };
  if (!isRecord(v) || typeof v.name !== 'string')
    throw new Uninterpretable(`${where}: not a container: ${JSON.stringify(v)}`);
  checkKeys(v, CONTAINER_KEYS, where);
  const c: Container = { name: v.name };
  const restartable = v.restartable === undefined ? false : bool(v.restartable, `${where}.restartable`);
  if (v.restartPolicy !== undefined && v.restartPolicy !== null) {
    if (v.restartPolicy !== 'Always')
      throw new Uninterpretable(`${where}: container restartPolicy ${String(v.restartPolicy)}`);
    c.restartPolicy = 'Always';
  }
  if (restartable) c.restartPolicy = 'Always';
  for (const k of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const p = probe(v[k], `${where}.${k}`);
    if (p) c[k] = p;
  }
  if (typeof v.image === 'string') c.image = v.image;
  if (isRecord(v.resources)) c.resources = v.resources as Container['resources'];
  return c;
}

export function parseContainers(v: unknown, where: string): Container[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Uninterpretable(`${where}: expected a list of containers`);
  return v.map((c, i) => parseContainer(c, `${where}[${i}]`));
}

function restartPolicy(v: unknown, where: string): Pod['spec']['restartPolicy'] {
  if (v === undefined || v === null) return undefined;
  if (v === 'Always' || v === 'OnFailure' || v === 'Never') return v;
  throw new Uninterpretable(`${where}: unknown restartPolicy ${JSON.stringify(v)}`);
}

function readinessGates(v: unknown, where: string): { conditionType: string }[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new Uninterpretable(`${where}: expected a list`);
  return v.map((g, i) => {
    if (typeof g === 'string') return { conditionType: g };
    if (isRecord(g) && typeof g.conditionType === 'string') return { conditionType: g.conditionType };
    throw new Uninterpretable(`${where}[${i}]: not a readiness gate`);
  });
}

export function parseConditions(v: unknown, where: string): PodCondition[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new Uninterpretable(`${where}: expected a list of conditions`);
  return v.map((c, i) => {
    if (!isRecord(c) || typeof c.type !== 'string')
      throw new Uninterpretable(`${where}[${i}]: not a condition`);
    checkKeys(
      c,
      ['type', 'status', 'reason', 'message', 'lastTransitionTime', 'lastProbeTime'],
      `${where}[${i}]`,
    );
    if (c.status !== 'True' && c.status !== 'False' && c.status !== 'Unknown') {
      throw new Uninterpretable(`${where}[${i}]: condition status ${JSON.stringify(c.status)}`);
    }
    const out: PodCondition = { type: c.type, status: c.status };
    if (typeof c.reason === 'string') out.reason = c.reason;
    if (typeof c.message === 'string') out.message = c.message;
    if (c.lastTransitionTime !== undefined) {
      out.lastTransitionTime = timeToRFC3339(c.lastTransitionTime, `${where}[${i}].lastTransitionTime`);
    }
    return out;
  });
}

/** A pod status in case form: {phase, reason, message, conditions, (init|ephemeral)ContainerStatuses}. */
export function parsePodStatus(v: unknown, pod: Pod, where: string): PodStatus {
  if (v === undefined || v === null) return {};
  if (!isRecord(v)) throw new Uninterpretable(`${where}: not a pod status`);
  checkKeys(v, [...POD_STATUS_KEYS, 'qosClass'], where);
  const s: PodStatus = {};
  if (v.phase !== undefined && v.phase !== null) {
    if (!['Pending', 'Running', 'Succeeded', 'Failed', 'Unknown'].includes(String(v.phase))) {
      throw new Uninterpretable(`${where}.phase: ${JSON.stringify(v.phase)}`);
    }
    s.phase = v.phase as PodStatus['phase'];
  }
  if (typeof v.reason === 'string') s.reason = v.reason;
  if (typeof v.message === 'string') s.message = v.message;
  if (v.conditions !== undefined) s.conditions = parseConditions(v.conditions, `${where}.conditions`);
  if (typeof v.qosClass === 'string') s.qosClass = v.qosClass as PodStatus['qosClass'];
  const names = (list: Container[] | undefined) => (list ?? []).map((c) => c.name);
  if (v.containerStatuses !== undefined) {
    s.containerStatuses = parseStatusList(
      v.containerStatuses,
      names(pod.spec.containers),
      `${where}.containerStatuses`,
    );
  }
  if (v.initContainerStatuses !== undefined) {
    s.initContainerStatuses = parseStatusList(
      v.initContainerStatuses,
      names(pod.spec.initContainers),
      `${where}.initContainerStatuses`,
    );
  }
  if (v.ephemeralContainerStatuses !== undefined) {
    s.ephemeralContainerStatuses = parseStatusList(
      v.ephemeralContainerStatuses,
      names(pod.spec.ephemeralContainers),
      `${where}.ephemeralContainerStatuses`,
    );
  }
  return s;
}

const POD_KEYS = [
  ...POD_ORIGIN_KEYS,
  'containers',
  'initContainers',
  'ephemeralContainers',
  'readinessGates',
  'apiStatus',
  'status',
  'uid',
  'name',
  'namespace',
];

/**
 * A pod from a case: inline containers, or a fixture from the case file plus overrides (containers,
 * readiness gates, restart policy, host network...). `apiStatus` is the API server's status of the pod. `change` is descriptive only (the schema says so).
 */
export function buildPod(v: unknown, file: CaseFile, where: string): Pod {
  if (!isRecord(v)) throw new Uninterpretable(`${where}: not a pod`);
  checkKeys(v, POD_KEYS, where);
  let base: Record<string, unknown> = {};
  if (v.fixture !== undefined) {
    const f = typeof v.fixture === 'string' ? file.fixtures.pods[v.fixture] : undefined;
    if (!f) throw new Uninterpretable(`${where}: unknown fixture ${JSON.stringify(v.fixture)}`);
    checkKeys(
      f,
      [
        'initContainers',
        'containers',
        'ephemeralContainers',
        'restartPolicy',
        'hostNetwork',
        'readinessGates',
      ],
      `fixture ${String(v.fixture)}`,
    );
    base = f;
  }
  const pick = (k: string) => (v[k] !== undefined ? v[k] : base[k]);
  const pod: Pod = {
    metadata: {
      uid: typeof v.uid === 'string' ? v.uid : CASE_POD_UID,
      name: typeof v.name === 'string' ? v.name : 'pod',
      namespace: typeof v.namespace === 'string' ? v.namespace : 'default',
    },
    spec: {
      containers: parseContainers(pick('containers'), `${where}.containers`),
      initContainers: parseContainers(pick('initContainers'), `${where}.initContainers`),
    },
  };
  const eph: EphemeralContainer[] = parseContainers(
    pick('ephemeralContainers'),
    `${where}.ephemeralContainers`,
  );
  if (v.addEphemeral !== undefined) {
    const added = Array.isArray(v.addEphemeral) ? v.addEphemeral : [v.addEphemeral];
    eph.push(...parseContainers(added, `${where}.addEphemeral`));
  }
  if (eph.length > 0) pod.spec.ephemeralContainers = eph;
  const policy = restartPolicy(pick('restartPolicy'), `${where}.restartPolicy`);
  if (policy) pod.spec.restartPolicy = policy;
  const hostNetwork = pick('hostNetwork');
  if (hostNetwork !== undefined && hostNetwork !== null)
    pod.spec.hostNetwork = bool(hostNetwork, `${where}.hostNetwork`);
  const gates = readinessGates(pick('readinessGates'), `${where}.readinessGates`);
  if (gates) pod.spec.readinessGates = gates;
  if (v.deletionRequested !== undefined && bool(v.deletionRequested, `${where}.deletionRequested`)) {
    pod.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
  }
  if (v.apiStatus !== undefined && v.status !== undefined)
    throw new Uninterpretable(`${where}: both apiStatus and status`);
  // `status` and `apiStatus` both name the API server's status of the pod.
  const api = v.apiStatus ?? v.status;
  if (api !== undefined)
    pod.status = parsePodStatus(api, pod, `${where}.${v.apiStatus !== undefined ? 'apiStatus' : 'status'}`);
  return pod;
}

const RUNTIME_STATES: readonly RuntimeState[] = ['created', 'running', 'exited', 'unknown'];

function runtimeContainer(v: unknown, pod: Pod, where: string): KubeContainerStatus {
  if (!isRecord(v) || typeof v.name !== 'string')
    throw new Uninterpretable(`${where}: not a runtime container`);
  checkKeys(
    v,
    [
      'name',
      'id',
      'state',
      'exitCode',
      'reason',
      'message',
      'specChanged',
      'startedAt',
      'finishedAt',
      'createdAt',
      'restartCount',
      'image',
      'sandboxID',
    ],
    where,
  );
  if (!RUNTIME_STATES.includes(v.state as RuntimeState)) {
    throw new Uninterpretable(`${where}: unknown runtime state ${JSON.stringify(v.state)}`);
  }
  const spec = [
    ...(pod.spec.initContainers ?? []),
    ...pod.spec.containers,
    ...(pod.spec.ephemeralContainers ?? []),
  ].find((c) => c.name === v.name) ?? { name: v.name };
  const changed = v.specChanged === undefined ? false : bool(v.specChanged, `${where}.specChanged`);
  const r: KubeContainerStatus = {
    // The schema carries no runtime type; the upstream fixtures use an empty one (IDs read "://<id>").
    id: asContainerID(v.id === undefined ? '' : String(v.id)),
    runtimeType: '',
    name: v.name,
    state: v.state as RuntimeState,
    restartCount: v.restartCount === undefined ? 0 : Number(v.restartCount),
    hash: changed ? `${hashContainer(spec)}-changed` : hashContainer(spec),
  };
  if (v.exitCode !== undefined) r.exitCode = Number(v.exitCode);
  if (typeof v.reason === 'string') r.reason = v.reason;
  if (typeof v.message === 'string') r.message = v.message;
  if (typeof v.image === 'string') r.image = v.image;
  if (typeof v.sandboxID === 'string') r.sandboxID = asSandboxID(v.sandboxID);
  for (const k of ['startedAt', 'finishedAt', 'createdAt'] as const) {
    if (v[k] !== undefined && v[k] !== null) r[k] = parseTimeSeconds(v[k], `${where}.${k}`) * 1000;
  }
  return r;
}

function sandbox(v: unknown, where: string): SandboxStatus {
  if (!isRecord(v)) throw new Uninterpretable(`${where}: not a sandbox`);
  checkKeys(v, ['id', 'state', 'attempt', 'ip', 'netns', 'additionalIPs'], where);
  if (v.state !== 'ready' && v.state !== 'notready')
    throw new Uninterpretable(`${where}: sandbox state ${JSON.stringify(v.state)}`);
  const netns = v.netns ?? 'pod';
  if (netns !== 'pod' && netns !== 'node')
    throw new Uninterpretable(`${where}: netns ${JSON.stringify(v.netns)}`);
  const s: SandboxStatus = {
    id: asSandboxID(String(v.id ?? '')),
    state: v.state,
    attempt: v.attempt === undefined ? 0 : Number(v.attempt),
    ip: v.ip === null || v.ip === undefined ? null : String(v.ip),
    netns,
  };
  if (Array.isArray(v.additionalIPs)) s.additionalIPs = v.additionalIPs.map(String);
  return s;
}

/** The runtime view from {sandboxes?, containers?}; pod IPs are the newest sandbox's when it is ready. */
export function buildRuntime(v: unknown, pod: Pod, where: string): RuntimePodStatus {
  if (v === undefined || v === null) v = {};
  if (!isRecord(v)) throw new Uninterpretable(`${where}: not a runtime view`);
  checkKeys(v, ['sandboxes', 'containers'], where);
  const list = (x: unknown, what: string) => {
    if (x === undefined || x === null) return [];
    if (!Array.isArray(x)) throw new Uninterpretable(`${where}.${what}: expected a list`);
    return x;
  };
  const sandboxes = list(v.sandboxes, 'sandboxes').map((s, i) => sandbox(s, `${where}.sandboxes[${i}]`));
  const containers = list(v.containers, 'containers').map((c, i) =>
    runtimeContainer(c, pod, `${where}.containers[${i}]`),
  );
  const newest = sandboxes[0];
  const ips =
    newest && newest.state === 'ready' && newest.ip ? [newest.ip, ...(newest.additionalIPs ?? [])] : [];
  return {
    uid: asPodUID(pod.metadata.uid ?? CASE_POD_UID),
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
    sandboxes,
    containers,
    ips,
  };
}

/** A reason cache from {containerName: reason | {reason, message?}}. */
export function buildReasonCache(v: unknown, pod: Pod, where: string): ReasonCache {
  const cache = new ReasonCache();
  if (v === undefined || v === null) return cache;
  if (!isRecord(v)) throw new Uninterpretable(`${where}: expected a map container -> reason`);
  for (const [name, item] of Object.entries(v)) {
    if (typeof item === 'string') {
      cache.add(pod.metadata.uid ?? '', name, item, '');
    } else if (isRecord(item) && typeof item.reason === 'string') {
      checkKeys(item, ['reason', 'message'], `${where}.${name}`);
      cache.add(
        pod.metadata.uid ?? '',
        name,
        item.reason,
        typeof item.message === 'string' ? item.message : '',
      );
    } else {
      throw new Uninterpretable(`${where}.${name}: not a reason`);
    }
  }
  return cache;
}
