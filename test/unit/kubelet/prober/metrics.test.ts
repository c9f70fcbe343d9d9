import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import { ProbeMetrics } from '../../../../src/kubelet/prober/metrics.js';
import { KubeletProbeMetrics, parseExposition } from '../../../support/kubelet-metrics.js';

const pod = (name: string, uid: string): Pod =>
  ({ metadata: { name, namespace: 'ns', uid }, spec: { containers: [] } }) as unknown as Pod;

describe('prober/metrics (/metrics/probes)', () => {
  it('counts per container, probe type and result with the kubelet labels, and forgets a gone pod', () => {
    const m = new ProbeMetrics();
    const web = pod('web', 'u1');
    m.observe('readiness', 'successful', web, 'app');
    m.observe('readiness', 'successful', web, 'app');
    m.observe('readiness', 'failed', web, 'app');
    m.observe('liveness', 'unknown', web, 'app');
    m.observe('startup', 'successful', pod('db', 'u2'), 'pg');
    const p = parseExposition(m.render());
    const fam = KubeletProbeMetrics[0]!;
    expect(p.types.get(fam.name)).to.equal(fam.type);
    for (const s of p.samples) expect(Object.keys(s.labels).sort()).to.deep.equal(fam.labels);
    const rows = p.samples.map((s) => [
      s.labels.pod,
      s.labels.container,
      s.labels.probe_type,
      s.labels.result,
      s.value,
    ]);
    expect(rows).to.have.deep.members([
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
    const m = new ProbeMetrics();
    const web = pod('web', 'u1');
    m.observe('liveness', 'failed', web, 'b');
    m.observe('readiness', 'successful', web, 'a');
    m.observe('liveness', 'successful', web, 'a');
    m.observe('readiness', 'successful', web, 'a');
    m.observe('liveness', 'failed', web, 'b');
    m.observe('liveness', 'unknown', pod('db', 'u2'), 'a');
    m.observe('liveness', 'successful', web, 'a');
    const rows = parseExposition(m.render()).samples.map((s) => [
      s.labels.pod,
      s.labels.container,
      s.labels.probe_type,
      s.labels.result,
      s.value,
    ]);
    expect(rows).to.deep.equal([
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
