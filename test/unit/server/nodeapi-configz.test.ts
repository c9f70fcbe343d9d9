/**
 * /configz and /flagz content: a node's effective KubeletConfiguration (kubelet.config.k8s.io/v1beta1 under
 * the name "kubeletconfig", as component-base's configz writes it) and its flags, from the node's settings
 * (src/app/nodeconfigz.ts) and the node API server's.
 */
import { expect } from 'chai';
import { parseVirtualNodeSpec, type VirtualNodeSpec } from '../../../src/api/virtualnode.js';
import { loadConfig } from '../../../src/config.js';
import { nodeKubeletSettings } from '../../../src/app/nodeconfigz.js';
import {
  configzBody,
  kubeletConfiguration,
  kubeletFlags,
  operatorFlagValues,
  stringSliceFlag,
  type NodeApiSettings,
} from '../../../src/server/nodeapi/configz.js';

function spec(raw: unknown): VirtualNodeSpec {
  const r = parseVirtualNodeSpec(raw);
  if (!r.ok) throw new Error(r.message);
  return r.spec;
}

const CRI = spec({
  runtime: { type: 'cri', cri: { endpoint: 'unix:///run/containerd/containerd.sock' } },
  capacity: { pods: 50 },
  labels: { team: 'a', 'zone.example.com/rack': 'r1' },
  taints: [
    { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
    { key: 'spot', effect: 'NoExecute' },
  ],
  kubelet: { clusterDNS: ['10.96.0.10'], clusterDomain: 'example.internal' },
  heartbeat: {
    leaseDurationSeconds: 60,
    statusUpdateFrequencySeconds: 20,
    statusReportFrequencySeconds: 600,
  },
});
const SIM = spec({ runtime: { type: 'sim' } });

const criNode = nodeKubeletSettings({
  spec: CRI,
  nodeName: 'cri-1',
  nodeIP: '10.0.0.7',
  settings: {
    podNetwork: 'host',
    podLogsRoot: '/var/log/pods',
    cgroupRoot: '/kubelet-operator',
    cpuCFSQuotaPeriodUs: 50_000,
    allowedUnsafeSysctls: ['net.core.somaxconn', 'kernel.msg*'],
    crashLoopBackOff: {
      featureGates: { KubeletCrashLoopBackOffMax: true },
      maxContainerRestartPeriodSeconds: 30,
    },
  },
  env: { clusterDNS: ['10.96.0.10'], clusterDomain: 'example.internal' },
  resolvConf: '/etc/resolv.conf',
});
const SIM_SETTINGS = {
  podNetwork: 'cni',
  podLogsRoot: '/var/log/pods',
  cgroupRoot: '/kubelet-operator',
} as const;
type NodeInput = Parameters<typeof nodeKubeletSettings>[0];
/** Settings of sim node sim-1 at 10.0.0.8, with these kubelet settings and extra fields on top. */
const simNodeWith = (settings: Partial<NodeInput['settings']> = {}, extra: Partial<NodeInput> = {}) =>
  nodeKubeletSettings({
    spec: SIM,
    nodeName: 'sim-1',
    nodeIP: '10.0.0.8',
    settings: { ...SIM_SETTINGS, ...settings },
    env: {},
    resolvConf: '',
    ...extra,
  });
const simNode = simNodeWith();

const FILES: NodeApiSettings = {
  address: '0.0.0.0',
  port: 10250,
  clientCAFile: '/etc/kubelet-operator/client-ca.crt',
  serving: {
    mode: 'files',
    certFile: '/etc/kubelet-operator/tls.crt',
    keyFile: '/etc/kubelet-operator/tls.key',
  },
  events: { qps: 50, burst: 100 },
  operatorFlags: { 'cluster-dns': '[]', 'cluster-domain': 'cluster.local', 'log-level': 'info' },
};
const CSR: NodeApiSettings = {
  address: '0.0.0.0',
  port: 10250,
  clientCAFile: '',
  serving: { mode: 'csr' },
  events: 'unlimited',
  operatorFlags: {},
};

describe('node API: /configz and /flagz content', () => {
  it('a cri node: every field it applies, in the v1beta1 order, under "kubeletconfig"', () => {
    expect(configzBody(criNode, FILES)).to.equal(
      JSON.stringify({
        kubeletconfig: {
          kind: 'KubeletConfiguration',
          apiVersion: 'kubelet.config.k8s.io/v1beta1',
          enableServer: true,
          podLogsDir: '/var/log/pods',
          syncFrequency: '1m0s',
          address: '0.0.0.0',
          port: 10250,
          tlsCertFile: '/etc/kubelet-operator/tls.crt',
          tlsPrivateKeyFile: '/etc/kubelet-operator/tls.key',
          authentication: {
            x509: { clientCAFile: '/etc/kubelet-operator/client-ca.crt' },
            webhook: { enabled: true, cacheTTL: '2m0s' },
            anonymous: { enabled: false },
          },
          authorization: {
            mode: 'Webhook',
            webhook: { cacheAuthorizedTTL: '5m0s', cacheUnauthorizedTTL: '30s' },
          },
          eventRecordQPS: 50,
          eventBurst: 100,
          enableDebuggingHandlers: true,
          clusterDomain: 'example.internal',
          clusterDNS: ['10.96.0.10'],
          nodeStatusUpdateFrequency: '20s',
          nodeStatusReportFrequency: '10m0s',
          nodeLeaseDurationSeconds: 60,
          cgroupRoot: '/kubelet-operator',
          maxPods: 50,
          resolvConf: '/etc/resolv.conf',
          cpuCFSQuota: true,
          cpuCFSQuotaPeriod: '50ms',
          serializeImagePulls: false,
          volumeStatsAggPeriod: '1m0s',
          allowedUnsafeSysctls: ['net.core.somaxconn', 'kernel.msg*'],
          crashLoopBackOff: { maxContainerRestartPeriod: '30s' },
          registerWithTaints: [
            { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
            { key: 'spot', effect: 'NoExecute' },
          ],
          registerNode: true,
          containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
        },
      }),
    );
  });

  it('a sim node with CSR certificates and no event limit: what a kubelet says of each', () => {
    const c = kubeletConfiguration(simNode, CSR);
    expect(c).to.deep.include({
      serverTLSBootstrap: true,
      authentication: {
        x509: {},
        webhook: { enabled: true, cacheTTL: '2m0s' },
        anonymous: { enabled: false },
      },
      eventRecordQPS: 0,
      clusterDomain: 'cluster.local',
      nodeStatusUpdateFrequency: '10s',
      nodeStatusReportFrequency: '5m0s',
      nodeLeaseDurationSeconds: 40,
      maxPods: 110,
      resolvConf: '',
      cpuCFSQuota: true,
      cpuCFSQuotaPeriod: '100ms',
      containerRuntimeEndpoint: '',
    });
    // Left out as Go leaves omitempty zero values out: readOnlyPort 0, no DNS servers, no cri paths, no taints.
    for (const k of [
      'readOnlyPort',
      'clusterDNS',
      'podLogsDir',
      'cgroupRoot',
      'tlsCertFile',
      'eventBurst',
      'registerWithTaints',
      'allowedUnsafeSysctls',
    ])
      expect(c, k).to.not.have.property(k);
    // A fractional event rate has no int32 form: only the burst is said.
    const frac = kubeletConfiguration(simNode, { ...CSR, events: { qps: 0.5, burst: 3 } });
    expect(frac).to.not.have.property('eventRecordQPS');
    expect(frac.eventBurst).to.equal(3);
  });

  it('crashLoopBackOff: the period in force with KubeletCrashLoopBackOffMax (300 s by default), absent without', () => {
    const withGate = (maxContainerRestartPeriodSeconds?: number) =>
      kubeletConfiguration(
        simNodeWith({
          crashLoopBackOff: {
            featureGates: { KubeletCrashLoopBackOffMax: true },
            maxContainerRestartPeriodSeconds,
          },
        }),
        CSR,
      ).crashLoopBackOff;
    expect(withGate(90)).to.deep.equal({ maxContainerRestartPeriod: '1m30s' });
    expect(withGate(undefined)).to.deep.equal({ maxContainerRestartPeriod: '5m0s' });
    expect(kubeletConfiguration(simNode, CSR)).to.not.have.property('crashLoopBackOff');
  });

  it('image GC: the policy in force, in the kubelet configuration field names and duration form', () => {
    const c = kubeletConfiguration(
      simNodeWith(
        {},
        { imageGC: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 } },
      ),
      CSR,
    );
    expect(c).to.deep.include({
      imageMinimumGCAge: '2m0s',
      imageMaximumGCAge: '0s',
      imageGCHighThresholdPercent: 85,
      imageGCLowThresholdPercent: 80,
    });
    expect(kubeletConfiguration(simNode, CSR)).to.not.have.property('imageGCHighThresholdPercent');
  });

  it('volumeStatsAggPeriod: the one in force, negative when volume stats are off', () => {
    const at = (v: string | undefined) =>
      kubeletConfiguration(
        simNodeWith({}, { spec: { ...SIM, kubelet: { ...SIM.kubelet, volumeStatsAggPeriod: v } } }),
        CSR,
      ).volumeStatsAggPeriod;
    expect(at(undefined)).to.equal('1m0s');
    expect(at('0s')).to.equal('1m0s');
    expect(at('5s')).to.equal('5s');
    expect(at('-1s')).to.equal('-1s');
    expect(kubeletFlags(simNodeWith(), CSR)['volume-stats-agg-period']).to.equal('1m0s');
  });

  it("escapes <, > and & as Go's encoding/json does", () => {
    const odd = { ...simNode, clusterDomain: 'a<b>&c' };
    expect(configzBody(odd, CSR)).to.contain('"clusterDomain":"a\\u003cb\\u003e\\u0026c"');
  });

  it("flagz: the operator's flags, with the node's kubelet flags over them", () => {
    const f = kubeletFlags(criNode, FILES);
    expect(f).to.include({
      'log-level': 'info',
      'node-ip': '10.0.0.7',
      'hostname-override': 'cri-1',
      'cluster-dns': '[10.96.0.10]',
      'cluster-domain': 'example.internal',
      'resolv-conf': '/etc/resolv.conf',
      'max-pods': '50',
      'container-runtime-endpoint': 'unix:///run/containerd/containerd.sock',
      'cgroup-root': '/kubelet-operator',
      'sync-frequency': '1m0s',
      'node-status-update-frequency': '20s',
      'node-labels': 'team=a,zone.example.com/rack=r1',
      'register-with-taints': 'dedicated=gpu:NoSchedule,spot=:NoExecute',
      'allowed-unsafe-sysctls': '[net.core.somaxconn,kernel.msg*]',
      'cpu-cfs-quota': 'true',
      'cpu-cfs-quota-period': '50ms',
      address: '0.0.0.0',
      port: '10250',
      'read-only-port': '0',
      'anonymous-auth': 'false',
      'authorization-mode': 'Webhook',
      'client-ca-file': '/etc/kubelet-operator/client-ca.crt',
      'tls-cert-file': '/etc/kubelet-operator/tls.crt',
      'rotate-server-certificates': 'false',
      'event-qps': '50',
      'event-burst': '100',
    });
    const s = kubeletFlags(simNode, CSR);
    expect(s).to.include({
      'cluster-dns': '[]',
      'resolv-conf': '',
      'cpu-cfs-quota-period': '100ms',
      'container-runtime-endpoint': '',
      'rotate-server-certificates': 'true',
      'event-qps': '0',
    });
    expect(s).to.not.have.property('cgroup-root');
    expect(s).to.not.have.property('tls-cert-file');
  });

  it("prints the operator's flags by their names, lists as pflag's string slices", () => {
    const loaded = loadConfig(['--cluster-dns=10.96.0.10,10.96.0.11', '--event-qps=5', '--shard-leases'], {});
    if (!loaded.ok) throw new Error(loaded.message);
    const f = operatorFlagValues(loaded.config);
    expect(f).to.include({
      'cluster-dns': '[10.96.0.10,10.96.0.11]',
      'event-qps': '5',
      'shard-leases': 'true',
      'unlimited-qps': 'false',
      'node-api-port': '10250',
      'default-internal-ip': '127.0.0.1',
      kubeconfig: '',
    });
    expect(stringSliceFlag(['a', 'b,c', 'say "hi"', '', ' x'])).to.equal('[a,"b,c","say ""hi""",," x"]');
  });
});
