/**
 * The stats provider of one served VirtualNode (src/kubelet/stats), from its spec and pod environment:
 *
 * - cri: volumes and container logs measured on the node's disk (the log directory is the kubelet's
 *   `<logRoot>/<namespace>_<pod>_<uid>/<container>`), the node's filesystem by statfs of its pods directory;
 * - sim: volumes measured in the in-memory tree the simulated runtime reads, no log files (the runtime
 *   keeps logs in memory), the filesystem's capacity the node's declared ephemeral storage, and an image
 *   disk of its own when `runtime.sim.imageFs` declares one.
 */
import type { VirtualNodeSpec } from '../api/virtualnode.js';
import type { PodEnvironment } from '../kubelet/shell/kubelet_config.js';
import { DefaultVolumeStatsAggPeriodMs } from '../kubelet/stats/settings.js';
import { DirUsage } from '../kubelet/stats/shell/du.js';
import { StatsProvider, type StatsRuntime } from '../kubelet/stats/shell/provider.js';
import type { Runtime } from '../runtime/types.js';
import { joinPath } from '../kubelet/volume/paths.js';
import type { Clock } from '../util/clock.js';
import { quantityValue } from '../util/quantity.js';
import type { VolumeStats } from '../kubelet/stats/types.js';

export function statsProviderFor(opts: {
  spec: VirtualNodeSpec;
  nodeName: string;
  env: PodEnvironment;
  runtime: StatsRuntime & Partial<Pick<Runtime, 'imageFsInfo'>>;
  clock: Clock;
  nodesServed(): number;
  ownsPod(uid: string): boolean;
  /** The Node's capacity as its status last had it (huge pages, HugepageAwareEviction). */
  nodeCapacity?: () => Readonly<Record<string, string | number>> | undefined;
  /** kubelet volumeStatsAggPeriod in milliseconds (≤ 0: no volume stats); default a minute. */
  volumeStatsAggPeriodMs?: number;
  /** A pod's CSI volumes' stats (the volume manager's NodeGetVolumeStats). */
  persistentVolumes?: (podUID: string) => Promise<VolumeStats[]>;
}): StatsProvider {
  const { spec, env, clock } = opts;
  const cri = spec.runtime.type === 'cri' ? spec.runtime.cri : undefined;
  const periodMs = opts.volumeStatsAggPeriodMs ?? DefaultVolumeStatsAggPeriodMs;
  // Container logs are measured at the default pace when volume stats are off.
  const usage = new DirUsage(env.fs, clock, periodMs > 0 ? periodMs : DefaultVolumeStatsAggPeriodMs);
  return new StatsProvider({
    nodeName: opts.nodeName,
    runtime: opts.runtime,
    clock,
    startTimeMs: clock.now(),
    memoryCapacityBytes: quantityValue(spec.capacity.memory),
    ...(opts.nodeCapacity ? { nodeCapacity: opts.nodeCapacity } : {}),
    ephemeralStorageCapacityBytes: quantityValue(spec.capacity['ephemeral-storage']),
    nodesServed: opts.nodesServed,
    ownsPod: opts.ownsPod,
    ...(opts.runtime.imageFsInfo
      ? { imageFsInfo: opts.runtime.imageFsInfo.bind(opts.runtime) as Runtime['imageFsInfo'] }
      : {}),
    ...(spec.runtime.type === 'sim' && spec.runtime.sim.imageFs
      ? { imageFsCapacityBytes: quantityValue(spec.runtime.sim.imageFs.capacity) }
      : {}),
    ...(periodMs > 0 ? { volumes: { podsDir: env.podsDir, fs: env.fs, usage } } : {}),
    ...(opts.persistentVolumes ? { persistentVolumes: opts.persistentVolumes } : {}),
    ...(cri
      ? {
          logs: {
            dir: (pod, container) =>
              joinPath(cri.logRoot, `${pod.namespace}_${pod.name}_${pod.uid}`, container),
            usage,
          },
          statfsPath: env.podsDir,
        }
      : {}),
  });
}
