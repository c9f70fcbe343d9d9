/**
 * A node's graceful shutdown configuration from its VirtualNode's `spec.kubelet` (kubelet:
 * KubeletConfiguration shutdownGracePeriod, shutdownGracePeriodCriticalPods, shutdownGracePeriodByPodPriority;
 * newPodManager's migration of the two durations into two priority
 * groups). Both gates (GracefulNodeShutdown, GracefulNodeShutdownBasedOnPodPriority) are on in v1.37, as
 * here. No configuration (every field zero or empty) means the feature is off: the kubelet's manager stub.
 *
 * Pure: settings in, config or the kubelet's error messages out (the checks are the kubelet's config
 * validation, in src/api/shutdownsettings.ts with the fields they check).
 */
import {
  validateShutdownSettings,
  type ShutdownGracePeriodByPodPriority,
  type ShutdownSettings,
} from '../../api/shutdownsettings.js';
import { parseGoDuration } from '../../util/duration.js';

/** scheduling.DefaultPriorityWhenNoDefaultClassExists: the priority of a pod no class gives one. */
export const DefaultPriorityWhenNoDefaultClassExists = 0;
/** scheduling.SystemCriticalPriority: system-cluster-critical and system-node-critical are at or above it. */
export const SystemCriticalPriority = 2_000_000_000;

/** What the node's shutdown manager runs with. */
export interface ShutdownConfig {
  /** As configured (ms), for /configz. */
  shutdownGracePeriodMs: number;
  shutdownGracePeriodCriticalPodsMs: number;
  shutdownGracePeriodByPodPriority: readonly ShutdownGracePeriodByPodPriority[];
  /**
   * The priority groups the manager terminates, lowest priority first: shutdownGracePeriodByPodPriority, or
   * the two groups migrated from the durations. Empty: the feature is off.
   */
  groups: readonly ShutdownGracePeriodByPodPriority[];
}

export const ShutdownDisabled: ShutdownConfig = Object.freeze({
  shutdownGracePeriodMs: 0,
  shutdownGracePeriodCriticalPodsMs: 0,
  shutdownGracePeriodByPodPriority: [],
  groups: [],
});

/**
 * kubelet migrateConfig: shutdownGracePeriod and shutdownGracePeriodCriticalPods as two priority groups,
 * pods below SystemCriticalPriority getting the difference; none when the period is 0 or shorter than the
 * critical one. Seconds are whole (Go's integer division of durations).
 */
export function migrateConfig(
  shutdownGracePeriodMs: number,
  shutdownGracePeriodCriticalPodsMs: number,
): ShutdownGracePeriodByPodPriority[] {
  if (shutdownGracePeriodMs === 0) return [];
  const defaultPriority = shutdownGracePeriodMs - shutdownGracePeriodCriticalPodsMs;
  if (defaultPriority < 0) return [];
  const criticalPriority = shutdownGracePeriodMs - defaultPriority;
  if (criticalPriority < 0) return [];
  return [
    {
      priority: DefaultPriorityWhenNoDefaultClassExists,
      shutdownGracePeriodSeconds: Math.trunc(defaultPriority / 1000),
    },
    { priority: SystemCriticalPriority, shutdownGracePeriodSeconds: Math.trunc(criticalPriority / 1000) },
  ];
}

/**
 * The config a node runs with (kubelet newPodManager: shutdownGracePeriodByPodPriority when set, else the
 * migrated durations; sorted by priority, lowest first, stable for equal ones). Throws with the kubelet's
 * messages when the settings are invalid (the CRD and the spec's schema refuse them first).
 */
export function shutdownConfigFrom(s: ShutdownSettings | undefined): ShutdownConfig {
  const errors = validateShutdownSettings(s);
  if (errors.length > 0) throw new Error(errors.join(', '));
  const period = s?.shutdownGracePeriod ? parseGoDuration(s.shutdownGracePeriod) : 0;
  const critical = s?.shutdownGracePeriodCriticalPods
    ? parseGoDuration(s.shutdownGracePeriodCriticalPods)
    : 0;
  const byPriority = (s?.shutdownGracePeriodByPodPriority ?? []).map((e) => ({ ...e }));
  const groups = (byPriority.length > 0 ? byPriority : migrateConfig(period, critical))
    .map((g, i) => ({ g, i }))
    .sort((a, b) => a.g.priority - b.g.priority || a.i - b.i)
    .map((e) => e.g);
  return {
    shutdownGracePeriodMs: period,
    shutdownGracePeriodCriticalPodsMs: critical,
    shutdownGracePeriodByPodPriority: byPriority,
    groups,
  };
}

/** Whether the node has a shutdown manager at all (kubelet NewManager: a stub without groups). */
export function shutdownEnabled(c: ShutdownConfig): boolean {
  return c.groups.length > 0;
}

/** kubelet periodRequested: the sum of the groups' grace periods, in seconds (the inhibit delay asked for). */
export function periodRequestedSeconds(c: ShutdownConfig): number {
  return c.groups.reduce((sum, g) => sum + g.shutdownGracePeriodSeconds, 0);
}
