import { expect } from 'chai';
import type { ContainerStatus, PodStatus } from '../../../../src/api/core.js';
import { newlyTerminatedContainers } from '../../../../src/kubelet/status/terminations.js';

const running = (name: string): ContainerStatus => ({
  name,
  ready: true,
  restartCount: 0,
  state: { running: { startedAt: '2026-01-01T00:00:00Z' } },
});
const terminated = (name: string, exitCode: number, reason?: string): ContainerStatus => ({
  name,
  ready: false,
  restartCount: 0,
  state: { terminated: { exitCode, ...(reason ? { reason } : {}) } },
});

describe('status: newly terminated containers (kubelet_terminated_containers_total)', () => {
  const cases: { name: string; prev: PodStatus; next: PodStatus; want: unknown[] }[] = [
    {
      name: 'running to terminated counts',
      prev: { containerStatuses: [running('a')] },
      next: { containerStatuses: [terminated('a', 139, 'Error')] },
      want: [{ containerType: 'container', exitCode: 139, reason: 'Error' }],
    },
    {
      name: 'terminated before: not again',
      prev: { containerStatuses: [terminated('a', 139, 'Error')] },
      next: { containerStatuses: [terminated('a', 139, 'Error')] },
      want: [],
    },
    {
      name: 'a container new to the status and already terminated counts',
      prev: {},
      next: { containerStatuses: [terminated('a', 0, 'Completed')] },
      want: [{ containerType: 'container', exitCode: 0, reason: 'Completed' }],
    },
    {
      name: 'no reason: an empty label',
      prev: { containerStatuses: [running('a')] },
      next: { containerStatuses: [terminated('a', 1)] },
      want: [{ containerType: 'container', exitCode: 1, reason: '' }],
    },
    {
      name: 'restarted and terminated again: running between, so it counts',
      prev: { containerStatuses: [running('a')] },
      next: { containerStatuses: [{ ...terminated('a', 2, 'Error'), restartCount: 1 }] },
      want: [{ containerType: 'container', exitCode: 2, reason: 'Error' }],
    },
    {
      name: 'init, regular and ephemeral, each by its list',
      prev: {
        initContainerStatuses: [running('i')],
        containerStatuses: [running('a'), running('b')],
        ephemeralContainerStatuses: [running('e')],
      },
      next: {
        initContainerStatuses: [terminated('i', 0, 'Completed')],
        containerStatuses: [running('a'), terminated('b', 137, 'OOMKilled')],
        ephemeralContainerStatuses: [terminated('e', 3, 'Error')],
      },
      want: [
        { containerType: 'init_container', exitCode: 0, reason: 'Completed' },
        { containerType: 'container', exitCode: 137, reason: 'OOMKilled' },
        { containerType: 'ephemeral_container', exitCode: 3, reason: 'Error' },
      ],
    },
    {
      name: 'matched by name, not by position',
      prev: { containerStatuses: [terminated('b', 1, 'Error'), running('a')] },
      next: { containerStatuses: [terminated('a', 0, 'Completed'), terminated('b', 1, 'Error')] },
      want: [{ containerType: 'container', exitCode: 0, reason: 'Completed' }],
    },
  ];
  for (const c of cases) {
    it(c.name, () => expect(newlyTerminatedContainers(c.prev, c.next)).to.deep.equal(c.want));
  }
});
