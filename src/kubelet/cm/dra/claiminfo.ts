/**
 * The DRA manager's decisions (kubelet: pkg/kubelet/cm/dra manager.go, claiminfo.go, state/): which
 * ResourceClaim a pod's claim names, whether the claim may be prepared for the pod, which drivers to call, what
 * the claim info cache and its checkpoint hold, which CDI devices a container gets, and which claims a
 * terminated pod leaves to unprepare. Pure: manager.ts does the API reads, the gRPC calls and the file.
 */
import type { Container, Pod } from '../../../api/core.js';
import {
  containerExtendedResourceRequests,
  containerUsesExtendedResourceClaim,
  extendedResourceClaimStatus,
} from './extendedresource.js';

/** A pod's spec.resourceClaims entry (core/v1 PodResourceClaim). */
export interface PodResourceClaim {
  name: string;
  resourceClaimName?: string;
  resourceClaimTemplateName?: string;
}

/** A pod's status.resourceClaimStatuses entry: the claim generated from a template. */
export interface PodResourceClaimStatus {
  name: string;
  resourceClaimName?: string;
}

/** A container's resources.claims entry. */
export interface ContainerResourceClaim {
  name: string;
  request?: string;
}

/** The parts of a resource.k8s.io/v1 ResourceClaim the kubelet reads. */
export interface ResourceClaim {
  metadata: {
    name?: string;
    namespace?: string;
    uid?: string;
    ownerReferences?: { uid?: string; controller?: boolean }[];
  };
  status?: {
    allocation?: {
      devices?: {
        results?: {
          request?: string;
          driver?: string;
          pool?: string;
          device?: string;
          /** DRAOptionalNodeOperations (alpha, off in v1.37): node operations the driver asks to skip. */
          skipNodeOperations?: string[];
        }[];
      };
    };
    reservedFor?: { resource?: string; name?: string; uid?: string }[];
  };
}

/** One device a driver prepared (state.Device). */
export interface PreparedDevice {
  requestNames: string[];
  poolName: string;
  deviceName: string;
  cdiDeviceIDs: string[];
}

/** One claim as the cache and its checkpoint hold it (state.ClaimInfoState plus the prepared flag). */
export interface ClaimInfoState {
  claimUID: string;
  claimName: string;
  namespace: string;
  /** The pods that use it on this node. */
  podUIDs: string[];
  /** By driver name: the devices it prepared (empty until NodePrepareResources answered). */
  driverState: Record<string, { devices: PreparedDevice[] }>;
  /** NodePrepareResources succeeded for every driver of the claim. */
  prepared: boolean;
}

export function podResourceClaims(pod: Pod): PodResourceClaim[] {
  const spec = pod.spec as { resourceClaims?: PodResourceClaim[] };
  return Array.isArray(spec.resourceClaims) ? spec.resourceClaims : [];
}

export function containerResourceClaims(container: Container): ContainerResourceClaim[] {
  const r = container.resources as { claims?: ContainerResourceClaim[] } | undefined;
  return Array.isArray(r?.claims) ? r.claims : [];
}

/**
 * The claims the DRA manager prepares for a pod: its own, then the scheduler's claim for its DRA extended
 * resources (status.extendedResourceClaimStatus), which is named, so its owner is not checked.
 */
export function podClaimsToPrepare(pod: Pod): PodResourceClaim[] {
  const own = podResourceClaims(pod);
  const extended = extendedResourceClaimStatus(pod);
  return extended ? [...own, { name: '', resourceClaimName: extended.resourceClaimName }] : own;
}

function podRef(pod: Pod): string {
  return `${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
}

/**
 * resourceclaim.Name: the ResourceClaim a pod claim stands for. A template's claim is the one the pod's
 * status names; `name: undefined` when that status entry has no name (no claim was needed). mustCheckOwner:
 * a generated claim must be owned by the pod.
 */
export function podClaimName(
  pod: Pod,
  podClaim: PodResourceClaim,
): { ok: true; name: string | undefined; mustCheckOwner: boolean } | { ok: false; error: string } {
  if (podClaim.resourceClaimName)
    return { ok: true, name: podClaim.resourceClaimName, mustCheckOwner: false };
  if (podClaim.resourceClaimTemplateName) {
    const statuses = (pod.status?.resourceClaimStatuses ?? []) as PodResourceClaimStatus[];
    const st = statuses.find((s) => s?.name === podClaim.name);
    if (st) return { ok: true, name: st.resourceClaimName || undefined, mustCheckOwner: true };
    return { ok: false, error: `pod "${podRef(pod)}": ResourceClaim not created yet` };
  }
  return {
    ok: false,
    error: `pod "${podRef(pod)}", spec.resourceClaim ${JSON.stringify(podClaim.name)}: none of the supported fields are set`,
  };
}

/**
 * The checks before a claim is prepared for a pod (resourceclaim.IsForPod, IsReservedForPod,
 * newClaimInfoFromClaim): owned by the pod when generated, reserved for it, allocated. Returns the drivers the
 * claim's allocation names, or the kubelet's error.
 */
export function checkClaimForPod(
  pod: Pod,
  claim: ResourceClaim,
  mustCheckOwner: boolean,
): { ok: true; drivers: string[] } | { ok: false; error: string } {
  const cname = claim.metadata.name ?? '';
  const cns = claim.metadata.namespace ?? '';
  const podUID = pod.metadata.uid ?? '';
  if (mustCheckOwner) {
    if (cns !== (pod.metadata.namespace ?? '')) {
      return {
        ok: false,
        error: `ResourceClaim ${cns}/${cname} is not in the same namespace as Pod ${podRef(pod)}`,
      };
    }
    const owned = (claim.metadata.ownerReferences ?? []).some(
      (o) => o.controller === true && o.uid === podUID,
    );
    if (!owned) {
      return {
        ok: false,
        error: `ResourceClaim ${cns}/${cname} was not created for Pod ${podRef(pod)} (Pod is not owner)`,
      };
    }
  }
  if (!(claim.status?.reservedFor ?? []).some((r) => r.uid === podUID)) {
    return {
      ok: false,
      error: `pod ${pod.metadata.name ?? ''} (${podUID}) is not allowed to use ResourceClaim ${cname} (${claim.metadata.uid ?? ''})`,
    };
  }
  const allocation = claim.status?.allocation;
  if (!allocation) return { ok: false, error: `ResourceClaim ${cname}: not allocated` };
  const drivers = new Set<string>();
  for (const r of allocation.devices?.results ?? []) if (r.driver) drivers.add(r.driver);
  if ([...drivers].some((d) => skipsNodeOperations(allocation.devices?.results ?? [], d))) {
    return { ok: false, error: `ResourceClaim ${cname}: ${OptionalNodeOperationsOff}` };
  }
  return { ok: true, drivers: [...drivers].sort() };
}

/** The kubelet's refusal of skipped node operations while DRAOptionalNodeOperations is off (its v1.37 default). */
export const OptionalNodeOperationsOff = 'DRAOptionalNodeOperations feature gate is disabled on kubelet';

/**
 * Whether the driver's results skip some node operation on every one of its devices (computeDriverStates: an
 * operation counts when each result names it or `All`), which a kubelet without the gate refuses.
 */
function skipsNodeOperations(
  results: readonly { driver?: string; skipNodeOperations?: string[] }[],
  driver: string,
): boolean {
  const mine = results.filter((r) => r.driver === driver);
  const counts = new Map<string, number>();
  for (const r of mine) {
    const ops = r.skipNodeOperations ?? [];
    for (const op of ops.includes('All') ? ['All'] : new Set(ops)) counts.set(op, (counts.get(op) ?? 0) + 1);
  }
  const all = counts.get('All') ?? 0;
  if (all === mine.length && all > 0) return true;
  return [...counts].some(([op, n]) => op !== 'All' && n + all === mine.length);
}

/** A new cache entry for a checked claim (newClaimInfoFromClaim): no pod yet, nothing prepared. */
export function newClaimInfo(claim: ResourceClaim, drivers: readonly string[]): ClaimInfoState {
  return {
    claimUID: claim.metadata.uid ?? '',
    claimName: claim.metadata.name ?? '',
    namespace: claim.metadata.namespace ?? '',
    podUIDs: [],
    driverState: Object.fromEntries(drivers.map((d) => [d, { devices: [] }])),
    prepared: false,
  };
}

/** The claim info cache (claimInfoCache), by namespace/name; copied on write so checkpoints are snapshots. */
export class ClaimInfoCache {
  private readonly byKey = new Map<string, ClaimInfoState>();

  constructor(entries: readonly ClaimInfoState[] = []) {
    for (const e of entries) this.byKey.set(key(e.namespace, e.claimName), e);
  }

  get(namespace: string, name: string): ClaimInfoState | undefined {
    return this.byKey.get(key(namespace, name));
  }

  set(info: ClaimInfoState): void {
    this.byKey.set(key(info.namespace, info.claimName), info);
  }

  delete(namespace: string, name: string): void {
    this.byKey.delete(key(namespace, name));
  }

  entries(): ClaimInfoState[] {
    return [...this.byKey.values()];
  }

  /** Some claim references the pod (PodMightNeedToUnprepareResources). */
  hasPodReference(podUID: string): boolean {
    return this.entries().some((e) => e.podUIDs.includes(podUID));
  }

  claimNamesForPod(podUID: string): string[] {
    return this.entries()
      .filter((e) => e.podUIDs.includes(podUID))
      .map((e) => e.claimName)
      .sort();
  }
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * Adds a pod to a cache entry before anything is prepared (so a restart in between finds it to unprepare), or
 * the kubelet's error when the cached claim of that name is another one or is being unprepared.
 */
export function attachPod(
  existing: ClaimInfoState | undefined,
  fresh: ClaimInfoState,
  podUID: string,
  unpreparing: boolean,
): { ok: true; info: ClaimInfoState } | { ok: false; error: string } {
  if (!existing) return { ok: true, info: { ...fresh, podUIDs: [podUID] } };
  if (existing.claimUID !== fresh.claimUID) {
    return {
      ok: false,
      error: `old ResourceClaim with same name ${fresh.claimName} and different UID ${existing.claimUID} still exists (previous pod force-deleted?!)`,
    };
  }
  if (unpreparing) return { ok: false, error: `ResourceClaim ${fresh.claimName} is being unprepared` };
  const podUIDs = existing.podUIDs.includes(podUID) ? existing.podUIDs : [...existing.podUIDs, podUID];
  return { ok: true, info: { ...existing, podUIDs } };
}

/** The claims (by UID) to send one driver in one NodePrepareResources or NodeUnprepareResources call. */
export interface DriverBatch {
  driver: string;
  claims: { namespace: string; uid: string; name: string }[];
}

/** Groups claims by driver, in driver order (the kubelet's batches per plugin). */
export function batchesByDriver(infos: readonly ClaimInfoState[]): DriverBatch[] {
  const m = new Map<string, DriverBatch>();
  for (const info of infos) {
    for (const driver of Object.keys(info.driverState).sort()) {
      const b = m.get(driver) ?? { driver, claims: [] };
      b.claims.push({ namespace: info.namespace, uid: info.claimUID, name: info.claimName });
      m.set(driver, b);
    }
  }
  return [...m.values()].sort((a, b) => (a.driver < b.driver ? -1 : a.driver > b.driver ? 1 : 0));
}

/** One claim's answer in a NodePrepareResources response. */
export interface PrepareResult {
  devices?: PreparedDevice[];
  error?: string;
}

/**
 * Checks one driver's NodePrepareResources (or Unprepare) answer against its batch: an answer for a claim not
 * asked, a claim's error, or claims left out are the kubelet's errors.
 */
export function checkDriverResponse(
  op: 'NodePrepareResources' | 'NodeUnprepareResources',
  batch: DriverBatch,
  answers: Readonly<Record<string, { error?: string }>>,
): { ok: true } | { ok: false; error: string } {
  for (const [uid, result] of Object.entries(answers)) {
    const claim = batch.claims.find((c) => c.uid === uid);
    if (!claim) return { ok: false, error: `${op} returned result for unknown claim UID ${uid}` };
    if (result.error) {
      return { ok: false, error: `${op} failed for ResourceClaim ${claim.name}: ${result.error}` };
    }
  }
  const unfinished = batch.claims.length - Object.keys(answers).length;
  if (unfinished !== 0) return { ok: false, error: `${op} skipped ${unfinished} ResourceClaims` };
  return { ok: true };
}

/**
 * Whether the container has anything for the DRA manager's GetResources: a claim it references, or a request of
 * the pod's extended resource claim mapped to it. The kubelet asks for every container; asking only these
 * spares a lock and a CDI spec read per container start.
 */
export function containerNeedsDynamicResources(pod: Pod, container: Container): boolean {
  return (
    containerResourceClaims(container).length > 0 || containerUsesExtendedResourceClaim(pod, container.name)
  );
}

/**
 * The CDI device IDs of one container (GetResources + cdiDevicesAsList): for each pod claim the container
 * references, the devices of the requests it names (a reference without a request takes every device of the
 * claim; a device without request names serves every request), then the extended resource claim's requests mapped to
 * the container. A claim not in the cache is the kubelet's internal error. Duplicates are kept out.
 */
export function containerCDIDevices(
  pod: Pod,
  container: Container,
  cache: Pick<ClaimInfoCache, 'get'>,
): { ok: true; devices: string[] } | { ok: false; error: string } {
  const byName = new Map<string, string[]>();
  for (const c of containerResourceClaims(container)) {
    byName.set(c.name, [...(byName.get(c.name) ?? []), c.request ?? '']);
  }
  const claimRequests: [string, string[]][] = [];
  for (const podClaim of podResourceClaims(pod)) {
    const requests = byName.get(podClaim.name);
    if (!requests) continue;
    const n = podClaimName(pod, podClaim);
    if (!n.ok) return n;
    if (n.name === undefined) continue;
    claimRequests.push([n.name, requests]);
  }
  // The extended resource claim: only the requests mapped to this container's DRA extended resources.
  const extended = containerExtendedResourceRequests(pod, container);
  if (extended && extended.requestNames.length > 0)
    claimRequests.push([extended.claimName, extended.requestNames]);
  const out: string[] = [];
  const namespace = pod.metadata.namespace ?? '';
  for (const [name, requests] of claimRequests) {
    const info = cache.get(namespace, name);
    if (!info) {
      return {
        ok: false,
        error: `internal error: unable to get claim info for ResourceClaim ${name} in namespace ${namespace}`,
      };
    }
    for (const request of requests) {
      for (const driver of Object.keys(info.driverState).sort()) {
        for (const d of info.driverState[driver]!.devices) {
          if (request === '' || d.requestNames.length === 0 || d.requestNames.includes(request)) {
            for (const id of d.cdiDeviceIDs) if (!out.includes(id)) out.push(id);
          }
        }
      }
    }
  }
  return { ok: true, devices: out };
}

/**
 * The cached claims one container uses (GetContainerClaimInfos, for the pod-resources API): the pod claims it
 * references, each once, in the pod's order, then the extended resource claim when a request of it is mapped to
 * the container. A claim not in the cache is the kubelet's error.
 */
export function containerClaimInfos(
  pod: Pod,
  container: Container,
  cache: Pick<ClaimInfoCache, 'get'>,
): { ok: true; infos: ClaimInfoState[] } | { ok: false; error: string } {
  const referenced = new Set(containerResourceClaims(container).map((c) => c.name));
  const names: string[] = [];
  for (const podClaim of podResourceClaims(pod)) {
    if (!referenced.has(podClaim.name)) continue;
    const n = podClaimName(pod, podClaim);
    if (!n.ok) return n;
    if (n.name !== undefined) names.push(n.name);
  }
  const namespace = pod.metadata.namespace ?? '';
  const infos: ClaimInfoState[] = [];
  for (const name of names) {
    const info = cache.get(namespace, name);
    if (!info) return { ok: false, error: `unable to get information for ResourceClaim ${name}` };
    infos.push(info);
  }
  const extended = extendedResourceClaimStatus(pod);
  if (extended && containerUsesExtendedResourceClaim(pod, container.name)) {
    const info = cache.get(namespace, extended.resourceClaimName);
    if (!info) {
      return {
        ok: false,
        error: `unable to get claim info for claim ${extended.resourceClaimName} in namespace ${namespace}`,
      };
    }
    infos.push(info);
  }
  return { ok: true, infos };
}

/**
 * What unpreparing a pod's claims does to each cached claim (unprepareResources): a claim other pods still use
 * only drops the pod; a claim it alone used is unprepared with its drivers; claims not cached or not
 * referencing the pod are left alone.
 */
export function planUnprepare(
  cache: Pick<ClaimInfoCache, 'get'>,
  namespace: string,
  podUID: string,
  claimNames: readonly string[],
): { dropPod: ClaimInfoState[]; unprepare: ClaimInfoState[] } {
  const dropPod: ClaimInfoState[] = [];
  const unprepare: ClaimInfoState[] = [];
  for (const name of claimNames) {
    const info = cache.get(namespace, name);
    if (!info || !info.podUIDs.includes(podUID)) continue;
    if (info.podUIDs.length > 1) dropPod.push(info);
    else unprepare.push(info);
  }
  return { dropPod, unprepare };
}

/**
 * The claims a pod names (unprepareResourcesForPod without a cache entry): those whose names resolve, and its
 * extended resource claim.
 */
export function podClaimNames(pod: Pod): string[] {
  const out: string[] = [];
  for (const c of podClaimsToPrepare(pod)) {
    const n = podClaimName(pod, c);
    if (n.ok && n.name !== undefined) out.push(n.name);
  }
  return out;
}

/** The checkpoint file's name in the kubelet root (the kubelet's DRA state file). */
export const DRACheckpointFile = 'dra_manager_state';
const CHECKPOINT_VERSION = 'kubelet-operator/dra/v1';

/** The checkpoint's text: the cache's entries, sorted, with a checksum of their JSON. */
export function encodeCheckpoint(
  entries: readonly ClaimInfoState[],
  checksum: (s: string) => string,
): string {
  const sorted = [...entries].sort((a, b) =>
    key(a.namespace, a.claimName) < key(b.namespace, b.claimName) ? -1 : 1,
  );
  const data = JSON.stringify(sorted);
  return `${JSON.stringify({ version: CHECKPOINT_VERSION, checksum: checksum(data), entries: sorted })}\n`;
}

/** Reads a checkpoint back, or says why it cannot be trusted (the kubelet refuses a corrupt state file). */
export function decodeCheckpoint(
  text: string,
  checksum: (s: string) => string,
): { ok: true; entries: ClaimInfoState[] } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `checkpoint is not JSON: ${(err as Error).message}` };
  }
  const r = raw as { version?: unknown; checksum?: unknown; entries?: unknown };
  if (r.version !== CHECKPOINT_VERSION)
    return { ok: false, error: `unknown checkpoint version ${String(r.version)}` };
  if (!Array.isArray(r.entries)) return { ok: false, error: 'checkpoint has no entries' };
  if (checksum(JSON.stringify(r.entries)) !== r.checksum)
    return { ok: false, error: 'checkpoint is corrupted' };
  for (const e of r.entries as ClaimInfoState[]) {
    if (typeof e?.claimUID !== 'string' || typeof e.claimName !== 'string' || !Array.isArray(e.podUIDs)) {
      return { ok: false, error: 'checkpoint has a malformed entry' };
    }
  }
  return { ok: true, entries: r.entries as ClaimInfoState[] };
}

/** The pods a reconcile unprepares (reconcileLoop): those the cache references that are no longer active. */
export function inactivePodClaims(
  entries: readonly ClaimInfoState[],
  activePodUIDs: ReadonlySet<string>,
): { podUID: string; namespace: string; claimNames: string[] }[] {
  const m = new Map<string, { podUID: string; namespace: string; claimNames: string[] }>();
  for (const e of entries) {
    for (const uid of e.podUIDs) {
      if (activePodUIDs.has(uid)) continue;
      const p = m.get(uid) ?? { podUID: uid, namespace: e.namespace, claimNames: [] };
      p.claimNames.push(e.claimName);
      m.set(uid, p);
    }
  }
  return [...m.values()].sort((a, b) => (a.podUID < b.podUID ? -1 : 1));
}
