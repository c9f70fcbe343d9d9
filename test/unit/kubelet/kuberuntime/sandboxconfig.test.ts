// The kubelet's PodSandboxConfig for a pod (src/kubelet/kuberuntime/sandboxconfig.ts).
import { expect } from 'chai';
import type { Pod } from '../../../../src/api/core.js';
import { buildPodSandboxConfig, podHostname } from '../../../../src/kubelet/kuberuntime/sandboxconfig.js';
import { errorKind } from '../../../../src/util/errors.js';
import { catchErr } from '../../../support/throws.js';
import { CONFIG_NODE, configPod } from './fixtures.js';

const node = CONFIG_NODE;
const pod = configPod;

describe('kuberuntime sandboxconfig', () => {
  it('follows the kubelet: metadata, hostname, log directory, cgroup parent, labels, annotations', () => {
    const c = buildPodSandboxConfig(pod(), node, 3);
    expect(c.metadata).to.deep.equal({ name: 'web', namespace: 'prod', uid: 'uid-1', attempt: 3 });
    expect(c.hostname).to.equal('web');
    expect(c.logDirectory).to.equal('/var/log/pods/prod_web_uid-1');
    expect(c.linux?.cgroupParent).to.equal('/kubepods/poduid-1');
    expect(c.labels).to.deep.equal({
      app: 'web',
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'prod',
      'io.kubernetes.pod.uid': 'uid-1',
      'kubelet-operator.dev/node': 'vn-1',
    });
    expect(c.annotations).to.deep.equal({ a: 'b' });
    expect(c.linux?.securityContext?.namespaceOptions).to.deep.equal({
      network: 'POD',
      pid: 'CONTAINER',
      ipc: 'POD',
    });
    expect(c.linux?.securityContext?.seccomp).to.deep.equal({ profileType: 'RuntimeDefault' });
    expect(c.linux?.securityContext?.privileged).to.equal(false);
    expect(c.portMappings).to.deep.equal([]);
  });

  it('uses the node network and no hostname for hostNetwork pods', () => {
    const c = buildPodSandboxConfig(pod({ hostNetwork: true }), node, 0);
    expect(c.linux?.securityContext?.namespaceOptions?.network).to.equal('NODE');
    expect(c).to.not.have.property('hostname');
  });

  it('takes hostPID, hostIPC and shareProcessNamespace from the wire spec', () => {
    const spec = { hostPID: true, hostIPC: true } as Partial<Pod['spec']>;
    expect(buildPodSandboxConfig(pod(spec), node, 0).linux?.securityContext?.namespaceOptions).to.deep.equal({
      network: 'POD',
      pid: 'NODE',
      ipc: 'NODE',
    });
    const shared = { shareProcessNamespace: true } as Partial<Pod['spec']>;
    expect(
      buildPodSandboxConfig(pod(shared), node, 0).linux?.securityContext?.namespaceOptions?.pid,
    ).to.equal('POD');
  });

  it('prefers spec.hostname and cuts long names to 63 characters without a trailing dash or dot', () => {
    expect(podHostname(pod({ hostname: 'custom' }))).to.equal('custom');
    const long = `${'a'.repeat(61)}-.b${'c'.repeat(10)}`;
    const h = podHostname(pod({}, { name: long }));
    expect(h).to.equal('a'.repeat(61));
    expect(podHostname(pod({}, { name: 'x'.repeat(70) }))).to.have.length(63);
  });

  it('is privileged when any container (init too) is, and takes the pod security context', () => {
    const p = pod({
      initContainers: [{ name: 'init', image: 'busybox', securityContext: { privileged: true } }],
      securityContext: {
        runAsUser: 1000,
        runAsGroup: 2000,
        fsGroup: 3000,
        seccompProfile: { type: 'Unconfined' },
      },
    });
    const sc = buildPodSandboxConfig(p, node, 0).linux?.securityContext;
    expect(sc?.privileged).to.equal(true);
    expect(sc?.runAsUser).to.equal(1000);
    expect(sc?.runAsGroup).to.equal(2000);
    expect(sc?.supplementalGroups).to.deep.equal([3000]);
    expect(sc?.seccomp).to.deep.equal({ profileType: 'Unconfined' });
  });

  it('lists every container port, hostPort when set, duplicates once', () => {
    const p = pod({
      containers: [
        {
          name: 'a',
          image: 'i',
          ports: [
            { containerPort: 80, hostPort: 8080 },
            { containerPort: 53, protocol: 'UDP' },
          ],
        },
        {
          name: 'b',
          image: 'i',
          ports: [
            { containerPort: 80, hostPort: 8080 },
            { containerPort: 9000, hostIP: '127.0.0.1', hostPort: 9 },
          ],
        },
      ],
    });
    expect(buildPodSandboxConfig(p, node, 0).portMappings).to.deep.equal([
      { protocol: 'TCP', containerPort: 80, hostPort: 8080 },
      { protocol: 'UDP', containerPort: 53 },
      { protocol: 'TCP', containerPort: 9000, hostPort: 9, hostIp: '127.0.0.1' },
    ]);
  });

  it('passes node DNS settings and pod sysctls through', () => {
    const p = pod({
      securityContext: { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] },
    } as Partial<Pod['spec']>);
    const c = buildPodSandboxConfig(p, { ...node, dnsConfig: { servers: ['10.96.0.10'] } }, 0);
    expect(c.dnsConfig).to.deep.equal({ servers: ['10.96.0.10'] });
    expect(c.linux?.sysctls).to.deep.equal({ 'net.core.somaxconn': '1024' });
  });

  it('hands sysctls to the runtime in dot form, as the kubelet does', () => {
    const p = pod({
      securityContext: {
        sysctls: [
          { name: 'kernel/shm_rmid_forced', value: '1' },
          { name: 'net/ipv4/conf/eno2.100/rp_filter', value: '0' },
          { name: 'net.ipv4.ip_local_port_range', value: '32769 60999' },
        ],
      },
    } as Partial<Pod['spec']>);
    expect(buildPodSandboxConfig(p, node, 0).linux?.sysctls).to.deep.equal({
      'kernel.shm_rmid_forced': '1',
      'net.ipv4.conf.eno2/100.rp_filter': '0',
      'net.ipv4.ip_local_port_range': '32769 60999',
    });
  });

  it('rejects a pod without identity', () => {
    const p = pod({}, { uid: '' });
    expect(errorKind(catchErr(() => buildPodSandboxConfig(p, node, 0)))).to.equal('InvalidArgument');
  });
});

describe('kuberuntime sandboxconfig resources (calculateSandboxResources)', () => {
  it('the whole pod as one container: pod-level resources over the containers', () => {
    const table: [string, Partial<Pod['spec']>, Record<string, number>][] = [
      ['no resources anywhere', {}, { cpuShares: 2, cpuPeriod: 100000, cpuQuota: 0 }],
      [
        'containers only: their sums',
        {
          containers: [
            { name: 'a', resources: { requests: { cpu: '100m' }, limits: { cpu: '200m', memory: '64Mi' } } },
            { name: 'b', resources: { requests: { cpu: '100m' } } },
          ],
        },
        { cpuShares: 204, cpuPeriod: 100000, cpuQuota: 20000, memoryLimitInBytes: 64 * 1024 * 1024 },
      ],
      [
        'pod-level resources win',
        {
          containers: [{ name: 'a', resources: { requests: { cpu: '100m' } } }],
          resources: { requests: { cpu: '1' }, limits: { cpu: '2', memory: '1Gi' } },
        },
        { cpuShares: 1024, cpuPeriod: 100000, cpuQuota: 200000, memoryLimitInBytes: 1024 ** 3 },
      ],
      [
        'pod-level limits without any cpu request: shares from the limit',
        { resources: { limits: { cpu: '500m' } } },
        { cpuShares: 512, cpuPeriod: 100000, cpuQuota: 50000 },
      ],
    ];
    for (const [what, spec, want] of table) {
      expect(buildPodSandboxConfig(pod(spec), node, 0).linux?.resources, what).to.deep.equal(want);
    }
  });
});
