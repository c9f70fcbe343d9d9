import { expect } from 'chai';
import { IPAllocator } from '../../../src/runtime/sim/ipam.js';
import {
  allocatePodCIDR,
  CIDRBlockIndex,
  cidrsOverlap,
  podCIDRPrefixFor,
} from '../../../src/node/podcidr.js';
import { isSimPodCIDR } from '../../../src/util/ipv4.js';

describe('allocatePodCIDR (default pod CIDRs for simulated nodes)', () => {
  it('gives a /24 inside the pool for the usual 110 pods, the same one for the same name', () => {
    const a = allocatePodCIDR('vn-a', 110, []);
    expect(a).to.match(/^10\.(1[2-9][0-9]|2[0-5][0-9])\.\d{1,3}\.0\/24$/);
    expect(allocatePodCIDR('vn-a', 110, [])).to.equal(a);
  });

  it('never returns a block that overlaps one already taken, in spec or status form', () => {
    const taken: string[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const c = allocatePodCIDR(`node-${i}`, 110, taken);
      expect(seen.has(c), c).to.equal(false);
      seen.add(c);
      taken.push(c);
    }
    // A wide block someone set by hand is avoided as a whole.
    const first = allocatePodCIDR('x', 110, ['10.128.0.0/10'], '10.128.0.0/9');
    expect(Number(first.split('.')[1]), first).to.be.within(192, 255);
  });

  it('walks on from its starting block and fails clearly when the pool is full', () => {
    const pool = '10.200.0.0/23'; // two /24s
    const a = allocatePodCIDR('a', 110, [], pool);
    const b = allocatePodCIDR('b', 110, [a], pool);
    expect(new Set([a, b]).size).to.equal(2);
    expect(() => allocatePodCIDR('c', 110, [a, b], pool)).to.throw(/no free \/24 left in the pod CIDR pool/);
  });

  it('sizes the block to hold the node pods next to network, gateway and broadcast addresses', () => {
    expect(podCIDRPrefixFor(110)).to.equal(24);
    expect(podCIDRPrefixFor(253)).to.equal(24);
    expect(podCIDRPrefixFor(254)).to.equal(23);
    expect(podCIDRPrefixFor(5000)).to.equal(19);
    const c = allocatePodCIDR('big', 5000, []);
    const ipam = new IPAllocator(c);
    for (let i = 0; i < 5000; i++) ipam.allocate(`s${i}`);
    expect(ipam.allocated).to.equal(5000);
  });
});

describe('isSimPodCIDR and cidrsOverlap', () => {
  it('accepts what the simulated IPAM can serve: IPv4 /8 to /30', () => {
    for (const ok of ['10.0.0.0/8', '10.1.2.0/24', '192.168.0.4/30'])
      expect(isSimPodCIDR(ok), ok).to.equal(true);
    for (const bad of [
      '0.0.0.0/0',
      '10.0.0.0/7',
      '10.0.0.1/31',
      '10.0.0.1/32',
      'fd00::/120',
      '10.0.0.0',
      '300.0.0.0/24',
      '',
    ])
      expect(isSimPodCIDR(bad), bad).to.equal(false);
    // Every address the IPAM takes such a block for, it can also allocate from.
    expect(() => new IPAllocator('192.168.0.4/30').allocate('s')).to.not.throw();
  });

  it('tells blocks that share an address', () => {
    expect(cidrsOverlap('10.1.0.0/16', '10.1.2.0/24')).to.equal(true);
    expect(cidrsOverlap('10.1.2.0/24', '10.1.3.0/24')).to.equal(false);
    expect(cidrsOverlap('10.1.2.0/24', 'fd00::/64')).to.equal(false);
  });
});

describe('CIDRBlockIndex (pod CIDR blocks by address)', () => {
  // A small deterministic generator: blocks of /8 to /30 around a few /16s, so they nest and collide.
  function blocks(seed: number, n: number, minPrefix = 8): string[] {
    let x = seed;
    const next = (m: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return x % m;
    };
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const prefix = minPrefix + next(31 - minPrefix);
      out.push(`10.${128 + next(3)}.${next(4)}.${next(256)}/${prefix}`);
    }
    return out;
  }

  it('finds exactly the kept blocks that share an address with a query, around and inside it', () => {
    const kept = blocks(7, 400);
    const idx = new CIDRBlockIndex<number>();
    kept.forEach((c, i) => expect(idx.add(c, i), c).to.equal(true));
    expect(idx.size).to.equal(400);
    for (const q of blocks(99, 300)) {
      const want = kept.flatMap((c, i) => (cidrsOverlap(c, q) ? [i] : [])).sort((a, b) => a - b);
      expect(
        idx.overlappingCIDR(q).sort((a, b) => a - b),
        q,
      ).to.deep.equal(want);
    }
  });

  it('forgets a deleted block for its value alone, and keeps no unparsable one', () => {
    const idx = new CIDRBlockIndex<string>();
    idx.add('10.1.0.0/24', 'a');
    idx.add('10.1.0.0/24', 'b');
    idx.add('10.1.0.128/25', 'c');
    expect(idx.add('not a cidr', 'd')).to.equal(false);
    idx.delete('10.1.0.0/24', 'a');
    expect(idx.overlappingCIDR('10.1.0.0/16').sort()).to.deep.equal(['b', 'c']);
    idx.delete('10.1.0.128/25', 'c');
    idx.delete('10.1.0.0/24', 'b');
    expect(idx.size).to.equal(0);
    expect(idx.overlappingCIDR('10.0.0.0/8')).to.deep.equal([]);
  });

  it('allocatePodCIDR over the index picks the block it picks from the list', () => {
    // Small blocks only: a /8 or /9 would leave nothing free.
    const taken = blocks(3, 200, 17).filter((c) => isSimPodCIDR(c));
    const idx = new CIDRBlockIndex<string>();
    for (const c of taken) idx.add(c, c);
    // A pool of 1,024 /24s, most of them under a taken block: most searches walk on.
    const pool = '10.128.0.0/14';
    let walked = 0;
    for (let i = 0; i < 100; i++) {
      const byList = allocatePodCIDR(`n-${i}`, 110, taken, pool);
      const byIndex = allocatePodCIDR(
        `n-${i}`,
        110,
        (first, prefix) => idx.overlapping(first, prefix).length > 0,
        pool,
      );
      expect(byIndex, `n-${i}`).to.equal(byList);
      if (byList !== allocatePodCIDR(`n-${i}`, 110, [], pool)) walked++;
    }
    expect(walked).to.be.greaterThan(20);
  });
});
