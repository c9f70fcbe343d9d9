import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import {
  checkLimitsForResolvConf,
  getPodDNS,
  mergeDNSOptions,
  parseResolvConf,
  podDNSType,
  type DNSConfigurerOptions,
} from '../../../../src/kubelet/podfiles/dns.js';

const HOST_RESOLV = parseResolvConf(
  '# generated\nnameserver 192.168.1.1\nnameserver 192.168.1.2\nsearch corp.example. lab.example\noptions rotate timeout:2\n',
);

const node: DNSConfigurerOptions = {
  clusterDNS: ['10.96.0.10'],
  clusterDomain: 'cluster.local',
  hostResolvConf: HOST_RESOLV,
};

function pod(spec: Partial<Pod['spec']> = {}): Pod {
  return { metadata: { name: 'web', namespace: 'prod', uid: 'u1' }, spec: { containers: [], ...spec } };
}

describe('dns: parseResolvConf', () => {
  it('accumulates nameservers; the last search and options lines win; trailing dots trimmed', () => {
    const conf = parseResolvConf(
      [
        'nameserver 1.1.1.1 9.9.9.9',
        '  # comment',
        'search a.example',
        'domain ignored.example',
        'search b.example. c.example',
        'options ndots:2',
        '\toptions  edns0   attempts:3 ',
        'nameserver 2001:db8::1',
        ';nameserver 8.8.8.8',
      ].join('\n'),
    );
    expect(conf).to.deep.equal({
      servers: ['1.1.1.1', '2001:db8::1'],
      searches: ['b.example', 'c.example'],
      options: ['edns0', 'attempts:3'],
    });
  });

  it('reports an empty nameserver line as upstream words it, several aggregated', () => {
    expect(parseResolvConf('nameserver\n').error).to.equal('nameserver list is empty ');
    expect(parseResolvConf('nameserver\nnameserver \n').error).to.equal(
      '[nameserver list is empty , nameserver list is empty ]',
    );
  });
});

describe('dns: policy', () => {
  it('maps dnsPolicy and hostNetwork to cluster, host or none', () => {
    expect(podDNSType(pod())).to.equal('cluster');
    expect(podDNSType(pod({ dnsPolicy: 'ClusterFirst', hostNetwork: true }))).to.equal('host');
    expect(podDNSType(pod({ dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true }))).to.equal('cluster');
    expect(podDNSType(pod({ dnsPolicy: 'Default' }))).to.equal('host');
    expect(podDNSType(pod({ dnsPolicy: 'None' }))).to.equal('none');
    expect(podDNSType(pod({ dnsPolicy: 'Bogus' as never }))).to.equal('cluster');
  });
});

/** The search path of a ClusterFirst pod in `prod`: the cluster's three domains, then the host's searches. */
const CLUSTER_THEN_HOST_SEARCHES = [
  'prod.svc.cluster.local',
  'svc.cluster.local',
  'cluster.local',
  'corp.example',
  'lab.example',
];

describe('dns: GetPodDNS', () => {
  it('ClusterFirst: cluster servers, the cluster search path before the host searches, ndots:5', () => {
    expect(getPodDNS(pod(), node)).to.deep.equal({
      config: {
        servers: ['10.96.0.10'],
        searches: CLUSTER_THEN_HOST_SEARCHES,
        options: ['ndots:5'],
      },
      events: [],
    });
  });

  it('ClusterFirst dedupes host searches already in the cluster path, and uses only host searches without a domain', () => {
    const host = { servers: [], searches: ['cluster.local', 'x.example'], options: [] };
    expect(getPodDNS(pod(), { ...node, hostResolvConf: host }).config.searches).to.deep.equal([
      'prod.svc.cluster.local',
      'svc.cluster.local',
      'cluster.local',
      'x.example',
    ]);
    expect(getPodDNS(pod(), { ...node, clusterDomain: '' }).config.searches).to.deep.equal([
      'corp.example',
      'lab.example',
    ]);
  });

  it('ClusterFirst on the host network behaves as Default; ClusterFirstWithHostNet does not', () => {
    const hostConfig = {
      servers: ['192.168.1.1', '192.168.1.2'],
      searches: ['corp.example', 'lab.example'],
      options: ['rotate', 'timeout:2'],
    };
    expect(getPodDNS(pod({ hostNetwork: true }), node).config).to.deep.equal(hostConfig);
    expect(getPodDNS(pod({ dnsPolicy: 'Default' }), node).config).to.deep.equal(hostConfig);
    expect(
      getPodDNS(pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), node).config.servers,
    ).to.deep.equal(['10.96.0.10']);
  });

  it('Default without --resolv-conf: a loopback nameserver per node IP family, search "."', () => {
    const bare = { clusterDNS: [], clusterDomain: 'cluster.local' };
    expect(
      getPodDNS(pod({ dnsPolicy: 'Default' }), { ...bare, nodeIPs: ['192.168.1.10', 'fd00::10'] }).config,
    ).to.deep.equal({
      servers: ['127.0.0.1', '::1'],
      searches: ['.'],
      options: [],
    });
    expect(getPodDNS(pod({ dnsPolicy: 'Default' }), bare).config.servers).to.deep.equal(['127.0.0.1']);
  });

  it('None: only what the pod says', () => {
    const p = pod({
      dnsPolicy: 'None',
      dnsConfig: {
        nameservers: ['1.1.1.1'],
        searches: ['my.example'],
        options: [{ name: 'ndots', value: '2' }],
      },
    });
    expect(getPodDNS(p, node).config).to.deep.equal({
      servers: ['1.1.1.1'],
      searches: ['my.example'],
      options: ['ndots:2'],
    });
    expect(getPodDNS(pod({ dnsPolicy: 'None' }), node).config).to.deep.equal({
      servers: [],
      searches: [],
      options: [],
    });
  });

  it("appends the pod's dnsConfig: servers and searches once each, options merged by name", () => {
    const p = pod({
      dnsConfig: {
        nameservers: ['10.96.0.10', '8.8.8.8'],
        searches: ['svc.cluster.local', 'extra.example'],
        options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
      },
    });
    expect(getPodDNS(p, node).config).to.deep.equal({
      servers: ['10.96.0.10', '8.8.8.8'],
      searches: [...CLUSTER_THEN_HOST_SEARCHES, 'extra.example'],
      options: ['ndots:2', 'edns0'],
    });
    expect(mergeDNSOptions(['a:1', 'b', 'c:3'], [{ name: 'b', value: '2' }, { name: 'c' }])).to.deep.equal([
      'a:1',
      'b:2',
      'c',
    ]);
  });

  it('without --cluster-dns a cluster pod falls back to Default, with MissingClusterDNS on node and pod', () => {
    const out = getPodDNS(pod(), { ...node, clusterDNS: [] });
    expect(out.config.servers).to.deep.equal(['192.168.1.1', '192.168.1.2']);
    const msg =
      'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. ' +
      'Falling back to "Default" policy.';
    expect(out.events).to.deep.equal([
      { object: 'node', type: 'Warning', reason: 'MissingClusterDNS', message: msg },
      { object: 'pod', type: 'Warning', reason: 'MissingClusterDNS', message: `pod: "web_prod(u1)". ${msg}` },
    ]);
    expect(getPodDNS(pod({ dnsPolicy: 'Default' }), { ...node, clusterDNS: [] }).events).to.deep.equal([]);
  });
});

describe('dns: resolver limits', () => {
  it('keeps three nameservers and says which', () => {
    const p = pod({
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'] },
    });
    const out = getPodDNS(p, node);
    expect(out.config.servers).to.deep.equal(['1.1.1.1', '2.2.2.2', '3.3.3.3']);
    expect(out.events).to.deep.equal([
      {
        object: 'pod',
        type: 'Warning',
        reason: 'DNSConfigForming',
        message:
          'Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ' +
          '1.1.1.1 2.2.2.2 3.3.3.3',
      },
    ]);
  });

  const searchEvent = (line: string[]) => ({
    object: 'pod',
    type: 'Warning',
    reason: 'DNSConfigForming',
    message:
      'Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ' +
      line.join(' '),
  });

  it('keeps 32 search paths', () => {
    const searches = Array.from({ length: 40 }, (_, i) => `s${i}.example`);
    const out = getPodDNS(pod({ dnsPolicy: 'None', dnsConfig: { searches } }), node);
    expect(out.config.searches).to.deep.equal(searches.slice(0, 32));
    expect(out.events).to.deep.equal([searchEvent(searches.slice(0, 32))]);
  });

  it('drops a path over 253 characters', () => {
    const long = `${'a'.repeat(250)}.com`; // 254
    const ok = `${'b'.repeat(249)}.com`; // 253
    const out = getPodDNS(pod({ dnsPolicy: 'None', dnsConfig: { searches: ['x.example', long, ok] } }), node);
    expect(out.config.searches).to.deep.equal(['x.example', ok]);
    expect(out.events).to.deep.equal([searchEvent(['x.example', ok])]);
  });

  it('cuts whole paths from the end until the line fits 2048 characters', () => {
    const p200 = (c: string) => `${c.repeat(196)}.com`; // 200 characters each
    const searches = 'abcdefghijk'.split('').map(p200); // 11 x 200 + 10 spaces = 2210
    const out = getPodDNS(pod({ dnsPolicy: 'None', dnsConfig: { searches } }), node);
    // 10 paths: 2000 + 9 = 2009 fits.
    expect(out.config.searches).to.deep.equal(searches.slice(0, 10));
    expect(out.events).to.have.length(1);
    const exact = [
      ...Array.from({ length: 10 }, (_, i) => p200(String.fromCharCode(97 + i))),
      'x'.repeat(38),
    ];
    // 2000 + 38 + 10 spaces = 2048: fits exactly, no event.
    const fits = getPodDNS(pod({ dnsPolicy: 'None', dnsConfig: { searches: exact } }), node);
    expect(fits.config.searches).to.deep.equal(exact);
    expect(fits.events).to.deep.equal([]);
  });

  it("warns at start about a node resolv.conf that would crowd out the cluster's paths", () => {
    const conf = (n: number) => ({
      servers: [],
      searches: Array.from({ length: n }, (_, i) => `d${i}`),
      options: [],
    });
    expect(checkLimitsForResolvConf('/etc/resolv.conf', conf(29), 'cluster.local')).to.equal(undefined);
    expect(checkLimitsForResolvConf('/etc/resolv.conf', conf(30), 'cluster.local')?.message).to.equal(
      "Resolv.conf file '/etc/resolv.conf' contains search line consisting of more than 29 domains!",
    );
    expect(checkLimitsForResolvConf('/etc/resolv.conf', conf(30), '')).to.equal(undefined);
    expect(
      checkLimitsForResolvConf('/r', { servers: [], searches: ['a'.repeat(254)], options: [] }, 'c')?.message,
    ).to.equal('Resolv.conf file "/r" contains a search path which length is more than allowed 253 chars!');
    const wide = { servers: [], searches: Array.from({ length: 10 }, () => 'w'.repeat(250)), options: [] };
    expect(checkLimitsForResolvConf('/r', wide, 'c')?.message).to.equal(
      "Resolv.conf file '/r' contains search line which length is more than allowed 2048 chars!",
    );
    expect(checkLimitsForResolvConf('/r', parseResolvConf('nameserver\n'), 'c')).to.deep.equal({
      object: 'node',
      type: 'Warning',
      reason: 'CheckLimitsForResolvConf',
      message: 'nameserver list is empty ',
    });
  });
});
