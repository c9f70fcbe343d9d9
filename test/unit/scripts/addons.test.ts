import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import {
  ADDONS,
  COREDNS_IMAGE,
  KUBE_PROXY_IMAGE,
  renderAddons,
  type AddonOptions,
} from '../../../scripts/lib/addons.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  [k: string]: unknown;
}
interface Container {
  name: string;
  image: string;
  imagePullPolicy?: string;
  command?: string[];
  args?: string[];
  env?: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  securityContext?: Record<string, unknown>;
  livenessProbe?: { httpGet?: { path: string; port: number } };
  readinessProbe?: { httpGet?: { path: string; port: number } };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  hostNetwork?: boolean;
  nodeSelector?: Record<string, string>;
  dnsPolicy?: string;
  priorityClassName?: string;
  serviceAccountName?: string;
  tolerations?: Record<string, unknown>[];
  containers: Container[];
  volumes?: { name: string; hostPath?: { path: string; type?: string }; configMap?: { name: string } }[];
}

const OPTS: AddonOptions = {
  apiServer: 'https://10.201.0.1:6443',
  clusterCIDR: '10.201.128.0/17',
  dnsServiceIP: '10.0.0.10',
  clusterDomain: 'cluster.local',
};

function objects(yaml: string): Obj[] {
  const docs = parseAllDocuments(yaml);
  for (const d of docs) expect(d.errors, String(d.errors[0])).to.be.empty;
  return docs.map((d) => d.toJS() as Obj).filter((o) => o !== null);
}

function find(objs: Obj[], kind: string, name: string): Obj {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  expect(o, `${kind} ${name}`).to.not.equal(undefined);
  return o!;
}

function podSpec(o: Obj): PodSpec {
  return (o.spec as { template: { spec: PodSpec } }).template.spec;
}

describe('scripts/lib/addons: the kube-proxy and CoreDNS objects', () => {
  const objs = objects(renderAddons(OPTS));

  it('renders every object of both add-ons, with its kind and namespace', () => {
    expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).to.deep.equal([
      'ServiceAccount/kube-proxy',
      'ClusterRoleBinding/kubelet-operator:node-proxier',
      'ConfigMap/kube-proxy',
      'DaemonSet/kube-proxy',
      'ServiceAccount/coredns',
      'ClusterRole/system:coredns',
      'ClusterRoleBinding/system:coredns',
      'ConfigMap/coredns',
      'Deployment/coredns',
      'Service/kube-dns',
    ]);
    for (const o of objs) {
      expect(o.apiVersion, `${o.kind} ${o.metadata.name}`).to.be.a('string');
      const clusterScoped = o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding';
      expect(o.metadata.namespace, `${o.kind} ${o.metadata.name}`).to.equal(
        clusterScoped ? undefined : 'kube-system',
      );
    }
  });

  it('leaves no placeholder behind', () => {
    expect(renderAddons(OPTS)).to.not.match(/__[A-Z_]+__/);
  });

  it('renders one add-on alone when asked', () => {
    const kinds = objects(renderAddons(OPTS, ['coredns'])).map((o) => o.metadata.name);
    expect(kinds).to.include('kube-dns').and.not.include('kube-proxy');
    expect(ADDONS).to.deep.equal(['kube-proxy', 'coredns']);
  });

  it('binds kube-proxy to system:node-proxier and runs it from a config with the cluster CIDR', () => {
    const binding = find(objs, 'ClusterRoleBinding', 'kubelet-operator:node-proxier');
    expect(binding.roleRef).to.deep.include({ kind: 'ClusterRole', name: 'system:node-proxier' });
    expect(binding.subjects).to.deep.equal([
      { kind: 'ServiceAccount', name: 'kube-proxy', namespace: 'kube-system' },
    ]);

    const cm = find(objs, 'ConfigMap', 'kube-proxy');
    const config = parse(cm.data!['config.conf']!) as Record<string, unknown>;
    expect(config).to.deep.include({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clusterCIDR: '10.201.128.0/17',
    });
    expect(config.clientConnection).to.deep.equal({ kubeconfig: '/var/lib/kube-proxy/kubeconfig.conf' });
    // Nothing global is written: no conntrack table size, no TCP timeouts.
    expect(config.conntrack).to.deep.equal({
      maxPerCore: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
    });
    expect(config.healthzBindAddress).to.match(/^[0-9.]+:10256$/);
    expect(config.metricsBindAddress).to.match(/^[0-9.]+:10249$/);
  });

  it("gives kube-proxy a kubeconfig with the API server's URL and the pod's own token and CA", () => {
    const cm = find(objs, 'ConfigMap', 'kube-proxy');
    const kc = parse(cm.data!['kubeconfig.conf']!) as {
      clusters: { cluster: Record<string, string> }[];
      users: { user: Record<string, string> }[];
      'current-context': string;
    };
    expect(kc.clusters[0]!.cluster).to.deep.equal({
      server: 'https://10.201.0.1:6443',
      'certificate-authority': '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
    });
    expect(kc.users[0]!.user).to.deep.equal({
      tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
    });
    expect(kc['current-context']).to.equal('default');
  });

  it('runs kube-proxy on every node: host network, privileged, node-critical, its node name from the API', () => {
    const spec = podSpec(find(objs, 'DaemonSet', 'kube-proxy'));
    expect(spec.hostNetwork).to.equal(true);
    expect(spec.priorityClassName).to.equal('system-node-critical');
    expect(spec.serviceAccountName).to.equal('kube-proxy');
    expect(spec.tolerations).to.deep.equal([{ operator: 'Exists' }]);
    const c = spec.containers[0]!;
    expect(c.image).to.equal(KUBE_PROXY_IMAGE);
    expect(c.imagePullPolicy).to.equal('IfNotPresent');
    expect(c.securityContext).to.deep.equal({ privileged: true });
    expect(c.command).to.deep.equal([
      '/usr/local/bin/kube-proxy',
      '--config=/var/lib/kube-proxy/config.conf',
      '--hostname-override=$(NODE_NAME)',
    ]);
    const env = Object.fromEntries(c.env!.map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath]));
    expect(env).to.deep.equal({ NODE_NAME: 'spec.nodeName' });
    const lock = spec.volumes!.find((v) => v.name === 'xtables-lock')!;
    expect(lock.hostPath).to.deep.equal({ path: '/run/xtables.lock', type: 'FileOrCreate' });
    expect(c.volumeMounts!.map((m) => m.mountPath)).to.include('/run/xtables.lock');
    // This machine has no /lib/modules.
    expect(spec.volumes!.map((v) => v.hostPath?.path)).to.not.include('/lib/modules');
  });

  it("binds kube-proxy's health and metrics servers as kubeadm does: each node has a namespace of its own", () => {
    const config = parse(find(objs, 'ConfigMap', 'kube-proxy').data!['config.conf']!) as Record<
      string,
      unknown
    >;
    expect(config).to.deep.include({
      healthzBindAddress: '0.0.0.0:10256',
      metricsBindAddress: '127.0.0.1:10249',
      clusterCIDR: '10.201.128.0/17',
      mode: 'iptables',
    });
  });

  it('serves the cluster domain from CoreDNS and forwards nothing', () => {
    const corefile = find(objs, 'ConfigMap', 'coredns').data!.Corefile!;
    expect(corefile).to.match(/^cluster\.local:53 in-addr\.arpa:53 ip6\.arpa:53 \{$/m);
    expect(corefile).to.match(/^\s+kubernetes cluster\.local in-addr\.arpa ip6\.arpa \{$/m);
    expect(corefile).to.match(/^\s+pods insecure$/m);
    expect(corefile).to.match(/^\s+fallthrough in-addr\.arpa ip6\.arpa$/m);
    expect(corefile).to.match(/^\s+health :8080 \{\s+lameduck \d+s\s+\}$/m);
    for (const plugin of [
      'errors',
      'ready :8181',
      'prometheus :9153',
      'cache 30',
      'loop',
      'reload',
      'loadbalance',
    ]) {
      expect(corefile).to.match(new RegExp(`^\\s+${plugin}$`, 'm'));
    }
    expect(corefile).to.not.match(/\bforward\b|\bproxy\b/);

    const other = objects(renderAddons({ ...OPTS, clusterDomain: 'k8s.example' }));
    const otherCorefile = find(other, 'ConfigMap', 'coredns').data!.Corefile!;
    expect(otherCorefile)
      .to.match(/^k8s\.example:53 /m)
      .and.match(/kubernetes k8s\.example in-addr/);
  });

  it('lets CoreDNS read what its kubernetes plugin watches', () => {
    const role = find(objs, 'ClusterRole', 'system:coredns');
    const rules = role.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    const granted = rules.flatMap((r) =>
      r.resources.map((res) => `${r.apiGroups[0]}/${res}:${r.verbs.join(',')}`),
    );
    expect(granted).to.have.members([
      '/endpoints:list,watch',
      '/services:list,watch',
      '/pods:list,watch',
      '/namespaces:list,watch',
      'discovery.k8s.io/endpointslices:list,watch',
    ]);
    const binding = find(objs, 'ClusterRoleBinding', 'system:coredns');
    expect(binding.roleRef).to.deep.include({ kind: 'ClusterRole', name: 'system:coredns' });
    expect(binding.subjects).to.deep.equal([
      { kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' },
    ]);
  });

  it('runs two CoreDNS replicas with probes, a read-only root and only NET_BIND_SERVICE', () => {
    const deploy = find(objs, 'Deployment', 'coredns');
    expect(deploy.spec!.replicas).to.equal(2);
    expect((deploy.spec!.selector as { matchLabels: unknown }).matchLabels).to.deep.equal({
      'k8s-app': 'kube-dns',
    });
    const spec = podSpec(deploy);
    expect(spec.priorityClassName).to.equal('system-cluster-critical');
    expect(spec.dnsPolicy).to.equal('Default');
    expect(spec.serviceAccountName).to.equal('coredns');
    const c = spec.containers[0]!;
    expect(c.image).to.equal(COREDNS_IMAGE);
    expect(c.imagePullPolicy).to.equal('IfNotPresent');
    expect(c.livenessProbe!.httpGet).to.deep.include({ path: '/health', port: 8080 });
    expect(c.readinessProbe!.httpGet).to.deep.include({ path: '/ready', port: 8181 });
    expect(c.securityContext).to.deep.include({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    expect(c.securityContext!.capabilities).to.deep.equal({ add: ['NET_BIND_SERVICE'], drop: ['ALL'] });
    expect(c.ports!.map((p) => `${p.name} ${p.containerPort}/${p.protocol}`)).to.deep.equal([
      'dns 53/UDP',
      'dns-tcp 53/TCP',
      'metrics 9153/TCP',
    ]);
  });

  it('puts the kube-dns Service on the DNS service IP', () => {
    const svc = find(objs, 'Service', 'kube-dns');
    expect(svc.metadata.labels).to.deep.include({ 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'CoreDNS' });
    const spec = svc.spec as { clusterIP: string; selector: unknown; ports: Record<string, unknown>[] };
    expect(spec.clusterIP).to.equal('10.0.0.10');
    expect(spec.selector).to.deep.equal({ 'k8s-app': 'kube-dns' });
    expect(spec.ports.map((p) => `${p.name} ${p.port}/${p.protocol}`)).to.deep.equal([
      'dns 53/UDP',
      'dns-tcp 53/TCP',
      'metrics 9153/TCP',
    ]);
    const other = objects(renderAddons({ ...OPTS, dnsServiceIP: '10.96.0.10' }));
    expect((find(other, 'Service', 'kube-dns').spec as { clusterIP: string }).clusterIP).to.equal(
      '10.96.0.10',
    );
  });

  it('places kube-proxy and CoreDNS on the nodes a cluster names, tolerating their taints', () => {
    const toleration = {
      key: 'kubelet-operator.dev/runtime',
      operator: 'Equal',
      value: 'cri',
      effect: 'NoSchedule',
    };
    const docs = objects(
      renderAddons({
        ...OPTS,
        placement: { nodeSelector: { 'kubelet-operator.dev/runtime': 'cri' }, tolerations: [toleration] },
      }),
    );
    const spec = podSpec(find(docs, 'Deployment', 'coredns'));
    expect(spec.nodeSelector).to.deep.include({ 'kubelet-operator.dev/runtime': 'cri' });
    expect(spec.tolerations).to.deep.include(toleration);
    const proxy = podSpec(find(docs, 'DaemonSet', 'kube-proxy'));
    expect(proxy.nodeSelector).to.deep.include({ 'kubelet-operator.dev/runtime': 'cri' });
    expect(proxy.tolerations).to.deep.include({ operator: 'Exists' });
    // Everything else as without it.
    expect(docs.map((d) => d.kind)).to.deep.equal(objs.map((d) => d.kind));
    expect(proxy.containers).to.deep.equal(podSpec(find(objs, 'DaemonSet', 'kube-proxy')).containers);
  });

  it('refuses options that are not what they must be', () => {
    const bad: [Partial<AddonOptions>, RegExp][] = [
      [{ apiServer: 'http://10.201.0.1:6443' }, /apiServer/],
      [{ apiServer: 'https://10.201.0.1:6443/api' }, /apiServer/],
      [{ apiServer: 'not a url' }, /apiServer/],
      [{ clusterCIDR: '10.201.128.0' }, /clusterCIDR/],
      [{ clusterCIDR: '10.201.128.0/33' }, /clusterCIDR/],
      [{ clusterCIDR: '10.201.128.0/17\nmode: ipvs' }, /clusterCIDR/],
      [{ dnsServiceIP: '10.0.0' }, /dnsServiceIP/],
      [{ clusterDomain: 'cluster.local.' }, /clusterDomain/],
      [{ clusterDomain: 'Cluster Local' }, /clusterDomain/],
    ];
    for (const [override, err] of bad) {
      expect(() => renderAddons({ ...OPTS, ...override }), JSON.stringify(override)).to.throw(err);
    }
    // Dual-stack pod networks and IPv6 addresses are fine.
    const v6 = objects(
      renderAddons({
        apiServer: 'https://[fd00::1]:6443/',
        clusterCIDR: '10.201.128.0/17,fd00:10:244::/56',
        dnsServiceIP: 'fd00:10:96::a',
        clusterDomain: 'cluster.local',
      }),
    );
    const kc = parse(find(v6, 'ConfigMap', 'kube-proxy').data!['kubeconfig.conf']!) as {
      clusters: { cluster: { server: string } }[];
    };
    expect(kc.clusters[0]!.cluster.server).to.equal('https://[fd00::1]:6443');
  });

  it('names the images that scripts/cluster-addons.sh builds', () => {
    const out = execFileSync('bash', [path.join(REPO_ROOT, 'scripts/cluster-addons.sh'), 'images'], {
      env: { ...process.env, KUBE_VERSION: '', COREDNS_VERSION: '' },
    });
    expect(out.toString().trim().split('\n')).to.deep.equal([KUBE_PROXY_IMAGE, COREDNS_IMAGE]);
    // And the pin the control plane is built from.
    const pin = /KUBE_VERSION="\$\{KUBE_VERSION:-(v[^}]+)\}"/.exec(
      readFileSync(path.join(REPO_ROOT, 'scripts/kube-binaries.sh'), 'utf8'),
    );
    expect(KUBE_PROXY_IMAGE).to.equal(`registry.k8s.io/kube-proxy:${pin![1]}`);
  });
});
