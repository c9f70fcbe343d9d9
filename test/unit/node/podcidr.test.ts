import { expect } from 'chai';
import { IPAllocator } from '../../../src/runtime/sim/ipam.js';
import { allocatePodCIDR, cidrsOverlap, podCIDRPrefixFor } from '../../../src/node/podcidr.js';
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
