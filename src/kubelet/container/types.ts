/**
 * The runtime view of a pod (the kubelet's `kubecontainer.PodStatus`): what the container runtime says
 * exists, independent of what the API server says. This is the input to computePodActions, PLEG and the
 * conversion to API container statuses.
 *
 * Three "container status" concepts meet in the kubelet, one name each:
 * - `KubeContainerStatus` (here; kubelet: `kubecontainer.Status`): the kubelet's record of one container
 *   instance, converted from the runtime's answer (kuberuntime/shell/podstatus.ts toKubeContainerStatus);
 * - the Runtime seam's `ContainerStatus` (runtime/types.ts; CRI `ContainerStatus`), imported under the alias
 *   `RuntimeContainerStatus` where the API's name is also in scope;
 * - the API's `ContainerStatus` (api/core.ts; `v1.ContainerStatus`), what pods/status carries.
 *
 * Times are epoch milliseconds. Lists are ordered newest first; a lookup by name takes the first match.
 */

declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

export type PodUID = Brand<string, 'PodUID'>;
export type ContainerID = Brand<string, 'ContainerID'>;
export type SandboxID = Brand<string, 'SandboxID'>;

export const asPodUID = (s: string): PodUID => s as PodUID;
export const asContainerID = (s: string): ContainerID => s as ContainerID;
export const asSandboxID = (s: string): SandboxID => s as SandboxID;

export type ContainerState = 'created' | 'running' | 'exited' | 'unknown';
export type SandboxState = 'ready' | 'notready';
export type NamespaceMode = 'pod' | 'node';

export interface SandboxStatus {
  id: SandboxID;
  state: SandboxState;
  /** Sandbox attempt number (the kubelet's metadata.attempt). */
  attempt: number;
  /** Pod IP; `null` when the runtime reported no network status at all. */
  ip: string | null;
  /** Extra IPs beyond `ip` (dual stack). */
  additionalIPs?: string[];
  /** Network namespace mode: `node` for hostNetwork pods. */
  netns: NamespaceMode;
  createdAt?: number;
}

/**
 * The cpu and memory a runtime reports as applied to a container (kubelet: kubecontainer.ContainerResources).
 * A field is absent when the runtime set no such limit.
 */
export interface ContainerResources {
  cpuRequestMilli?: number;
  cpuLimitMilli?: number;
  memoryLimitBytes?: number;
}

/** One container instance as the kubelet records it (kubelet: kubecontainer.Status). */
export interface KubeContainerStatus {
  id: ContainerID;
  name: string;
  state: ContainerState;
  /** The runtime type prefix of the ID as shown in the API (`containerd://<id>`). */
  runtimeType?: string;
  createdAt?: number;
  startedAt?: number;
  finishedAt?: number;
  exitCode?: number;
  reason?: string;
  message?: string;
  image?: string;
  imageRef?: string;
  /** The attempt label: how many times this container was restarted before this record. */
  restartCount: number;
  /** Hash of the spec (name + image) recorded when the container was created. */
  hash: string;
  /** Sandbox this record belongs to. */
  sandboxID?: SandboxID;
  /** What the runtime has applied; absent when it does not report resources (nothing to resize against). */
  resources?: ContainerResources;
  /** Who the process runs as, when the runtime reports it (containerd 1.6 does not). */
  user?: ContainerUser;
}

/** The process's identity as the runtime resolved it (kubecontainer.ContainerUser). */
export interface ContainerUser {
  readonly linux?: {
    readonly uid: number;
    readonly gid: number;
    readonly supplementalGroups: readonly number[];
  };
}

/** Everything the runtime knows about one pod. */
export interface RuntimePodStatus {
  uid: PodUID;
  name: string;
  namespace: string;
  /** Newest first. */
  sandboxes: SandboxStatus[];
  /** Newest first. */
  containers: KubeContainerStatus[];
  /** Pod IPs as last reported by the ready sandbox. */
  ips: string[];
}

/** The newest record for a container name (kubelet: PodStatus.FindContainerStatusByName). */
export function findContainerStatusByName(
  status: Pick<RuntimePodStatus, 'containers'>,
  name: string,
): KubeContainerStatus | undefined {
  return status.containers.find((c) => c.name === name);
}

/** The API form of a runtime container ID: `<type>://<id>`. */
export function containerIDString(c: Pick<KubeContainerStatus, 'id' | 'runtimeType'>): string {
  return `${c.runtimeType ?? 'containerd'}://${c.id}`;
}
