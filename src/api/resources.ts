/**
 * Effective pod resource requests (component-helpers' PodRequests, the sum the scheduler and the kubelet's
 * admission compare with allocatable): regular containers add up; restartable init containers (sidecars) run
 * beside everything after them, so they add to the sum; a regular init container runs alone with the
 * sidecars started before it, so it only raises a floor. The result is max(sum, floor) per resource.
 */
import type { Container, PodSpec } from './core.js';
import { quantityMilliValue, quantityValue } from '../util/quantity.js';
import { isRestartableInitContainer } from './core.js';

/** Resource name -> amount; cpu in millicores, everything else in whole units. */
export type ResourceAmounts = Map<string, number>;

function amount(resource: string, q: string | number): number {
  return resource === 'cpu' ? quantityMilliValue(q) : quantityValue(q);
}

function containerRequests(c: Container): ResourceAmounts {
  const out: ResourceAmounts = new Map();
  // An unset request defaults to the limit (API defaulting does this on create; we repeat it for safety).
  const merged = { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
  for (const [name, q] of Object.entries(merged)) out.set(name, amount(name, q));
  return out;
}

function add(into: ResourceAmounts, from: ResourceAmounts): void {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
}

function maxInto(into: ResourceAmounts, from: ResourceAmounts): void {
  for (const [k, v] of from) into.set(k, Math.max(into.get(k) ?? 0, v));
}

export function podRequests(spec: Pick<PodSpec, 'containers' | 'initContainers'>): ResourceAmounts {
  const sum: ResourceAmounts = new Map();
  for (const c of spec.containers ?? []) add(sum, containerRequests(c));
  const sidecars: ResourceAmounts = new Map();
  const floor: ResourceAmounts = new Map();
  for (const c of spec.initContainers ?? []) {
    const req = containerRequests(c);
    if (isRestartableInitContainer(c)) {
      add(sidecars, req);
      maxInto(floor, sidecars);
    } else {
      const withSidecars = new Map(sidecars);
      add(withSidecars, req);
      maxInto(floor, withSidecars);
    }
  }
  add(sum, sidecars);
  maxInto(sum, floor);
  return sum;
}
