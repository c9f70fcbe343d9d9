import { expect } from 'chai';
import {
  fairShare,
  liveMembers,
  membershipGraceUntil,
  membershipRenewed,
  NO_MEMBERSHIP_RENEWALS,
  nodeLeaseExpiry,
  planShard,
  type MembershipRenewals,
  type ShardView,
} from '../../../../src/operator/shard/plan.js';

const NOW = 1_000_000;
const nodes = (n: number, prefix = 'vn') =>
  Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${String(i).padStart(2, '0')}` }));

function view(over: Partial<ShardView>): ShardView {
  return {
    now: NOW,
    self: 'a',
    host: '',
    members: new Map(),
    graceUntil: -Infinity,
    nodes: [],
    leases: new Map(),
    held: new Set(),
    ...over,
  };
}

describe('shard plan', () => {
  it('splits floating nodes evenly, the first replicas by identity taking the remainder', () => {
    expect([0, 1, 2].map((r) => fairShare(10, 3, r))).to.deep.equal([4, 3, 3]);
    expect([0, 1].map((r) => fairShare(10, 2, r))).to.deep.equal([5, 5]);
    expect(fairShare(0, 3, 0)).to.equal(0);
    expect(fairShare(7, 0, 0)).to.equal(7);
  });

  it('counts only replicas whose Lease has not expired, and always itself', () => {
    const members = new Map([
      ['b', NOW + 1],
      ['c', NOW],
      ['d', NOW - 5],
    ]);
    expect(liveMembers({ now: NOW, self: 'a', members, graceUntil: -Infinity })).to.deep.equal(['a', 'b']);
    expect(liveMembers({ now: NOW, self: 'a', members, graceUntil: NOW })).to.deep.equal(['a', 'b']);
  });

  it("ends a node Lease with its holder's membership, never later than its own expiry", () => {
    // Its own Lease lasts longer than the holder's membership: the membership decides.
    expect(nodeLeaseExpiry(NOW + 60_000, true, NOW + 15_000)).to.equal(NOW + 15_000);
    // A membership kept live longer (a grace window) does not stretch the node Lease.
    expect(nodeLeaseExpiry(NOW + 10_000, true, NOW + 40_000)).to.equal(NOW + 10_000);
    // A holder with no membership Lease known has left: free now.
    expect(nodeLeaseExpiry(NOW + 60_000, true, undefined)).to.equal(-Infinity);
    // An earlier version's Lease (as short as a membership Lease) ends at its own expiry only.
    expect(nodeLeaseExpiry(NOW + 15_000, false, NOW + 5_000)).to.equal(NOW + 15_000);
    expect(nodeLeaseExpiry(NOW + 15_000, false, undefined)).to.equal(NOW + 15_000);
  });

  it('counts every known replica live until the grace window ends', () => {
    const members = new Map([
      ['b', NOW - 60_000],
      ['c', NOW + 1],
    ]);
    expect(liveMembers({ now: NOW, self: 'a', members, graceUntil: NOW + 1 })).to.deep.equal(['a', 'b', 'c']);
    expect(liveMembers({ now: NOW, self: 'a', members, graceUntil: Infinity })).to.deep.equal([
      'a',
      'b',
      'c',
    ]);
    expect(liveMembers({ now: NOW + 1, self: 'a', members, graceUntil: NOW + 1 })).to.deep.equal(['a']);
  });

  it('after an outage, takes only its share of the free Leases while the others are in grace', () => {
    // Nobody renewed anything for a minute: every Lease looks expired, the other replica's too.
    const stale = NOW - 45_000;
    const leases = new Map(
      nodes(10).map((n, i) => [n.name, { holder: i < 5 ? 'a' : 'b', expiresAt: stale }]),
    );
    const members = new Map([['b', stale]]);
    const alone = planShard(view({ nodes: nodes(10), members, leases }));
    expect([alone.members, alone.quota, alone.room]).to.deep.equal([1, 10, 10]);
    const grace = planShard(view({ nodes: nodes(10), members, leases, graceUntil: NOW + 15_000 }));
    expect([grace.members, grace.quota, grace.room]).to.deep.equal([2, 5, 5]);
    // Node Leases get no grace: every one is free, the coordinator takes the first `room`.
    expect(grace.acquire).to.have.length(10);
    expect(grace.release).to.deep.equal([]);
  });

  it('keeps a grace window while its own renewals fail and for a Lease duration after they succeed', () => {
    const fold = (steps: [number, boolean][]): MembershipRenewals =>
      steps.reduce((r, [at, ok]) => membershipRenewed(r, at, ok), NO_MEMBERSHIP_RENEWALS);
    const grace = (steps: [number, boolean][]): number => membershipGraceUntil(fold(steps), 15_000);
    // Renewing as usual, or failing before the first accepted write (the first list is a fresh view): none.
    expect(
      grace([
        [0, true],
        [5_000, true],
        [10_000, true],
      ]),
    ).to.equal(-Infinity);
    expect(
      grace([
        [0, false],
        [5_000, true],
        [10_000, true],
      ]),
    ).to.equal(-Infinity);
    // Failing: every known replica live, however long it lasts.
    expect(
      grace([
        [0, true],
        [5_000, false],
      ]),
    ).to.equal(Infinity);
    expect(
      grace([
        [0, true],
        [5_000, false],
        [65_000, false],
      ]),
    ).to.equal(Infinity);
    expect(
      fold([
        [0, true],
        [5_000, false],
        [65_000, false],
      ]).failingSince,
    ).to.equal(5_000);
    // Accepted again: one Lease duration from the first accepted write, not moved by the next ones.
    const back: [number, boolean][] = [
      [0, true],
      [5_000, false],
      [65_000, false],
      [70_000, true],
    ];
    expect(grace(back)).to.equal(85_000);
    expect(grace([...back, [75_000, true], [80_000, true]])).to.equal(85_000);
    // A second outage starts another window.
    expect(grace([...back, [75_000, false], [80_000, true]])).to.equal(95_000);
  });

  it('alone, takes every free node', () => {
    const p = planShard(view({ nodes: nodes(10) }));
    expect(p.quota).to.equal(10);
    expect(p.room).to.equal(10);
    expect(p.acquire).to.have.length(10);
    expect(p.release).to.deep.equal([]);
  });

  it('takes only up to its share and never a node another live replica holds', () => {
    const leases = new Map([
      ['vn-00', { holder: 'b', expiresAt: NOW + 10_000 }],
      ['vn-01', { holder: 'b', expiresAt: NOW + 10_000 }],
    ]);
    const p = planShard(view({ nodes: nodes(10), members: new Map([['b', NOW + 10_000]]), leases }));
    expect(p.quota).to.equal(5);
    expect(p.room).to.equal(5);
    // Every free one, best first: the coordinator takes them in order until it has its share.
    expect(p.acquire).to.have.length(8);
    expect(p.acquire).to.not.include.members(['vn-00', 'vn-01']);
  });

  it('treats an expired, a released and its own earlier Lease as free', () => {
    const leases = new Map([
      ['vn-00', { holder: 'b', expiresAt: NOW }],
      ['vn-01', { holder: '', expiresAt: NOW + 10_000 }],
      ['vn-02', { holder: 'a', expiresAt: NOW + 10_000 }],
      ['vn-03', { holder: 'b', expiresAt: NOW + 1 }],
    ]);
    const p = planShard(view({ nodes: nodes(4), leases }));
    expect(p.acquire.sort()).to.deep.equal(['vn-00', 'vn-01', 'vn-02']);
  });

  it('hands back what is over its share when a replica joins, keeping a stable choice', () => {
    const held = new Set(nodes(5).map((n) => n.name));
    const members = new Map([
      ['b', NOW + 10_000],
      ['c', NOW + 10_000],
    ]);
    const p = planShard(
      view({ self: 'b', nodes: nodes(10), members: new Map([...members, ['a', NOW + 1]]), held }),
    );
    expect(p.quota).to.equal(3);
    expect(p.release).to.have.length(2);
    expect(p.acquire).to.deep.equal([]);
    const again = planShard(
      view({ self: 'b', nodes: nodes(10), members: new Map([...members, ['a', NOW + 1]]), held }),
    );
    expect(again.release).to.deep.equal(p.release);
  });

  it('hands back nodes that are gone', () => {
    const p = planShard(view({ nodes: nodes(1), held: new Set(['vn-00', 'gone']) }));
    expect(p.release).to.deep.equal(['gone']);
  });

  it('gives a pinned node only to a replica on its host, whatever its share', () => {
    const pinned = [
      { name: 'cri-a', host: 'host-a' },
      { name: 'cri-b', host: 'host-b' },
    ];
    const all = [...nodes(4), ...pinned];
    const members = new Map([['b', NOW + 10_000]]);
    const onA = planShard(view({ host: 'host-a', nodes: all, members }));
    expect(onA.quota).to.equal(2);
    expect(onA.acquirePinned).to.deep.equal(['cri-a']);
    expect(onA.acquire).to.not.include.members(['cri-a', 'cri-b']);
    expect(onA.room).to.equal(2);
    const noHost = planShard(view({ nodes: all, members }));
    expect(noHost.acquirePinned).to.deep.equal([]);
    expect(noHost.acquire).to.not.include.members(['cri-a', 'cri-b']);
    // Held but pinned elsewhere (the spec changed): handed back.
    const moved = planShard(view({ host: 'host-a', nodes: all, members, held: new Set(['cri-b']) }));
    expect(moved.release).to.deep.equal(['cri-b']);
  });
});
