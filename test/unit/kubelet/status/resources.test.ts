// Container status resources (src/kubelet/status/resources.ts): what a resize-capable node reports.
import { expect } from 'chai';
import type { Container, ContainerStatus } from '../../../../src/api/core.js';
import { asContainerID, type KubeContainerStatus } from '../../../../src/kubelet/container/types.js';
import { applyContainerResources } from '../../../../src/kubelet/status/resources.js';

const spec = (resources: Container['resources'], extra: Partial<Container> = {}): Container => ({
  name: 'app',
  image: 'busybox',
  resources,
  ...extra,
});
const running = (resources?: KubeContainerStatus['resources']): KubeContainerStatus => ({
  id: asContainerID('c1'),
  name: 'app',
  state: 'running',
  restartCount: 0,
  hash: 'h',
  ...(resources ? { resources } : {}),
});
const status = (state: 'running' | 'waiting'): ContainerStatus => ({
  name: 'app',
  ready: false,
  restartCount: 0,
  containerID: 'containerd://c1',
  state: state === 'running' ? { running: {} } : { waiting: {} },
});

describe('container status resources', () => {
  it('reports what the runtime applied for cpu and memory limits and the cpu request, the rest as allocated', () => {
    const s = status('running');
    applyContainerResources(
      [
        spec({
          requests: { cpu: '1', memory: '128Mi', 'ephemeral-storage': '1Gi' },
          limits: { cpu: '1', memory: '128Mi' },
        }),
      ],
      [s],
      {
        containers: [
          running({ cpuRequestMilli: 500, cpuLimitMilli: 500, memoryLimitBytes: 64 * 1024 * 1024 }),
        ],
      },
      undefined,
    );
    expect(s.resources).to.deep.equal({
      limits: { cpu: '500m', memory: '64Mi' },
      requests: { cpu: '500m', memory: '128Mi', 'ephemeral-storage': '1Gi' },
    });
    expect(s.allocatedResources).to.deep.equal({ cpu: '1', memory: '128Mi', 'ephemeral-storage': '1Gi' });
  });

  it('shows the allocation for a container that is not running, and an empty object for best effort', () => {
    const s = status('waiting');
    applyContainerResources([spec({ requests: { cpu: '250m' } })], [s], { containers: [] }, undefined);
    expect(s.resources).to.deep.equal({ requests: { cpu: '250m' } });
    const be = status('running');
    applyContainerResources(
      [spec(undefined)],
      [be],
      { containers: [running({ cpuRequestMilli: 2 })] },
      undefined,
    );
    expect(be.resources).to.deep.equal({});
    expect(be).to.not.have.property('allocatedResources');
  });

  it('reads a tiny cpu request back as allocated (MinShares), and keeps earlier values when the runtime says nothing', () => {
    const s = status('running');
    applyContainerResources(
      [spec({ requests: { cpu: '1m' } })],
      [s],
      { containers: [running({ cpuRequestMilli: 2 })] },
      undefined,
    );
    expect(s.resources?.requests?.cpu).to.equal('1m');
    const before = { ...status('running'), resources: { requests: { cpu: '300m' } } };
    const now = status('running');
    applyContainerResources(
      [spec({ requests: { cpu: '400m' } })],
      [now],
      { containers: [running({ memoryLimitBytes: 1 })] },
      [before],
    );
    expect(now.resources?.requests?.cpu).to.equal('300m');
  });

  it('reads tiny limits and requests back as allocated, and never adds a cpu request the spec has not', () => {
    const tiny = status('running');
    applyContainerResources(
      [spec({ requests: { cpu: '1m' }, limits: { cpu: '5m' } })],
      [tiny],
      { containers: [running({ cpuRequestMilli: 2, cpuLimitMilli: 10 })] },
      undefined,
    );
    expect(tiny.resources).to.deep.equal({ limits: { cpu: '5m' }, requests: { cpu: '1m' } });
    const memOnly = status('running');
    applyContainerResources(
      [spec({ requests: { memory: '35Mi' } })],
      [memOnly],
      { containers: [running({ cpuRequestMilli: 2 })] },
      undefined,
    );
    expect(memOnly.resources).to.deep.equal({ requests: { memory: '35Mi' } });
  });

  it('reports both fields for init containers, sidecars or not (InPlacePodVerticalScalingInitContainers)', () => {
    const init = status('running');
    applyContainerResources(
      [spec({ requests: { cpu: '1' }, limits: { memory: '64Mi' } })],
      [init],
      { containers: [running({ cpuRequestMilli: 500, memoryLimitBytes: 32 * 1024 * 1024 })] },
      undefined,
    );
    expect(init.resources).to.deep.equal({ limits: { memory: '32Mi' }, requests: { cpu: '500m' } });
    expect(init.allocatedResources).to.deep.equal({ cpu: '1' });
    const side = status('waiting');
    applyContainerResources(
      [spec({ requests: { cpu: '1' } }, { restartPolicy: 'Always' })],
      [side],
      { containers: [] },
      undefined,
    );
    expect(side.allocatedResources).to.deep.equal({ cpu: '1' });
  });
});
