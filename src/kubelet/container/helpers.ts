/**
 * Small pure helpers the kubelet keeps in pkg/kubelet/container/helpers.go and kuberuntime/helpers.go.
 */
import { AllContainersRestarting, type Container, type Pod, type PodStatus } from '../../api/core.js';
import { containerShouldRestart, restartsAllContainers } from '../../api/restartrules.js';
import { findContainerStatusByName, type KubeContainerStatus, type RuntimePodStatus } from './types.js';

/**
 * The spec hash recorded on a container when it is created. Since Kubernetes 1.31 it covers only the
 * name and the image, so no other spec change restarts a running container. FNV-1a 32-bit, hex.
 */
export function hashContainer(container: Pick<Container, 'name' | 'image'>): string {
  const input = JSON.stringify({ name: container.name, image: container.image ?? '' });
  let h = 0x811c9dc5;
  for (let i = 0; i < input.length; i++) {
    h ^= input.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/**
 * Whether the pod's newest record of `container` calls for (re)starting it. An exited container is judged
 * by its own restart policy and rules, else the pod's (ContainerRestartRules, on in v1.37).
 */
export function shouldContainerBeRestarted(
  container: Pick<Container, 'name' | 'restartPolicy' | 'restartPolicyRules'>,
  pod: Pod,
  status: Pick<RuntimePodStatus, 'containers'>,
): boolean {
  if (pod.metadata.deletionTimestamp) return false;
  const record = findContainerStatusByName(status, container.name);
  if (!record) return true;
  if (record.state === 'running') return false;
  if (record.state === 'unknown' || record.state === 'created') return true;
  return containerShouldRestart(container, pod.spec, record.exitCode ?? 0);
}

function initAndRegular(pod: Pod): Container[] {
  return [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])];
}

/**
 * Whether the pod is restarting all its containers in place (RestartAllContainersOnContainerExits; kubelet:
 * ShouldAllContainersRestart): `apiStatus` (the status the kubelet last generated) says so with
 * AllContainersRestarting=True, or an init or regular container exited with a code that a
 * `RestartAllContainers` rule of it matches first, in the runtime's newest record or in `apiStatus`.
 */
export function shouldAllContainersRestart(
  pod: Pod,
  runtime: Pick<RuntimePodStatus, 'containers'> | undefined,
  apiStatus: PodStatus | undefined,
): boolean {
  if (apiStatus?.conditions?.some((c) => c?.type === AllContainersRestarting && c.status === 'True')) {
    return true;
  }
  const apiStatuses = [...(apiStatus?.initContainerStatuses ?? []), ...(apiStatus?.containerStatuses ?? [])];
  for (const c of initAndRegular(pod)) {
    if (runtime) {
      const record = findContainerStatusByName(runtime, c.name);
      if (record?.state === 'exited' && restartsAllContainers(c, record.exitCode ?? 0)) return true;
    }
    // The last status of that name wins, as a Go map built over the list keeps it.
    const api = apiStatuses.filter((s) => s?.name === c.name).pop();
    const terminated = api?.state?.terminated;
    if (terminated && restartsAllContainers(c, terminated.exitCode ?? 0)) return true;
  }
  return false;
}

/** No init or regular container of the pod has a record left on the runtime (AllContainersRestartCleanedUp). */
export function allContainersRestartCleanedUp(
  pod: Pod,
  runtime: Pick<RuntimePodStatus, 'containers'>,
): boolean {
  return initAndRegular(pod).every((c) => !findContainerStatusByName(runtime, c.name));
}

/** An init container failed when it was OOM-killed, exited non-zero, or is in an unknown state. */
export function isInitContainerFailed(
  record: Pick<KubeContainerStatus, 'state' | 'exitCode' | 'reason'>,
): boolean {
  if (record.reason === 'OOMKilled') return true;
  if (record.state === 'exited' && (record.exitCode ?? 0) !== 0) return true;
  return record.state === 'unknown';
}

/** True when the recorded hash no longer matches the spec (name or image changed). */
export function containerChanged(
  container: Pick<Container, 'name' | 'image'>,
  record: Pick<KubeContainerStatus, 'hash'>,
): boolean {
  return record.hash !== hashContainer(container);
}
