/**
 * The VirtualNode's `spec.kubelet` graceful shutdown fields (kubelet: KubeletConfiguration shutdownGracePeriod,
 * shutdownGracePeriodCriticalPods, shutdownGracePeriodByPodPriority) and the kubelet's config validation of
 * them, which the spec's schema applies (src/api/virtualnode.ts) and the node's shutdown manager repeats
 * (src/kubelet/nodeshutdown/config.ts). Pure.
 */
import { formatGoDuration, parseGoDuration } from '../util/duration.js';

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
