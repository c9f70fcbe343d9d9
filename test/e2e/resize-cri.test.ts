/**
 * In-place pod resize on a real containerd, driven as a user drives it: `kubectl patch --subresource resize`
 * through the real API server. The new limits are read back from inside the container (its cgroup files, v1 or
 * v2), `status.containerStatuses[].resources` must match, the restart count stays for NotRequired and grows
 * for RestartContainer, a memory limit below the container's usage is refused (PodResizeInProgress Error) and
 * one above it taken, and the Events show in `kubectl describe`; a resize beyond the node is refused by the
 * API server itself (v1.37's PodResizeValidator) and changes nothing. A running init container that is not a
 * sidecar is resized in place too (InPlacePodVerticalScalingInitContainers), its cgroup following.
 *
 * The VirtualNode runs pods in their own network namespaces on a bridge this test creates (CNI), with its node
 * API on the bridge address (kubectl exec). Root on Linux is required.
 */
import { expect } from 'chai';
import type { ContainerStatus, PodStatus } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { hostSwapController } from '../../src/node/swap.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { waitPodStatus } from '../support/operator.js';
import { busybox } from '../support/podspec.js';

const NS = 'resize-e2e';
const NODE = 'vn-resize';

/** The container's cpu quota (µs per 100 ms period; -1 = none) and memory limit, from its own cgroup files. */
const CGROUP_SCRIPT = [
  'if [ -f /sys/fs/cgroup/cpu.max ]; then',
  '  q=$(cut -d" " -f1 /sys/fs/cgroup/cpu.max); [ "$q" = max ] && q=-1; m=$(cat /sys/fs/cgroup/memory.max)',
  'else',
  '  q=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us); m=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)',
  'fi',
  'echo "$q $m"',
].join('\n');

describe('in-place pod resize on containerd (real apiserver, kubectl patch --subresource resize)', function () {
  this.timeout(5 * 60_000);
  let env: CriNodeEnv | undefined;
  let client: KubeClient;

  const k = (args: string[]): Promise<string> => env!.k(args);
  const getPod = (name: string) => env!.getPod(name);
  const resize = (
    name: string,
    container: string,
    cpu: string,
    memory: string,
    list: 'containers' | 'initContainers' = 'containers',
  ) =>
    k([
      'patch',
      'pod',
      name,
      '--subresource',
      'resize',
      '--type',
      'strategic',
      '-p',
      JSON.stringify({
        spec: {
          [list]: [{ name: container, resources: { requests: { cpu, memory }, limits: { cpu, memory } } }],
        },
      }),
    ]);
  const cgroup = async (pod: string, container = 'c'): Promise<[number, number]> => {
    const out = await k(['exec', pod, '-c', container, '--', 'sh', '-c', CGROUP_SCRIPT]);
    const [q, m] = out.trim().split(/\s+/).map(Number);
    return [q!, m!];
  };
  /**
   * The container's swap limit: cgroup v1 memory+swap in bytes, cgroup v2 `memory.swap.max` (`0` under NoSwap),
   * `none` without a swap controller.
   */
  const swapLimit = async (pod: string): Promise<string> =>
    (
      await k([
        'exec',
        pod,
        '--',
        'sh',
        '-c',
        'cat /sys/fs/cgroup/memory.swap.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes 2>/dev/null || echo none',
      ])
    ).trim();
  const statusOf = (s: PodStatus, name = 'c'): ContainerStatus | undefined =>
    s.containerStatuses?.find((c) => c.name === name);
  const initStatusOf = (s: PodStatus, name = 'i'): ContainerStatus | undefined =>
    s.initContainerStatuses?.find((c) => c.name === name);
  /** Resized: the status shows the new resources, no resize condition is left, the generation is seen. */
  const waitResized = (name: string, cpu: string, memory: string, generation: number) =>
    waitPodStatus(
      client,
      NS,
      name,
      (s) => {
        const c = statusOf(s);
        return (
          c?.state?.running !== undefined &&
          c.resources?.limits?.cpu === cpu &&
          c.resources?.limits?.memory === memory &&
          c.allocatedResources?.cpu === cpu &&
          !(s.conditions ?? []).some((x) => x.type.startsWith('PodResize')) &&
          (s.observedGeneration ?? 0) >= generation
        );
      },
      `resized to ${cpu} / ${memory}`,
      60_000,
    );

  before(async function () {
    this.timeout(20 * 60_000);
    env = await startCriNodeEnv({
      node: NODE,
      namespace: NS,
      podNetwork: 'cni',
      spec: { capacity: { cpu: '2', memory: '4Gi' } },
    });
    ({ client } = env);
    const guaranteed = (cpu: string, memory: string) => ({
      requests: { cpu, memory },
      limits: { cpu, memory },
    });
    /** A pod with one busybox container `c` sleeping, sized 200m / 64Mi unless `container` says otherwise. */
    const pod = (name: string, container: Record<string, unknown> = {}) =>
      env!.createPod(name, {
        containers: [
          busybox('c', ['sleep', '3600'], { resources: guaranteed('200m', '64Mi'), ...container }),
        ],
      });
    await Promise.all([
      pod('live'),
      // An init container that is not a sidecar, still running: the pod stays initializing.
      env.createPod('init', {
        initContainers: [busybox('i', ['sleep', '3600'], { resources: guaranteed('200m', '64Mi') })],
        containers: [busybox('c', ['sleep', '3600'], { resources: guaranteed('100m', '32Mi') })],
      }),
      pod('restart', {
        resizePolicy: [
          { resourceName: 'cpu', restartPolicy: 'NotRequired' },
          { resourceName: 'memory', restartPolicy: 'RestartContainer' },
        ],
      }),
      pod('hog', {
        // About 40 MB held by the shell (a loop, so the shell is not replaced by its last command).
        command: [
          'sh',
          '-c',
          'x=$(head -c 40000000 /dev/zero | tr "\\0" a); touch /tmp/ready; while :; do sleep 3600; done',
        ],
        readinessProbe: { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 1 },
        resources: guaranteed('100m', '160Mi'),
      }),
    ]);
    for (const name of ['live', 'restart', 'hog']) {
      await waitPodStatus(client, NS, name, (s) => statusOf(s)?.ready === true, 'ready', 90_000);
    }
    await waitPodStatus(
      client,
      NS,
      'init',
      (s) => initStatusOf(s)?.state?.running !== undefined,
      'init container running',
      90_000,
    );
  });

  after(async function () {
    this.timeout(120_000);
    await env?.stop();
  });

  it('reports applied and allocated resources on a running container, as a resize-capable node does', async () => {
    const s = (await getPod('live')).status!;
    const c = statusOf(s)!;
    expect(c.resources).to.deep.equal({
      limits: { cpu: '200m', memory: '64Mi' },
      requests: { cpu: '200m', memory: '64Mi' },
    });
    expect(c.allocatedResources).to.deep.equal({ cpu: '200m', memory: '64Mi' });
    expect(await cgroup('live')).to.deep.equal([20_000, 64 * 1024 * 1024]);
  });

  it('resizes cpu and memory up, then down, in place: cgroups follow, the restart count does not', async () => {
    await resize('live', 'c', '400m', '96Mi');
    let pod = await waitResized('live', '400m', '96Mi', 2);
    expect(statusOf(pod.status!)!.restartCount).to.equal(0);
    expect(await cgroup('live')).to.deep.equal([40_000, 96 * 1024 * 1024]);

    await resize('live', 'c', '100m', '48Mi');
    pod = await waitResized('live', '100m', '48Mi', 3);
    expect(statusOf(pod.status!)!.restartCount).to.equal(0);
    expect(statusOf(pod.status!)!.resources?.requests).to.deep.equal({ cpu: '100m', memory: '48Mi' });
    expect(await cgroup('live')).to.deep.equal([10_000, 48 * 1024 * 1024]);
    // NodeSwap, NoSwap: the update carries the swap limit too (v1: memory+swap = the new memory limit).
    const controller = hostSwapController();
    expect(await swapLimit('live')).to.equal(
      controller === 'cgroupv1' ? String(48 * 1024 * 1024) : controller === 'cgroupv2' ? '0' : 'none',
    );
    const describe = await k(['describe', 'pod', 'live']);
    expect(describe).to.match(/ResizeStarted/);
    expect(describe).to.match(/ResizeCompleted/);
  });

  it('restarts a container whose resizePolicy says RestartContainer for memory; cpu alone stays in place', async () => {
    await resize('restart', 'c', '300m', '64Mi');
    let pod = await waitResized('restart', '300m', '64Mi', 2);
    expect(statusOf(pod.status!)!.restartCount).to.equal(0);
    await resize('restart', 'c', '300m', '128Mi');
    pod = await waitResized('restart', '300m', '128Mi', 3);
    expect(statusOf(pod.status!)!.restartCount).to.equal(1);
    expect(await cgroup('restart')).to.deep.equal([30_000, 128 * 1024 * 1024]);
  });

  it('refuses a memory limit below what the container uses (PodResizeInProgress Error), then takes one above it', async () => {
    await resize('hog', 'c', '100m', '32Mi');
    const refused = await waitPodStatus(
      client,
      NS,
      'hog',
      (s) => (s.conditions ?? []).some((c) => c.type === 'PodResizeInProgress' && c.reason === 'Error'),
      'PodResizeInProgress Error',
      30_000,
    );
    const cond = refused.status!.conditions!.find((c) => c.type === 'PodResizeInProgress')!;
    expect(cond.message).to.match(
      /^cannot decrease memory limits: attempting to set container "c" memory limit \(33554432\) below current usage \(\d+\)$/,
    );
    expect(statusOf(refused.status!)!.resources?.limits?.memory).to.equal('160Mi');
    expect((await cgroup('hog'))[1]).to.equal(160 * 1024 * 1024);
    expect(await k(['describe', 'pod', 'hog'])).to.match(/ResizeError/);

    await resize('hog', 'c', '100m', '128Mi');
    const pod = await waitResized('hog', '100m', '128Mi', 3);
    expect(statusOf(pod.status!)!.restartCount).to.equal(0);
    expect((await cgroup('hog'))[1]).to.equal(128 * 1024 * 1024);
  });

  it('resizes a running init container that is not a sidecar in place (InPlacePodVerticalScalingInitContainers)', async () => {
    const node = await client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` });
    expect(node.status?.declaredFeatures).to.include('InPlacePodVerticalScalingInitContainers');
    let s = (await getPod('init')).status!;
    expect(initStatusOf(s)!.resources).to.deep.equal({
      limits: { cpu: '200m', memory: '64Mi' },
      requests: { cpu: '200m', memory: '64Mi' },
    });
    expect(initStatusOf(s)!.allocatedResources).to.deep.equal({ cpu: '200m', memory: '64Mi' });
    expect(await cgroup('init', 'i')).to.deep.equal([20_000, 64 * 1024 * 1024]);

    await resize('init', 'i', '400m', '96Mi', 'initContainers');
    const resized = await waitPodStatus(
      client,
      NS,
      'init',
      (st) => {
        const i = initStatusOf(st);
        return (
          i?.state?.running !== undefined &&
          i.resources?.limits?.cpu === '400m' &&
          i.resources?.limits?.memory === '96Mi' &&
          i.allocatedResources?.cpu === '400m' &&
          !(st.conditions ?? []).some((x) => x.type.startsWith('PodResize')) &&
          (st.observedGeneration ?? 0) >= 2
        );
      },
      'init container resized',
      60_000,
    );
    s = resized.status!;
    expect(initStatusOf(s)!.restartCount).to.equal(0);
    expect(initStatusOf(s)!.resources?.requests).to.deep.equal({ cpu: '400m', memory: '96Mi' });
    expect(s.phase).to.equal('Pending');
    expect(await cgroup('init', 'i')).to.deep.equal([40_000, 96 * 1024 * 1024]);
    const describe = await k(['describe', 'pod', 'init']);
    expect(describe).to.match(/ResizeCompleted/);
  });

  it('a resize beyond the node is refused by the v1.37 API server; the pod keeps running as it was', async () => {
    // PodResizeValidator (v1.37) checks node allocatable before the node sees anything; the node's own
    // Infeasible verdict, for an API server without it, is in the cluster suite.
    const err = await resize('live', 'c', '3', '48Mi').then(
      () => '',
      (e: unknown) => String(e),
    );
    expect(err).to.contain(
      "node didn't have enough allocatable resources: cpu, requested: 3000, allocatable: 2000",
    );
    const pod = await getPod('live');
    expect(pod.metadata.generation).to.equal(3);
    expect((pod.status!.conditions ?? []).filter((c) => c.type.startsWith('PodResize'))).to.deep.equal([]);
    expect(statusOf(pod.status!)!.resources?.limits?.cpu).to.equal('100m');
    expect(await cgroup('live')).to.deep.equal([10_000, 48 * 1024 * 1024]);
  });
});
