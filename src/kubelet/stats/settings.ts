/**
 * The kubelet's volumeStatsAggPeriod: how often a pod's volumes are measured for the Summary (and so how
 * soon an emptyDir over its sizeLimit is seen). Unset or zero is the kubelet's default of a minute (its
 * configuration defaulting treats 0 as unset); a negative period turns volume stats off, as the kubelet's
 * fsResourceAnalyzer does not start then.
 */
import { parseGoDuration } from '../../util/duration.js';

export const DefaultVolumeStatsAggPeriodMs = 60_000;

/** The period in milliseconds (≤ 0: off); a value that is no Go duration keeps the default and says why. */
export function volumeStatsAggPeriodFrom(value: string | undefined): { periodMs: number; error?: string } {
  if (value === undefined) return { periodMs: DefaultVolumeStatsAggPeriodMs };
  let ms: number;
  try {
    ms = parseGoDuration(value);
  } catch (err) {
    return {
      periodMs: DefaultVolumeStatsAggPeriodMs,
      error: `volumeStatsAggPeriod: ${(err as Error).message}`,
    };
  }
  return { periodMs: ms === 0 ? DefaultVolumeStatsAggPeriodMs : ms };
}
