/**
 * Local ephemeral storage limits (kubelet: managerImpl.localStorageEviction), checked every round when
 * local storage capacity isolation is on, before any threshold: per pod, in this order, an emptyDir over
 * its sizeLimit, the pod over the sum of its containers' ephemeral-storage limits, a container (or sidecar)
 * over its own limit. The first breach evicts the pod at once (grace period 1 s), with no condition and no
 * Event annotations. Critical pods are never evicted; pods without stats are skipped.
 */
import type { Container, Pod } from '../../api/core.js';
import { isRestartableInitContainer } from '../../api/core.js';
import type { PodStats } from '../stats/types.js';
import { podEviction, type PodEviction } from './message.js';
import type { PodStatsByUID } from './observations.js';
import { isCriticalPod } from './pods.js';
import {
  addQuantity,
  cmpQuantity,
  formatQuantity,
  newQuantity,
  specQuantity,
  type Quantity,
} from './quantity.js';

/** The kubelet's eviction signals of local storage limits (the `eviction_signal` of `kubelet_evictions`). */
export const LocalStorageSignals = {
  emptyDir: 'emptydirfs.limit',
  pod: 'ephemeralpodfs.limit',
  container: 'ephemeralcontainerfs.limit',
} as const;

/** The grace period of evictions that cannot wait: hard thresholds and local storage limits. */
export const ImmediateEvictionGracePeriodSeconds = 1;

function emptyDirBreach(stats: PodStats, pod: Pod): string | undefined {
  const usedByName = new Map((stats.volume ?? []).map((v) => [v.name, v.usedBytes ?? 0]));
  for (const v of pod.spec.volumes ?? []) {
    if (!v.emptyDir) continue;
    // The kubelet skips memory-backed volumes only under the alpha InPlacePodVerticalScalingMemoryBackedVolumes.
    const size = specQuantity(v.emptyDir.sizeLimit);
    const used = usedByName.get(v.name);
    if (
      used !== undefined &&
      size &&
      size.nano > 0n &&
      cmpQuantity(newQuantity(used, 'BinarySI'), size) > 0
    ) {
      return `Usage of EmptyDir volume ${JSON.stringify(v.name)} exceeds the limit ${JSON.stringify(formatQuantity(size))}. `;
    }
  }
  return undefined;
}

function limitOf(c: Container): Quantity | undefined {
  return specQuantity(c.resources?.limits?.['ephemeral-storage']);
}

/**
 * The pod's ephemeral-storage limit as PodLimits sums it (format of the first quantity added, the larger
 * for init containers), or undefined when no container sets one.
 */
export function podEphemeralStorageLimit(pod: Pod): Quantity | undefined {
  const add = (a: Quantity | undefined, b: Quantity | undefined): Quantity | undefined =>
    a === undefined ? b : b === undefined ? a : addQuantity(a, b);
  const max = (a: Quantity | undefined, b: Quantity | undefined): Quantity | undefined =>
    a === undefined ? b : b !== undefined && cmpQuantity(b, a) > 0 ? b : a;
  let sum: Quantity | undefined;
  for (const c of pod.spec.containers) sum = add(sum, limitOf(c));
  let sidecars: Quantity | undefined;
  let initFloor: Quantity | undefined;
  for (const c of pod.spec.initContainers ?? []) {
    const own = limitOf(c);
    if (isRestartableInitContainer(c)) {
      sum = add(sum, own);
      sidecars = add(sidecars, own);
      initFloor = max(initFloor, sidecars);
    } else {
      initFloor = max(initFloor, add(own, sidecars));
    }
  }
  return max(sum, initFloor);
}

function podLimitBreach(stats: PodStats, pod: Pod): string | undefined {
  const limit = podEphemeralStorageLimit(pod);
  if (!limit) return undefined;
  const used = newQuantity(stats['ephemeral-storage']?.usedBytes ?? 0, 'BinarySI');
  if (cmpQuantity(used, limit) <= 0) return undefined;
  return `Pod ephemeral local storage usage exceeds the total limit of containers ${formatQuantity(limit)}. `;
}

function containerLimitBreach(stats: PodStats, pod: Pod, dedicatedImageFs: boolean): string | undefined {
  const limits = new Map<string, Quantity>();
  const consider = (c: Container): void => {
    const limit = limitOf(c);
    if (limit && limit.nano !== 0n) limits.set(c.name, limit);
  };
  pod.spec.containers.forEach(consider);
  (pod.spec.initContainers ?? []).filter(isRestartableInitContainer).forEach(consider);
  for (const cs of stats.containers) {
    // A writable layer on a dedicated image filesystem is not the node's local storage.
    const used = (cs.logs?.usedBytes ?? 0) + (dedicatedImageFs ? 0 : (cs.rootfs?.usedBytes ?? 0));
    const limit = limits.get(cs.name);
    if (limit && cmpQuantity(limit, newQuantity(used, 'BinarySI')) < 0) {
      return `Container ${cs.name} exceeded its local ephemeral storage limit ${JSON.stringify(formatQuantity(limit))}. `;
    }
  }
  return undefined;
}

/**
 * Whether the pod sets a local storage limit a round checks: an emptyDir's sizeLimit, or an ephemeral-storage
 * limit on any container (init containers included, as the pod's limit counts them). A pod without one is
 * never evicted by localStorageEvictions, whatever its stats.
 */
export function hasLocalStorageLimit(pod: Pod): boolean {
  for (const v of pod.spec.volumes ?? []) {
    const size = v.emptyDir ? specQuantity(v.emptyDir.sizeLimit) : undefined;
    if (size && size.nano > 0n) return true;
  }
  for (const c of pod.spec.containers) if (limitOf(c)) return true;
  for (const c of pod.spec.initContainers ?? []) if (limitOf(c)) return true;
  return false;
}

/** The pods to evict for breaking a local ephemeral storage limit, in the order given. */
export function localStorageEvictions(
  pods: readonly Pod[],
  stats: PodStatsByUID,
  dedicatedImageFs: boolean,
): PodEviction[] {
  const out: PodEviction[] = [];
  for (const pod of pods) {
    const s = stats.get(pod.metadata.uid ?? '');
    if (!s) continue;
    if (isCriticalPod(pod)) continue;
    const breaches: [string, () => string | undefined][] = [
      [LocalStorageSignals.emptyDir, () => emptyDirBreach(s, pod)],
      [LocalStorageSignals.pod, () => podLimitBreach(s, pod)],
      [LocalStorageSignals.container, () => containerLimitBreach(s, pod, dedicatedImageFs)],
    ];
    for (const [signal, breach] of breaches) {
      const message = breach();
      if (message === undefined) continue;
      out.push(podEviction(pod, signal, ImmediateEvictionGracePeriodSeconds, message));
      break;
    }
  }
  return out;
}
