/**
 * A node's graceful shutdown configuration from its VirtualNode's `spec.kubelet` (kubelet:
 * KubeletConfiguration shutdownGracePeriod, shutdownGracePeriodCriticalPods, shutdownGracePeriodByPodPriority;
 * the checks of its config validation; newPodManager's migration of the two durations into two priority
 * groups). Both gates (GracefulNodeShutdown, GracefulNodeShutdownBasedOnPodPriority) are on in v1.37, as
 * here. No configuration (every field zero or empty) means the feature is off: the kubelet's manager stub.
 *
 * Pure: settings in, config or the kubelet's error messages out.
 */
import { formatGoDuration, parseGoDuration } from '../../util/duration.js';

/** scheduling.DefaultPriorityWhenNoDefaultClassExists: the priority of a pod no class gives one. */
export const DefaultPriorityWhenNoDefaultClassExists = 0;
/** scheduling.SystemCriticalPriority: system-cluster-critical and system-node-critical are at or above it. */
export const SystemCriticalPriority = 2_000_000_000;

/** One entry of shutdownGracePeriodByPodPriority, as the kubelet's configuration spells it. */
export interface ShutdownGracePeriodByPodPriority {
  priority: number;
  shutdownGracePeriodSeconds: number;
}

/** The VirtualNode's `spec.kubelet` shutdown fields, as stored. */
export interface ShutdownSettings {
  /** A Go duration ("30s"); default 0s. */
  shutdownGracePeriod?: string;
  /** A Go duration ("10s"); default 0s. */
  shutdownGracePeriodCriticalPods?: string;
  shutdownGracePeriodByPodPriority?: readonly ShutdownGracePeriodByPodPriority[];
}

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

/** A Go duration as a metav1.Duration prints with %v. */
const show = (ms: number): string => formatGoDuration(ms);

function parse(field: string, value: string | undefined, errors: string[]): number {
  if (value === undefined) return 0;
  try {
    return parseGoDuration(value);
  } catch (err) {
    errors.push(`invalid configuration: ${field}: ${(err as Error).message}`);
    return 0;
  }
}

/**
 * The kubelet's checks of the shutdown fields (both gates on), in its order, with its messages; empty when
 * the settings are valid. Entries of shutdownGracePeriodByPodPriority must also be int32 priorities with
 * whole, non-negative seconds (the kubelet's types hold nothing else).
 */
export function validateShutdownSettings(s: ShutdownSettings | undefined): string[] {
  const errors: string[] = [];
  const period = parse('shutdownGracePeriod', s?.shutdownGracePeriod, errors);
  const critical = parse('shutdownGracePeriodCriticalPods', s?.shutdownGracePeriodCriticalPods, errors);
  if (errors.length > 0) return errors;
  if (critical > period) {
    errors.push(
      `invalid configuration: shutdownGracePeriodCriticalPods ${show(critical)} must be <= shutdownGracePeriod ${show(period)}`,
    );
  }
  if (period < 0 || (period > 0 && period < 1000)) {
    errors.push(
      `invalid configuration: shutdownGracePeriod ${show(period)} must be either zero or otherwise >= 1 sec`,
    );
  }
  if (critical < 0 || (critical > 0 && critical < 1000)) {
    errors.push(
      `invalid configuration: shutdownGracePeriodCriticalPods ${show(critical)} must be either zero or otherwise >= 1 sec`,
    );
  }
  const byPriority = s?.shutdownGracePeriodByPodPriority ?? [];
  if (byPriority.length !== 0 && (period > 0 || critical > 0)) {
    errors.push(
      'invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
    );
  }
  byPriority.forEach((e, i) => {
    if (!Number.isInteger(e.priority) || e.priority < -(2 ** 31) || e.priority >= 2 ** 31) {
      errors.push(`invalid configuration: shutdownGracePeriodByPodPriority[${i}].priority must be an int32`);
    }
    if (!Number.isInteger(e.shutdownGracePeriodSeconds) || e.shutdownGracePeriodSeconds < 0) {
      errors.push(
        `invalid configuration: shutdownGracePeriodByPodPriority[${i}].shutdownGracePeriodSeconds must be a whole number of seconds >= 0`,
      );
    }
  });
  return errors;
}

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
