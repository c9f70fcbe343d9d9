/**
 * What an evicted pod is told, in the kubelet's words (kubelet: evictionMessage, the message formats of
 * helpers.go and managerImpl.evictPod): the status message and reason, the DisruptionTarget condition, and
 * the annotations of the Warning Event (the annotations go on the Event only, not on the pod).
 */
import type { Pod } from '../../api/core.js';
import { isPodLevelResourcesSet } from '../../api/resources.js';
import type { PodStats } from '../stats/types.js';
import type { Observations } from './observations.js';
import { cmpQuantity, formatQuantity, newQuantity, specQuantity, type Quantity } from './quantity.js';
import { signalToResource, type StarvedResource } from './signals.js';
import { thresholdQuantity, type Threshold } from './thresholds.js';

/** The reason of an evicted pod's status, of its Event, and of a pod refused under pressure. */
export const EvictedReason = 'Evicted';
/** The reason of the DisruptionTarget condition the kubelet sets on a pod it evicts for pressure. */
export const TerminationByKubelet = 'TerminationByKubelet';
export const DisruptionTarget = 'DisruptionTarget';

/** Event annotation keys. */
export const OffendingContainersKey = 'offending_containers';
export const OffendingContainersUsageKey = 'offending_containers_usage';
export const OffendingPodKey = 'offending_pod';
export const OffendingPodUsageKey = 'offending_pod_usage';
export const StarvedResourceKey = 'starved_resource';

const ZERO: Quantity = newQuantity(0, 'DecimalSI');

/** The threshold quantity and what was available for the first threshold acted on that starves `resource`. */
function thresholdMetInfo(
  resource: StarvedResource,
  thresholds: readonly Threshold[],
  observations: Observations,
): { quantity: Quantity; available: Quantity } | undefined {
  for (const t of thresholds) {
    if (signalToResource[t.signal] !== resource) continue;
    const observed = observations.get(t.signal);
    if (observed)
      return { quantity: thresholdQuantity(t.value, observed.capacity), available: observed.available };
  }
  return undefined;
}

/**
 * The message of a pod evicted for `resource` and the annotations of its Event. Names every container (and,
 * for memory with pod-level resources, the pod) using more than it requested. A pod with no stats gets the
 * node part alone and no annotations.
 */
export function evictionMessage(
  resource: StarvedResource,
  pod: Pod,
  stats: PodStats | undefined,
  thresholds: readonly Threshold[],
  observations: Observations,
): { message: string; annotations: Record<string, string> } {
  const annotations: Record<string, string> = {};
  let message = `The node was low on resource: ${resource}. `;
  const met = thresholdMetInfo(resource, thresholds, observations);
  if (met) {
    message += `Threshold quantity: ${formatQuantity(met.quantity)}, available: ${formatQuantity(met.available)}. `;
  }
  if (!stats) return { message, annotations };

  if (resource === 'memory' && isPodLevelResourcesSet(pod.spec)) {
    const request = specQuantity(pod.spec.resources?.requests?.memory);
    if (request && stats.memory) {
      const usage = formatQuantity(newQuantity(stats.memory.workingSetBytes ?? 0, 'BinarySI'));
      message += `Pod ${pod.metadata.name ?? ''} was using ${usage}, request is ${formatQuantity(request)}, has larger consumption of ${resource}. `;
      annotations[OffendingPodKey] = pod.metadata.name ?? '';
      annotations[OffendingPodUsageKey] = usage;
    }
  }

  const containers = [...pod.spec.containers, ...(pod.spec.initContainers ?? [])];
  const exceeded: string[] = [];
  const usages: string[] = [];
  for (const cs of stats.containers) {
    const container = containers.find((c) => c.name === cs.name);
    if (!container) continue;
    const request = specQuantity(container.resources?.requests?.[resource]) ?? ZERO;
    let usage: Quantity | undefined;
    if (resource === 'ephemeral-storage') {
      const rootfs = cs.rootfs?.usedBytes;
      const logs = cs.logs?.usedBytes;
      if (rootfs !== undefined && logs !== undefined) usage = newQuantity(rootfs + logs, 'BinarySI');
    } else if (resource === 'memory') {
      const ws = cs.memory?.workingSetBytes;
      if (ws !== undefined) usage = newQuantity(ws, 'BinarySI');
    }
    if (usage && cmpQuantity(usage, request) > 0) {
      const u = formatQuantity(usage);
      message += `Container ${container.name} was using ${u}, request is ${formatQuantity(request)}, has larger consumption of ${resource}. `;
      exceeded.push(container.name);
      usages.push(u);
    }
  }
  annotations[OffendingContainersKey] = exceeded.join(',');
  annotations[OffendingContainersUsageKey] = usages.join(',');
  annotations[StarvedResourceKey] = resource;
  return { message, annotations };
}

/** The condition the kubelet adds to a pod it evicts for node pressure. */
export interface DisruptionTargetCondition {
  type: typeof DisruptionTarget;
  status: 'True';
  reason: typeof TerminationByKubelet;
  message: string;
  /** The pod's generation (PodObservedGenerationTracking is locked on since 1.35). */
  observedGeneration?: number;
}

/**
 * One pod to evict, as the kubelet's evictPod carries it out: kill the pod with this grace period, set its
 * status to Failed with reason Evicted and the message (and the condition, for pressure evictions), and
 * record a Warning Event `Evicted` with the message and the annotations.
 */
export interface PodEviction {
  pod: Pod;
  /**
   * What the eviction is for, as the kubelet's `kubelet_evictions` counts it: the threshold's signal
   * (`memory.available`, ...) or a local storage limit (LocalStorageSignals).
   */
  signal: string;
  gracePeriodSeconds: number;
  status: { phase: 'Failed'; reason: typeof EvictedReason; message: string };
  condition?: DisruptionTargetCondition;
  event: {
    type: 'Warning';
    reason: typeof EvictedReason;
    message: string;
    /** undefined for local storage evictions, which the kubelet records without annotations. */
    annotations?: Record<string, string>;
  };
}

export function podEviction(
  pod: Pod,
  signal: string,
  gracePeriodSeconds: number,
  message: string,
  annotations?: Record<string, string>,
  withCondition = false,
): PodEviction {
  const eviction: PodEviction = {
    pod,
    signal,
    gracePeriodSeconds,
    status: { phase: 'Failed', reason: EvictedReason, message },
    event: { type: 'Warning', reason: EvictedReason, message, ...(annotations ? { annotations } : {}) },
  };
  if (withCondition) {
    eviction.condition = {
      type: DisruptionTarget,
      status: 'True',
      reason: TerminationByKubelet,
      message,
      ...(pod.metadata.generation !== undefined ? { observedGeneration: pod.metadata.generation } : {}),
    };
  }
  return eviction;
}
