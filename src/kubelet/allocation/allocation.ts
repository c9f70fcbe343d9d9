/**
 * A pod's allocation (kubelet: pkg/kubelet/allocation, state.PodResourceInfo): the resources the node accepted
 * for each resizable container and for the pod itself (its pod-level `spec.resources`,
 * InPlacePodLevelResourcesVerticalScaling), which may lag the spec while a resize waits. The pod a pod worker
 * syncs is the API pod with its resizable containers' resources, and its pod-level resources, replaced by the
 * allocation (UpdatePodFromAllocation).
 *
 * Pure: plain data in, plain data out; the pod given is never modified.
 */
import { type Container, type ContainerStatus, type Pod, type ResourceRequirements } from '../../api/core.js';
import { podRequests } from '../../api/resources.js';
import { parseQuantityNano } from '../../util/quantity.js';

/** The pod's generation as the kubelet reads it (0 when the pod has none). */
export function podGeneration(pod: Pick<Pod, 'metadata'>): number {
  return typeof pod.metadata.generation === 'number' ? pod.metadata.generation : 0;
}

/**
 * What a pod was allocated (kubelet: state.PodResourceInfo): container name -> requirements, for resizable
 * containers only, and the pod-level resources when the pod has them.
 */
export interface PodAllocation {
  readonly containers: ReadonlyMap<string, ResourceRequirements>;
  /** The pod-level `spec.resources` allocated (kubelet: PodLevelResources); absent when the pod has none. */
  readonly podLevel?: ResourceRequirements;
}

/**
 * The resizable containers of a pod, init containers first, as the kubelet visits them (kubelet:
 * IsResizableContainer): every init container, sidecar or not (InPlacePodVerticalScalingInitContainers, GA
 * and locked on in v1.37), and every regular one; ephemeral containers are never resized.
 */
export function resizableContainers(pod: Pick<Pod, 'spec'>): Container[] {
  return [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])];
}

/** What a container without requests or limits is allocated: one frozen object, not one per container. */
const NO_REQUIREMENTS: ResourceRequirements = Object.freeze({});

function copyRequirements(r: ResourceRequirements | undefined): ResourceRequirements {
  if (!r?.requests && !r?.limits) return NO_REQUIREMENTS;
  const out: ResourceRequirements = {};
  if (r?.requests) out.requests = { ...r.requests };
  if (r?.limits) out.limits = { ...r.limits };
  return out;
}

/** The allocation a pod asks for: its spec as it is (kubelet: ResourceInfoForPod). */
export function allocationFromPod(pod: Pick<Pod, 'spec'>): PodAllocation {
  const containers = new Map(resizableContainers(pod).map((c) => [c.name, copyRequirements(c.resources)]));
  return pod.spec.resources ? { containers, podLevel: copyRequirements(pod.spec.resources) } : { containers };
}

function sameList(a: Record<string, string | number> = {}, b: Record<string, string | number> = {}): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    const x = a[k];
    const y = b[k];
    if (x === undefined || y === undefined) return false;
    if (x === y) continue;
    try {
      if (parseQuantityNano(x) !== parseQuantityNano(y)) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/** Semantic equality of two requirements (quantities compared by value: "1" equals "1000m"). */
export function sameRequirements(
  a: ResourceRequirements | undefined,
  b: ResourceRequirements | undefined,
): boolean {
  return sameList(a?.requests, b?.requests) && sameList(a?.limits, b?.limits);
}

/**
 * The spec as allocated, by allocation and spec object: admission asks for every admitted pod each time it
 * admits one, with the same spec and allocation objects (both are replaced, never changed in place). Keyed
 * by the allocation, checked against the spec: the pods of one template on one node share one spec object
 * (src/operator/podintern.ts) and one allocation (AllocationManager), and an allocation shared by pods whose
 * specs differ (one of them resized) is answered right, only recomputed.
 */
const allocatedSpecs = new WeakMap<
  PodAllocation,
  { spec: Pod['spec']; allocated: Pod['spec'] | undefined }
>();

/**
 * The pod as allocated: every resizable container whose allocation differs from its spec gets the allocation.
 * `updated` tells whether anything differed (then the returned pod is a copy).
 */
export function updatePodFromAllocation(
  pod: Pod,
  allocation: PodAllocation | undefined,
): { pod: Pod; updated: boolean } {
  if (!allocation) return { pod, updated: false };
  let known = allocatedSpecs.get(allocation);
  if (known?.spec !== pod.spec) {
    known = { spec: pod.spec, allocated: allocatedSpec(pod.spec, allocation) };
    allocatedSpecs.set(allocation, known);
  }
  return known.allocated
    ? { pod: { ...pod, spec: known.allocated }, updated: true }
    : { pod, updated: false };
}

/** The spec with the allocation applied; undefined when it already matches. */
function allocatedSpec(podSpec: Pod['spec'], allocation: PodAllocation): Pod['spec'] | undefined {
  // Copies a list only once one of its containers differs (admission calls this for every admitted pod).
  const apply = (list: Container[] | undefined): Container[] | undefined => {
    let out: Container[] | undefined;
    for (let i = 0; i < (list?.length ?? 0); i++) {
      const c = list![i]!;
      const alloc = allocation.containers.get(c.name);
      if (!alloc || sameRequirements(c.resources, alloc)) continue;
      out ??= [...list!];
      out[i] = { ...c, resources: copyRequirements(alloc) };
    }
    return out;
  };
  const containers = apply(podSpec.containers);
  const initContainers = apply(podSpec.initContainers);
  // Pod-level resources (kubelet: updatePodLevelResourcesFromAllocation): the allocated ones replace the spec's.
  const podLevel = !sameRequirements(podSpec.resources, allocation.podLevel);
  if (!containers && !initContainers && !podLevel) return undefined;
  const spec = { ...podSpec, containers: containers ?? podSpec.containers };
  if (initContainers) spec.initContainers = initContainers;
  if (podLevel) {
    if (allocation.podLevel) spec.resources = copyRequirements(allocation.podLevel);
    else delete spec.resources;
  }
  return spec;
}

/**
 * The allocation a previous process left, read back from the pod's API status after a restart: requests from
 * `allocatedResources`, limits from the applied `resources` it reported. A container without both falls back to
 * its spec. Undefined when the status shows no allocation at all (a pod never run, or run by an older node).
 * Pod-level resources likewise: the requests the pod-level spec names from the pod's `allocatedResources`, its
 * cpu and memory limits from the pod's `resources`.
 * The kubelet keeps a checkpoint file instead; the status is what this operator writes after every accepted
 * resize, and a resize accepted but not yet reported is simply admitted again.
 */
export function allocationFromStatus(pod: Pod): PodAllocation | undefined {
  const statuses = new Map<string, ContainerStatus>();
  for (const s of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
    statuses.set(s.name, s);
  }
  let found = false;
  const out = new Map<string, ResourceRequirements>();
  for (const c of resizableContainers(pod)) {
    const s = statuses.get(c.name);
    if (!s?.allocatedResources && !s?.resources) {
      out.set(c.name, copyRequirements(c.resources));
      continue;
    }
    found = true;
    const r: ResourceRequirements = {};
    const requests = s.allocatedResources ?? s.resources?.requests;
    if (requests && Object.keys(requests).length > 0) r.requests = { ...requests };
    // Limits beyond cpu and memory cannot be resized: the spec's stand.
    const limits: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(c.resources?.limits ?? {}))
      if (k !== 'cpu' && k !== 'memory') limits[k] = v;
    // The reported limits are already the allocated ones where the runtime cannot express them (resources.ts).
    for (const k of ['cpu', 'memory']) {
      const v = s.resources?.limits?.[k];
      if (v !== undefined && c.resources?.limits?.[k] !== undefined) limits[k] = v;
    }
    if (Object.keys(limits).length > 0) r.limits = limits;
    out.set(c.name, r);
  }
  const podLevel = podLevelFromStatus(pod);
  if (podLevel.found) found = true;
  if (!found) return undefined;
  return podLevel.resources ? { containers: out, podLevel: podLevel.resources } : { containers: out };
}

/** The pod-level part of allocationFromStatus; `found` when the pod's status reports pod-level resources. */
function podLevelFromStatus(pod: Pod): { resources?: ResourceRequirements; found: boolean } {
  const spec = pod.spec.resources;
  if (!spec) return { found: false };
  const allocated = pod.status?.allocatedResources;
  const applied = pod.status?.resources;
  if (!allocated && !applied) return { resources: copyRequirements(spec), found: false };
  const r: ResourceRequirements = {};
  if (spec.requests) {
    const requests: Record<string, string | number> = { ...spec.requests };
    for (const k of ['cpu', 'memory']) {
      const v = allocated?.[k];
      if (v !== undefined && requests[k] !== undefined) requests[k] = v;
    }
    r.requests = requests;
  }
  if (spec.limits) {
    const limits: Record<string, string | number> = { ...spec.limits };
    for (const k of ['cpu', 'memory']) {
      const v = applied?.limits?.[k];
      if (v !== undefined && limits[k] !== undefined) limits[k] = v;
    }
    r.limits = limits;
  }
  return { resources: r, found: true };
}

/** Whether the spec asks for more cpu or memory than the allocation (kubelet: isResizeIncreasingRequests). */
export function resizeIncreasesRequests(desired: Pod, allocated: Pod): boolean {
  const want = podRequests(desired.spec);
  const have = podRequests(allocated.spec);
  return (
    (want.get('cpu') ?? 0) > (have.get('cpu') ?? 0) || (want.get('memory') ?? 0) > (have.get('memory') ?? 0)
  );
}
