// The VirtualNode status writer: what the status says for each observation (pure), how conditions keep
// their transition times and carry the generation, and that a write happens only on a real change.
import { expect } from 'chai';
import type { VirtualNode, VirtualNodeStatus } from '../../../src/api/virtualnode.js';
import type { ManagedNodeObservation } from '../../../src/operator/managednode.js';
import {
  drainingStatus,
  nextStatus,
  notStartedStatus,
  observedStatus,
  statusChanged,
  VirtualNodeStatusWriter,
} from '../../../src/operator/status.js';
import { FakeClock } from '../../../src/util/clock.js';

const T0 = Date.UTC(2026, 0, 1);

const healthy: ManagedNodeObservation = {
  registered: true,
  problems: [],
  runtimeReady: true,
  runtime: { name: 'sim', version: '0.1.0' },
  internalIP: '10.0.0.1',
  lastHeartbeatTime: '2026-01-01T00:00:00Z',
  pods: { total: 3, running: 2, pending: 1 },
};

function vn(status?: VirtualNodeStatus, generation = 3): VirtualNode {
  return {
    apiVersion: 'kubelet-operator.dev/v1alpha1',
    kind: 'VirtualNode',
    metadata: { name: 'vn-a', generation },
    spec: {},
    ...(status ? { status } : {}),
  };
}

describe('operator: VirtualNode status', () => {
  describe('observedStatus', () => {
    it('a registered, healthy node is Ready with its runtime named', () => {
      const s = observedStatus('node-a', healthy, undefined, '10.1.0.0/24');
      expect(s.ready).to.deep.equal({
        status: 'True',
        reason: 'NodeReady',
        message: 'the Node is registered and ready',
      });
      expect(s.runtimeReady).to.deep.equal({ status: 'True', reason: 'RuntimeReady', message: 'sim 0.1.0' });
      expect(s.extra).to.deep.equal({
        nodeName: 'node-a',
        internalIP: '10.0.0.1',
        lastHeartbeatTime: '2026-01-01T00:00:00Z',
        runtime: { name: 'sim', version: '0.1.0' },
        pods: { total: 3, running: 2, pending: 1 },
        podCIDR: '10.1.0.0/24',
      });
    });

    it('a start failure wins over registration, registration over node problems', () => {
      const sick = { ...healthy, registered: false, problems: ['PLEG is not healthy'] };
      expect(observedStatus('n', sick, 'boom', undefined).ready).to.deep.include({
        reason: 'StartFailed',
        message: 'boom',
      });
      expect(observedStatus('n', sick, undefined, undefined).ready).to.deep.include({
        status: 'False',
        reason: 'Registering',
      });
      const notReady = { ...healthy, problems: ['a', 'b'] };
      expect(observedStatus('n', notReady, undefined, undefined).ready).to.deep.equal({
        status: 'False',
        reason: 'NodeNotReady',
        message: 'a, b',
      });
    });

    it('a runtime that is not ready says why, and no pod CIDR is reported for a node without one', () => {
      const s = observedStatus(
        'n',
        { ...healthy, runtimeReady: false, runtimeMessage: 'Unavailable: connection refused' },
        undefined,
        undefined,
      );
      expect(s.runtimeReady).to.deep.equal({
        status: 'False',
        reason: 'RuntimeUnavailable',
        message: 'Unavailable: connection refused',
      });
      expect(s.extra).to.not.have.property('podCIDR');
      const noMessage = observedStatus('n', { ...healthy, runtimeReady: false }, undefined, undefined);
      expect(noMessage.runtimeReady?.message).to.equal('runtime not ready');
    });

    it('an unstarted spec leaves the runtime Unknown; draining reports Ready only', () => {
      expect(notStartedStatus('InvalidSpec', 'spec.x: bad')).to.deep.equal({
        ready: { status: 'False', reason: 'InvalidSpec', message: 'spec.x: bad' },
        runtimeReady: { status: 'Unknown', reason: 'InvalidSpec', message: 'not started' },
      });
      expect(drainingStatus.runtimeReady).to.equal(undefined);
    });
  });

  describe('nextStatus', () => {
    it('stamps conditions and the status with the generation, at the clock time to the second', () => {
      const s = nextStatus(vn(), observedStatus('n', healthy, undefined, undefined), T0 + 1_500);
      expect(s.observedGeneration).to.equal(3);
      expect(s.conditions!.map((c) => [c.type, c.observedGeneration, c.lastTransitionTime])).to.deep.equal([
        ['Ready', 3, '2026-01-01T00:00:01Z'],
        ['RuntimeReady', 3, '2026-01-01T00:00:01Z'],
      ]);
    });

    it('keeps lastTransitionTime while a condition keeps its status, moves it when the status flips', () => {
      const first = nextStatus(vn(), observedStatus('n', healthy, undefined, undefined), T0);
      const later = T0 + 60_000;
      const same = nextStatus(
        vn(first, 4),
        observedStatus('n', { ...healthy, pods: { total: 0, running: 0, pending: 0 } }, undefined, undefined),
        later,
      );
      expect(same.conditions!.find((c) => c.type === 'Ready')).to.deep.include({
        lastTransitionTime: '2026-01-01T00:00:00Z',
        observedGeneration: 4,
      });
      const flipped = nextStatus(vn(first), notStartedStatus('InvalidSpec', 'x'), later);
      expect(flipped.conditions!.map((c) => c.lastTransitionTime)).to.deep.equal([
        '2026-01-01T00:01:00Z',
        '2026-01-01T00:01:00Z',
      ]);
    });

    it('keeps stored fields the update does not name, and drops RuntimeReady when not given', () => {
      const first = nextStatus(vn(), observedStatus('n', healthy, undefined, '10.1.0.0/24'), T0);
      const draining = nextStatus(vn(first), drainingStatus, T0);
      expect(draining.podCIDR).to.equal('10.1.0.0/24');
      expect(draining.nodeName).to.equal('n');
      expect(draining.conditions!.map((c) => c.type)).to.deep.equal(['Ready']);
    });
  });

  describe('statusChanged and the writer', () => {
    it('ignores the heartbeat time alone, and key order', () => {
      const a = nextStatus(vn(), observedStatus('n', healthy, undefined, undefined), T0);
      expect(statusChanged(a, { ...a, lastHeartbeatTime: '2026-01-01T00:05:00Z' })).to.equal(false);
      const reordered = Object.fromEntries(Object.entries(a).reverse()) as VirtualNodeStatus;
      expect(statusChanged(a, reordered)).to.equal(false);
      expect(statusChanged(a, { ...a, pods: { total: 9 } })).to.equal(true);
      expect(statusChanged(undefined, a)).to.equal(true);
    });

    it('writes only when the status changed', async () => {
      const clock = new FakeClock(T0);
      const written: { name: string; status: VirtualNodeStatus }[] = [];
      const writer = new VirtualNodeStatusWriter(
        {
          patchFinalizers: async () => true,
          patchStatus: async (name, status) => void written.push({ name, status }),
        },
        clock,
      );
      const update = observedStatus('n', healthy, undefined, undefined);
      expect(await writer.write(vn(), update)).to.equal(true);
      const stored = vn(written[0]!.status);
      clock.advance(30_000);
      expect(await writer.write(stored, update)).to.equal(false);
      const beat = observedStatus(
        'n',
        { ...healthy, lastHeartbeatTime: '2026-01-01T00:00:30Z' },
        undefined,
        undefined,
      );
      expect(await writer.write(stored, beat)).to.equal(false);
      expect(await writer.write(stored, drainingStatus)).to.equal(true);
      expect(written.map((w) => w.name)).to.deep.equal(['vn-a', 'vn-a']);
    });
  });
});
