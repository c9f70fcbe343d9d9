import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import { ProbeMetrics } from '../../../../src/kubelet/prober/metrics.js';
import { KubeletProbeMetrics, parseExposition } from '../../../support/kubelet-metrics.js';

const pod = (name: string, uid: string): Pod =>
  ({ metadata: { name, namespace: 'ns', uid }, spec: { containers: [] } }) as unknown as Pod;

const PODS = { web: pod('web', 'u1'), db: pod('db', 'u2') };
type Observation = [
  Parameters<ProbeMetrics['observe']>[0],
  Parameters<ProbeMetrics['observe']>[1],
  keyof typeof PODS,
  string,
];

/** A ProbeMetrics that has seen these [probe type, result, pod, container] observations, in order. */
function observed(observations: Observation[]): ProbeMetrics {
  const m = new ProbeMetrics();
  for (const [type, result, p, container] of observations) m.observe(type, result, PODS[p], container);
  return m;
}

/** The exposition's samples as [pod, container, probe_type, result, value] rows. */
const rowsOf = (samples: ReturnType<typeof parseExposition>['samples']) =>
  samples.map((s) => [s.labels.pod, s.labels.container, s.labels.probe_type, s.labels.result, s.value]);

describe('prober/metrics (/metrics/probes)', () => {
  it('counts per container, probe type and result with the kubelet labels, and forgets a gone pod', () => {
    const m = observed([
      ['readiness', 'successful', 'web', 'app'],
      ['readiness', 'successful', 'web', 'app'],
      ['readiness', 'failed', 'web', 'app'],
      ['liveness', 'unknown', 'web', 'app'],
      ['startup', 'successful', 'db', 'pg'],
    ]);
    const p = parseExposition(m.render());
    const fam = KubeletProbeMetrics[0]!;
    expect(p.types.get(fam.name)).to.equal(fam.type);
    for (const s of p.samples) expect(Object.keys(s.labels).sort()).to.deep.equal(fam.labels);
    expect(rowsOf(p.samples)).to.have.deep.members([
      ['web', 'app', 'Readiness', 'successful', 2],
      ['web', 'app', 'Readiness', 'failed', 1],
      ['web', 'app', 'Liveness', 'unknown', 1],
      ['db', 'pg', 'Startup', 'successful', 1],
    ]);
    expect(p.samples.find((s) => s.labels.pod === 'web')?.labels.pod_uid).to.equal('u1');
    m.forget('u1');
    expect(parseExposition(m.render()).samples.map((s) => s.labels.pod)).to.deep.equal(['db']);
    expect(m.size()).to.equal(1);
  });

  it("keeps a pod's series in first-observed order across containers and probe types", () => {
    const m = observed([
      ['liveness', 'failed', 'web', 'b'],
      ['readiness', 'successful', 'web', 'a'],
      ['liveness', 'successful', 'web', 'a'],
      ['readiness', 'successful', 'web', 'a'],
      ['liveness', 'failed', 'web', 'b'],
      ['liveness', 'unknown', 'db', 'a'],
      ['liveness', 'successful', 'web', 'a'],
    ]);
    expect(rowsOf(parseExposition(m.render()).samples)).to.deep.equal([
      ['web', 'b', 'Liveness', 'failed', 2],
      ['web', 'a', 'Readiness', 'successful', 2],
      ['web', 'a', 'Liveness', 'successful', 2],
      ['db', 'a', 'Liveness', 'unknown', 1],
    ]);
    m.forget('u1');
    m.forget('u1');
    expect(m.size()).to.equal(1);
    expect(parseExposition(m.render()).samples).to.have.length(1);
  });
});
