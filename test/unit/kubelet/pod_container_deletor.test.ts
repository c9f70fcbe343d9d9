import { expect } from 'chai';
import {
  asContainerID,
  type ContainerState,
  type KubeContainerStatus,
} from '../../../src/kubelet/container/types.js';
import {
  containersToDeleteInPod,
  deadContainersToRemove,
} from '../../../src/kubelet/pod_container_deletor.js';

const c = (id: string, name: string, state: ContainerState, createdAt: number): KubeContainerStatus => ({
  id: asContainerID(id),
  name,
  state,
  createdAt,
  restartCount: 0,
  hash: 'h',
});

// Newest first, as the runtime manager lists them.
const status = {
  containers: [
    c('app-4', 'app', 'created', 40),
    c('app-3', 'app', 'exited', 30),
    c('side-2', 'side', 'exited', 25),
    c('app-2', 'app', 'exited', 20),
    c('side-1', 'side', 'running', 15),
    c('app-1', 'app', 'exited', 10),
  ],
};
const ids = (l: KubeContainerStatus[]) => l.map((x) => x.id as string);

describe('pod container deletor (kubelet pod_container_deletor.go)', () => {
  it('removes the older exited instances of the container that died, keeping the newest', () => {
    expect(ids(deadContainersToRemove('app-3', status, false))).to.deep.equal(['app-2', 'app-1']);
    // Another container's instances and a created (about to start) or running one are never candidates.
    expect(ids(deadContainersToRemove('side-2', status, false))).to.deep.equal([]);
  });

  it('keeps at least one dead instance whatever the limit, more when asked', () => {
    expect(ids(deadContainersToRemove('app-3', status, false, 0))).to.deep.equal(['app-2', 'app-1']);
    expect(ids(deadContainersToRemove('app-3', status, false, 2))).to.deep.equal(['app-1']);
  });

  it('removes every exited container of the pod, of any name, when its content may go', () => {
    expect(ids(deadContainersToRemove('app-3', status, true))).to.deep.equal([
      'app-3',
      'side-2',
      'app-2',
      'app-1',
    ]);
  });

  it('selects nothing for an ID that is no container of the pod (a sandbox, or one already gone)', () => {
    expect(containersToDeleteInPod('sandbox-1', status, 0)).to.deep.equal([]);
  });

  it('orders by creation time, not by list position', () => {
    const shuffled = { containers: [status.containers[5]!, status.containers[1]!, status.containers[3]!] };
    expect(ids(containersToDeleteInPod('app-1', shuffled, 1))).to.deep.equal(['app-2', 'app-1']);
  });
});
