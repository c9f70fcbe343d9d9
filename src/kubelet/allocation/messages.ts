/**
 * The messages of the kubelet's resize Events (kubelet: pkg/kubelet/events resize messages): a prefix, then a
 * JSON summary of the pod's container resources, the generation it refers to and the error, if any. Clients
 * (and people reading `kubectl describe pod`) see the same text a kubelet writes.
 */
import type { Container, Pod, ResourceRequirements } from '../../api/core.js';

/** Event reasons of an in-place resize. */
export const ResizeStarted = 'ResizeStarted';
export const ResizeCompleted = 'ResizeCompleted';
export const ResizeDeferred = 'ResizeDeferred';
export const ResizeInfeasible = 'ResizeInfeasible';
export const ResizeError = 'ResizeError';

/** Quantity maps with their keys in Go's order (sorted), limits before requests as the API type orders them. */
function requirementsJSON(
  r: ResourceRequirements | undefined,
): Record<string, Record<string, string | number>> {
  const sorted = (m: Record<string, string | number>) =>
    Object.fromEntries(
      Object.keys(m)
        .sort()
        .map((k) => [k, typeof m[k] === 'number' ? String(m[k]) : m[k]!]),
    );
  const out: Record<string, Record<string, string | number>> = {};
  if (r?.limits && Object.keys(r.limits).length > 0) out.limits = sorted(r.limits);
  if (r?.requests && Object.keys(r.requests).length > 0) out.requests = sorted(r.requests);
  return out;
}

function summary(pod: Pick<Pod, 'spec'>, generation: number, error: string): string {
  const entry = (c: Container) => ({ name: c.name, resources: requirementsJSON(c.resources) });
  const s: Record<string, unknown> = {};
  const inits = pod.spec.initContainers ?? [];
  if (inits.length > 0) s.initContainers = inits.map(entry);
  if (pod.spec.containers.length > 0) s.containers = pod.spec.containers.map(entry);
  s.generation = generation;
  if (error) s.error = error;
  return JSON.stringify(s);
}

function message(prefix: string, pod: Pick<Pod, 'spec'>, generation: number, error = ''): string {
  return `${prefix}: ${summary(pod, generation, error)}`;
}

export function podResizeStartedMsg(allocated: Pick<Pod, 'spec'>, generation: number): string {
  return message('Pod resize started', allocated, generation);
}

export function podResizeCompletedMsg(allocated: Pick<Pod, 'spec'>, generation: number): string {
  return message('Pod resize completed', allocated, generation);
}

export function podResizeErrorMsg(allocated: Pick<Pod, 'spec'>, generation: number, error: string): string {
  return message('Pod resize error', allocated, generation, error);
}

/** `reason` is Deferred or Infeasible; `why` the admission's message. */
export function podResizePendingMsg(
  desired: Pick<Pod, 'spec'>,
  reason: string,
  why: string,
  generation: number,
): string {
  return message(`Pod resize ${reason}`, desired, generation, why);
}
