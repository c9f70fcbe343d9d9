/**
 * Pod-level resources (PodLevelResources, PodLevelResourcesFixKubeletQOSClass) on a real containerd through a
 * real v1.37 kube-apiserver: a pod whose `spec.resources` alone sizes it gets its pod cgroup made with the
 * pod-level limits (cgroup files read on the host), its containers without limits of their own get the pod's,
 * the kubelet's QoS class shows in the processes' oom_score_adj (Guaranteed -997, which this containerd
 * clamps to 0; Burstable with the pod-level memory request shared among the containers), a `limits.cpu` resourceFieldRef reads the pod's
 * limit, and a pod whose pod-level request does not fit the node is refused (OutOfcpu) though its containers
 * would fit. Pod-level resources are resized in place (InPlacePodLevelResourcesVerticalScaling): the pod cgroup
 * and the cgroup of a container without limits of its own follow a resize up and down, `status.resources` and
 * `status.allocatedResources` report it, and a resize that does not fit beside the other pods is Deferred.
 * Root on Linux is required.
 *
 * OPERATOR_TEST_LOG=debug shows the operator's log.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import { podCgroupParent } from '../../src/kubelet/kuberuntime/sandboxconfig.js';
import { criRuntimeSpec, podCgroupDirs, type TestContainerd } from '../support/containerd.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventually } from '../support/eventually.js';
import {
  createPodOn,
  cstatus,
  isGone,
  postVirtualNode,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';

const NODE = 'vn-plr';
const PERIOD_NODE = 'vn-plr-period';
const NS = 'plr-e2e';
const MiB = 1024 * 1024;
const CGROUP = '/sys/fs/cgroup';
/** Container `c`: busybox from the harness's images (never pulled), sleeping, with `extra` over that. */
const ctr = (extra: Record<string, unknown> = {}) => ({
  name: 'c',
  image: 'busybox',
  imagePullPolicy: 'IfNotPresent',
  command: ['sleep', 'infinity'],
  ...extra,
});

describe('pod-level resources on containerd (real apiserver, cri runtime)', function () {
  this.timeout(5 * 60_000);
  let env: CriNodeEnv | undefined;
  let ctd: TestContainerd;
  let client: KubeClient;

  const podPath = (name: string) => `/api/v1/namespaces/${NS}/pods/${name}`;
  const running = (name: string) =>
    waitPodStatus(client, NS, name, (s) => cstatus(s)?.state?.running !== undefined, 'running', 90_000);
  /** A cgroup v1 file of the pod's cgroup (`sub` = a container ID for the container's own), as a number. */
  const cgroupFile = async (pod: Pod, controller: string, file: string, sub = ''): Promise<number> => {
    const rel = podCgroupParent(ctd.cgroupParentPrefix, pod.metadata.uid!);
    return Number((await readFile(path.join(CGROUP, controller, rel, sub, file), 'utf8')).trim());
  };
  const containerIdOf = (pod: Pod): string =>
    cstatus(pod.status)!.containerID!.replace(/^containerd:\/\//, '');
  /** oom_score_adj of the first process in the container's cgroup. */
  const oomScoreAdj = async (pod: Pod): Promise<number> => {
    const rel = podCgroupParent(ctd.cgroupParentPrefix, pod.metadata.uid!);
    const procs = await readFile(
      path.join(CGROUP, 'memory', rel, containerIdOf(pod), 'cgroup.procs'),
      'utf8',
    );
    const pid = procs.trim().split('\n')[0]!;
    return Number((await readFile(`/proc/${pid}/oom_score_adj`, 'utf8')).trim());
  };

  before(async function () {
    this.timeout(20 * 60_000);
    if (!(await readFile(path.join(CGROUP, 'cpu', 'cpu.shares'), 'utf8').catch(() => ''))) {
      throw new Error('this test reads cgroup v1 files: /sys/fs/cgroup/cpu/cpu.shares is missing');
    }
    env = await startCriNodeEnv({
      node: NODE,
      namespace: NS,
      spec: { capacity: { cpu: '2', memory: '4Gi', 'ephemeral-storage': '100Gi', pods: 110 } },
    });
    ({ ctd, client } = env);
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await env?.stop();
  });

  it('Guaranteed by its pod-level resources alone: pod cgroup, container cgroup and oom_score_adj from them', async () => {
    const sized = { cpu: '500m', memory: '128Mi' };
    await createPodOn(client, NS, NODE, 'guaranteed', {
      resources: { requests: sized, limits: sized },
      containers: [ctr()],
    });
    const pod = await running('guaranteed');
    expect(pod.status?.qosClass).to.equal('Guaranteed');
    expect(await cgroupFile(pod, 'cpu', 'cpu.shares')).to.equal(512);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_period_us')).to.equal(100_000);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_quota_us')).to.equal(50_000);
    expect(await cgroupFile(pod, 'memory', 'memory.limit_in_bytes')).to.equal(128 * MiB);
    // The container sets no resources: it inherits the pod-level limits (kubelet getCPULimit/getMemoryLimit).
    const id = containerIdOf(pod);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_quota_us', id)).to.equal(50_000);
    expect(await cgroupFile(pod, 'cpu', 'cpu.shares', id)).to.equal(512);
    expect(await cgroupFile(pod, 'memory', 'memory.limit_in_bytes', id)).to.equal(128 * MiB);
    // NoSwap on cgroup v1 with a swap controller: memory+swap equal to the memory limit (the kubelet sends it).
    if (existsSync(path.join(CGROUP, 'memory', 'memory.memsw.limit_in_bytes')))
      expect(await cgroupFile(pod, 'memory', 'memory.memsw.limit_in_bytes', id)).to.equal(128 * MiB);
    // Guaranteed asks -997; this containerd clamps it to its own 0 (restrict_oom_score_adj: root lacks
    // CAP_SYS_RESOURCE here, scripts/containerd.sh). BestEffort would read 1000, Burstable 2 to 999.
    expect(await oomScoreAdj(pod)).to.equal(0);
  });

  it('Burstable at pod level: no cpu quota without a cpu limit, the memory limit, the shared memory request', async () => {
    await createPodOn(client, NS, NODE, 'burstable', {
      resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } },
      containers: [ctr()],
    });
    const pod = await running('burstable');
    expect(pod.status?.qosClass).to.equal('Burstable');
    expect(await cgroupFile(pod, 'cpu', 'cpu.shares')).to.equal(102);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_quota_us')).to.equal(-1);
    expect(await cgroupFile(pod, 'memory', 'memory.limit_in_bytes')).to.equal(256 * MiB);
    // 64Mi of the pod's request is no container's: its one container counts it, 1000 - 1000 * 64Mi / 4Gi.
    expect(await oomScoreAdj(pod)).to.equal(985);
  });

  it('a limits.cpu resourceFieldRef of a container without a limit reads the pod-level limit', async () => {
    await createPodOn(client, NS, NODE, 'downward', {
      restartPolicy: 'Never',
      resources: { limits: { cpu: '500m', memory: '128Mi' } },
      containers: [
        ctr({
          command: ['sh', '-c', 'echo -n "$CPU $MEM" > /dev/termination-log'],
          env: [
            { name: 'CPU', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
            { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
          ],
        }),
      ],
    });
    const pod = await waitPodStatus(
      client,
      NS,
      'downward',
      (s) => s.phase === 'Succeeded',
      'Succeeded',
      90_000,
    );
    expect(cstatus(pod.status)?.state?.terminated?.message).to.equal('500 128');
  });

  it('refuses a pod whose pod-level cpu request does not fit the node, though its containers would', async () => {
    await createPodOn(client, NS, NODE, 'toobig', {
      resources: { requests: { cpu: '3' } },
      containers: [ctr({ resources: { requests: { cpu: '100m' } } })],
    });
    const pod = await waitPodStatus(client, NS, 'toobig', (s) => s.phase === 'Failed', 'Failed', 60_000);
    expect(pod.status?.reason).to.equal('OutOfcpu');
    expect(pod.status?.message).to.match(
      /Node didn't have enough resource: cpu, requested: 3000, used: \d+, capacity: 2000/,
    );
  });

  it("a node's cpuCFSQuotaPeriod sets the CFS period of its pod and container cgroups", async () => {
    // A second VirtualNode on the same containerd, with a 20 ms period (the kubelet's cpuCFSQuotaPeriod).
    await postVirtualNode(client, PERIOD_NODE, {
      capacity: { cpu: '2', memory: '4Gi', pods: 110 },
      runtime: criRuntimeSpec(ctd, env!.logRoot),
      kubelet: { cpuCFSQuotaPeriod: '20ms' },
    });
    await waitNodeReady(client, PERIOD_NODE, 60_000);
    const sized = { cpu: '500m', memory: '64Mi' };
    await createPodOn(client, NS, PERIOD_NODE, 'period', {
      resources: { requests: sized, limits: sized },
      containers: [ctr({ resources: { requests: sized, limits: sized } })],
    });
    const pod = await running('period');
    const id = containerIdOf(pod);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_period_us')).to.equal(20_000);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_quota_us')).to.equal(10_000);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_period_us', id)).to.equal(20_000);
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_quota_us', id)).to.equal(10_000);
    await client.request({ method: 'DELETE', path: podPath('period') });
    await eventually(() => isGone(client, podPath('period')), 60_000, 'period deleted');
  });

  it('resizes pod-level resources in place: the pod cgroup and its limitless container follow, status.resources reports them', async () => {
    const sized = (cpu: string, memory: string) => ({ requests: { cpu, memory }, limits: { cpu, memory } });
    await createPodOn(client, NS, NODE, 'resized', {
      resources: sized('500m', '128Mi'),
      containers: [ctr()],
    });
    let pod = await running('resized');
    const id = containerIdOf(pod);
    const resize = (cpu: string, memory: string) =>
      env!.k([
        'patch',
        'pod',
        'resized',
        '--subresource',
        'resize',
        '--type',
        'merge',
        '-p',
        JSON.stringify({ spec: { resources: sized(cpu, memory) } }),
      ]);
    /** The pod's status reports `cpu`/`memory` at pod level and no resize condition is left. */
    const resized = (cpu: string, memory: string) =>
      waitPodStatus(
        client,
        NS,
        'resized',
        (s) =>
          s.resources?.limits?.cpu === cpu &&
          s.resources?.limits?.memory === memory &&
          s.resources?.requests?.cpu === cpu &&
          s.allocatedResources?.cpu === cpu &&
          s.allocatedResources?.memory === memory &&
          !(s.conditions ?? []).some((c) => c.type.startsWith('PodResize')),
        `resized to ${cpu} / ${memory}`,
        60_000,
      );
    const cgroups = async (p: Pod) => ({
      pod: [
        await cgroupFile(p, 'cpu', 'cpu.shares'),
        await cgroupFile(p, 'cpu', 'cpu.cfs_quota_us'),
        await cgroupFile(p, 'memory', 'memory.limit_in_bytes'),
      ],
      container: [
        await cgroupFile(p, 'cpu', 'cpu.cfs_quota_us', id),
        await cgroupFile(p, 'memory', 'memory.limit_in_bytes', id),
      ],
    });
    expect(pod.status?.resources).to.deep.equal(sized('500m', '128Mi'));
    expect(await cgroups(pod)).to.deep.equal({
      pod: [512, 50_000, 128 * MiB],
      container: [50_000, 128 * MiB],
    });

    // Growing: the pod cgroup grows first (cgroup v1 refuses a child quota above its parent's).
    await resize('1', '192Mi');
    pod = await resized('1', '192Mi');
    expect(await cgroups(pod)).to.deep.equal({
      pod: [1024, 100_000, 192 * MiB],
      container: [100_000, 192 * MiB],
    });
    expect(cstatus(pod.status)?.restartCount).to.equal(0);
    expect(cstatus(pod.status)?.containerID).to.equal(`containerd://${id}`);

    // Shrinking: the container first, then the pod cgroup.
    await resize('250m', '96Mi');
    pod = await resized('250m', '96Mi');
    expect(await cgroups(pod)).to.deep.equal({ pod: [256, 25_000, 96 * MiB], container: [25_000, 96 * MiB] });

    // More than is left beside the other pods, though the node could hold it alone: Deferred, nothing changes.
    await resize('1900m', '96Mi');
    pod = await waitPodStatus(
      client,
      NS,
      'resized',
      (s) => (s.conditions ?? []).some((c) => c.type === 'PodResizePending' && c.reason === 'Deferred'),
      'PodResizePending Deferred',
      60_000,
    );
    expect(pod.status?.resources?.limits?.cpu).to.equal('250m');
    expect(await cgroups(pod)).to.deep.equal({ pod: [256, 25_000, 96 * MiB], container: [25_000, 96 * MiB] });
    // Asked back to what it has: the pending resize is gone.
    await resize('250m', '96Mi');
    await resized('250m', '96Mi');
  });

  it('the pod cgroup goes with the pod', async () => {
    const pod = await client.request<Pod>({ method: 'GET', path: podPath('guaranteed') });
    await client.request({ method: 'DELETE', path: podPath('guaranteed') });
    await eventually(() => isGone(client, podPath('guaranteed')), 60_000, 'guaranteed deleted');
    await eventually(
      async () => (podCgroupDirs(ctd.cgroupParentPrefix, pod.metadata.uid!).length === 0 ? true : undefined),
      60_000,
      'pod cgroup removed',
    );
  });
});
