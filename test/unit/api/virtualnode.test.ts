import { expect } from 'chai';
import { parseVirtualNodeSpec } from '../../../src/api/virtualnode.js';

describe('parseVirtualNodeSpec', () => {
  it('applies defaults to a minimal sim spec', () => {
    const r = parseVirtualNodeSpec({ runtime: { type: 'sim' } });
    expect(r.ok).to.equal(true);
    if (!r.ok) return;
    expect(r.spec.capacity).to.deep.equal({
      cpu: '4',
      memory: '16Gi',
      'ephemeral-storage': '100Gi',
      pods: 110,
    });
    expect(r.spec.heartbeat.leaseDurationSeconds).to.equal(40);
    expect(r.spec.runtime).to.deep.equal({ type: 'sim', sim: {} });
  });

  it('spec.kubelet.crashLoopBackOff.maxContainerRestartPeriodSeconds: 1..300 whole seconds, unset by default', () => {
    const parse = (p: unknown) =>
      parseVirtualNodeSpec({
        runtime: { type: 'sim' },
        kubelet: { crashLoopBackOff: { maxContainerRestartPeriodSeconds: p } },
      });
    const ok = parse(30);
    expect(ok.ok && ok.spec.kubelet.crashLoopBackOff).to.deep.equal({ maxContainerRestartPeriodSeconds: 30 });
    for (const p of [1, 300]) expect(parse(p).ok, String(p)).to.equal(true);
    for (const p of [0, 301, 1.5, '30s']) {
      const r = parse(p);
      expect(r.ok, String(p)).to.equal(false);
      expect(!r.ok && r.message).to.match(
        /^spec\.kubelet\.crashLoopBackOff\.maxContainerRestartPeriodSeconds: /,
      );
    }
    const none = parseVirtualNodeSpec({ runtime: { type: 'sim' } });
    expect(none.ok && none.spec.kubelet.crashLoopBackOff).to.equal(undefined);
  });

  it("spec.kubelet.cpuCFSQuotaPeriod: a Go duration from 1ms to 1s, with the kubelet's message outside", () => {
    const parse = (p: unknown) =>
      parseVirtualNodeSpec({ runtime: { type: 'sim' }, kubelet: { cpuCFSQuotaPeriod: p } });
    for (const p of ['1ms', '50ms', '100ms', '1s', '1000ms', '250000us'])
      expect(parse(p).ok, p).to.equal(true);
    const too = parse('2s');
    expect(!too.ok && too.message).to.equal(
      'spec.kubelet.cpuCFSQuotaPeriod: invalid configuration: cpuCFSQuotaPeriod (--cpu-cfs-quota-period) 2s must be between 1ms and 1sec, inclusive',
    );
    expect(parse('500us').ok).to.equal(false);
    const bad = parse('fast');
    expect(!bad.ok && bad.message).to.equal('spec.kubelet.cpuCFSQuotaPeriod: time: invalid duration "fast"');
  });

  it('names the field for a relative CRI endpoint', () => {
    const r = parseVirtualNodeSpec({ runtime: { type: 'cri', cri: { endpoint: 'unix://run/c.sock' } } });
    expect(r).to.deep.equal({
      ok: false,
      message: 'spec.runtime.cri.endpoint: must be unix:///absolute/path',
    });
  });

  it('keeps spec.runtime.cri.host, the Node whose containerd a cri VirtualNode drives', () => {
    const endpoint = 'unix:///run/containerd/containerd.sock';
    const r = parseVirtualNodeSpec({ runtime: { type: 'cri', cri: { endpoint, host: 'worker-1.example' } } });
    expect(r.ok).to.equal(true);
    if (!r.ok) return;
    expect(r.spec.runtime).to.deep.equal({
      type: 'cri',
      cri: {
        endpoint,
        host: 'worker-1.example',
        cgroupRoot: '/kubelet-operator',
        logRoot: '/var/log/pods',
        podNetwork: 'host',
      },
    });
    // Optional: unset, any replica may serve the node.
    const unset = parseVirtualNodeSpec({ runtime: { type: 'cri', cri: { endpoint } } });
    expect(unset.ok && unset.spec.runtime.type === 'cri' && unset.spec.runtime.cri.host).to.equal(undefined);
    for (const host of ['Worker-1', 'worker_1', '-worker', 'worker.', '', 'a'.repeat(254)])
      expect(
        parseVirtualNodeSpec({ runtime: { type: 'cri', cri: { endpoint, host } } }),
        host,
      ).to.deep.include({
        ok: false,
      });
    const bad = parseVirtualNodeSpec({ runtime: { type: 'cri', cri: { endpoint, host: 'Worker_1' } } });
    expect(bad).to.deep.equal({ ok: false, message: 'spec.runtime.cri.host: not a DNS subdomain' });
  });

  it('names the field for a negative capacity and a bad taint effect', () => {
    const r = parseVirtualNodeSpec({
      runtime: { type: 'sim' },
      capacity: { cpu: '-1' },
      taints: [{ key: 'a', effect: 'Sometimes' }],
    });
    expect(r.ok).to.equal(false);
    if (r.ok) return;
    expect(r.message).to.contain('spec.capacity.cpu');
    expect(r.message).to.contain('spec.taints[0].effect');
  });

  it('rejects unknown fields and a lease renewed slower than it lasts', () => {
    expect(parseVirtualNodeSpec({ runtime: { type: 'sim' }, bogus: 1 }).ok).to.equal(false);
    const r = parseVirtualNodeSpec({
      runtime: { type: 'sim' },
      heartbeat: { leaseDurationSeconds: 10, renewIntervalSeconds: 20 },
    });
    expect(r).to.deep.include({ ok: false });
    if (!r.ok) expect(r.message).to.contain('spec.heartbeat.renewIntervalSeconds');
  });
});
