/**
 * The static CPU manager and the topology manager (issue #60 rows CPUManagerPolicyBetaOptions,
 * DisableCPUQuotaWithExclusiveCPUs, TopologyManagerPolicyOptions) on a simulated VirtualNode against a real
 * kube-apiserver: a node of 1 socket, 2 NUMA nodes of 2 cores with 2 threads (CPUs 0,1,4,5 on NUMA 0 and
 * 2,3,6,7 on NUMA 1), core 0 (CPUs 0 and 4) reserved, full-pcpus-only, single-numa-node. Pods are refused
 * the kubelet's way (Failed, reason and message, a Warning Event) and the assignments land in the node's
 * cpu_manager_state. A second VirtualNode with a bad option does not start (StartFailed).
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator/controller.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import {
  adminClient,
  createPodOn,
  postVirtualNode,
  startTestOperator,
  testLogger,
  VN_PATH,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';
import { RealClock } from '../../src/util/clock.js';
import { testStateDir } from '../support/statedir.js';

const NODE = 'vn-cpumgr';
const NS = 'default';

const guaranteed = (cpu: string): Record<string, unknown> => ({
  containers: [
    {
      name: 'c',
      image: 'busybox',
      command: ['sleep', 'infinity'],
      resources: { requests: { cpu, memory: '64Mi' }, limits: { cpu, memory: '64Mi' } },
    },
  ],
});

describe('CPU and topology managers (real apiserver, sim node)', function () {
  this.timeout(5 * 60_000);
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let op: Operator | undefined;
  const stateDir = testStateDir();
  const checkpoint = (): { defaultCpuSet: string; entries?: Record<string, Record<string, string>> } =>
    JSON.parse(readFileSync(path.join(stateDir, 'nodes', NODE, 'cpu_manager_state'), 'utf8'));

  before(async () => {
    cp = await startControlPlane();
    client = await adminClient(cp);
    op = await startTestOperator({ client, clock: new RealClock(), logger: testLogger(), stateDir });
    await postVirtualNode(client, NODE, {
      runtime: { type: 'sim', sim: { podCIDR: '10.86.0.0/24' } },
      capacity: { cpu: '8', memory: '16Gi' },
      kubelet: {
        cpuManagerPolicy: 'static',
        cpuManagerPolicyOptions: { 'full-pcpus-only': 'true' },
        cpuManagerReconcilePeriod: '1s',
        reservedSystemCPUs: '0,4',
        topologyManagerPolicy: 'single-numa-node',
        cpuTopology: { sockets: 1, numaNodesPerSocket: 2, coresPerNUMANode: 2, threadsPerCore: 2 },
      },
    });
    await waitNodeReady(client, NODE);
  });

  after(async () => {
    await op?.stop();
    client?.close();
    await cp?.stop();
  });

  const rejected = async (name: string, reason: string, message: string): Promise<void> => {
    const pod = await waitPodStatus(client, NS, name, (s) => s.phase === 'Failed', 'Failed', 60_000);
    expect(pod.status).to.deep.include({ reason, message: `Pod was rejected: ${message}` });
    await eventually(
      async () => {
        const list = await client.request<{ items: { reason?: string; type?: string; message?: string }[] }>({
          method: 'GET',
          path: `/api/v1/namespaces/${NS}/events?fieldSelector=involvedObject.name=${name}`,
        });
        return list.items.find((e) => e.reason === reason && e.type === 'Warning' && e.message === message);
      },
      30_000,
      `${name}: Warning Event ${reason}`,
    );
  };

  it('pins a Guaranteed pod of 4 CPUs to the one free NUMA node and keeps the reserved core shared', async () => {
    const pod = await createPodOn(client, NS, NODE, 'pinned', guaranteed('4'));
    await waitPodStatus(client, NS, 'pinned', (s) => s.phase === 'Running', 'Running', 60_000);
    const state = checkpoint();
    expect(state.entries?.[pod.metadata.uid!]).to.deep.equal({ c: '2-3,6-7' });
    expect(state.defaultCpuSet).to.equal('0-1,4-5');
  });

  it('refuses an odd request under full-pcpus-only with SMTAlignmentError', async () => {
    await createPodOn(client, NS, NODE, 'odd', guaranteed('1'));
    await rejected(
      'odd',
      'SMTAlignmentError',
      'SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2',
    );
  });

  it('refuses what no single NUMA node can hold any more with TopologyAffinityError', async () => {
    await createPodOn(client, NS, NODE, 'toobig', guaranteed('2'));
    // NUMA 0 has CPUs 1 and 5 free (core 1): 2 fit; a second pod of 2 no longer does.
    await waitPodStatus(client, NS, 'toobig', (s) => s.phase === 'Running', 'Running', 60_000);
    await createPodOn(client, NS, NODE, 'nofit', guaranteed('2'));
    await rejected('nofit', 'TopologyAffinityError', 'Resources cannot be allocated with Topology locality');
  });

  it('runs a Burstable pod on the shared pool and returns CPUs when a pod goes', async () => {
    await createPodOn(client, NS, NODE, 'burstable', {
      containers: [
        {
          name: 'c',
          image: 'busybox',
          command: ['sleep', 'infinity'],
          resources: { requests: { cpu: '100m' } },
        },
      ],
    });
    await waitPodStatus(client, NS, 'burstable', (s) => s.phase === 'Running', 'Running', 60_000);
    const pinned = await client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${NS}/pods/pinned` });
    await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/pinned` });
    await eventually(
      async () => (checkpoint().entries?.[pinned.metadata.uid!] === undefined ? true : undefined),
      60_000,
      'the deleted pod CPUs back in the shared pool',
    );
    expect(checkpoint().defaultCpuSet).to.equal('0,2-4,6-7');
  });

  it('does not start a node with an alpha option, saying why (StartFailed)', async () => {
    await postVirtualNode(client, 'vn-cpumgr-bad', {
      runtime: { type: 'sim', sim: { podCIDR: '10.87.0.0/24' } },
      kubelet: {
        cpuManagerPolicy: 'static',
        kubeReserved: { cpu: '1' },
        cpuManagerPolicyOptions: { 'align-by-socket': 'true' },
      },
    });
    const ready = await eventually(
      async () => {
        const vn = await client.request<{
          status?: { conditions?: { type: string; reason?: string; message?: string }[] };
        }>({ method: 'GET', path: `${VN_PATH}/vn-cpumgr-bad` });
        const c = vn.status?.conditions?.find((x) => x.type === 'Ready');
        return c?.reason === 'StartFailed' ? c : undefined;
      },
      60_000,
      'vn-cpumgr-bad StartFailed',
    );
    expect(ready.message).to.contain(
      'CPU Manager Policy Alpha-level Options not enabled, but option "align-by-socket" provided',
    );
  });
});
