/**
 * The static CPU manager on a real containerd through a real v1.37 kube-apiserver (issue #60 rows
 * CPUManagerPolicyBetaOptions, DisableCPUQuotaWithExclusiveCPUs): on this 2-CPU host with
 * cpuManagerPolicy static and reservedSystemCPUs "0", a Guaranteed pod asking 1 cpu runs on CPU 1 alone
 * (its process's Cpus_allowed_list and its cgroup's cpuset.cpus) without a CFS quota, a Burstable pod runs on
 * the shared pool (CPU 0), and once the Guaranteed pod is gone the reconcile loop widens the Burstable pod's
 * cpuset to 0-1 with UpdateContainerResources. Root on Linux and cgroup v1 are required.
 *
 * OPERATOR_TEST_LOG=debug shows the operator's log.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import { podCgroupParent } from '../../src/kubelet/kuberuntime/sandboxconfig.js';
import type { TestContainerd } from '../support/containerd.js';
import { startCriNodeEnv, type CriNodeEnv } from '../support/crinode.js';
import { eventually } from '../support/eventually.js';
import { createPodOn, cstatus, isGone, waitPodStatus } from '../support/operator.js';

const NODE = 'vn-cpumgr-cri';
const NS = 'cpumgr-e2e';
const CGROUP = '/sys/fs/cgroup';
const ctr = (extra: Record<string, unknown> = {}) => ({
  name: 'c',
  image: 'busybox',
  imagePullPolicy: 'IfNotPresent',
  command: ['sleep', 'infinity'],
  ...extra,
});

describe('static CPU manager on containerd (real apiserver, cri runtime)', function () {
  this.timeout(5 * 60_000);
  let env: CriNodeEnv | undefined;
  let ctd: TestContainerd;
  let client: KubeClient;

  const running = (name: string) =>
    waitPodStatus(client, NS, name, (s) => cstatus(s)?.state?.running !== undefined, 'running', 90_000);
  const containerIdOf = (pod: Pod): string =>
    cstatus(pod.status)!.containerID!.replace(/^containerd:\/\//, '');
  const cgroupFile = async (pod: Pod, controller: string, file: string): Promise<string> => {
    const rel = podCgroupParent(ctd.cgroupParentPrefix, pod.metadata.uid!);
    return (await readFile(path.join(CGROUP, controller, rel, containerIdOf(pod), file), 'utf8')).trim();
  };
  /** Cpus_allowed_list of the container's first process, as the process itself reads it in /proc/self/status. */
  const cpusAllowed = async (pod: Pod): Promise<string> => {
    const pid = (await cgroupFile(pod, 'cpuset', 'cgroup.procs')).split('\n')[0]!;
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)![1]!;
  };

  before(async function () {
    this.timeout(20 * 60_000);
    const online = (await readFile('/sys/devices/system/cpu/online', 'utf8')).trim();
    if (online !== '0-1')
      throw new Error(`this test expects a 2-CPU host (online CPUs 0-1), found ${online}`);
    if (!(await readFile(path.join(CGROUP, 'cpuset', 'cpuset.cpus'), 'utf8').catch(() => ''))) {
      throw new Error('this test reads cgroup v1 files: /sys/fs/cgroup/cpuset/cpuset.cpus is missing');
    }
    env = await startCriNodeEnv({
      node: NODE,
      namespace: NS,
      spec: {
        capacity: { cpu: '2', memory: '4Gi', 'ephemeral-storage': '100Gi', pods: 110 },
        kubelet: { cpuManagerPolicy: 'static', reservedSystemCPUs: '0', cpuManagerReconcilePeriod: '1s' },
      },
    });
    ({ ctd, client } = env);
  });

  after(async function () {
    this.timeout(5 * 60_000);
    await env?.stop();
  });

  it('runs a Guaranteed pod of 1 cpu on CPU 1 alone, without a CFS quota', async () => {
    const one = { cpu: '1', memory: '64Mi' };
    await createPodOn(client, NS, NODE, 'pinned', {
      containers: [ctr({ resources: { requests: one, limits: one } })],
    });
    const pod = await running('pinned');
    expect(pod.status?.qosClass).to.equal('Guaranteed');
    expect(await cpusAllowed(pod)).to.equal('1');
    expect(await cgroupFile(pod, 'cpuset', 'cpuset.cpus')).to.equal('1');
    expect(await cgroupFile(pod, 'cpu', 'cpu.cfs_quota_us')).to.equal('-1');
  });

  it('runs a Burstable pod on the shared pool, widened once the pinned pod is gone', async () => {
    await createPodOn(client, NS, NODE, 'shared', {
      containers: [ctr({ resources: { requests: { cpu: '100m' } } })],
    });
    const pod = await running('shared');
    expect(await cpusAllowed(pod)).to.equal('0');
    await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/pinned` });
    await eventually(() => isGone(client, `/api/v1/namespaces/${NS}/pods/pinned`), 90_000, 'pinned gone');
    await eventually(
      async () => ((await cpusAllowed(pod)) === '0-1' ? true : undefined),
      30_000,
      'the shared pool widened to 0-1 by the reconcile loop',
    );
    expect(await cgroupFile(pod, 'cpuset', 'cpuset.cpus')).to.equal('0-1');
  });
});
