import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { podRequests } from '../../../../src/api/resources.js';
import type { Node } from '../../../../src/api/node.js';
import { admitPod, withLiveNode, type AdmissionNode } from '../../../../src/kubelet/lifecycle/admission.js';

const c = (
  name: string,
  requests: Record<string, string> = {},
  extra: Partial<Container> = {},
): Container => ({
  name,
  image: 'busybox',
  resources: { requests },
  ...extra,
});

const pod = (name: string, containers: Container[], spec: Partial<Pod['spec']> = {}): Pod => ({
  metadata: { name, namespace: 'ns', uid: name },
  spec: { containers, ...spec },
});

const node = (allocatable: Record<string, number>, extra: Partial<AdmissionNode> = {}): AdmissionNode => ({
  name: 'vn-1',
  labels: { 'kubernetes.io/hostname': 'vn-1' },
  taints: [],
  allocatable: new Map(Object.entries(allocatable)),
  ...extra,
});

describe('podRequests', () => {
  it('sums regular containers and sidecars, floors by init containers', () => {
    const r = podRequests({
      initContainers: [
        c('sidecar', { cpu: '100m' }, { restartPolicy: 'Always' }),
        c('init', { cpu: '2', memory: '1Gi' }),
      ],
      containers: [c('a', { cpu: '500m', memory: '128Mi' }), c('b', { cpu: '250m' })],
    });
    // regular 750m + sidecar 100m = 850m < init 2000m + sidecar 100m = 2100m
    expect(r.get('cpu')).to.equal(2100);
    expect(r.get('memory')).to.equal(1024 ** 3);
  });

  it('treats a limit without a request as the request', () => {
    const r = podRequests({ containers: [{ name: 'x', resources: { limits: { cpu: '1' } } }] });
    expect(r.get('cpu')).to.equal(1000);
  });
});

describe('admitPod', () => {
  it('last, refuses a pod that needs a feature the node does not declare (NodeDeclaredFeatures)', () => {
    const restartAll = c('a', {}, { restartPolicyRules: [{ action: 'RestartAllContainers' }] });
    // A node that declares none of the v1.37 features (ours declare this one).
    const n = { ...node({ cpu: 2000, memory: 1e9, pods: 10 }), declaredFeatures: [] };
    expect(admitPod(pod('p', [restartAll]), n, [])).to.deep.equal({
      admit: false,
      reason: 'PodFeatureUnsupported',
      message: 'Pod requires node features that are not available: RestartAllContainersOnContainerExits',
    });
    const declaring = { ...n, declaredFeatures: ['RestartAllContainersOnContainerExits'] };
    expect(admitPod(pod('p', [restartAll]), declaring, [])).to.deep.equal({ admit: true });
    // An earlier handler's reason comes first.
    const tainted = { ...n, taints: [{ key: 'k', effect: 'NoExecute' as const }] };
    expect(admitPod(pod('p', [restartAll]), tainted, [])).to.deep.include({ reason: 'TaintToleration' });
  });

  it('admits a pod that fits', () => {
    expect(
      admitPod(pod('p', [c('a', { cpu: '1' })]), node({ cpu: 2000, memory: 1e9, pods: 10 }), []),
    ).to.deep.equal({
      admit: true,
    });
  });

  it('rejects with OutOfcpu in the kubelet wording', () => {
    const running = [pod('r', [c('a', { cpu: '1500m' })])];
    const res = admitPod(
      pod('p', [c('a', { cpu: '600m' })]),
      node({ cpu: 2000, memory: 1e9, pods: 10 }),
      running,
    );
    expect(res).to.deep.equal({
      admit: false,
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 600, used: 1500, capacity: 2000",
    });
  });

  it('checks the pod count before cpu and memory', () => {
    const res = admitPod(pod('p', [c('a', { cpu: '100' })]), node({ cpu: 1, pods: 1 }), [pod('r', [c('a')])]);
    expect(res).to.include({ reason: 'OutOfpods' });
  });

  it('rejects OutOfmemory', () => {
    const res = admitPod(
      pod('p', [c('a', { memory: '2Gi' })]),
      node({ cpu: 1000, memory: 1024 ** 3, pods: 5 }),
      [],
    );
    expect(res).to.include({ reason: 'OutOfmemory' });
  });

  it('rejects a pod whose node selector does not match', () => {
    const res = admitPod(pod('p', [c('a')], { nodeSelector: { disk: 'ssd' } }), node({ pods: 5 }), []);
    expect(res).to.deep.equal({
      admit: false,
      reason: 'NodeAffinity',
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
  });

  it('rejects untolerated NoExecute taints but not NoSchedule ones', () => {
    const tainted = node({ pods: 5 }, { taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] });
    expect(admitPod(pod('p', [c('a')]), tainted, [])).to.deep.equal({ admit: true });
    const noExec = node({ pods: 5 }, { taints: [{ key: 'k', value: 'v', effect: 'NoExecute' }] });
    expect(admitPod(pod('p', [c('a')]), noExec, [])).to.deep.equal({
      admit: false,
      reason: 'TaintToleration',
      message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    });
    const tolerating = pod('p', [c('a')], { tolerations: [{ key: 'k', operator: 'Exists' }] });
    expect(admitPod(tolerating, noExec, [])).to.deep.equal({ admit: true });
  });

  it('rejects host port conflicts', () => {
    const withPort = (n: string) => pod(n, [c('a', {}, { ports: [{ containerPort: 80, hostPort: 8080 }] })]);
    expect(admitPod(withPort('p'), node({ pods: 5 }), [withPort('q')])).to.include({ reason: 'NodePorts' });
  });

  it('turns an unparsable quantity into a defined rejection, not a crash', () => {
    const res = admitPod(pod('p', [c('a', { cpu: 'lots' })]), node({ cpu: 1000, pods: 5 }), []);
    expect(res).to.include({ admit: false, reason: 'UnexpectedAdmissionError' });
  });
});

describe('admitPod: sysctls and OS (the kubelet admit handlers before the predicates)', () => {
  const withSysctls = (names: string[], spec: Partial<Pod['spec']> = {}) =>
    pod('p', [c('a')], {
      securityContext: { sysctls: names.map((name) => ({ name, value: '1' })) },
      ...spec,
    });
  const modern = node({ pods: 5 }, { kernelVersion: '6.1.0-18-amd64' });

  it('admits the safe sysctls, in dot or slash form', () => {
    const all = [
      'kernel.shm_rmid_forced',
      'net.ipv4.ip_local_port_range',
      'net.ipv4.tcp_syncookies',
      'net.ipv4.ping_group_range',
      'net.ipv4.ip_unprivileged_port_start',
      'net.ipv4.ip_local_reserved_ports',
      'net.ipv4.tcp_keepalive_time',
      'net.ipv4.tcp_fin_timeout',
      'net.ipv4.tcp_keepalive_intvl',
      'net.ipv4.tcp_keepalive_probes',
      'net.ipv4.tcp_rmem',
      'net.ipv4.tcp_wmem',
      'kernel/shm_rmid_forced',
    ];
    expect(admitPod(withSysctls(all), modern, [])).to.deep.equal({ admit: true });
  });

  it('rejects an unsafe sysctl the node does not allow with SysctlForbidden in the kubelet words', () => {
    expect(admitPod(withSysctls(['kernel.msgmax']), modern, [])).to.deep.equal({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "kernel.msgmax" not allowlisted',
    });
  });

  it('admits unsafe sysctls the node allows, by name or by prefix pattern', () => {
    const allowing = node({ pods: 5 }, { allowedUnsafeSysctls: ['kernel.msg*', 'net.core.somaxconn'] });
    const p = withSysctls(['kernel.msgmax', 'kernel.msgmnb', 'net.core.somaxconn']);
    expect(admitPod(p, allowing, [])).to.deep.equal({ admit: true });
    expect(admitPod(withSysctls(['net.core.rmem_max']), allowing, [])).to.include({
      reason: 'SysctlForbidden',
    });
  });

  it('refuses net sysctls to host-network pods and IPC sysctls to host-IPC pods', () => {
    expect(
      admitPod(withSysctls(['net.ipv4.tcp_syncookies'], { hostNetwork: true }), modern, []),
    ).to.deep.equal({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled',
    });
    expect(admitPod(withSysctls(['kernel.shm_rmid_forced'], { hostIPC: true }), modern, [])).to.deep.equal({
      admit: false,
      reason: 'SysctlForbidden',
      message: 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled',
    });
    // The other namespace is not shared, so the sysctl is fine.
    expect(
      admitPod(withSysctls(['kernel.shm_rmid_forced'], { hostNetwork: true }), modern, []),
    ).to.deep.equal({
      admit: true,
    });
  });

  it('drops the kernel-gated safe sysctls on an older or unknown kernel', () => {
    const old = node({ pods: 5 }, { kernelVersion: '4.5.0' });
    expect(admitPod(withSysctls(['net.ipv4.tcp_keepalive_time']), old, [])).to.deep.equal({ admit: true });
    expect(admitPod(withSysctls(['net.ipv4.tcp_fin_timeout']), old, [])).to.include({
      reason: 'SysctlForbidden',
    });
    const unknown = node({ pods: 5 });
    expect(admitPod(withSysctls(['net.ipv4.ip_local_reserved_ports']), unknown, [])).to.include({
      reason: 'SysctlForbidden',
    });
    expect(admitPod(withSysctls(['net.ipv4.tcp_rmem']), unknown, [])).to.deep.equal({ admit: true });
  });

  it('checks sysctls before resources, as the kubelet runs the sysctl handler first', () => {
    const tooBig = pod('p', [c('a', { cpu: '8' })], {
      securityContext: { sysctls: [{ name: 'foo.bar', value: '1' }] },
    });
    expect(admitPod(tooBig, node({ cpu: 1000, pods: 5 }), [])).to.include({ reason: 'SysctlForbidden' });
  });

  it('rejects a pod whose spec.os is not linux with PodOSNotSupported', () => {
    expect(admitPod(pod('p', [c('a')], { os: { name: 'windows' } }), node({ pods: 5 }), [])).to.deep.equal({
      admit: false,
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    });
    expect(admitPod(pod('p', [c('a')], { os: { name: 'linux' } }), node({ pods: 5 }), [])).to.deep.equal({
      admit: true,
    });
  });

  it('rejects a pod labelled for another OS with PodOSSelectorNodeLabelDoesNotMatch', () => {
    const p = pod('p', [c('a')]);
    p.metadata.labels = { 'kubernetes.io/os': 'windows' };
    // The node's own label does not matter: the kubelet compares with the OS it runs on.
    const res = admitPod(p, node({ pods: 5 }, { labels: { 'kubernetes.io/os': 'windows' } }), []);
    expect(res).to.deep.equal({
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    });
    p.metadata.labels = { 'kubernetes.io/os': 'linux' };
    expect(admitPod(p, node({ pods: 5 }), [])).to.deep.equal({ admit: true });
  });
});

describe('withLiveNode: admission reads the Node as the API server has it now', () => {
  const own = node(
    { cpu: 2000, memory: 1e9, pods: 10, 'example.com/dongle': 2 },
    {
      labels: { 'kubernetes.io/hostname': 'vn-1', tier: 'spec' },
      taints: [{ key: 'ours', effect: 'NoSchedule' }],
    },
  );
  const live = (extra: Partial<Node> = {}): Node => ({
    metadata: { name: 'vn-1', labels: { 'kubernetes.io/hostname': 'vn-1', tier: 'spec' } },
    spec: { taints: [{ key: 'ours', effect: 'NoSchedule' }] },
    status: { allocatable: { cpu: '2', memory: '1G', pods: '10' } },
    ...extra,
  });

  it('is the node itself while the live Node adds nothing (and without one)', () => {
    expect(withLiveNode(own, undefined)).to.equal(own);
    expect(withLiveNode(own, live())).to.equal(own);
  });

  it('adds labels others put on the Node; its own desired labels win', () => {
    const n = withLiveNode(
      own,
      live({ metadata: { name: 'vn-1', labels: { color: 'blue', tier: 'stale' } } }),
    );
    expect(n.labels).to.deep.equal({ color: 'blue', tier: 'spec', 'kubernetes.io/hostname': 'vn-1' });
    const p = pod('p', [c('a')], { nodeSelector: { color: 'blue' } });
    expect(admitPod(p, own, [])).to.deep.include({ admit: false, reason: 'NodeAffinity' });
    expect(admitPod(p, n, [])).to.deep.equal({ admit: true });
  });

  it('adds taints others put on the Node (a NoExecute one refuses pods that do not tolerate it)', () => {
    const n = withLiveNode(
      own,
      live({
        spec: {
          taints: [
            { key: 'ours', effect: 'NoSchedule' },
            { key: 'evict', value: 'y', effect: 'NoExecute' },
          ],
        },
      }),
    );
    expect(n.taints).to.deep.equal([
      { key: 'ours', effect: 'NoSchedule' },
      { key: 'evict', value: 'y', effect: 'NoExecute' },
    ]);
    expect(admitPod(pod('p', [c('a')]), n, [])).to.deep.include({ reason: 'TaintToleration' });
  });

  it('counts extended resources advertised in its status; own amounts win, other names and bad quantities do not count', () => {
    const n = withLiveNode(
      own,
      live({
        status: {
          allocatable: {
            cpu: '64',
            'scheduling.k8s.io/foo': '5',
            'example.com/dongle': '9',
            'hugepages-2Mi': '1Gi',
            'example.com/broken': 'lots',
          },
        },
      }),
    );
    expect(Object.fromEntries(n.allocatable)).to.deep.equal({
      'scheduling.k8s.io/foo': 5,
      cpu: 2000,
      memory: 1e9,
      pods: 10,
      'example.com/dongle': 2,
    });
    const wants = (k: string, v: string) => pod(`p-${k}`, [c('a', { [k]: v })]);
    // Not advertised at all: not the node's to count (removeMissingExtendedResources); advertised: counted.
    expect(admitPod(wants('scheduling.k8s.io/foo', '6'), own, [])).to.deep.equal({ admit: true });
    expect(admitPod(wants('scheduling.k8s.io/foo', '6'), n, [])).to.deep.include({
      reason: 'OutOfscheduling.k8s.io/foo',
    });
    expect(admitPod(wants('scheduling.k8s.io/foo', '2'), n, [])).to.deep.equal({ admit: true });
    expect(admitPod(wants('example.com/dongle', '3'), n, [])).to.deep.include({
      reason: 'OutOfexample.com/dongle',
    });
  });
});

describe('admitPod: extended resources the node does not count (removeMissingExtendedResources)', () => {
  const n = () => node({ cpu: 2000, memory: 4 * 2 ** 30, pods: 10, 'example.com/gpu': 1 });
  const withClaim = (p: Pod, mappings: { containerName: string; resourceName: string }[]): Pod => ({
    ...p,
    status: {
      extendedResourceClaimStatus: {
        resourceClaimName: 'p-extended-resources-x',
        requestMappings: mappings.map((m) => ({ ...m, requestName: 'r' })),
      },
    } as Pod['status'],
  });
  const table: [string, Pod, boolean][] = [
    ['not advertised: not counted', pod('p', [c('a', { 'example.com/fpga': '4' })]), true],
    ['advertised: counted', pod('p', [c('a', { 'example.com/gpu': '2' })]), false],
    [
      "advertised but backed by the pod's extended resource claim for that container: not counted",
      withClaim(pod('p', [c('a', { 'example.com/gpu': '2' })]), [
        { containerName: 'a', resourceName: 'example.com/gpu' },
      ]),
      true,
    ],
    [
      'backed by the claim for another container only: counted',
      withClaim(pod('p', [c('a', { 'example.com/gpu': '2' })]), [
        { containerName: 'b', resourceName: 'example.com/gpu' },
      ]),
      false,
    ],
    [
      "a DeviceClass's implicit resource the claim backs: not counted",
      withClaim(pod('p', [c('a', { 'deviceclass.resource.kubernetes.io/gpu': '1' })]), [
        { containerName: 'a', resourceName: 'deviceclass.resource.kubernetes.io/gpu' },
      ]),
      true,
    ],
    [
      'an init container the same',
      pod('p', [c('a')], { initContainers: [c('i', { 'example.com/fpga': '4' })] }),
      true,
    ],
    ['cpu is never dropped', pod('p', [c('a', { cpu: '3' })]), false],
    [
      'a limit alone (the request the API server defaults from it): the same',
      withClaim(pod('p', [c('a', {}, { resources: { limits: { 'example.com/gpu': '2' } } })]), [
        { containerName: 'a', resourceName: 'example.com/gpu' },
      ]),
      true,
    ],
    [
      'a limit alone, not backed: counted',
      pod('p', [c('a', {}, { resources: { limits: { 'example.com/gpu': '2' } } })]),
      false,
    ],
  ];
  for (const [name, p, admit] of table) {
    it(name, () => expect(admitPod(p, n(), []).admit).to.equal(admit));
  }
});

describe('admitPod with pod-level resources (PodLevelResources: admission fits PodRequests)', () => {
  const n = () => node({ cpu: 2000, memory: 4 * 2 ** 30, pods: 10 });

  it('the pod-level request counts, not the containers', () => {
    const big = pod('p', [c('a', { cpu: '100m' })], { resources: { requests: { cpu: '3' } } });
    expect(admitPod(big, n(), [])).to.deep.equal({
      admit: false,
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
    });
    // Containers asking more than the node fit when the pod-level request is smaller.
    const small = pod('p', [c('a', { cpu: '3' })], { resources: { requests: { cpu: '1' } } });
    expect(admitPod(small, n(), [])).to.deep.equal({ admit: true });
  });

  it('admitted pods count by their pod-level requests too', () => {
    const running = [pod('r', [c('a')], { resources: { requests: { memory: '3Gi' } } })];
    const res = admitPod(pod('p', [c('a', { memory: '2Gi' })]), n(), running);
    expect(res).to.include({ admit: false, reason: 'OutOfmemory' });
  });
});

describe('admitPod with DRA extended resources (DRAExtendedResource: removeMissingExtendedResources)', () => {
  // The node advertises example.com/gpu with none allocatable (a device plugin's, all unhealthy), so a request
  // for it is the node's to fit unless the claim serves it.
  const n = () => node({ cpu: 2000, memory: 1e9, pods: 10, 'example.com/dongle': 1, 'example.com/gpu': 0 });
  const withClaim = (p: Pod, mappings: { containerName: string; resourceName: string }[]): Pod => ({
    ...p,
    status: {
      extendedResourceClaimStatus: {
        resourceClaimName: 'p-extended-resources-x',
        requestMappings: mappings.map((m, i) => ({ ...m, requestName: `container-0-request-${i}` })),
      },
    },
  });
  const gpu = (name = 'a') => c(name, { 'example.com/gpu': '1', cpu: '100m' });
  const cases: [string, Pod, unknown][] = [
    [
      'no claim: counted against the node, which has none free',
      pod('p', [gpu()]),
      {
        admit: false,
        reason: 'OutOfexample.com/gpu',
        message: "Node didn't have enough resource: example.com/gpu, requested: 1, used: 0, capacity: 0",
      },
    ],
    [
      "the claim serves the container's resource: admitted",
      withClaim(pod('p', [gpu()]), [{ containerName: 'a', resourceName: 'example.com/gpu' }]),
      { admit: true },
    ],
    [
      "the class's implicit name, served by the claim: admitted",
      withClaim(pod('p', [c('a', { 'deviceclass.resource.kubernetes.io/gpus': '2' })]), [
        { containerName: 'a', resourceName: 'deviceclass.resource.kubernetes.io/gpus' },
      ]),
      { admit: true },
    ],
    [
      'the claim serves another container: still refused',
      withClaim(pod('p', [gpu('a'), gpu('b')]), [{ containerName: 'a', resourceName: 'example.com/gpu' }]),
      {
        admit: false,
        reason: 'OutOfexample.com/gpu',
        message: "Node didn't have enough resource: example.com/gpu, requested: 1, used: 0, capacity: 0",
      },
    ],
    [
      'other resources still fit as before',
      withClaim(pod('p', [c('a', { 'example.com/gpu': '1', 'example.com/dongle': '2' })]), [
        { containerName: 'a', resourceName: 'example.com/gpu' },
      ]),
      {
        admit: false,
        reason: 'OutOfexample.com/dongle',
        message: "Node didn't have enough resource: example.com/dongle, requested: 2, used: 0, capacity: 1",
      },
    ],
  ];
  for (const [name, p, want] of cases) it(name, () => expect(admitPod(p, n(), [])).to.deep.equal(want));
});
