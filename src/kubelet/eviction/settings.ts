/**
 * A node's eviction configuration from its VirtualNode's `spec.kubelet` eviction fields, as the kubelet
 * builds its eviction manager's Config from KubeletConfiguration: evictionHard (the kubelet's default when
 * unset), evictionSoft with evictionSoftGracePeriod, evictionMinimumReclaim, evictionPressureTransitionPeriod
 * and evictionMaxPodGracePeriod, then the containerfs thresholds for the node's filesystem layout.
 *
 * A kubelet with a bad value does not start; a VirtualNode with one keeps running on the defaults and says
 * why (`error`, the kubelet's wording), so one typo does not take a node's pods down.
 */
import { parseGoDuration } from '../../util/duration.js';
import type { EvictionConfig } from './manager.js';
import type { FsLayout } from './rank.js';
import {
  DefaultEvictionHard,
  DefaultMaxPodGracePeriodSeconds,
  DefaultPressureTransitionPeriodMs,
  effectiveEvictionHard,
} from './signals.js';
import { parseThresholdConfig, updateContainerFsThresholds, type Threshold } from './thresholds.js';

/** The VirtualNode's `spec.kubelet` eviction fields, as stored. */
export interface EvictionSettings {
  evictionHard?: Readonly<Record<string, string>>;
  evictionSoft?: Readonly<Record<string, string>>;
  evictionSoftGracePeriod?: Readonly<Record<string, string>>;
  evictionMinimumReclaim?: Readonly<Record<string, string>>;
  /** A Go duration ("5m0s"); default 5 minutes. */
  evictionPressureTransitionPeriod?: string;
  /** Seconds; default 0. */
  evictionMaxPodGracePeriod?: number;
}

export interface EvictionConfigResult {
  config: EvictionConfig;
  /** Set when the settings were refused: the config is then the kubelet's defaults. */
  error?: string;
  /** The kubelet's warnings for containerfs thresholds that are replaced. */
  warnings: string[];
}

const DefaultLayout: FsLayout = { dedicatedImageFs: false, splitContainerImageFs: false };

function build(
  thresholds: readonly Threshold[],
  pressureTransitionPeriodMs: number,
  maxPodGracePeriodSeconds: number,
  layout: FsLayout,
): { config: EvictionConfig; warnings: string[] } {
  const config: EvictionConfig = {
    thresholds,
    configuredThresholds: thresholds,
    pressureTransitionPeriodMs,
    maxPodGracePeriodSeconds,
    localStorageCapacityIsolation: true,
    layout,
  };
  return configForLayout(config, layout);
}

/**
 * The config for a filesystem layout (kubelet: the first synchronize, once HasDedicatedImageFs and
 * HasDedicatedContainerFs have answered): the configured thresholds with containerfs ones following the
 * filesystem that holds the writable layers (updateContainerFsThresholds), and the layout that picks rank
 * and node-level reclaim per signal. The warnings are the kubelet's for configured containerfs thresholds.
 */
export function configForLayout(
  config: EvictionConfig,
  layout: FsLayout,
): { config: EvictionConfig; warnings: string[] } {
  const configured = config.configuredThresholds ?? config.thresholds;
  const fs = updateContainerFsThresholds(configured, layout.dedicatedImageFs, layout.splitContainerImageFs);
  return {
    config: { ...config, thresholds: fs.thresholds, configuredThresholds: configured, layout },
    warnings: fs.warnings,
  };
}

/** The eviction config a node runs with; never throws. */
export function evictionConfigFrom(
  settings: EvictionSettings | undefined,
  layout: FsLayout = DefaultLayout,
): EvictionConfigResult {
  const s = settings ?? {};
  try {
    const thresholds = parseThresholdConfig({
      evictionHard: effectiveEvictionHard(s.evictionHard),
      ...(s.evictionSoft ? { evictionSoft: s.evictionSoft } : {}),
      ...(s.evictionSoftGracePeriod ? { evictionSoftGracePeriod: s.evictionSoftGracePeriod } : {}),
      ...(s.evictionMinimumReclaim ? { evictionMinimumReclaim: s.evictionMinimumReclaim } : {}),
    });
    let transition = DefaultPressureTransitionPeriodMs;
    if (s.evictionPressureTransitionPeriod !== undefined) {
      try {
        transition = parseGoDuration(s.evictionPressureTransitionPeriod);
      } catch (err) {
        throw new Error(`evictionPressureTransitionPeriod: ${(err as Error).message}`);
      }
      if (transition < 0) throw new Error('evictionPressureTransitionPeriod must not be negative');
    }
    const maxGrace = s.evictionMaxPodGracePeriod ?? DefaultMaxPodGracePeriodSeconds;
    return build(thresholds, transition, maxGrace, layout);
  } catch (err) {
    const fallback = parseThresholdConfig({ evictionHard: { ...DefaultEvictionHard } });
    return {
      ...build(fallback, DefaultPressureTransitionPeriodMs, DefaultMaxPodGracePeriodSeconds, layout),
      error: err instanceof Error ? err.message : String(err),
    };
  }
}
