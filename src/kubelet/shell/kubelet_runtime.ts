/**
 * The runtime manager a Kubelet drives (kubelet.go NewMainKubelet's kuberuntime.NewKubeGenericRuntimeManager):
 * the node facts that go into every sandbox config, the back-offs, the environment sources (the pod
 * environment's cached VolumeSources when it has them) and the pod environment (volumes, pod files) the
 * manager's runtime helper hands to each container.
 */
import type { Logger } from '../../util/logger.js';
import { newCrashLoopBackOff } from '../backoff.js';
import { allocatableForEnv, type KubeletDeps } from './kubelet_config.js';
import { nodeHookHttpGet, restEnvSource, volumeEnvSource } from './kubelet_adapters.js';
import { restDataGetters } from '../volume/sources.js';
import { credentialVerificationPolicy, DEFAULT_VERIFICATION_POLICY } from '../images/pullcredentials.js';
import { fsPullRecordFiles, ImagePullManager } from '../images/shell/pullrecords.js';
import { sha256Hex } from '../../util/sha256.js';
import { pluginCredentials, PluginProvider } from '../credentialprovider/plugin.js';
import { pluginIO } from '../credentialprovider/shell/exec.js';
import type { ManagerContext } from '../kuberuntime/shell/context.js';
import type { NodePodEnvironment } from './kubelet_volumes.js';
import { ImagePullBackOff } from '../images/pullbackoff.js';
import type { EventRecorderFunc } from '../container/ref.js';
import { KubeGenericRuntimeManager } from '../kuberuntime/shell/manager.js';
import type { RuntimeStartMetrics } from '../kuberuntime/managerdeps.js';
import type { ReasonCache } from '../reasoncache.js';

export interface RuntimeManagerParts {
  record: EventRecorderFunc;
  nodeIPs: readonly string[];
  podEnv: NodePodEnvironment;
  reasonCache: ReasonCache;
  log: Logger;
  /** The node's start counters (src/metrics.ts), when there are metrics. */
  startMetrics?: RuntimeStartMetrics;
}

export function newRuntimeManager(deps: KubeletDeps, p: RuntimeManagerParts): KubeGenericRuntimeManager {
  const s = deps.settings;
  return new KubeGenericRuntimeManager({
    ...(p.startMetrics ? { startMetrics: p.startMetrics } : {}),
    runtime: deps.runtime,
    clock: deps.clock,
    nodeSettings: {
      nodeName: deps.nodeName,
      podLogsRoot: s.podLogsRoot,
      cgroupRoot: s.cgroupRoot,
      ...(s.memoryCapacityBytes !== undefined ? { memoryCapacityBytes: s.memoryCapacityBytes } : {}),
      ...(s.cpuCFSQuotaPeriodUs !== undefined ? { cpuCFSQuotaPeriodUs: s.cpuCFSQuotaPeriodUs } : {}),
      ...(s.thermalThrottlePaths ? { thermalThrottlePaths: s.thermalThrottlePaths } : {}),
      ...(s.swapController ? { swapController: s.swapController } : {}),
      ...(deps.resourceManagers ? { cpuAffinity: deps.resourceManagers.cpuManager } : {}),
      ...(s.dnsConfig ? { dnsConfig: s.dnsConfig } : {}),
      podNetwork: s.podNetwork,
      nodeIP: deps.nodeIP,
      nodeIPs: [...p.nodeIPs],
      allocatable: allocatableForEnv(deps.node()),
    },
    recorder: p.record,
    // Env references read through the cache the volumes read through when the pod environment has one (the
    // operator's: one per process), so a pod retrying a missing ConfigMap costs one GET per TTL.
    envSource:
      deps.envSource ??
      (p.podEnv.env.sources ? volumeEnvSource(p.podEnv.env.sources) : restEnvSource(deps.client)),
    httpGet: deps.hookHttpGet ?? nodeHookHttpGet,
    crashLoopBackOff: newCrashLoopBackOff(s.crashLoopBackOff),
    imagePullBackOff: new ImagePullBackOff(),
    imageCredentials: imageCredentials(deps, p),
    reasonCache: p.reasonCache,
    logger: p.log.child({ component: 'kuberuntime' }),
    runtimeHelper: p.podEnv.helper,
    ...(deps.devices ? { devices: deps.devices } : {}),
    files: p.podEnv.files,
    runtimeHandlers: () => deps.runtimeState?.runtimeHandlers?.() ?? [],
  });
}

/**
 * Where a pod's pull credentials come from (its imagePullSecrets, read through the cache the volumes read
 * through) and, on a node with a root directory, the pull records of KubeletEnsureSecretPulledImages.
 */
function imageCredentials(
  deps: KubeletDeps,
  p: RuntimeManagerParts,
): Pick<ManagerContext, 'getPullSecret' | 'imagePullManager' | 'credentialProviders'> {
  const sources = p.podEnv.env.sources;
  const secrets = sources ? undefined : restDataGetters(deps.client).secrets;
  const getPullSecret = (namespace: string, name: string) =>
    sources ? sources.getSecret(namespace, name) : secrets!.get(namespace, name);
  const plugins = credentialProviders(deps, p);
  const rootDir = p.podEnv.env.rootDir;
  if (!rootDir) return { getPullSecret, ...plugins };
  const c = deps.settings.imagePullCredentials;
  const policy = credentialVerificationPolicy(
    c?.policy ?? DEFAULT_VERIFICATION_POLICY,
    c?.preloadedImagesVerificationAllowlist ?? [],
  );
  const log = p.log.child({ component: 'image-pull-manager' });
  return {
    getPullSecret,
    ...plugins,
    imagePullManager: new ImagePullManager(
      fsPullRecordFiles(p.podEnv.env.fs, rootDir),
      policy,
      deps.clock,
      log,
    ),
  };
}

/** The node's credential provider plugins, each with its cache, as one lookup after the pod's secrets. */
function credentialProviders(
  deps: KubeletDeps,
  p: RuntimeManagerParts,
): Pick<ManagerContext, 'credentialProviders'> {
  const c = deps.settings.credentialProviders;
  if (!c || c.providers.length === 0) return {};
  const io = pluginIO(c.binDir, deps.client, deps.clock);
  const providers = c.providers.map((provider) => new PluginProvider(provider, io));
  const log = p.log.child({ component: 'credential-provider' });
  return {
    credentialProviders: (pod, image, repository) =>
      pluginCredentials(
        providers,
        repository,
        {
          namespace: pod.metadata.namespace ?? 'default',
          name: pod.metadata.name ?? '',
          uid: pod.metadata.uid ?? '',
          serviceAccountName: pod.spec.serviceAccountName ?? '',
        },
        sha256Hex,
        (provider, err) =>
          log.warn('Failed to provide credentials for image', { provider, image, err: err.message }),
      ),
  };
}
