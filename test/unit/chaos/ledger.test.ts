import { expect } from 'chai';
import type { ContainerStatus, Pod } from '../../../src/api/core.js';
import { PodLedger } from '../../chaos/lib/ledger.js';

const running = (id: string, restartCount = 0): ContainerStatus => ({
  name: 'app',
  image: 'busybox',
  imageID: '',
  ready: true,
  restartCount,
  containerID: `containerd://${id}`,
  state: { running: { startedAt: '2026-11-29T00:00:00Z' } },
});

/** What the kubelet reports for a container that ran and that its runtime now calls UNKNOWN. */
const lost = (restartCount: number): ContainerStatus => ({
  name: 'app',
  image: 'busybox',
  imageID: '',
  ready: false,
  restartCount,
  state: {
    terminated: {
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      message: 'The container could not be located when the pod was terminated',
    },
  },
});

const pod = (statuses: ContainerStatus[], deleting: boolean): Pod => ({
  metadata: {
    name: 'p',
    uid: 'u1',
    ...(deleting ? { deletionTimestamp: '2026-11-29T00:00:01Z' } : {}),
  },
  spec: { nodeName: 'n', containers: [{ name: 'app', image: 'busybox' }] },
  status: { phase: 'Running', containerStatuses: statuses },
});

describe('chaos PodLedger: restarts against the runtime losing a container', () => {
  it("counts a deleted pod's UNKNOWN container apart, not as a restart", () => {
    const l = new PodLedger();
    l.observe('ADDED', pod([running('a')], false), 1);
    l.observe('MODIFIED', pod([running('a')], true), 2);
    l.observe('MODIFIED', pod([lost(1)], true), 3);
    expect(l.restarted()).to.deep.equal([]);
    expect(l.lostByRuntime()).to.deep.equal(['p/app: 1']);
  });

  it('counts the same status on a pod not being deleted as a restart', () => {
    const l = new PodLedger();
    l.observe('ADDED', pod([running('a')], false), 1);
    l.observe('MODIFIED', pod([lost(1)], false), 2);
    expect(l.restarted()).to.deep.equal(['p/app: 1']);
    expect(l.lostByRuntime()).to.deep.equal([]);
  });

  it('counts a new container of a deleted pod as a restart, and a rise past the loss too', () => {
    const started = new PodLedger();
    started.observe('ADDED', pod([running('a')], true), 1);
    started.observe('MODIFIED', pod([running('b', 1)], true), 2);
    expect(started.restarted()).to.deep.equal(['p/app: 1']);

    const twice = new PodLedger();
    twice.observe('ADDED', pod([running('a')], true), 1);
    twice.observe('MODIFIED', pod([lost(1)], true), 2);
    twice.observe('MODIFIED', pod([running('b', 2)], true), 3);
    expect(twice.restarted()).to.deep.equal(['p/app: 1']);
    expect(twice.lostByRuntime()).to.deep.equal(['p/app: 1']);
  });
});
