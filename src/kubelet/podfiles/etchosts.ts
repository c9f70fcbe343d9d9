/**
 * The kubelet-managed /etc/hosts (kubelet_pods.go shouldMountHostsFile, makeHostsMount, ensureHostsFile,
 * managedHostsFileContent, nodeHostsFileContent, hostsEntriesFromHostAliases).
 *
 * Pure: this decides whether a container gets the file and what the file says, byte for byte; the caller
 * writes `<podDir>/etc-hosts` (mode 0644, rewritten before each container start, as the kubelet does) and reads
 * the node's own hosts file for host-network pods.
 */
import type { Container, HostAlias, Pod } from '../../api/core.js';
import type { Mount } from '../../runtime/types.js';
import { KindError } from '../../util/errors.js';

export const ETC_HOSTS_PATH = '/etc/hosts';
/** The file's name inside the pod directory. */
export const ETC_HOSTS_FILE = 'etc-hosts';
/** ensureHostsFile writes, then chmods, 0644. */
export const ETC_HOSTS_MODE = 0o644;
/** kubecontainer.Mount.Name of the hosts mount. */
export const ETC_HOSTS_MOUNT_NAME = 'k8s-managed-etc-hosts';

const MANAGED_HOSTS_HEADER = '# Kubernetes-managed hosts file.\n';
const MANAGED_HOSTS_HEADER_HOST_NETWORK = '# Kubernetes-managed hosts file (host network).\n';

/** The fixed loopback and IPv6 multicast entries every pod-network hosts file starts with. */
const LOCAL_ENTRIES =
  '127.0.0.1\tlocalhost\n' +
  '::1\tlocalhost ip6-localhost ip6-loopback\n' +
  'fe00::0\tip6-localnet\n' +
  'fe00::0\tip6-mcastprefix\n' +
  'fe00::1\tip6-allnodes\n' +
  'fe00::2\tip6-allrouters\n';

/**
 * The HostAliases section: nothing without aliases; else a blank line, a comment, and one line per alias with
 * its IP and all its hostnames, tab-separated.
 */
export function hostsEntriesFromHostAliases(hostAliases: readonly HostAlias[] | undefined): string {
  if (!hostAliases || hostAliases.length === 0) return '';
  let out = '\n# Entries added by HostAliases.\n';
  for (const alias of hostAliases) out += `${alias.ip}\t${(alias.hostnames ?? []).join('\t')}\n`;
  return out;
}

/**
 * The hosts file of a pod on the pod network: header, local entries, then one line per pod IP naming the pod,
 * `<ip>\t<hostname>.<domain>\t<hostname>` when the pod has a domain (a subdomain), else `<ip>\t<hostname>`;
 * then the HostAliases section.
 */
export function managedHostsFileContent(
  podIPs: readonly string[],
  hostname: string,
  hostDomain: string,
  hostAliases: readonly HostAlias[] | undefined,
): string {
  let out = MANAGED_HOSTS_HEADER + LOCAL_ENTRIES;
  for (const ip of podIPs) {
    out += hostDomain.length > 0 ? `${ip}\t${hostname}.${hostDomain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  }
  return out + hostsEntriesFromHostAliases(hostAliases);
}

/**
 * The hosts file of a host-network pod: the node's own file as it is (no newline added, even when it lacks a
 * final one), under the host-network header, then the HostAliases section.
 */
export function nodeHostsFileContent(
  nodeHostsFile: string,
  hostAliases: readonly HostAlias[] | undefined,
): string {
  return MANAGED_HOSTS_HEADER_HOST_NETWORK + nodeHostsFile + hostsEntriesFromHostAliases(hostAliases);
}

/**
 * Whether the pod's containers get a managed hosts file at all (shouldMountHostsFile): a host-network pod
 * always; a pod-network pod only once it has an IP (not while its sandbox is being created). The kubelet also
 * refuses it to Windows pods with a hostProcess container; our nodes are Linux, so that case is not modelled.
 */
export function shouldMountHostsFile(pod: Pick<Pod, 'spec'>, podIPs: readonly string[]): boolean {
  return podIPs.length > 0 || pod.spec.hostNetwork === true;
}

/** Whether this container gets it (makeMounts): not when it mounts a volume at /etc/hosts itself. */
export function containerGetsHostsFile(
  pod: Pick<Pod, 'spec'>,
  container: Pick<Container, 'volumeMounts'>,
  podIPs: readonly string[],
): boolean {
  if (!shouldMountHostsFile(pod, podIPs)) return false;
  return !(container.volumeMounts ?? []).some((m) => m.mountPath === ETC_HOSTS_PATH);
}

/** `<podDir>/etc-hosts` (getEtcHostsPath). */
export function etcHostsPath(podDir: string): string {
  return `${podDir.replace(/\/+$/, '')}/${ETC_HOSTS_FILE}`;
}

export interface HostsFileInputs {
  podDir: string;
  podIPs: readonly string[];
  /** From generatePodHostNameAndDomain. */
  hostname: string;
  hostDomain: string;
  /** The node's /etc/hosts; read by the caller, needed only for a host-network pod. */
  nodeHostsFile?: string;
}

/** What to write and what to mount. */
export interface HostsMountPlan {
  /** Where to write `content` on the node, with `mode`. */
  hostPath: string;
  content: string;
  mode: number;
  /** The container mount: read-write, as the kubelet's (SELinux relabelled there). */
  mount: Mount;
}

/**
 * makeHostsMount for one container, or undefined when it gets no managed hosts file. A host-network pod
 * without `nodeHostsFile` is a caller error (the kubelet would have failed reading the node's file).
 */
export function makeHostsMount(
  pod: Pick<Pod, 'spec'>,
  container: Pick<Container, 'volumeMounts'>,
  inputs: HostsFileInputs,
): HostsMountPlan | undefined {
  if (!containerGetsHostsFile(pod, container, inputs.podIPs)) return undefined;
  const aliases = pod.spec.hostAliases;
  let content: string;
  if (pod.spec.hostNetwork) {
    if (inputs.nodeHostsFile === undefined) {
      throw new KindError('InvalidArgument', 'a host-network pod needs the node hosts file', {});
    }
    content = nodeHostsFileContent(inputs.nodeHostsFile, aliases);
  } else {
    content = managedHostsFileContent(inputs.podIPs, inputs.hostname, inputs.hostDomain, aliases);
  }
  const hostPath = etcHostsPath(inputs.podDir);
  return {
    hostPath,
    content,
    mode: ETC_HOSTS_MODE,
    mount: { containerPath: ETC_HOSTS_PATH, hostPath, readonly: false },
  };
}
