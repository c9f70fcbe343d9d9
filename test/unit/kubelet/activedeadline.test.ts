// The active deadline handler (src/kubelet/activedeadline.ts): the kubelet's pastActiveDeadline rule, its
// reason, message and Normal event, and when the next sync is due.
import { expect } from 'chai';
import type { Pod } from '../../../src/api/core.js';
import {
  ActiveDeadlineHandler,
  DeadlineExceededMessage,
  DeadlineExceededReason,
  msUntilActiveDeadline,
  pastActiveDeadline,
} from '../../../src/kubelet/activedeadline.js';
import { FakeClock } from '../../../src/util/clock.js';

const T0 = Date.UTC(2026, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

function pod(deadline?: number, apiStart?: number): Pod {
  return {
    metadata: { uid: 'u1', name: 'p', namespace: 'ns' },
    spec: {
      containers: [{ name: 'c' }],
      ...(deadline !== undefined ? { activeDeadlineSeconds: deadline } : {}),
    },
    status: apiStart !== undefined ? { startTime: iso(apiStart) } : {},
  };
}

describe('active deadline', () => {
  it('is past once activeDeadlineSeconds have gone by since the start time, not before', () => {
    const p = pod(5);
    const start = iso(T0);
    expect(pastActiveDeadline(p, start, T0 + 4_999)).to.equal(false);
    expect(pastActiveDeadline(p, start, T0 + 5_000)).to.equal(true);
    expect(msUntilActiveDeadline(p, start, T0 + 2_000)).to.equal(3_000);
  });

  it('has no deadline without activeDeadlineSeconds or without a start time', () => {
    expect(pastActiveDeadline(pod(), iso(T0), T0 + 1e9)).to.equal(false);
    expect(msUntilActiveDeadline(pod(5), undefined, T0)).to.equal(undefined);
  });

  it("prefers the status manager's start time and falls back to the API's", () => {
    const p = pod(5, T0 - 60_000);
    expect(pastActiveDeadline(p, iso(T0), T0 + 1_000)).to.equal(false);
    expect(pastActiveDeadline(p, undefined, T0 + 1_000)).to.equal(true);
  });

  it('evicts with the kubelet reason and message, recording a Normal DeadlineExceeded event each time', () => {
    const clock = new FakeClock(T0);
    const events: string[] = [];
    const starts = new Map([['u1', iso(T0)]]);
    const h = new ActiveDeadlineHandler({
      clock,
      startTime: (uid) => starts.get(uid),
      record: (_p, type, reason, message) => events.push(`${type} ${reason} ${message}`),
    });
    const p = pod(10);
    expect(h.shouldEvict(p)).to.deep.equal({ evict: false });
    expect(h.shouldSync(p)).to.equal(false);
    expect(h.timeUntilSync(p)).to.equal(10_000);
    expect(events).to.deep.equal([]);

    clock.advance(10_000);
    expect(h.shouldSync(p)).to.equal(true);
    expect(h.shouldEvict(p)).to.deep.equal({
      evict: true,
      reason: DeadlineExceededReason,
      message: DeadlineExceededMessage,
    });
    expect(DeadlineExceededReason).to.equal('DeadlineExceeded');
    expect(events).to.deep.equal([
      'Normal DeadlineExceeded Pod was active on the node longer than the specified deadline',
    ]);
    // Past the deadline, the next look comes one sync-loop tick later (the failing sync may not have run yet).
    expect(h.timeUntilSync(p)).to.equal(1_000);
    expect(h.timeUntilSync(pod())).to.equal(undefined);
  });
});
