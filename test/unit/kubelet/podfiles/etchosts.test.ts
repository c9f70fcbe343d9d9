import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import {
  ETC_HOSTS_MODE,
  containerGetsHostsFile,
  etcHostsPath,
  hostsEntriesFromHostAliases,
  makeHostsMount,
  managedHostsFileContent,
  nodeHostsFileContent,
  shouldMountHostsFile,
} from '../../../../src/kubelet/podfiles/etchosts.js';
import { KindError } from '../../../../src/util/errors.js';
import { LOCAL_HOSTS_ENTRIES } from './podfiles-fixtures.js';

const LOCAL = '# Kubernetes-managed hosts file.\n' + LOCAL_HOSTS_ENTRIES;

function pod(spec: Partial<Pod['spec']> = {}): Pod {
  return { metadata: { name: 'web-0', namespace: 'prod', uid: 'u1' }, spec: { containers: [], ...spec } };
}

const app: Container = { name: 'app' };

describe('etc-hosts: content', () => {
  it('writes the header, the local entries and one line per pod IP (no domain)', () => {
    expect(managedHostsFileContent(['10.0.0.5', 'fd00::5'], 'web-0', '', undefined)).to.equal(
      LOCAL + '10.0.0.5\tweb-0\n' + 'fd00::5\tweb-0\n',
    );
  });

  it('names the FQDN first when the pod has a domain', () => {
    expect(managedHostsFileContent(['10.0.0.5'], 'web-0', 'db.prod.svc.cluster.local', [])).to.equal(
      LOCAL + '10.0.0.5\tweb-0.db.prod.svc.cluster.local\tweb-0\n',
    );
  });

  it('appends the HostAliases section: blank line, comment, IP and tab-separated names', () => {
    const aliases = [
      { ip: '123.45.67.89', hostnames: ['foo', 'bar', 'baz'] },
      { ip: '456.78.90.123', hostnames: ['park', 'doo', 'boo'] },
    ];
    expect(managedHostsFileContent(['203.0.113.1'], 'podFoo', '', aliases)).to.equal(
      LOCAL +
        '203.0.113.1\tpodFoo\n' +
        '\n# Entries added by HostAliases.\n' +
        '123.45.67.89\tfoo\tbar\tbaz\n' +
        '456.78.90.123\tpark\tdoo\tboo\n',
    );
    expect(hostsEntriesFromHostAliases([])).to.equal('');
    expect(hostsEntriesFromHostAliases([{ ip: '1.2.3.4' }])).to.equal(
      '\n# Entries added by HostAliases.\n1.2.3.4\t\n',
    );
  });

  it("takes a host-network pod's file from the node, under its own header, adding no newline", () => {
    const node = '127.0.0.1\tlocalhost\n192.168.1.10\tnode-a';
    expect(nodeHostsFileContent(node, undefined)).to.equal(
      '# Kubernetes-managed hosts file (host network).\n' + node,
    );
    expect(nodeHostsFileContent(node, [{ ip: '10.1.1.1', hostnames: ['x'] }])).to.equal(
      '# Kubernetes-managed hosts file (host network).\n' +
        node +
        '\n# Entries added by HostAliases.\n10.1.1.1\tx\n',
    );
  });
});

describe('etc-hosts: who gets it', () => {
  it('a pod-network pod only once it has an IP; a host-network pod always', () => {
    expect(shouldMountHostsFile(pod(), [])).to.equal(false);
    expect(shouldMountHostsFile(pod(), ['10.0.0.5'])).to.equal(true);
    expect(shouldMountHostsFile(pod({ hostNetwork: true }), [])).to.equal(true);
  });

  it('not a container that mounts something at /etc/hosts itself (exact path)', () => {
    const own = { name: 'app', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] };
    expect(containerGetsHostsFile(pod(), own, ['10.0.0.5'])).to.equal(false);
    const near = { name: 'app', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts.d' }] };
    expect(containerGetsHostsFile(pod(), near, ['10.0.0.5'])).to.equal(true);
  });
});

describe('etc-hosts: makeHostsMount', () => {
  it('plans <podDir>/etc-hosts, mode 0644, mounted read-write at /etc/hosts', () => {
    const plan = makeHostsMount(pod({ hostAliases: [{ ip: '1.1.1.1', hostnames: ['one'] }] }), app, {
      podDir: '/var/lib/kubelet/pods/u1/',
      podIPs: ['10.0.0.5'],
      hostname: 'web-0',
      hostDomain: '',
    });
    expect(plan).to.deep.equal({
      hostPath: '/var/lib/kubelet/pods/u1/etc-hosts',
      content: LOCAL + '10.0.0.5\tweb-0\n\n# Entries added by HostAliases.\n1.1.1.1\tone\n',
      mode: ETC_HOSTS_MODE,
      mount: { containerPath: '/etc/hosts', hostPath: '/var/lib/kubelet/pods/u1/etc-hosts', readonly: false },
    });
    expect(ETC_HOSTS_MODE).to.equal(0o644);
    expect(etcHostsPath('/p')).to.equal('/p/etc-hosts');
  });

  it('plans nothing before the pod has an IP', () => {
    const inputs = { podDir: '/p', podIPs: [], hostname: 'web-0', hostDomain: '' };
    expect(makeHostsMount(pod(), app, inputs)).to.equal(undefined);
  });

  it("uses the node's file for a host-network pod, and needs it", () => {
    const inputs = { podDir: '/p', podIPs: ['192.168.1.10'], hostname: 'node-a', hostDomain: '' };
    const plan = makeHostsMount(pod({ hostNetwork: true }), app, { ...inputs, nodeHostsFile: 'x\n' });
    expect(plan?.content).to.equal('# Kubernetes-managed hosts file (host network).\nx\n');
    expect(() => makeHostsMount(pod({ hostNetwork: true }), app, inputs)).to.throw(KindError);
  });
});
