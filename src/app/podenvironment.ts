/**
 * The pod environment of one served VirtualNode (where its pods' volumes and files live, how tokens are made),
 * from its spec and the operator's settings:
 *
 * - cri: the node's own disk under `spec.kubelet.podsDir` (default `<state dir>/nodes/<node>/pods`), real tmpfs
 *   mounts, the host's resolv.conf and /etc/hosts; the runtime sees the same paths.
 * - sim: everything in memory (the simulated runtime reads the same memory when a container `cat`s a file).
 * - tokens: `Request` (default on cri) asks the API server for TokenRequests bound to the pod, through the
 *   kubelet's token manager; `Simulated` (default on sim) writes unsigned placeholders and asks nothing.
 */
import { readFile } from 'node:fs/promises';
import type { VirtualNodeSpec } from '../api/virtualnode.js';
import type { Service } from '../api/service.js';
import type { KubeClient } from '../kube/client.js';
import type { PodEnvironment } from '../kubelet/shell/kubelet_config.js';
import { parseResolvConf, type DNSConfig } from '../kubelet/podfiles/dns.js';
import { RestTokenRequester } from '../kubelet/token/resttokenrequester.js';
import { TokenManager } from '../kubelet/token/tokenmanager.js';
import { MemoryVolumeFS } from '../kubelet/volume/memfs.js';
import { RealVolumeFS } from '../kubelet/volume/shell/realfs.js';
import { MemoryMounter, RealMounter } from '../kubelet/volume/shell/mounter.js';
import type { VolumeSources } from '../kubelet/volume/sources.js';
import type { Clock } from '../util/clock.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/logger.js';

export interface PodEnvironmentSettings {
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  /** The operator's state directory (its --state-dir). */
  stateDir: string;
  /** Operator-wide defaults (--cluster-dns, --cluster-domain). */
  clusterDNS: readonly string[];
  clusterDomain: string;
  /** The host's resolv.conf and hosts file (--resolv-conf, --hosts-file); defaults /etc/resolv.conf, /etc/hosts. */
  resolvConf?: string;
  hostsFile?: string;
  /** Shared by every node of the process (one cache of ConfigMaps and Secrets). */
  sources?: VolumeSources;
  /** The operator's service cache, by namespace. */
  services?: (namespace: string) => readonly Service[];
  /** The token manager's clock (default `clock`); tests pass a faster one to see refreshes in seconds. */
  tokenClock?: Clock;
}

export interface NodePodEnvironment {
  env: PodEnvironment;
  /** The simulated node's files (handed to the simulated runtime). */
  memory?: MemoryVolumeFS;
  /** The resolv.conf that pods with dnsPolicy Default start from (cri); '' when the node reads none. */
  resolvConf: string;
  stop(): void;
}

/** A VirtualNode's root directory (the kubelet's --root-dir): its pods, logs and local API sockets. */
export function nodeRootDir(stateDir: string, nodeName: string): string {
  return `${stateDir.replace(/\/+$/, '')}/nodes/${nodeName}`;
}

export function defaultPodsDir(stateDir: string, nodeName: string): string {
  return `${stateDir.replace(/\/+$/, '')}/nodes/${nodeName}/pods`;
}

/**
 * A VirtualNode's log directory, what its node API serves on `/logs/` as the kubelet serves /var/log
 * (NodeLogQuery): beside its pod directories; the operator writes nothing there, whoever runs it may.
 */
export function nodeLogDir(stateDir: string, nodeName: string): string {
  return `${stateDir.replace(/\/+$/, '')}/nodes/${nodeName}/logs`;
}

export function podEnvironmentFor(
  spec: VirtualNodeSpec,
  nodeName: string,
  s: PodEnvironmentSettings,
  recordNode?: PodEnvironment['recordNode'],
): NodePodEnvironment {
  const cri = spec.runtime.type === 'cri';
  const k = spec.kubelet;
  const memory = cri ? undefined : new MemoryVolumeFS();
  const tokensMode = k.serviceAccountTokens ?? (cri ? 'Request' : 'Simulated');
  let tokenManager: TokenManager | undefined;
  const env: PodEnvironment = {
    podsDir: k.podsDir ?? defaultPodsDir(s.stateDir, nodeName),
    rootDir: nodeRootDir(s.stateDir, nodeName),
    fs: memory ?? new RealVolumeFS(),
    mounter: cri ? new RealMounter() : new MemoryMounter(),
    clusterDNS: k.clusterDNS ?? s.clusterDNS,
    clusterDomain: k.clusterDomain ?? s.clusterDomain,
    ...(s.sources ? { sources: s.sources } : {}),
    ...(s.services ? { services: s.services } : {}),
    ...(recordNode ? { recordNode } : {}),
  };
  const resolvConf = cri ? (k.resolvConf ?? s.resolvConf ?? '/etc/resolv.conf') : '';
  if (cri) {
    const hostsFile = s.hostsFile ?? '/etc/hosts';
    const log = s.logger.child({ node: nodeName });
    env.hostResolvConf = async (): Promise<DNSConfig | undefined> => {
      try {
        const parsed = parseResolvConf(await readFile(resolvConf, 'utf8'));
        if (parsed.error) log.warn('unusable resolv.conf', { path: resolvConf, err: parsed.error });
        return parsed;
      } catch (err) {
        log.warn('cannot read resolv.conf', { path: resolvConf, err: errorMessage(err) });
        return undefined;
      }
    };
    env.nodeHostsFile = () => readFile(hostsFile, 'utf8');
  }
  if (tokensMode === 'Request') {
    tokenManager = new TokenManager({
      requester: new RestTokenRequester(s.client),
      clock: s.tokenClock ?? s.clock,
    });
    tokenManager.start();
    const tm = tokenManager;
    env.tokens = async (pod, p) => {
      const t = await tm.getServiceAccountToken(
        pod.metadata.namespace ?? '',
        pod.spec.serviceAccountName || 'default',
        {
          ...(p.audience ? { audience: p.audience } : {}),
          expirationSeconds: p.expirationSeconds ?? 3600,
          boundObjectRef: {
            kind: 'Pod',
            apiVersion: 'v1',
            name: pod.metadata.name ?? '',
            uid: pod.metadata.uid ?? '',
          },
        },
      );
      return t.token;
    };
    env.onPodUnmounted = (uid) => tm.deleteServiceAccountToken(uid);
  }
  return {
    env,
    ...(memory ? { memory } : {}),
    resolvConf,
    stop: () => tokenManager?.stop(),
  };
}
