/**
 * Effective pod resource requests and limits (component-helpers' PodRequests and PodLimits, the sums the
 * scheduler and the kubelet's admission compare with allocatable, and the pod cgroup is sized by): regular
 * containers add up; restartable init containers (sidecars) run beside everything after them, so they add to
 * the sum; a regular init container runs alone with the sidecars started before it, so it only raises a floor.
 * The result is max(sum, floor) per resource.
 *
 * Pod-level resources (PodLevelResources, on since 1.34): when `spec.resources` names a supported resource
 * (cpu, memory, hugepages-*), each supported pod-level value replaces the containers' aggregate for that
 * resource; other resources keep the containers' aggregate.
 */
import type { Container, PodSpec, ResourceRequirements } from './core.js';
import { quantityMilliValue, quantityValue } from '../util/quantity.js';
import { isRestartableInitContainer } from './core.js';

/** Resource name -> amount; cpu in millicores, everything else in whole units. */
export type ResourceAmounts = Map<string, number>;

function amount(resource: string, q: string | number): number {
  return resource === 'cpu' ? quantityMilliValue(q) : quantityValue(q);
}

/** The resources pod-level `spec.resources` may name (IsSupportedPodLevelResource). */
export function isSupportedPodLevelResource(name: string): boolean {
  return name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');
}

function namesSupported(list: Record<string, unknown> | undefined): boolean {
  return Object.keys(list ?? {}).some(isSupportedPodLevelResource);
}

/** Pod-level requests or limits name a supported resource (IsPodLevelResourcesSet). */
export function isPodLevelResourcesSet(spec: Pick<PodSpec, 'resources'>): boolean {
  return namesSupported(spec.resources?.requests) || namesSupported(spec.resources?.limits);
}

/** Pod-level requests name a supported resource (IsPodLevelRequestsSet). */
export function isPodLevelRequestsSet(spec: Pick<PodSpec, 'resources'>): boolean {
  return namesSupported(spec.resources?.requests);
}

/** Pod-level limits name a supported resource (IsPodLevelLimitsSet). */
export function isPodLevelLimitsSet(spec: Pick<PodSpec, 'resources'>): boolean {
  return namesSupported(spec.resources?.limits);
}

function amounts(list: ResourceRequirements['limits']): ResourceAmounts {
  const out: ResourceAmounts = new Map();
  for (const [name, q] of Object.entries(list ?? {})) out.set(name, amount(name, q));
  return out;
}

function containerRequests(c: Container): ResourceAmounts {
  // An unset request defaults to the limit (API defaulting does this on create; we repeat it for safety).
  return amounts({ ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) });
}

function containerLimits(c: Container): ResourceAmounts {
  return amounts(c.resources?.limits);
}

function add(into: ResourceAmounts, from: ResourceAmounts): void {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
}

function maxInto(into: ResourceAmounts, from: ResourceAmounts): void {
  for (const [k, v] of from) into.set(k, Math.max(into.get(k) ?? 0, v));
}

type ContainersOf = Pick<PodSpec, 'containers' | 'initContainers'>;

/** The containers' aggregate of `of` (aggregateContainerResourcesByFn): the sum, sidecars, the init floor. */
function aggregate(spec: ContainersOf, of: (c: Container) => ResourceAmounts): ResourceAmounts {
  const sum: ResourceAmounts = new Map();
  for (const c of spec.containers ?? []) add(sum, of(c));
  const sidecars: ResourceAmounts = new Map();
  const floor: ResourceAmounts = new Map();
  for (const c of spec.initContainers ?? []) {
    const own = of(c);
    if (isRestartableInitContainer(c)) {
      add(sidecars, own);
      maxInto(floor, sidecars);
    } else {
      const withSidecars = new Map(sidecars);
      add(withSidecars, own);
      maxInto(floor, withSidecars);
    }
  }
  add(sum, sidecars);
  maxInto(sum, floor);
  return sum;
}

/** Each supported pod-level value over the containers' aggregate (applyPodLevelResources). */
function applyPodLevel(into: ResourceAmounts, list: ResourceRequirements['limits']): void {
  for (const [name, q] of Object.entries(list ?? {})) {
    if (isSupportedPodLevelResource(name)) into.set(name, amount(name, q));
  }
}

/** The containers' requests alone, pod-level resources left out (AggregateContainerRequests). */
export function aggregateContainerRequests(spec: ContainersOf): ResourceAmounts {
  return aggregate(spec, containerRequests);
}

/**
 * The pod's requests (PodRequests, overhead left out: pods here carry none): the containers' aggregate, with
 * pod-level requests of supported resources in place of it. Pod-level requests are read as the API server
 * stored them (it defaults them from pod-level limits).
 */
export function podRequests(
  spec: Pick<PodSpec, 'containers' | 'initContainers' | 'resources'>,
): ResourceAmounts {
  const out = aggregate(spec, containerRequests);
  if (isPodLevelRequestsSet(spec)) applyPodLevel(out, spec.resources?.requests);
  return out;
}

/** The pod's limits (PodLimits): the containers' aggregate, with pod-level limits of supported resources. */
export function podLimits(
  spec: Pick<PodSpec, 'containers' | 'initContainers' | 'resources'>,
): ResourceAmounts {
  const out = aggregate(spec, containerLimits);
  if (isPodLevelResourcesSet(spec)) applyPodLevel(out, spec.resources?.limits);
  return out;
}

/**
 * `spec` with the resources `drop` names taken out of its containers' and init containers' requests and
 * limits (the kubelet's copies of a pod it hands to the resource fit); the same object when nothing goes.
 */
export function withoutContainerResources(
  spec: PodSpec,
  drop: (containerName: string, resource: string) => boolean,
): PodSpec {
  let changed = false;
  const strip = <C extends Container>(c: C): C => {
    const named = [...Object.keys(c.resources?.requests ?? {}), ...Object.keys(c.resources?.limits ?? {})];
    if (!named.some((r) => drop(c.name, r))) return c;
    changed = true;
    const keep = (l: Record<string, string | number> | undefined) =>
      l && Object.fromEntries(Object.entries(l).filter(([r]) => !drop(c.name, r)));
    const requests = keep(c.resources?.requests);
    const limits = keep(c.resources?.limits);
    return {
      ...c,
      resources: { ...c.resources, ...(requests ? { requests } : {}), ...(limits ? { limits } : {}) },
    };
  };
  const containers = spec.containers.map(strip);
  const initContainers = spec.initContainers?.map(strip);
  if (!changed) return spec;
  return { ...spec, containers, ...(initContainers ? { initContainers } : {}) };
}
