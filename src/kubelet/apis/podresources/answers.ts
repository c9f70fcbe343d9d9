/**
 * The answers of the kubelet's pod-resources API (pkg/kubelet/apis/podresources, server_v1.go and
 * server_v1alpha1.go), built from the kubelet's own state without I/O; the gRPC shell (../server.ts) only
 * decodes requests and sends these back.
 *
 * What a VirtualNode's kubelet holds, and so answers: its CPU manager and memory manager run the `none`
 * policies, its device manager holds what device plugins (real or a sim node's simulated ones) gave, and its
 * DRA manager the claims it prepared. A kubelet so configured answers every container with its devices and its
 * claims (dynamic resources), no CPU ids and no memory blocks, and GetAllocatableResources with the healthy
 * devices only. Pod-level CPU ids and memory (PodLevelResourceManagers)
 * are off by default in v1.37 and are left out as the kubelet leaves them out.
 *
 * Which pods: List answers the active pods (KubeletPodResourcesListUseActivePods, on since 1.34), Get finds a
 * pod by namespace and name in the pod manager and refuses one that is inactive, as the kubelet's
 * kubeletPodsProvider does.
 */
import {
  isRestartableInitContainer,
  isTerminalPhase,
  type Container,
  type Pod,
  type PodPhase,
} from '../../../api/core.js';
import type { ClaimInfoState } from '../../cm/dra/claiminfo.js';
import type { WorkerState } from '../../podworkers.js';

/** The socket's directory under the node's root (kubelet: DefaultKubeletPodResourcesDirName). */
export const POD_RESOURCES_DIR = 'pod-resources';
/** The socket's file name (kubelet: podresources.Socket plus `.sock`). */
export const POD_RESOURCES_SOCKET = 'kubelet.sock';
/** The kubelet's rate limit on this server (podresources.DefaultQPS, DefaultBurstTokens). */
export const POD_RESOURCES_QPS = 100;
export const POD_RESOURCES_BURST = 10;

// ---- v1 messages, as @grpc/proto-loader with keepCase hands them over ----

export interface TopologyInfo {
  nodes: { ID: string }[];
}
export interface ContainerDevices {
  resource_name: string;
  device_ids: string[];
  topology?: TopologyInfo;
}
export interface ContainerMemory {
  memory_type: string;
  size: string;
  topology?: TopologyInfo;
}
export interface ClaimResource {
  cdi_devices: { name: string }[];
  driver_name: string;
  pool_name: string;
  device_name: string;
}
export interface DynamicResource {
  claim_name: string;
  claim_namespace: string;
  claim_resources: ClaimResource[];
}
export interface ContainerResources {
  name: string;
  devices: ContainerDevices[];
  cpu_ids: string[];
  memory: ContainerMemory[];
  dynamic_resources: DynamicResource[];
}
export interface PodResources {
  name: string;
  namespace: string;
  containers: ContainerResources[];
  cpu_ids: string[];
  memory: ContainerMemory[];
}
export interface ListPodResourcesResponse {
  pod_resources: PodResources[];
}
export interface GetPodResourcesRequest {
  pod_name?: string;
  pod_namespace?: string;
}
export interface GetPodResourcesResponse {
  pod_resources: PodResources;
}
export interface AllocatableResourcesResponse {
  devices: ContainerDevices[];
  cpu_ids: string[];
  memory: ContainerMemory[];
}

// ---- v1alpha1 ----

export interface V1alpha1PodResources {
  name: string;
  namespace: string;
  containers: { name: string; devices: { resource_name: string; device_ids: string[] }[] }[];
}
export interface V1alpha1ListPodResourcesResponse {
  pod_resources: V1alpha1PodResources[];
}

/** A gRPC error as the shell sends it: the code's name (grpc status) and the kubelet's message. */
export interface ApiError {
  code: 'Unknown' | 'NotFound' | 'FailedPrecondition' | 'ResourceExhausted' | 'Internal';
  message: string;
}
export type Answer<T> = { ok: T } | { error: ApiError };

/** What the answers read of the kubelet: the pod manager, the pod workers and the status manager. */
export interface KubeletPodsView {
  /** Every pod the pod manager holds. */
  pods(): readonly Pod[];
  /** The pod manager's pod by namespace and name. */
  podByName(namespace: string, name: string): Pod | undefined;
  /** The pod worker's state for a UID (undefined: no worker yet). */
  workerState(uid: string): WorkerState | undefined;
  /** The status manager's cached phase for a UID. */
  statusPhase(uid: string): PodPhase | undefined;
  /** The DRA manager's prepared claims a container uses (GetContainerClaimInfos). Absent: none. */
  dynamicResources?: {
    containerClaimInfos(pod: Pod, container: Container): readonly ClaimInfoState[];
  };
  /** The device manager's devices: a container's by resource, and every allocatable one. Absent: none. */
  devices?: {
    containerDevices(podUID: string, container: string): { resource: string; ids: string[] }[];
    allocatableDevices(): { resource: string; ids: string[] }[];
  };
}

/**
 * The kubelet's isPodInactive: a pod whose worker has terminated it, or a pod that is terminal (by the API's
 * phase or the status manager's) while its worker is not still terminating it.
 */
export function isPodInactive(pod: Pod, view: Pick<KubeletPodsView, 'workerState' | 'statusPhase'>): boolean {
  const uid = pod.metadata.uid ?? '';
  const worker = view.workerState(uid);
  if (worker === 'terminated') return true;
  const terminal = isTerminalPhase(pod.status?.phase) || isTerminalPhase(view.statusPhase(uid));
  return terminal && worker !== 'terminating';
}

/** The kubelet's GetActivePods: the pod manager's pods that are not inactive. */
export function activePods(view: KubeletPodsView): Pod[] {
  return view.pods().filter((p) => !isPodInactive(p, view));
}

/** Devices as the API lists them (containerDevicesFromResourceDeviceInstances): without NUMA topology here. */
function devicesOf(list: { resource: string; ids: string[] }[]): ContainerDevices[] {
  return list.map((d) => ({ resource_name: d.resource, device_ids: [...d.ids] }));
}

/**
 * A container's claims as the API lists them (the container manager's GetDynamicResources): per claim, one
 * entry per prepared device with its driver, pool and name. Its CDI devices are those of the driver's devices
 * so far, this one's last: the kubelet collects them per driver, not per device, and so answers. Drivers in
 * name order (the kubelet's are in map order).
 */
export function dynamicResourcesOf(infos: readonly ClaimInfoState[]): DynamicResource[] {
  return infos.map((info) => {
    const claimResources: ClaimResource[] = [];
    for (const driver of Object.keys(info.driverState).sort()) {
      const cdi: { name: string }[] = [];
      for (const d of info.driverState[driver]?.devices ?? []) {
        for (const id of d.cdiDeviceIDs) cdi.push({ name: id });
        claimResources.push({
          cdi_devices: [...cdi],
          driver_name: driver,
          pool_name: d.poolName,
          device_name: d.deviceName,
        });
      }
    }
    return { claim_name: info.claimName, claim_namespace: info.namespace, claim_resources: claimResources };
  });
}

/**
 * One container's resources: its devices (the device manager's) and its claims (the DRA manager's); CPU ids
 * and memory are never exclusive on a node with the none policies.
 */
function containerResources(
  pod: Pod,
  c: Container,
  view: Pick<KubeletPodsView, 'devices' | 'dynamicResources'>,
): ContainerResources {
  const held = view.devices ? devicesOf(view.devices.containerDevices(pod.metadata.uid ?? '', c.name)) : [];
  const claims = view.dynamicResources
    ? dynamicResourcesOf(view.dynamicResources.containerClaimInfos(pod, c))
    : [];
  return { name: c.name, devices: held, cpu_ids: [], memory: [], dynamic_resources: claims };
}

/** A pod's resources: its sidecars (restartable init containers) first, then its containers. */
export function podResources(
  pod: Pod,
  view: Pick<KubeletPodsView, 'devices' | 'dynamicResources'> = {},
): PodResources {
  const containers: ContainerResources[] = [];
  for (const c of pod.spec?.initContainers ?? [])
    if (isRestartableInitContainer(c)) containers.push(containerResources(pod, c, view));
  for (const c of pod.spec?.containers ?? []) containers.push(containerResources(pod, c, view));
  return {
    name: pod.metadata.name ?? '',
    namespace: pod.metadata.namespace ?? '',
    containers,
    cpu_ids: [],
    memory: [],
  };
}

/** v1 List: the active pods' resources, in the pod manager's order. */
export function listPodResources(view: KubeletPodsView): ListPodResourcesResponse {
  return { pod_resources: activePods(view).map((p) => podResources(p, view)) };
}

/** v1 Get: an active pod's resources; any other pod is refused in the kubelet's words (code Unknown). */
export function getPodResources(
  view: KubeletPodsView,
  req: GetPodResourcesRequest,
): Answer<GetPodResourcesResponse> {
  const name = req.pod_name ?? '';
  const namespace = req.pod_namespace ?? '';
  const pod = view.podByName(namespace, name);
  if (!pod || isPodInactive(pod, view))
    return { error: { code: 'Unknown', message: `pod ${name} in namespace ${namespace} not found` } };
  return { ok: { pod_resources: podResources(pod, view) } };
}

/** v1 GetAllocatableResources: the device manager's healthy devices; no exclusive CPUs or memory blocks. */
export function allocatableResources(view?: Pick<KubeletPodsView, 'devices'>): AllocatableResourcesResponse {
  return { devices: devicesOf(view?.devices?.allocatableDevices() ?? []), cpu_ids: [], memory: [] };
}

/**
 * v1alpha1 List: the kubelet's v1alpha1 server lists the pod manager's pods (it never took the active-pods
 * filter), each container with its devices only; sidecars are not listed there.
 */
export function listPodResourcesV1alpha1(view: KubeletPodsView): V1alpha1ListPodResourcesResponse {
  return {
    pod_resources: view.pods().map((pod) => ({
      name: pod.metadata.name ?? '',
      namespace: pod.metadata.namespace ?? '',
      containers: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        devices: devicesOf(view.devices?.containerDevices(pod.metadata.uid ?? '', c.name) ?? []).map((d) => ({
          resource_name: d.resource_name,
          device_ids: d.device_ids,
        })),
      })),
    })),
  };
}
