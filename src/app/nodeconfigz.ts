/**
 * One served VirtualNode's kubelet settings as its node API reports them on `/configz` and `/flagz`
 * (src/server/nodeapi/configz.ts): read from what the node was built with (its Kubelet's settings and pod
 * environment) and from the spec in force (labels, taints, capacity and heartbeat change in place).
 */
import type { VirtualNodeSpec } from '../api/virtualnode.js';
import { MaxCrashLoopBackOffMs } from '../kubelet/backoff.js';
import { QUOTA_PERIOD_US } from '../kubelet/cm/cpu.js';
import {
  kubeletPeriods,
  type KubeletSettings,
  type PodEnvironment,
} from '../kubelet/shell/kubelet_config.js';
import type { ShutdownConfig } from '../kubelet/nodeshutdown/config.js';
import type { NodeKubeletSettings } from '../server/nodeapi/configz.js';
import { volumeStatsAggPeriodFrom } from '../kubelet/stats/settings.js';

export function nodeKubeletSettings(o: {
  spec: VirtualNodeSpec;
  nodeName: string;
  nodeIP: string;
  /** What the node's Kubelet was constructed with. */
  settings: KubeletSettings;
  /** The graceful node shutdown the node runs with. */
  shutdown?: ShutdownConfig;
  env: Pick<PodEnvironment, 'clusterDNS' | 'clusterDomain'>;
  /** The resolv.conf the node reads for dnsPolicy Default, '' for none. */
  resolvConf: string;
  /** The image GC policy the node runs with. */
  imageGC?: NodeKubeletSettings['imageGC'];
}): NodeKubeletSettings {
  const { spec, settings } = o;
  const cri = spec.runtime.type === 'cri' ? spec.runtime.cri : undefined;
  return {
    nodeName: o.nodeName,
    nodeIP: o.nodeIP,
    ...(cri
      ? { cri: { endpoint: cri.endpoint, cgroupRoot: settings.cgroupRoot, podLogsDir: settings.podLogsRoot } }
      : {}),
    clusterDNS: o.env.clusterDNS ?? [],
    clusterDomain: o.env.clusterDomain ?? 'cluster.local',
    resolvConf: o.resolvConf,
    maxPods: spec.capacity.pods,
    syncFrequencyMs: kubeletPeriods(settings).resyncIntervalMs,
    nodeStatusUpdateFrequencyMs: spec.heartbeat.statusUpdateFrequencySeconds * 1000,
    nodeStatusReportFrequencyMs: spec.heartbeat.statusReportFrequencySeconds * 1000,
    nodeLeaseDurationSeconds: spec.heartbeat.leaseDurationSeconds,
    allowedUnsafeSysctls: settings.allowedUnsafeSysctls ?? [],
    cpuCFSQuotaPeriodMs: (settings.cpuCFSQuotaPeriodUs ?? QUOTA_PERIOD_US) / 1000,
    volumeStatsAggPeriodMs: volumeStatsAggPeriodFrom(spec.kubelet.volumeStatsAggPeriod).periodMs,
    ...(o.shutdown
      ? {
          shutdown: {
            gracePeriodMs: o.shutdown.shutdownGracePeriodMs,
            gracePeriodCriticalPodsMs: o.shutdown.shutdownGracePeriodCriticalPodsMs,
            byPodPriority: o.shutdown.shutdownGracePeriodByPodPriority,
          },
        }
      : {}),
    ...(settings.crashLoopBackOff?.featureGates?.KubeletCrashLoopBackOffMax
      ? {
          maxContainerRestartPeriodMs:
            (settings.crashLoopBackOff.maxContainerRestartPeriodSeconds ?? MaxCrashLoopBackOffMs / 1000) *
            1000,
        }
      : {}),
    ...(o.imageGC ? { imageGC: { ...o.imageGC } } : {}),
    labels: spec.labels,
    taints: spec.taints,
  };
}
