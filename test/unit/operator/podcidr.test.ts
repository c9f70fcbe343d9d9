// Pod-CIDR defaulting: simulated nodes without a podCIDR get a block no other VirtualNode names, keep it
// (from this process's reservation, then from status) and give it back when they go.
import { expect } from 'chai';
import {
  parseVirtualNodeSpec,
  type VirtualNode,
  type VirtualNodeSpec,
} from '../../../src/api/virtualnode.js';
import { PodCIDRDefaulter, takenPodCIDRs } from '../../../src/operator/podcidr.js';

function vn(name: string, rawSpec: unknown, statusCIDR?: string): VirtualNode {
  return {
    apiVersion: 'kubelet-operator.dev/v1alpha1',
    kind: 'VirtualNode',
    metadata: { name },
    spec: rawSpec,
    ...(statusCIDR ? { status: { podCIDR: statusCIDR } } : {}),
  };
}

function spec(raw: unknown): VirtualNodeSpec {
  const r = parseVirtualNodeSpec(raw);
  if (!r.ok) throw new Error(r.message);
  return r.spec;
}

const SIM = { runtime: { type: 'sim' } };
const podCIDROf = (s: VirtualNodeSpec): string | undefined =>
  s.runtime.type === 'sim' ? s.runtime.sim.podCIDR : undefined;

describe('operator: pod CIDR defaulting', () => {
  it('takenPodCIDRs: other nodes in spec (even unparsable ones) and status, and others reserved here', () => {
    const all = [
      vn('me', SIM, '10.9.9.0/24'),
      vn('a', { runtime: { type: 'sim', sim: { podCIDR: '10.1.0.0/24' } } }),
      vn('b', { capacity: 'not an object', runtime: { sim: { podCIDR: '10.2.0.0/24' } } }),
      vn('c', SIM, '10.3.0.0/24'),
    ];
    const reserved = new Map([
      ['me', '10.8.0.0/24'],
      ['d', '10.4.0.0/24'],
    ]);
    expect(takenPodCIDRs('me', all, reserved)).to.deep.equal([
      '10.1.0.0/24',
      '10.2.0.0/24',
      '10.3.0.0/24',
      '10.4.0.0/24',
    ]);
  });

  it('leaves a cri node and a sim node with its own podCIDR alone', () => {
    const d = new PodCIDRDefaulter();
    const cri = spec({ runtime: { type: 'cri', cri: { endpoint: 'unix:///run/containerd.sock' } } });
    expect(d.withPodCIDR(vn('x', {}), cri)).to.equal(cri);
    const own = spec({ runtime: { type: 'sim', sim: { podCIDR: '10.5.0.0/24' } } });
    expect(d.withPodCIDR(vn('y', {}), own)).to.equal(own);
  });

  it('gives each node its own block, keeps it, and reads it back from status after a restart', () => {
    const d = new PodCIDRDefaulter();
    const a = vn('a', SIM);
    const b = vn('b', SIM);
    d.track(a);
    d.track(b);
    const cidrA = podCIDROf(d.withPodCIDR(a, spec(SIM)));
    const cidrB = podCIDROf(d.withPodCIDR(b, spec(SIM)));
    expect(cidrA).to.be.a('string');
    expect(cidrB).to.be.a('string').and.not.equal(cidrA);
    expect(podCIDROf(d.withPodCIDR(a, spec(SIM))), 'stable').to.equal(cidrA);

    const restarted = new PodCIDRDefaulter();
    expect(podCIDROf(restarted.withPodCIDR(vn('a', SIM, '10.77.0.0/24'), spec(SIM)))).to.equal(
      '10.77.0.0/24',
    );
  });

  it('avoids a block another node took, and frees a released one', () => {
    const d = new PodCIDRDefaulter();
    const first = podCIDROf(d.withPodCIDR(vn('a', SIM), spec(SIM)))!;
    // After the release, a fresh allocation must avoid the old block, now in another node's status;
    // without the release the reservation would still answer `first`.
    d.track(vn('z', SIM, first));
    d.release('a');
    const again = podCIDROf(d.withPodCIDR(vn('a', SIM), spec(SIM)));
    expect(again).to.not.equal(first);
  });

  it('a spec podCIDR overlapping a tracked older spec, a defaulted status or a reservation is refused', () => {
    const d = new PodCIDRDefaulter();
    const at = (name: string, ts: string, raw: unknown, status?: string): VirtualNode => ({
      ...vn(name, raw, status),
      metadata: { name, creationTimestamp: ts },
    });
    const own = (cidr: string) => ({ runtime: { type: 'sim', sim: { podCIDR: cidr } } });
    const old = at('old', '2026-01-01T00:00:00Z', own('10.1.0.0/16'));
    const young = at('young', '2026-02-01T00:00:00Z', own('10.1.2.0/24'));
    const defaulted = at('dflt', '2026-03-01T00:00:00Z', SIM, '10.2.0.0/24');
    for (const o of [old, young, defaulted]) d.track(o);
    expect(() => d.withPodCIDR(young, spec(own('10.1.2.0/24')))).to.throw(
      /overlaps the pod CIDR of VirtualNode old/,
    );
    // The older one keeps its block: the younger overlapping it is the one to move.
    expect(podCIDROf(d.withPodCIDR(old, spec(own('10.1.0.0/16'))))).to.equal('10.1.0.0/16');
    const late = at('late', '2026-04-01T00:00:00Z', own('10.2.0.0/23'));
    d.track(late);
    expect(() => d.withPodCIDR(late, spec(own('10.2.0.0/23')))).to.throw(/VirtualNode dflt/);
    // Its status moved elsewhere: the old block is free (the index forgot it).
    d.track(at('dflt', '2026-03-01T00:00:00Z', SIM, '10.3.0.0/24'));
    expect(podCIDROf(d.withPodCIDR(late, spec(own('10.2.0.0/23'))))).to.equal('10.2.0.0/23');
    // A reservation made here counts, until released.
    const r = podCIDROf(d.withPodCIDR(at('fresh', '2026-05-01T00:00:00Z', SIM), spec(SIM)))!;
    const clash = at('clash', '2026-06-01T00:00:00Z', own(r));
    d.track(clash);
    expect(() => d.withPodCIDR(clash, spec(own(r)))).to.throw(/VirtualNode fresh/);
    d.release('fresh');
    expect(podCIDROf(d.withPodCIDR(clash, spec(own(r))))).to.equal(r);
    // A VirtualNode gone from the cache holds nothing.
    d.untrack('old');
    expect(podCIDROf(d.withPodCIDR(young, spec(own('10.1.2.0/24'))))).to.equal('10.1.2.0/24');
  });

  it('defaults around every tracked block, as takenPodCIDRs lists them, one node after another', () => {
    const d = new PodCIDRDefaulter();
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const node = vn(`n-${i}`, SIM);
      d.track(node);
      const cidr = podCIDROf(d.withPodCIDR(node, spec(SIM)))!;
      expect(seen.has(cidr), cidr).to.equal(false);
      seen.add(cidr);
      // Its status now shows it, as the controller writes it.
      d.track(vn(`n-${i}`, SIM, cidr));
    }
  });
});
