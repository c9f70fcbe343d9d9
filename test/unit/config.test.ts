import { expect } from 'chai';
import { isLabelSelector, loadConfig } from '../../src/config.js';

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

  it('reads the event client limits (kubelet eventRecordQPS/eventBurst defaults) and refuses non-positive ones', () => {
    const d = loadConfig([], {});
    expect(d.ok && { qps: d.config.eventQps, burst: d.config.eventBurst }).to.deep.equal({
      qps: 50,
      burst: 100,
    });
    const set = loadConfig(['--event-qps=5.5', '--event-burst', '20'], {});
    expect(set.ok && { qps: set.config.eventQps, burst: set.config.eventBurst }).to.deep.equal({
      qps: 5.5,
      burst: 20,
    });
    const env = loadConfig([], { KO_EVENT_QPS: '7', KO_EVENT_BURST: '9' });
    expect(env.ok && [env.config.eventQps, env.config.eventBurst]).to.deep.equal([7, 9]);
    for (const [flag, value] of [
      ['event-qps', '0'],
      ['event-qps', '-1'],
      ['event-burst', '0'],
      ['event-burst', '1.5'],
    ] as const) {
      const r = loadConfig([`--${flag}=${value}`], {});
      expect(r.ok, `${flag}=${value}`).to.equal(false);
      if (!r.ok) expect(r.message).to.match(new RegExp(`^--${flag}: `));
    }
  });

  it('reads the main connection pool size (default 64) and refuses anything but a whole positive number', () => {
    const d = loadConfig([], {});
    expect(d.ok && d.config.kubeApiConnections).to.equal(64);
    const set = loadConfig(['--kube-api-connections=8'], {});
    expect(set.ok && set.config.kubeApiConnections).to.equal(8);
    const env = loadConfig([], { KO_KUBE_API_CONNECTIONS: '128' });
    expect(env.ok && env.config.kubeApiConnections).to.equal(128);
    for (const value of ['0', '-4', '2.5', 'many']) {
      const r = loadConfig([`--kube-api-connections=${value}`], {});
      expect(r.ok, value).to.equal(false);
      if (!r.ok) expect(r.message).to.match(/^--kube-api-connections: /);
    }
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

  it('reads the node API serving-certificate mode, and refuses csr together with certificate files', () => {
    const files = loadConfig([], {});
    expect(files.ok && files.config.nodeApiServingCert).to.equal('files');
    const csr = loadConfig(['--node-api-serving-cert=csr'], {});
    expect(csr.ok && csr.config.nodeApiServingCert).to.equal('csr');
    expect(loadConfig(['--node-api-serving-cert=self'], {})).to.deep.include({ ok: false });
    const bad = loadConfig(['--node-api-serving-cert=self'], {});
    if (!bad.ok) expect(bad.message).to.match(/^--node-api-serving-cert: /);
    expect(loadConfig(['--node-api-serving-cert=csr', '--node-api-cert-file=/c.pem'], {})).to.deep.equal({
      ok: false,
      message: '--node-api-serving-cert=csr: leave --node-api-cert-file and --node-api-key-file empty',
    });
  });

  it('rejects a virtual node selector that is not a label selector, and a default IP that is not an IP', () => {
    expect(loadConfig(['--virtual-node-selector', 'a b c!!'], {})).to.deep.equal({
      ok: false,
      message: '--virtual-node-selector: not a label selector',
    });
    expect(loadConfig(['--default-internal-ip=node-1'], {})).to.deep.equal({
      ok: false,
      message: '--default-internal-ip: not an IP address',
    });
    // One word for an acronym, in the flag and in its environment form.
    expect(loadConfig([], { KO_DEFAULT_INTERNAL_IP: '10.0.0.7' })).to.deep.nested.include({
      'config.defaultInternalIP': '10.0.0.7',
    });
    const ok = loadConfig(
      ['--virtual-node-selector=shard in (a, b),!legacy', '--default-internal-ip=fd00::1'],
      {},
    );
    expect(ok.ok).to.equal(true);
  });

  it('accepts label selectors as the API server does (checked against kube-apiserver)', () => {
    const valid = ['', 'a', '!a', 'a=b', 'a==b', 'a!=b', 'a=', ' a = b ', 'a in (x,y)', 'a notin(x)', 'a>3'];
    const more = ['a=b,c!=d, e in (f, g)', 'example.com/zone=z1', 'a.b_c=d-e', 'a in (x),b'];
    for (const s of [...valid, ...more]) expect(isLabelSelector(s), s).to.equal(true);
    const invalid = [
      'a b c!!',
      'a,',
      ',a',
      'Example.com/x',
      'a/b/c',
      'a=b=c',
      'a in (x',
      'a=(x)',
      '-a',
      'a-',
    ];
    const worse = ['x'.repeat(64), `a=${'v'.repeat(64)}`, '!a=b', 'a>b', 'a < -1', 'ain (x)'];
    for (const s of [...invalid, ...worse]) expect(isLabelSelector(s), s).to.equal(false);
  });
});
