/**
 * Pod quality-of-service class (k8s.io/kubernetes/pkg/apis/core/v1/helper/qos: GetPodQOS / ComputePodQOS).
 *
 * Pod-level resources (PodLevelResources) decide the class alone when they name a supported resource (cpu,
 * memory, hugepages-*). PodLevelResourcesFixKubeletQOSClass (on since 1.37) is that "when": before it, any
 * `spec.resources`, even one naming nothing or only unsupported resources, decided the class by itself.
 */
import type { Container, Pod, PodQOSClass, ResourceRequirements } from '../api/core.js';
import { isPodLevelResourcesSet } from '../api/resources.js';
import { parseQuantityNano } from '../util/quantity.js';

/** Only these resources decide the class; extended resources and storage do not. */
const QOS_RESOURCES = ['cpu', 'memory'] as const;

function addPositive(
  into: Map<string, bigint>,
  list: Record<string, string | number> | undefined,
): Set<string> {
  const found = new Set<string>();
  for (const name of QOS_RESOURCES) {
    const raw = list?.[name];
    if (raw === undefined) continue;
    const v = parseQuantityNano(raw);
    // A zero (or negative) quantity counts as "not set", as in the API helper.
    if (v <= 0n) continue;
    found.add(name);
    into.set(name, (into.get(name) ?? 0n) + v);
  }
  return found;
}

/** A quantity, 0 when absent; throws KindError('InvalidArgument') on a malformed one. */
function nanoOf(list: ResourceRequirements['limits'], name: string): bigint {
  const raw = list?.[name];
  return raw === undefined ? 0n : parseQuantityNano(raw);
}

/**
 * The class one set of requirements has by itself (requirementsQOS): BestEffort when it names nothing; else
 * per cpu and memory, Guaranteed when request and limit are equal and not zero, BestEffort when both are
 * zero, Burstable otherwise; the class when cpu and memory agree, Burstable when they do not.
 */
export function requirementsQOS(r: ResourceRequirements): PodQOSClass {
  if (Object.keys(r.requests ?? {}).length === 0 && Object.keys(r.limits ?? {}).length === 0)
    return 'BestEffort';
  const per = QOS_RESOURCES.map((name): PodQOSClass => {
    const req = nanoOf(r.requests, name);
    const lim = nanoOf(r.limits, name);
    if (req !== lim) return 'Burstable';
    return req === 0n ? 'BestEffort' : 'Guaranteed';
  });
  if (per.includes('Burstable')) return 'Burstable';
  return per.every((c) => c === per[0]) ? per[0]! : 'Burstable';
}

/**
 * Computes the class from the spec alone. With pod-level resources set, requirementsQOS of them. Else:
 * BestEffort when no container sets a cpu/memory request or
 * limit; Guaranteed when every container (init included) sets both cpu and memory limits and the summed
 * requests equal the summed limits for every resource; Burstable otherwise.
 * Throws KindError('InvalidArgument') on a malformed quantity.
 */
export function computePodQOS(pod: Pick<Pod, 'spec'>): PodQOSClass {
  if (pod.spec.resources && isPodLevelResourcesSet(pod.spec)) return requirementsQOS(pod.spec.resources);
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let guaranteed = true;
  const all: Container[] = [...(pod.spec.containers ?? []), ...(pod.spec.initContainers ?? [])];
  for (const c of all) {
    addPositive(requests, c.resources?.requests);
    const limitsFound = addPositive(limits, c.resources?.limits);
    if (!limitsFound.has('cpu') || !limitsFound.has('memory')) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, req] of requests) {
      if (limits.get(name) !== req) {
        guaranteed = false;
        break;
      }
    }
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

/**
 * The pod's QoS class. The class is immutable once the API server recorded it, so a value already in the
 * status wins over recomputation (a later spec resize must not change it).
 */
export function getPodQOS(pod: Pick<Pod, 'spec' | 'status'>): PodQOSClass {
  return pod.status?.qosClass || computePodQOS(pod);
}
