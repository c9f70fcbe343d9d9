/**
 * What the runtime manager asks of the kubelet around it (kubelet: kubecontainer.RuntimeHelper): the parts of a
 * sandbox and a container that depend on the node's pod directory, its DNS settings and the cluster's services,
 * none of which the runtime manager owns.
 */
import type { Container, Pod } from '../../api/core.js';
import type { Mount, PodSandboxConfig, RuntimeHandler, UserNamespace } from '../../runtime/types.js';
import type { ContainerDynamicResources } from '../cm/dra/shell/manager.js';
import type { EnvFileRead, EnvVarValue } from '../envvars.js';

export interface SandboxOptions {
  /** Unset for a host-network pod (the runtime gives it the node's). */
  hostname?: string;
  /** Unset: the runtime's default resolv.conf. */
  dnsConfig?: NonNullable<PodSandboxConfig['dnsConfig']>;
}

/** What decides a container's mounts besides its pod and volumes. */
export interface ContainerMountOptions {
  /** The pod's runtime handler mounts read-only recursively (kubelet runtimeClassSupportsRecursiveReadOnlyMounts). */
  supportsRecursiveReadOnly?: boolean;
  /** The pod's image volumes the container may mount, pulled: volume name to image ID. */
  imageVolumes?: ReadonlyMap<string, string>;
}

export interface RuntimeHelper {
  /**
   * The sandbox's hostname and DNS (kubelet GeneratePodHostNameAndDomain, GetPodDNS). Rejects with the kubelet's
   * message for a pod whose names cannot make a hostname. `quiet`: record no Events (MissingClusterDNS...).
   */
  sandboxOptions(pod: Pod, opts?: { quiet?: boolean }): Promise<SandboxOptions>;
  /**
   * The mounts of one container start (kubelet GenerateRunContainerOptions + kuberuntime makeMounts): its volume
   * mounts, the kubelet-managed /etc/hosts and a fresh termination-message file. Rejects with the kubelet's
   * message (the container then waits with CreateContainerConfigError).
   */
  containerMounts(
    pod: Pod,
    container: Container,
    podIPs: readonly string[],
    env: readonly EnvVarValue[],
    opts?: ContainerMountOptions,
  ): Promise<Mount[]>;
  /**
   * The pod's user namespace (kubelet GetOrCreateUserNamespaceMappings): the host's (NODE) unless
   * `hostUsers: false`, then one of the pod's own when the runtime's default handler supports it. Rejects with
   * the kubelet's message otherwise (the sandbox is then not created). Absent: every pod gets the host's, and
   * `hostUsers: false` is refused as by a runtime without support.
   */
  userNamespace?(pod: Pod, handlers: readonly RuntimeHandler[]): Promise<UserNamespace>;
  /**
   * The env file at `path` (relative) in the pod's mounted volume `volumeName`, for a `fileKeyRef` (kubelet
   * makeEnvironmentVariables: the volume's host path, securejoin'ed with `path`, opened). Never rejects: what
   * went wrong is in the answer.
   */
  envFile(pod: Pod, volumeName: string, path: string): Promise<EnvFileRead>;
  /** The service link variables of the pod (kubelet getServiceEnvVarMap). */
  serviceEnv(pod: Pod): Readonly<Record<string, string>>;
  /**
   * PrepareDynamicResources: the pod's ResourceClaims prepared by their DRA drivers, before its sandbox.
   * Rejects with the DRA manager's message. Absent: no DRA manager, nothing prepared.
   */
  prepareDynamicResources?(pod: Pod): Promise<void>;
  /**
   * The CDI devices of the claims one container references (the DRA manager's GetResources), with the CDI
   * specs' edits when `applyCDI` (the runtime lacks CDI). Rejects with the kubelet's message.
   */
  containerDynamicResources?(
    pod: Pod,
    container: Container,
    applyCDI: boolean,
  ): Promise<ContainerDynamicResources>;
}
