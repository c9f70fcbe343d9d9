/**
 * The DRA manager's decisions (kubelet: pkg/kubelet/cm/dra manager.go, claiminfo.go, state/): which
 * ResourceClaim a pod's claim names, whether the claim may be prepared for the pod, which drivers to call, what
 * the claim info cache and its checkpoint hold, which CDI devices a container gets, and which claims a
 * terminated pod leaves to unprepare. Pure: manager.ts does the API reads, the gRPC calls and the file.
 */
import type { Container, Pod } from '../../../api/core.js';
import { isExtendedResourceName } from '../../../node/setters.js';
import { quantityValue } from '../../../util/quantity.js';

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
      devices?: { results?: { request?: string; driver?: string; pool?: string; device?: string }[] };
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

/** A pod's status.extendedResourceClaimStatus: the claim the scheduler made for DRA-backed extended resources. */
export interface PodExtendedResourceClaimStatus {
  resourceClaimName: string;
  requestMappings: { containerName: string; resourceName: string; requestName: string }[];
}

/** The pod's extended resource claim (DRAExtendedResource), when the scheduler made one. */
export function extendedResourceClaimStatus(pod: Pod): PodExtendedResourceClaimStatus | undefined {
  const st = (
    pod.status as { extendedResourceClaimStatus?: Partial<PodExtendedResourceClaimStatus> } | undefined
  )?.extendedResourceClaimStatus;
  if (!st || typeof st.resourceClaimName !== 'string' || st.resourceClaimName === '') return undefined;
  return {
    resourceClaimName: st.resourceClaimName,
    requestMappings: Array.isArray(st.requestMappings) ? st.requestMappings : [],
  };
}

/**
 * The pod claim that stands for the extended resource claim: no name (a real pod claim always has one, so the
 * two never mix), the claim by its name, so no owner check (as the kubelet's resourceclaim.Name).
 */
function extendedPodClaim(st: PodExtendedResourceClaimStatus): PodResourceClaim {
  return { name: '', resourceClaimName: st.resourceClaimName };
}

/** The pod's claims: spec.resourceClaims, then the extended resource claim (the kubelet's PrepareResources). */
export function podResourceClaims(pod: Pod): PodResourceClaim[] {
  const spec = pod.spec as { resourceClaims?: PodResourceClaim[] };
  const claims = Array.isArray(spec.resourceClaims) ? spec.resourceClaims : [];
  const ext = extendedResourceClaimStatus(pod);
  return ext ? [...claims, extendedPodClaim(ext)] : claims;
}

/**
 * The requests of the extended resource claim that serve `container`: the mappings for it of the DRA-backed
 * extended resources it requests (non-zero), as the kubelet's GetResources.
 */
export function extendedResourceRequests(pod: Pod, container: Container): string[] {
  const ext = extendedResourceClaimStatus(pod);
  if (!ext) return [];
  const requested = new Set(
    Object.entries(container.resources?.requests ?? {})
      .filter(([name, q]) => isDRAExtendedResourceName(name) && !isZeroQuantity(q))
      .map(([name]) => name),
  );
  return ext.requestMappings
    .filter((m) => m.containerName === container.name && requested.has(m.resourceName))
    .map((m) => m.requestName);
}

/** The device manager's isDRAExtendedResource: the pod's extended resource claim maps `resource` to the container. */
export function isDRAExtendedResource(pod: Pod, containerName: string, resource: string): boolean {
  return (extendedResourceClaimStatus(pod)?.requestMappings ?? []).some(
    (m) => m.containerName === containerName && m.resourceName === resource,
  );
}

/** Implicit extended resources of a DeviceClass (`deviceclass.resource.kubernetes.io/<class>`). */
const DeviceClassResourcePrefix = 'deviceclass.resource.kubernetes.io/';

/** schedutil.IsDRAExtendedResourceName: an extended resource name, or a DeviceClass's implicit one. */
export function isDRAExtendedResourceName(name: string): boolean {
  return isExtendedResourceName(name) || name.startsWith(DeviceClassResourcePrefix);
}

function isZeroQuantity(q: unknown): boolean {
  try {
    return quantityValue(String(q)) === 0;
  } catch {
    return false;
  }
}

export function containerResourceClaims(container: Container): ContainerResourceClaim[] {
  const r = container.resources as { claims?: ContainerResourceClaim[] } | undefined;
  return Array.isArray(r?.claims) ? r.claims : [];
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
  return { ok: true, drivers: [...drivers].sort() };
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
 * The CDI device IDs of one container (GetResources + cdiDevicesAsList): for each pod claim the container
 * references, the devices of the requests it names (a reference without a request takes every device of the
 * claim; a device without request names serves every request). A claim not in the cache is the kubelet's
 * internal error. Duplicates are kept out.
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
  // The extended resource claim (name ''): only the requests mapped to this container, never all devices.
  const extended = extendedResourceRequests(pod, container);
  if (extended.length > 0) byName.set('', extended);
  const out: string[] = [];
  const namespace = pod.metadata.namespace ?? '';
  for (const podClaim of podResourceClaims(pod)) {
    const requests = byName.get(podClaim.name);
    if (!requests) continue;
    const n = podClaimName(pod, podClaim);
    if (!n.ok) return n;
    if (n.name === undefined) continue;
    const info = cache.get(namespace, n.name);
    if (!info) {
      return {
        ok: false,
        error: `internal error: unable to get claim info for ResourceClaim ${n.name} in namespace ${namespace}`,
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

/** The claims a pod names (unprepareResourcesForPod without a cache entry): those whose names resolve. */
export function podClaimNames(pod: Pod): string[] {
  const out: string[] = [];
  for (const c of podResourceClaims(pod)) {
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
