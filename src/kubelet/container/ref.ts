/**
 * Container references as events name them (kubelet: pkg/kubelet/container/ref.go): the container's place in
 * the pod spec, and the recorder events about pods and their containers go to. Pure.
 */
import type { Container, Pod } from '../../api/core.js';

export type EventType = 'Normal' | 'Warning';

/**
 * Records an Event about `pod` (kubelet wording). `fieldPath` names the container the event is about, as the
 * kubelet's container references do (`spec.containers{web}`); absent for pod-level events. Must not throw or
 * block: the recorder queues the write.
 */
export type EventRecorderFunc = (
  pod: Pod,
  type: EventType,
  reason: string,
  message: string,
  fieldPath?: string,
) => void;

/** The container's place in the pod spec, as event references name it (`spec.initContainers{setup}`). */
export function containerFieldPath(pod: Pod, name: string): string | undefined {
  if (pod.spec.containers.some((c) => c.name === name)) return `spec.containers{${name}}`;
  if ((pod.spec.initContainers ?? []).some((c) => c.name === name)) return `spec.initContainers{${name}}`;
  if ((pod.spec.ephemeralContainers ?? []).some((c) => c.name === name))
    return `spec.ephemeralContainers{${name}}`;
  return undefined;
}

/** The spec of the named container in any of the pod's three lists. */
export function containerSpec(pod: Pod, name: string): Container | undefined {
  return (
    pod.spec.containers.find((c) => c.name === name) ??
    pod.spec.initContainers?.find((c) => c.name === name) ??
    pod.spec.ephemeralContainers?.find((c) => c.name === name)
  );
}
