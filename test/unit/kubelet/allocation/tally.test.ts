import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { AdmittedTally } from '../../../../src/kubelet/allocation/tally.js';
import { admitPod, type AdmissionNode } from '../../../../src/kubelet/lifecycle/admission.js';
import { Rng } from '../../../chaos/lib/rng.js';

const spec = (cpu: string, memory?: string, hostPort?: number): Pod['spec'] => ({
  containers: [
    {
      name: 'c',
      image: 'img',
      resources: { requests: { cpu, ...(memory ? { memory } : {}) } },
      ...(hostPort ? { ports: [{ containerPort: 80, hostPort }] } : {}),
    } as Container,
  ],
});

const pod = (uid: string, s: Pod['spec']): Pod => ({
  metadata: { name: uid, namespace: 'ns', uid },
  spec: s,
});

describe('AdmittedTally', () => {
  it('sums count, requests and host ports as pods are tallied, re-tallied and removed', () => {
    const t = new AdmittedTally();
    t.set('a', spec('500m', '1Gi', 8080));
    t.set('b', spec('250m'));
    let p = t.peers()!;
    expect([p.count, Object.fromEntries(p.used), p.hostPorts]).to.deep.equal([
      2,
      { cpu: 750, memory: 1024 ** 3 },
      ['TCP/0.0.0.0/8080'],
    ]);
    t.set('b', spec('1'));
    expect(t.peers()!.used.get('cpu')).to.equal(1500);
    t.delete('a');
    t.delete('a');
    p = t.peers()!;
    expect([p.count, Object.fromEntries(p.used), p.hostPorts]).to.deep.equal([1, { cpu: 1000 }, []]);
    t.delete('b');
    expect([t.size, t.peers()!.used.size]).to.deep.equal([0, 0]);
  });

  it('answers nothing while a tallied spec cannot be counted, or when the pod asked about is tallied', () => {
    const t = new AdmittedTally();
    t.set('a', spec('100m'));
    t.set('bad', spec('not-a-quantity'));
    expect(t.peers()).to.equal(undefined);
    t.delete('bad');
    expect(t.peers()!.count).to.equal(1);
    expect(t.peers('a')).to.equal(undefined);
    expect(t.peers('other')!.count).to.equal(1);
  });

  it('never admits a pod the active pods would reject, and admits what they admit once asked again (random nodes)', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rng = new Rng(seed);
      const r = (): number => rng.next();
      const node: AdmissionNode = {
        name: 'n',
        labels: {},
        taints: [],
        allocatable: new Map([
          ['cpu', 500 + Math.floor(r() * 4000)],
          ['memory', 2 ** 30 * (1 + Math.floor(r() * 4))],
          ['pods', 1 + Math.floor(r() * 8)],
        ]),
      };
      const randomSpec = (): Pod['spec'] =>
        spec(
          `${Math.floor(r() * 1500)}m`,
          `${Math.floor(r() * 1024)}Mi`,
          r() < 0.3 ? 8000 + Math.floor(r() * 3) : undefined,
        );
      const tally = new AdmittedTally();
      const active: Pod[] = [];
      const n = Math.floor(r() * 8);
      for (let i = 0; i < n; i++) {
        const p = pod(`p${i}`, randomSpec());
        tally.set(p.metadata.uid!, p.spec);
        // Some tallied pods stopped being active (terminating, terminal) and are not yet removed.
        if (r() < 0.7) active.push(p);
      }
      const candidate = pod('new', randomSpec());
      const exact = admitPod(candidate, node, active);
      const fast = admitPod(candidate, node, tally.peers('new')!);
      if (fast.admit) expect(exact.admit, `seed ${seed}`).to.equal(true);
      const decided = fast.admit ? fast : admitPod(candidate, node, active);
      expect(decided, `seed ${seed}`).to.deep.equal(exact);
    }
  });
});
