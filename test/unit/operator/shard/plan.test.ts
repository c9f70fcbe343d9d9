import { expect } from 'chai';
import { fairShare, liveMembers, planShard, type ShardView } from '../../../../src/operator/shard/plan.js';

const NOW = 1_000_000;
const nodes = (n: number, prefix = 'vn') =>
  Array.from({ length: n }, (_, i) => ({ name: `${prefix}-${String(i).padStart(2, '0')}` }));

function view(over: Partial<ShardView>): ShardView {
  return {
    now: NOW,
    self: 'a',
    host: '',
    members: new Map(),
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
    expect(liveMembers({ now: NOW, self: 'a', members })).to.deep.equal(['a', 'b']);
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
