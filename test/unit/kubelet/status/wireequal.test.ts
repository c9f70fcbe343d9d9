import { expect } from 'chai';
import { wireEqual } from '../../../../src/kubelet/status/wireequal.js';

describe('wireEqual', () => {
  it('equates a status as the API server serves it with the one the status manager wrote', () => {
    // From a real API server: a zero time is null, a zero struct {}; our write left both out, and an empty
    // resources object the server does not keep.
    const served = {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: 't' }],
      containerStatuses: [
        { name: 'app', state: { running: { startedAt: 't' } }, lastState: {}, ready: true },
      ],
      qosClass: 'BestEffort',
    };
    const ours = {
      qosClass: 'BestEffort',
      containerStatuses: [
        { name: 'app', ready: true, state: { running: { startedAt: 't' } }, resources: {} },
      ],
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: 't' }],
      message: undefined,
      podIPs: [],
    };
    expect(wireEqual(served, ours)).to.equal(true);
    expect(wireEqual(ours, served)).to.equal(true);
    expect(wireEqual({ a: { b: { c: null, d: [] } } }, {})).to.equal(true);
  });

  it('tells apart every value, false, 0 and empty strings included, and order within lists', () => {
    const base = { phase: 'Running', list: [1, 2], o: { k: 'v' } };
    const unequal: unknown[] = [
      { phase: 'Pending', list: [1, 2], o: { k: 'v' } },
      { phase: 'Running', list: [2, 1], o: { k: 'v' } },
      { phase: 'Running', list: [1, 2, 3], o: { k: 'v' } },
      { phase: 'Running', list: [1, 2], o: { k: 'v', extra: '' } },
      { phase: 'Running', list: [1, 2], o: { k: 'v', started: false } },
      { phase: 'Running', list: [1, 2], o: { k: 'v', restartCount: 0 } },
      { phase: 'Running', list: [1, 2], o: {} },
      { phase: 'Running', list: { 0: 1, 1: 2 }, o: { k: 'v' } },
      { phase: 'Running', list: [1, 2], o: { k: '1' } },
      { phase: 'Running', list: ['1', 2], o: { k: 'v' } },
      { phase: 'Running', list: [1, 2, null], o: { k: 'v' } },
    ];
    for (const other of unequal) {
      expect(wireEqual(base, other), JSON.stringify(other)).to.equal(false);
      expect(wireEqual(other, base), JSON.stringify(other)).to.equal(false);
    }
    expect(wireEqual(0, '0')).to.equal(false);
    expect(wireEqual(null, {})).to.equal(false);
  });
});
