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
    expect(d.withPodCIDR(vn('x', {}), cri, [])).to.equal(cri);
    const own = spec({ runtime: { type: 'sim', sim: { podCIDR: '10.5.0.0/24' } } });
    expect(d.withPodCIDR(vn('y', {}), own, [])).to.equal(own);
  });

  it('gives each node its own block, keeps it, and reads it back from status after a restart', () => {
    const d = new PodCIDRDefaulter();
    const a = vn('a', SIM);
    const b = vn('b', SIM);
    const all = [a, b];
    const cidrA = podCIDROf(d.withPodCIDR(a, spec(SIM), all));
    const cidrB = podCIDROf(d.withPodCIDR(b, spec(SIM), all));
    expect(cidrA).to.be.a('string');
    expect(cidrB).to.be.a('string').and.not.equal(cidrA);
    expect(podCIDROf(d.withPodCIDR(a, spec(SIM), all)), 'stable').to.equal(cidrA);

    const restarted = new PodCIDRDefaulter();
    expect(podCIDROf(restarted.withPodCIDR(vn('a', SIM, '10.77.0.0/24'), spec(SIM), []))).to.equal(
      '10.77.0.0/24',
    );
  });

  it('avoids a block another node took, and frees a released one', () => {
    const d = new PodCIDRDefaulter();
    const first = podCIDROf(d.withPodCIDR(vn('a', SIM), spec(SIM), []))!;
    // After the release, a fresh allocation must avoid the old block, now in another node's status;
    // without the release the reservation would still answer `first`.
    const other = vn('z', SIM, first);
    d.release('a');
    const again = podCIDROf(d.withPodCIDR(vn('a', SIM), spec(SIM), [other]));
    expect(again).to.not.equal(first);
  });
});
