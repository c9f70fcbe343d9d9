/** Shared builders for the prober unit tests. */
import type { Container, ContainerStatus, Pod, PodStatus, Probe } from '../../../../src/api/core.js';

export const POD_UID = 'pod-1';

export function probe(extra: Probe = {}): Probe {
  return { exec: { command: ['true'] }, periodSeconds: 10, ...extra };
}

export function makePod(
  containers: Container[],
  init: Container[] = [],
  extra: Partial<Pod['spec']> = {},
): Pod {
  return {
    metadata: { uid: POD_UID, name: 'p', namespace: 'default' },
    spec: { containers, initContainers: init, ...extra },
  };
}

export function running(
  name: string,
  id: string,
  opts: { started?: boolean; startedAt?: string } = {},
): ContainerStatus {
  return {
    name,
    containerID: id,
    ready: false,
    restartCount: 0,
    started: opts.started,
    state: { running: { startedAt: opts.startedAt ?? '2026-01-01T00:00:00Z' } },
  };
}

export function terminated(name: string, id: string, exitCode: number): ContainerStatus {
  return { name, containerID: id, ready: false, restartCount: 0, state: { terminated: { exitCode } } };
}

export function podStatus(
  containers: ContainerStatus[],
  init: ContainerStatus[] = [],
  phase: PodStatus['phase'] = 'Running',
): PodStatus {
  return { phase, containerStatuses: containers, initContainerStatuses: init };
}

/** Lets pending promise continuations run. */
export const flush = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};
