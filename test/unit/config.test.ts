import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('uses defaults, env, then flags', () => {
    const r = loadConfig(['--kube-api-qps=20', '--http-port', '9090', '--unlimited-qps'], {
      KO_KUBE_API_BURST: '40',
      KUBECONFIG: '/tmp/kc',
      POD_IP: '10.1.2.3',
    });
    expect(r.ok).to.equal(true);
    if (!r.ok) return;
    expect(r.config).to.include({
      kubeApiQps: 20,
      kubeApiBurst: 40,
      httpPort: 9090,
      unlimitedQps: true,
      kubeconfig: '/tmp/kc',
      defaultInternalIP: '10.1.2.3',
      nodeApiPort: 10250,
    });
  });

  it('names the flag of a bad value or an unknown flag', () => {
    expect(loadConfig(['--http-port=70000'], {})).to.deep.include({ ok: false });
    const bad = loadConfig(['--http-port=70000'], {});
    if (!bad.ok) expect(bad.message).to.match(/^--http-port: /);
    expect(loadConfig(['--nope'], {})).to.deep.equal({ ok: false, message: 'unknown flag --nope' });
    expect(loadConfig(['--log-level'], {})).to.deep.equal({
      ok: false,
      message: 'flag --log-level needs a value',
    });
  });
});
