/**
 * The runtime manager a Kubelet drives (kubelet.go NewMainKubelet's kuberuntime.NewKubeGenericRuntimeManager):
 * the node facts that go into every sandbox config, the back-offs, the environment sources (the pod
 * environment's cached VolumeSources when it has them) and the pod environment (volumes, pod files) the
 * manager's runtime helper hands to each container.
 */
import type { Logger } from '../util/logger.js';
import { newCrashLoopBackOff } from './backoff.js';
import { allocatableForEnv, type KubeletDeps } from './kubelet_config.js';
import { nodeHookHttpGet, restEnvSource, volumeEnvSource } from './kubelet_shell.js';
import type { NodePodEnvironment } from './kubelet_volumes.js';
import { ImagePullBackOff } from './images/pullbackoff.js';
import type { EventRecorderFunc } from './container/ref.js';
import { KubeGenericRuntimeManager } from './kuberuntime/manager.js';
import type { RuntimeStartMetrics } from './kuberuntime/managerdeps.js';
import type { ReasonCache } from './reasoncache.js';

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
    reasonCache: p.reasonCache,
    logger: p.log.child({ component: 'kuberuntime' }),
    runtimeHelper: p.podEnv.helper,
    ...(deps.devices ? { devices: deps.devices } : {}),
    files: p.podEnv.files,
    runtimeHandlers: () => deps.runtimeState?.runtimeHandlers?.() ?? [],
  });
}
