/**
 * Extended resources backed by DRA (DRAExtendedResource, GA in 1.37). A DeviceClass may name an
 * `extendedResourceName`; when a pod asks for that resource (or for `deviceclass.resource.kubernetes.io/<class>`)
 * and no device plugin on the node serves it, the scheduler makes and allocates one ResourceClaim for the whole
 * pod and names it in `status.extendedResourceClaimStatus`, with which request of the claim serves which
 * container's resource. The kubelet then:
 * - prepares that claim with the pod's own claims (dra manager.go prepareResources, unprepareResourcesForPod);
 * - gives each container the CDI devices of its mapped requests only (GetResources);
 * - leaves those requests out of the admission fit (lifecycle predicate.go removeMissingExtendedResources);
 * - skips them in the device manager (devicemanager isDRAExtendedResource).
 * Pure: the pod in, data out.
 */
import type { Container, Pod } from '../../../api/core.js';
import { withoutContainerResources } from '../../../api/resources.js';
import { isExtendedResourceName } from '../../../node/setters.js';
import { quantityValue } from '../../../util/quantity.js';

/** The prefix of the implicit extended resource name every DeviceClass has (resourceapi.ResourceDeviceClassPrefix). */
export const ResourceDeviceClassPrefix = 'deviceclass.resource.kubernetes.io/';

/** One container's extended resource served by one request of the claim (ContainerExtendedResourceRequest). */
export interface ExtendedResourceRequestMapping {
  containerName: string;
  resourceName: string;
  requestName: string;
}

/** pod.status.extendedResourceClaimStatus (PodExtendedResourceClaimStatus), written by the scheduler only. */
export interface ExtendedResourceClaimStatus {
  resourceClaimName: string;
  requestMappings: ExtendedResourceRequestMapping[];
}

/**
 * schedutil.IsDRAExtendedResourceName: a name a DeviceClass can stand for, an extended resource name or the
 * class's implicit one.
 */
export function isDRAExtendedResourceName(name: string): boolean {
  return isExtendedResourceName(name) || name.startsWith(ResourceDeviceClassPrefix);
}

/**
 * The pod's extended resource claim, as the scheduler recorded it; undefined when there is none. Entries that
 * are not well formed are left out (the API server validates the field; a hand-made object gets no crash).
 */
export function extendedResourceClaimStatus(pod: Pod): ExtendedResourceClaimStatus | undefined {
  const raw = pod.status?.extendedResourceClaimStatus;
  if (!raw || typeof raw !== 'object') return undefined;
  const r = raw as { resourceClaimName?: unknown; requestMappings?: unknown };
  if (typeof r.resourceClaimName !== 'string' || r.resourceClaimName === '') return undefined;
  const mappings: ExtendedResourceRequestMapping[] = [];
  for (const m of Array.isArray(r.requestMappings) ? (r.requestMappings as unknown[]) : []) {
    const e = m as Partial<Record<keyof ExtendedResourceRequestMapping, unknown>> | null;
    if (
      typeof e?.containerName === 'string' &&
      typeof e.resourceName === 'string' &&
      typeof e.requestName === 'string'
    ) {
      mappings.push({
        containerName: e.containerName,
        resourceName: e.resourceName,
        requestName: e.requestName,
      });
    }
  }
  return { resourceClaimName: r.resourceClaimName, requestMappings: mappings };
}

/**
 * devicemanager isDRAExtendedResource: the container's `resource` is served by the pod's extended resource
 * claim, so no device plugin allocates it.
 */
export function isDRAExtendedResource(pod: Pod, containerName: string, resource: string): boolean {
  const st = extendedResourceClaimStatus(pod);
  return (st?.requestMappings ?? []).some(
    (m) => m.containerName === containerName && m.resourceName === resource,
  );
}

/** Whether some request of the extended resource claim serves the container (GetContainerClaimInfos). */
export function containerUsesExtendedResourceClaim(pod: Pod, containerName: string): boolean {
  return (extendedResourceClaimStatus(pod)?.requestMappings ?? []).some(
    (m) => m.containerName === containerName,
  );
}

function nonZero(q: unknown): boolean {
  try {
    return quantityValue(String(q)) !== 0;
  } catch {
    return false; // Not a quantity: the API server would not have taken it; nothing is asked for.
  }
}

/**
 * The requests of the extended resource claim whose devices the container gets (GetResources): those mapped to
 * the container for a DRA extended resource it asks a non-zero amount of, in mapping order; one container may
 * have several requests for one resource.
 */
export function containerExtendedResourceRequests(
  pod: Pod,
  container: Container,
): { claimName: string; requestNames: string[] } | undefined {
  const st = extendedResourceClaimStatus(pod);
  if (!st) return undefined;
  const asked = new Set(
    Object.entries(container.resources?.requests ?? {})
      .filter(([name, q]) => isDRAExtendedResourceName(name) && nonZero(q))
      .map(([name]) => name),
  );
  const requestNames = st.requestMappings
    .filter((m) => m.containerName === container.name && asked.has(m.resourceName))
    .map((m) => m.requestName);
  return { claimName: st.resourceClaimName, requestNames };
}

/**
 * The pod as admission fits it (the DRA half of removeMissingExtendedResources): each container's requests of
 * DRA extended resources its claim serves are left out, as the node has no allocatable for them. The same
 * object when the pod has no extended resource claim or nothing is left out. Limits go too, as our request sum
 * defaults a missing request from the limit.
 */
export function withoutDRAExtendedResources(pod: Pod): Pod {
  const st = extendedResourceClaimStatus(pod);
  if (!st || st.requestMappings.length === 0) return pod;
  const spec = withoutContainerResources(
    pod.spec,
    (containerName, resource) =>
      isDRAExtendedResourceName(resource) &&
      st.requestMappings.some((m) => m.containerName === containerName && m.resourceName === resource),
  );
  return spec === pod.spec ? pod : { ...pod, spec };
}
