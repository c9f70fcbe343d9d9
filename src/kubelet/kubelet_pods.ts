/**
 * The kubelet's side of a pod's environment (kubelet_pods.go GenerateRunContainerOptions, makeMounts,
 * ensureHostsFile; kubelet_network.go GetPodDNS; kuberuntime makeMounts' termination-message file), as the
 * RuntimeHelper the runtime manager calls while it builds sandboxes and containers:
 *
 * - the sandbox's hostname (spec.hostname or the pod name; the FQDN with setHostnameAsFQDN) and DNS settings
 *   (by dnsPolicy from the node's cluster DNS and resolv.conf, with the MissingClusterDNS fallback);
 * - each container's mounts: its volumeMounts over the volumes the volume manager set up (subPath and
 *   subPathExpr resolved inside the volume, never outside it), the kubelet-managed `/etc/hosts`
 *   (`<pod dir>/etc-hosts`, rewritten at each container start), and a fresh termination-message file
 *   (`<pod dir>/containers/<name>/<8 hex>`, mode 0666) mounted at terminationMessagePath;
 * - the service link environment variables, and the env files `fileKeyRef` entries read (in the volume's
 *   directory, its symlinks resolved inside it);
 * - the pod's user namespace (userns/manager.ts) for `hostUsers: false`.
 *
 * Files go through VolumeFS, so the same code writes the node's disk (cri) and memory (sim).
 */
import type { Container, Pod } from '../api/core.js';
import type { Service } from '../api/service.js';
import type { Mount, RuntimeHandler, UserNamespace } from '../runtime/types.js';
import { errorMessage, KindError } from '../util/errors.js';
import type { ContainerDynamicResources, DynamicResources } from './cm/dra/shell/manager.js';
import type { ContainerMountOptions, RuntimeHelper, SandboxOptions } from './container/runtimehelper.js';
import { getServiceEnvVarMap } from './envvars_services.js';
import type { EnvFileRead, EnvVarValue } from './envvars.js';
import type { EventRecorderFunc } from './container/ref.js';
import { getPodDNS, type DNSConfig, type DNSEvent } from './podfiles/dns.js';
import { makeHostsMount } from './podfiles/etchosts.js';
import { generatePodHostNameAndDomain, podSandboxHostname } from './podfiles/hostname.js';
import {
  DEFAULT_TERMINATION_MESSAGE_PATH,
  makeTerminationMessageFileID,
  TERMINATION_MESSAGE_FILE_MODE,
} from './podfiles/termination.js';
import type { VolumeFS } from './volume/fs.js';
import { joinPath } from './volume/paths.js';
import { secureJoin } from './volume/securejoin.js';
import { makeMounts, type SubPathToCreate } from './volumemanager/makemounts.js';
import { podContainerDir, podDir } from './volume/podpaths.js';
import type { VolumeManager } from './volumemanager/volumemanager.js';
import { UsernsManager } from './userns/manager.js';

export interface KubeletPodsDeps {
  podsDir: string;
  fs: VolumeFS;
  volumes: Pick<VolumeManager, 'mountedVolumes'>;
  clusterDNS: readonly string[];
  clusterDomain: string;
  /** The node's resolv.conf, parsed (undefined: none configured). */
  hostResolvConf: () => Promise<DNSConfig | undefined>;
  /** The node's /etc/hosts, for host-network pods. */
  nodeHostsFile: () => Promise<string>;
  nodeIPs: readonly string[];
  /** The services the API server knows (namespace's and `default`'s); undefined: none known yet. */
  services?: (namespace: string) => readonly Service[];
  record: EventRecorderFunc;
  /** Events about the node itself (MissingClusterDNS is recorded on both). */
  recordNode?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** [0, 1), for the termination-message file names. */
  random: () => number;
  /** The node's DRA manager; absent: pods' ResourceClaims are not prepared. */
  dra?: DynamicResources;
}

function configError(message: string, pod: Pod): KindError {
  return new KindError('InvalidArgument', message, { pod: `${pod.metadata.namespace}/${pod.metadata.name}` });
}

export class KubeletPods implements RuntimeHelper {
  private readonly userns: UsernsManager;

  constructor(private readonly d: KubeletPodsDeps) {
    this.userns = new UsernsManager({ fs: d.fs, podsDir: d.podsDir, random: d.random });
  }

  userNamespace(pod: Pod, handlers: readonly RuntimeHandler[]): Promise<UserNamespace> {
    return this.userns.getOrCreate(pod, handlers);
  }

  prepareDynamicResources(pod: Pod): Promise<void> {
    return this.d.dra ? this.d.dra.prepareResources(pod) : Promise.resolve();
  }

  containerDynamicResources(
    pod: Pod,
    container: Container,
    applyCDI: boolean,
  ): Promise<ContainerDynamicResources> {
    return this.d.dra
      ? this.d.dra.containerResources(pod, container, applyCDI)
      : Promise.resolve({ cdiDevices: [] });
  }

  async sandboxOptions(pod: Pod, opts?: { quiet?: boolean }): Promise<SandboxOptions> {
    const hostname = podSandboxHostname(pod, this.hostnameOptions());
    const dns = getPodDNS(pod, {
      clusterDNS: this.d.clusterDNS,
      clusterDomain: this.d.clusterDomain,
      nodeIPs: this.d.nodeIPs,
      ...(await this.hostResolvConf()),
    });
    if (!opts?.quiet) this.recordDNSEvents(pod, dns.events);
    const out: SandboxOptions = { dnsConfig: dns.config };
    if (hostname !== undefined) out.hostname = hostname;
    return out;
  }

  async containerMounts(
    pod: Pod,
    container: Container,
    podIPs: readonly string[],
    env: readonly EnvVarValue[],
    opts: ContainerMountOptions = {},
  ): Promise<Mount[]> {
    const uid = pod.metadata.uid ?? '';
    const dir = podDir(this.d.podsDir, uid);
    await this.d.fs.mkdir(dir, 0o750);

    const { hostname, hostDomain } = generatePodHostNameAndDomain(pod, this.hostnameOptions());
    const hosts = makeHostsMount(pod, container, {
      podDir: dir,
      podIPs,
      hostname,
      hostDomain,
      ...(pod.spec.hostNetwork ? { nodeHostsFile: await this.d.nodeHostsFile() } : {}),
    });
    if (hosts) {
      await this.d.fs.writeFile(hosts.hostPath, Buffer.from(hosts.content), hosts.mode);
      await this.d.fs.chmod(hosts.hostPath, hosts.mode);
    }

    const made = makeMounts({
      container,
      volumes: this.d.volumes.mountedVolumes(uid) ?? new Map(),
      env,
      ...(hosts ? { etcHostsPath: hosts.hostPath } : {}),
      supportsRecursiveReadOnly: opts.supportsRecursiveReadOnly === true,
      ...(opts.imageVolumes ? { imageVolumes: opts.imageVolumes } : {}),
    });
    if (!made.ok) throw configError(made.message, pod);
    const mounts = made.mounts;
    for (const sp of made.subPaths) {
      mounts[sp.mountIndex]!.hostPath = await this.prepareSubPath(sp, container.name);
    }

    const messagePath = container.terminationMessagePath ?? DEFAULT_TERMINATION_MESSAGE_PATH;
    if (messagePath !== '') {
      const containerDir = podContainerDir(this.d.podsDir, uid, container.name);
      await this.d.fs.mkdir(containerDir, 0o750);
      const file = joinPath(containerDir, makeTerminationMessageFileID(this.d.random));
      await this.d.fs.writeFile(file, Buffer.alloc(0), TERMINATION_MESSAGE_FILE_MODE);
      await this.d.fs.chmod(file, TERMINATION_MESSAGE_FILE_MODE);
      mounts.push({ containerPath: messagePath, hostPath: file, readonly: false, propagation: 'PRIVATE' });
    }
    return mounts;
  }

  async envFile(pod: Pod, volumeName: string, path: string): Promise<EnvFileRead> {
    const volume = this.d.volumes.mountedVolumes(pod.metadata.uid ?? '')?.get(volumeName);
    if (!volume) return { kind: 'noVolume' };
    let file: string;
    try {
      file = await secureJoin(this.d.fs, volume.hostPath, path);
    } catch (err) {
      return { kind: 'badPath', error: errorMessage(err) };
    }
    try {
      return { kind: 'read', path: file, content: (await this.d.fs.readFile(file)).toString('utf8') };
    } catch (err) {
      return {
        kind: 'unreadable',
        path: file,
        error: `failed to open environment variable file ${JSON.stringify(file)}: ${errorMessage(err)}`,
      };
    }
  }

  serviceEnv(pod: Pod): Readonly<Record<string, string>> {
    if (!this.d.services) return {};
    const ns = pod.metadata.namespace ?? '';
    const services =
      ns === 'default' ? this.d.services(ns) : [...this.d.services(ns), ...this.d.services('default')];
    return getServiceEnvVarMap(services, ns, pod.spec.enableServiceLinks);
  }

  /**
   * The subPath's real location inside the volume (kubelet: SafeMakeDir + PrepareSafeSubpath): a missing
   * directory is created with the volume's mode; a path whose symlinks lead outside the volume is refused,
   * with the kubelet's message that gives nothing of the host away.
   */
  private async prepareSubPath(sp: SubPathToCreate, containerName: string): Promise<string> {
    const fs = this.d.fs;
    const base = await fs.realpath(sp.volumePath);
    const target = joinPath(sp.volumePath, sp.subPath);
    const inside = (p: string): boolean => p === base || p.startsWith(`${base}/`);
    if (!(await fs.lstat(target))) {
      const mode = (await fs.stat(sp.volumePath))?.mode ?? 0o755;
      // One element at a time, so a symlink met on the way cannot take the creation outside the volume.
      let cur = sp.volumePath;
      for (const part of sp.subPath.split('/').filter((p) => p !== '' && p !== '.')) {
        cur = joinPath(cur, part);
        if (!(await fs.lstat(cur))) {
          try {
            await fs.mkdir(cur, mode);
            // As the kubelet's SafeMakeDir: the volume's bits exactly, whatever the umask took away.
            await fs.chmod(cur, mode);
          } catch (err) {
            throw new KindError(
              'InvalidArgument',
              `failed to create subPath directory for volumeMount ${JSON.stringify(sp.mountName)} of container ${JSON.stringify(containerName)}`,
              { err: errorMessage(err) },
            );
          }
        }
        if (!inside(await fs.realpath(cur))) break;
      }
    }
    let real: string;
    try {
      real = await fs.realpath(target);
    } catch {
      real = '';
    }
    if (!real || !inside(real)) {
      throw new KindError(
        'InvalidArgument',
        `failed to prepare subPath for volumeMount ${JSON.stringify(sp.mountName)} of container ${JSON.stringify(containerName)}`,
      );
    }
    return real;
  }

  /** The HostnameOverride gate is on, as in the kubelet since v1.35 (the API server keeps the field). */
  private hostnameOptions(): { clusterDomain: string; hostnameOverride: true } {
    return { clusterDomain: this.d.clusterDomain, hostnameOverride: true };
  }

  private async hostResolvConf(): Promise<{ hostResolvConf?: DNSConfig }> {
    const conf = await this.d.hostResolvConf();
    return conf ? { hostResolvConf: conf } : {};
  }

  private recordDNSEvents(pod: Pod, events: readonly DNSEvent[]): void {
    for (const e of events) {
      try {
        if (e.object === 'pod') this.d.record(pod, e.type, e.reason, e.message);
        else this.d.recordNode?.(e.type, e.reason, e.message);
      } catch {
        // Events never stop a sandbox.
      }
    }
  }
}
