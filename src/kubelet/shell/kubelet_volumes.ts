/**
 * Assembles a node's pod environment from the Kubelet's deps: the volume manager, the runtime helper
 * (hostname, DNS, mounts, /etc/hosts, termination-message files, service variables) and the reader of
 * termination messages. Defaults describe a simulated node: everything in memory, simulated tokens.
 */
import type { Runtime, ContainerStatus as RuntimeContainerStatus } from '../../runtime/types.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import { allocatableForEnv, type KubeletDeps, type PodEnvironment } from './kubelet_config.js';
import { KubeletPods } from '../kubelet_pods.js';
import type { EventRecorderFunc } from '../container/ref.js';
import type { ContainerFileReader } from '../kuberuntime/terminationmessage.js';
import { restVolumeSources, withPodCertificates } from '../volume/sources.js';
import type { PodCertificateManager } from '../podcertificate/shell/manager.js';
import { simulatedServiceAccountToken } from '../token/simulated.js';
import type { VolumeFS } from '../volume/fs.js';
import { MemoryVolumeFS } from '../volume/memfs.js';
import { MemoryMounter } from '../volume/shell/mounter.js';
import { VolumeManager } from '../volumemanager/volumemanager.js';

/** The hosts file a simulated node has. */
const SIM_NODE_HOSTS = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n';

export interface NodePodEnvironment {
  env: PodEnvironment;
  volumes: VolumeManager;
  helper: KubeletPods;
  files: ContainerFileReader;
}

/** The message part of CRI log lines (`<time> <stream> <P|F> <text>`): full lines end with a newline. */
function criMessages(lines: readonly string[]): string {
  let out = '';
  for (const line of lines) {
    const m = /^\S+ (?:stdout|stderr) ([PF])(?: (.*))?$/.exec(line);
    if (!m) continue;
    out += (m[2] ?? '') + (m[1] === 'F' ? '\n' : '');
  }
  return out;
}

/**
 * Termination messages read through `fs`; logs from the runtime when its capabilities say it hands them
 * out (RuntimeCapabilities.readLogs), else from the container's CRI log file.
 */
export function fileReaderFor(fs: VolumeFS, runtime: Pick<Runtime, 'capabilities'>): ContainerFileReader {
  return {
    async readFileTail(hostPath, maxBytes) {
      let data: Buffer;
      try {
        data = await fs.readFile(hostPath);
      } catch (err) {
        if ((err as { code?: string }).code === 'ENOENT') return undefined;
        throw err;
      }
      return data.length > maxBytes ? data.subarray(data.length - maxBytes) : data;
    },
    async readLogTail(status: RuntimeContainerStatus, lines: number) {
      let all: string[];
      if (runtime.capabilities.readLogs) all = runtime.capabilities.readLogs(status.id);
      else if (status.logPath) all = (await fs.readFile(status.logPath)).toString('utf8').split('\n');
      else return '';
      return criMessages(all.filter((l) => l !== '').slice(-lines));
    },
  };
}

export function newPodEnvironment(
  deps: KubeletDeps,
  record: EventRecorderFunc,
  nodeIPs: readonly string[],
  log: Logger,
  /** The node's podcertificate manager, whose credentials podCertificate sources read. */
  podCertificates?: Pick<PodCertificateManager, 'credentialBundle'>,
): NodePodEnvironment {
  const given = deps.podEnvironment;
  const fs = given?.fs ?? new MemoryVolumeFS();
  const env: PodEnvironment = given ?? {
    podsDir: `/var/lib/kubelet-operator/nodes/${deps.nodeName}/pods`,
    rootDir: `/var/lib/kubelet-operator/nodes/${deps.nodeName}`,
    fs,
    mounter: new MemoryMounter(),
  };
  const tokens =
    env.tokens ?? ((pod, p) => Promise.resolve(simulatedServiceAccountToken(pod, p, deps.clock.now())));
  const sources = env.sources ?? restVolumeSources(deps.client, deps.clock);
  const volumes = new VolumeManager({
    podsDir: env.podsDir,
    fs: env.fs,
    mounter: env.mounter,
    clock: deps.clock,
    sources: podCertificates
      ? withPodCertificates(sources, (key) => podCertificates.credentialBundle(key))
      : sources,
    tokens,
    nodeAllocatable: () => allocatableForEnv(deps.node()),
    logger: log.child({ component: 'volume_manager' }),
    tmpfs: { allowed: true, refusedLogged: false },
    ...(env.rootDir !== undefined ? { kubeletRootDir: env.rootDir } : {}),
    ...(env.csi ? { csi: env.csi } : {}),
    record,
  });
  const helper = new KubeletPods({
    podsDir: env.podsDir,
    fs: env.fs,
    volumes,
    clusterDNS: env.clusterDNS ?? [],
    clusterDomain: env.clusterDomain ?? 'cluster.local',
    hostResolvConf: env.hostResolvConf ?? (() => Promise.resolve(undefined)),
    nodeHostsFile: env.nodeHostsFile ?? (() => Promise.resolve(SIM_NODE_HOSTS)),
    nodeIPs,
    ...(env.services ? { services: env.services } : {}),
    record,
    ...(env.recordNode
      ? {
          recordNode: (type: 'Normal' | 'Warning', reason: string, message: string) => {
            try {
              env.recordNode!(type, reason, message);
            } catch (err) {
              log.warn('node event failed', { reason, err: errorMessage(err) });
            }
          },
        }
      : {}),
    random: Math.random,
    ...(deps.dynamicResources ? { dra: deps.dynamicResources } : {}),
  });
  return { env, volumes, helper, files: env.files ?? fileReaderFor(env.fs, deps.runtime) };
}
