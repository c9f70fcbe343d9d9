// The kubelet's ContainerConfig for a container of a pod (src/kubelet/kuberuntime/containerconfig.ts).
import { expect } from 'chai';
import type { Container, Pod } from '../../../../src/api/core.js';
import { hashContainer } from '../../../../src/kubelet/container/helpers.js';
import { milliCPUToQuota, milliCPUToShares } from '../../../../src/kubelet/cm/cpu.js';
import {
  buildContainerConfig,
  containerResources,
} from '../../../../src/kubelet/kuberuntime/containerconfig.js';
import {
  DEFAULT_MASKED_PATHS,
  DEFAULT_READONLY_PATHS,
} from '../../../../src/kubelet/kuberuntime/securitycontext.js';
import type { NodeSettings } from '../../../../src/kubelet/kuberuntime/sandboxconfig.js';
import { errorKind } from '../../../../src/util/errors.js';
import { catchErr } from '../../../support/throws.js';
import { CONFIG_NODE, configPod } from './fixtures.js';

const node = CONFIG_NODE;
const pod = configPod;

describe('kuberuntime containerconfig', () => {
  const app: Container = {
    name: 'app',
    image: 'busybox:1.36',
    command: ['sh'],
    args: ['-c', 'sleep 1'],
    workingDir: '/w',
    ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
    resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '500m', memory: '128Mi' } },
  };

  it('sets the kubelet labels, annotations, attempt and log path', () => {
    const p = pod(
      { containers: [app], terminationGracePeriodSeconds: 30 },
      { deletionGracePeriodSeconds: 10 },
    );
    const c = buildContainerConfig(
      p,
      app,
      { restartCount: 4, envs: [{ key: 'K', value: 'v' }], mounts: [] },
      node,
    );
    expect(c.metadata).to.deep.equal({ name: 'app', attempt: 4 });
    expect(c.image).to.equal('busybox:1.36');
    expect(c.logPath).to.equal('app/4.log');
    expect(c.command).to.deep.equal(['sh']);
    expect(c.args).to.deep.equal(['-c', 'sleep 1']);
    expect(c.workingDir).to.equal('/w');
    expect(c.envs).to.deep.equal([{ key: 'K', value: 'v' }]);
    expect(c.labels).to.deep.equal({
      'io.kubernetes.pod.name': 'web',
      'io.kubernetes.pod.namespace': 'prod',
      'io.kubernetes.pod.uid': 'uid-1',
      'io.kubernetes.container.name': 'app',
      'kubelet-operator.dev/node': 'vn-1',
    });
    expect(c.annotations).to.deep.equal({
      'io.kubernetes.container.hash': hashContainer(app),
      'io.kubernetes.container.restartCount': '4',
      'io.kubernetes.container.terminationMessagePath': '/dev/termination-log',
      'io.kubernetes.container.terminationMessagePolicy': 'File',
      'io.kubernetes.pod.terminationGracePeriod': '30',
      'io.kubernetes.pod.deletionGracePeriod': '10',
      'io.kubernetes.container.ports': '[{"name":"http","containerPort":80,"protocol":"TCP"}]',
    });
  });

  it('uses the resolved image when given, and the spec termination message settings', () => {
    const c = buildContainerConfig(
      pod(),
      { ...app, terminationMessagePath: '/tmp/msg', terminationMessagePolicy: 'FallbackToLogsOnError' },
      { restartCount: 0, image: 'sha256:abc' },
      node,
    );
    expect(c.image).to.equal('sha256:abc');
    expect(c.annotations['io.kubernetes.container.terminationMessagePath']).to.equal('/tmp/msg');
    expect(c.annotations['io.kubernetes.container.terminationMessagePolicy']).to.equal(
      'FallbackToLogsOnError',
    );
  });

  it('sizes cpu and memory like the kubelet on cgroup v1', () => {
    expect(containerResources(pod(), app)).to.deep.equal({
      cpuShares: 256,
      cpuPeriod: 100000,
      cpuQuota: 50000,
      memoryLimitInBytes: 128 * 1024 * 1024,
    });
    // No requests or limits: minimum shares, no quota, no memory limit.
    expect(containerResources(pod(), { name: 'x' })).to.deep.equal({
      cpuShares: 2,
      cpuPeriod: 100000,
      cpuQuota: 0,
    });
    // Only a limit: shares follow the limit (the API would default the request to it).
    expect(
      containerResources(pod(), { name: 'x', resources: { limits: { cpu: '1', memory: '1Gi' } } }),
    ).to.deep.equal({
      cpuShares: 1024,
      cpuPeriod: 100000,
      cpuQuota: 100000,
      memoryLimitInBytes: 1024 ** 3,
    });
    // Tiny limits are floored: quota at least 1000, shares at least 2.
    expect(
      containerResources(pod(), {
        name: 'x',
        resources: { requests: { cpu: '1m' }, limits: { cpu: '1m' } },
      }),
    ).to.deep.equal({
      cpuShares: 2,
      cpuPeriod: 100000,
      cpuQuota: 1000,
    });
  });

  it("uses the node's cpuCFSQuotaPeriod for the quota, floored at the kubelet's 1 ms minimum", () => {
    const period = (us: number, cpu: string) =>
      containerResources(pod(), { name: 'x', resources: { limits: { cpu } } }, { cpuCFSQuotaPeriodUs: us });
    expect(period(50_000, '500m')).to.include({ cpuPeriod: 50_000, cpuQuota: 25_000 });
    expect(period(1_000_000, '1500m')).to.include({ cpuPeriod: 1_000_000, cpuQuota: 1_500_000 });
    expect(period(1_000, '100m')).to.include({ cpuPeriod: 1_000, cpuQuota: 1_000 });
  });

  it('converts cpu with the kubelet formulas', () => {
    expect(milliCPUToShares(0)).to.equal(2);
    expect(milliCPUToShares(1)).to.equal(2);
    expect(milliCPUToShares(100)).to.equal(102);
    expect(milliCPUToShares(1000)).to.equal(1024);
    expect(milliCPUToShares(1_000_000)).to.equal(262144);
    expect(milliCPUToQuota(0, 100000)).to.equal(0);
    expect(milliCPUToQuota(5, 100000)).to.equal(1000);
    expect(milliCPUToQuota(1500, 100000)).to.equal(150000);
  });

  it('sets oom_score_adj by QoS class when the node memory is known', () => {
    const mem = 8 * 1024 ** 3;
    const withMem = { ...node, memoryCapacityBytes: mem };
    const guaranteed: Container = {
      name: 'g',
      image: 'i',
      resources: { limits: { cpu: '1', memory: '1Gi' } },
    };
    const gPod = pod({ containers: [guaranteed] });
    gPod.spec.containers[0]!.resources!.requests = { cpu: '1', memory: '1Gi' };
    expect(
      buildContainerConfig(gPod, guaranteed, { restartCount: 0 }, withMem).linux?.resources?.oomScoreAdj,
    ).to.equal(-997);
    const be = pod();
    expect(
      buildContainerConfig(be, be.spec.containers[0]!, { restartCount: 0 }, withMem).linux?.resources
        ?.oomScoreAdj,
    ).to.equal(1000);
    const burst = pod({ containers: [app] });
    // 1000 - 1000*64Mi/8Gi = 1000 - 7.8 -> 993
    expect(
      buildContainerConfig(burst, app, { restartCount: 0 }, withMem).linux?.resources?.oomScoreAdj,
    ).to.equal(993);
    expect(buildContainerConfig(burst, app, { restartCount: 0 }, node).linux?.resources).to.not.have.property(
      'oomScoreAdj',
    );
  });

  it('merges pod and container security contexts; seccomp container > pod > RuntimeDefault', () => {
    const p = pod({
      hostNetwork: true,
      securityContext: { runAsUser: 1000, seccompProfile: { type: 'Unconfined' } },
    });
    const c1 = buildContainerConfig(p, { name: 'a', image: 'i' }, { restartCount: 0 }, node).linux
      ?.securityContext;
    expect(c1).to.deep.equal({
      namespaceOptions: { network: 'NODE', pid: 'CONTAINER', ipc: 'POD' },
      privileged: false,
      readonlyRootfs: false,
      noNewPrivs: false,
      seccomp: { profileType: 'Unconfined' },
      runAsUser: 1000,
      maskedPaths: [...DEFAULT_MASKED_PATHS],
      readonlyPaths: [...DEFAULT_READONLY_PATHS],
    });
    const c2 = buildContainerConfig(
      p,
      {
        name: 'b',
        image: 'i',
        securityContext: {
          runAsUser: 0,
          privileged: true,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { add: ['NET_ADMIN'], drop: ['ALL'] },
          seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/x.json' },
        },
      },
      { restartCount: 0 },
      node,
    ).linux?.securityContext;
    expect(c2).to.deep.include({
      privileged: true,
      readonlyRootfs: true,
      noNewPrivs: true,
      runAsUser: 0,
      seccomp: { profileType: 'Localhost', localhostRef: 'profiles/x.json' },
      capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] },
    });
    const c3 = buildContainerConfig(pod(), { name: 'c', image: 'i' }, { restartCount: 0 }, node).linux
      ?.securityContext;
    expect(c3?.seccomp).to.deep.equal({ profileType: 'RuntimeDefault' });
  });

  it("procMount: Default masks the kubelet's paths and the host's thermal_throttle dirs; Unmasked none", () => {
    const thermal = ['/sys/devices/system/cpu/cpu0/thermal_throttle'];
    const sc = (c: Container, n: NodeSettings = node) =>
      buildContainerConfig(pod(), c, { restartCount: 0 }, n).linux?.securityContext;
    expect(sc({ name: 'd', image: 'i' }, { ...node, thermalThrottlePaths: thermal })).to.deep.include({
      maskedPaths: [...DEFAULT_MASKED_PATHS, ...thermal],
      readonlyPaths: ['/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
    });
    expect(DEFAULT_MASKED_PATHS).to.include.members(['/proc/kcore', '/proc/interrupts', '/sys/firmware']);
    // Privileged containers get them too: the runtime leaves a privileged container unmasked.
    expect(
      sc({ name: 'p', image: 'i', securityContext: { privileged: true, procMount: 'Default' } }),
    ).to.deep.include({
      maskedPaths: [...DEFAULT_MASKED_PATHS],
    });
    expect(sc({ name: 'u', image: 'i', securityContext: { procMount: 'Unmasked' } })).to.deep.include({
      maskedPaths: [],
      readonlyPaths: [],
    });
  });

  it('rejects a missing image, a bad restart count and a malformed quantity', () => {
    expect(
      errorKind(catchErr(() => buildContainerConfig(pod(), { name: 'x' }, { restartCount: 0 }, node))),
    ).to.equal('InvalidArgument');
    expect(errorKind(catchErr(() => buildContainerConfig(pod(), app, { restartCount: -1 }, node)))).to.equal(
      'InvalidArgument',
    );
    const bad: Container = { name: 'x', image: 'i', resources: { limits: { memory: '12 Mi' } } };
    expect(errorKind(catchErr(() => buildContainerConfig(pod(), bad, { restartCount: 0 }, node)))).to.equal(
      'InvalidArgument',
    );
  });
});

describe('kuberuntime containerconfig with pod-level resources (PodLevelResources)', () => {
  const podLevel = (
    resources: Pod['spec']['resources'],
    containers: Container[],
    init: Container[] = [],
  ): Pod => pod({ containers, initContainers: init, resources });
  const MiB = 1024 * 1024;

  it('a container without a limit of its own gets the pod-level limit; its own wins', () => {
    const table: [string, Pod['spec']['resources'], Container, Record<string, number>][] = [
      [
        'no container resources: shares, quota and memory from the pod-level limits',
        { requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '1', memory: '256Mi' } },
        { name: 'x' },
        { cpuShares: 1024, cpuPeriod: 100000, cpuQuota: 100000, memoryLimitInBytes: 256 * MiB },
      ],
      [
        'its own request sets the shares, the pod-level limit the quota',
        { limits: { cpu: '1', memory: '256Mi' } },
        { name: 'x', resources: { requests: { cpu: '250m' } } },
        { cpuShares: 256, cpuPeriod: 100000, cpuQuota: 100000, memoryLimitInBytes: 256 * MiB },
      ],
      [
        'its own limits win',
        { limits: { cpu: '1', memory: '256Mi' } },
        { name: 'x', resources: { requests: { cpu: '100m' }, limits: { cpu: '200m', memory: '64Mi' } } },
        { cpuShares: 102, cpuPeriod: 100000, cpuQuota: 20000, memoryLimitInBytes: 64 * MiB },
      ],
      [
        'a zero limit of its own counts as none',
        { limits: { cpu: '1' } },
        { name: 'x', resources: { limits: { cpu: '0' } } },
        { cpuShares: 1024, cpuPeriod: 100000, cpuQuota: 100000 },
      ],
      [
        'pod-level requests only: no limit to inherit, minimum shares',
        { requests: { cpu: '1' } },
        { name: 'x' },
        { cpuShares: 2, cpuPeriod: 100000, cpuQuota: 0 },
      ],
      [
        'an explicit zero request keeps the minimum shares (the limit only stands in for a missing one)',
        undefined,
        { name: 'x', resources: { requests: { cpu: '0' }, limits: { cpu: '1' } } },
        { cpuShares: 2, cpuPeriod: 100000, cpuQuota: 100000 },
      ],
    ];
    for (const [what, resources, container, want] of table) {
      expect(containerResources(podLevel(resources, [container]), container), what).to.deep.equal(want);
    }
  });

  it('oom_score_adj: the pod-level class, and the unrequested pod-level memory shared per container', () => {
    const capacity = 1000 * MiB;
    // Guaranteed at pod level although the container sets nothing.
    const g = podLevel({ requests: { cpu: '1', memory: '100Mi' }, limits: { cpu: '1', memory: '100Mi' } }, [
      { name: 'a' },
    ]);
    expect(
      containerResources(g, g.spec.containers[0]!, { memoryCapacityBytes: capacity }).oomScoreAdj,
    ).to.equal(-997);
    // Burstable: 400Mi at pod level, containers request 100Mi and 0: 300Mi left, 100Mi each of three.
    const a: Container = { name: 'a', resources: { requests: { memory: '100Mi' } } };
    const b: Container = { name: 'b' };
    const side: Container = { name: 's', restartPolicy: 'Always' };
    const p = podLevel({ requests: { memory: '400Mi' } }, [a, b], [side]);
    const adj = (c: Container) => containerResources(p, c, { memoryCapacityBytes: capacity }).oomScoreAdj;
    expect(adj(a)).to.equal(1000 - 200); // (100 + 100) of 1000 MiB
    expect(adj(b)).to.equal(1000 - 100);
    // The sidecar scores as the regular container with the least request (b) at most.
    expect(adj(side)).to.equal(1000 - 100);
  });
});
