// `npm run bench:write-cost [-- --pods N --rounds R] [--audit-events]`
// What kube-apiserver and etcd spend on each write of a pod start, by kind, on the scale benchmark's own
// control plane (bench/lib/cluster.ts: the Metadata audit log, Events left out of it unless --audit-events,
// each agent with the ServiceAccount token, RBAC and FlowSchema its manifests give it). The kinds:
//   - the driver's pod create (the same on both sides of `scale`);
//   - a pod's first status write as kubelet-operator sends it once the pod is Running and Ready: the status
//     manager's own strategic merge patch (createPodStatusPatch) of the status it writes for the benchmark's
//     pod, through its own client (restPodStatusClient: UID precondition, metadata-only answer);
//   - the same with parts taken out, to say what costs: without observedGeneration, then also with kwok's
//     three conditions in place of the kubelet's five;
//   - kwok's status write, as kwok v0.8.0's default pod-ready stage sends it (the body as a scale run's audit
//     log recorded it; strategic merge, the whole pod answered as JSON), as kwok's ServiceAccount;
//   - the start's three Events (Pulled, Created, Started), through the operator's EventRecorder, REST sink
//     and Event connection pool.
// Each round sends every kind in turn (the status writes starting with another each round), N of each (N pods,
// or 3 N Events), 16 in flight; the CPU of kube-apiserver and etcd (/proc/<pid>/stat) before and after each
// kind gives its cost per request. Prints the median over the rounds and what a pod start's writes cost the
// API server on each side.
import { KubeConfig } from '@kubernetes/client-node';
import type { PodStatus } from '../src/api/core.js';
import { EVENT_CONNECTIONS } from '../src/config.js';
import { KubeClient, PatchTypes } from '../src/kube/client.js';
import { EventRecorder } from '../src/kube/events.js';
import { restPodStatusClient } from '../src/kubelet/shell/statusclient.js';
import { createPodStatusPatch, type PodStatusPatch } from '../src/kubelet/status/patch.js';
import { restEventSink } from '../src/node/api.js';
import { RealClock } from '../src/util/clock.js';
import { forEachConcurrently } from '../src/util/pool.js';
import { ensureKwok } from './lib/agents.js';
import { positiveArg } from './lib/args.js';
import { startBenchCluster, type BenchCluster } from './lib/cluster.js';
import { BENCH_IMAGE, benchPod, ensureNamespace, POD_START_EVENTS } from './lib/pods.js';
import { readProc } from './lib/procstat.js';
import { median } from './lib/stats.js';
import { formatTable, num } from './lib/table.js';

const PODS = positiveArg('--pods', 2000);
const ROUNDS = positiveArg('--rounds', 4);
const IN_FLIGHT = 16;
/** Pods per VirtualNode in `scale`, so Events per recorder. */
const PODS_PER_NODE = 100;
const NAMESPACE = 'write-cost';
const NODE = 'vn-0';
const IMAGE_ID = `registry.k8s.io/e2e-test-images/agnhost@sha256:${'36a9e71d'.repeat(8)}`;

interface Created {
  name: string;
  uid: string;
  status: PodStatus;
  podIP: string;
}

type StatusKind = 'ours' | 'ours, no observedGeneration' | "ours, kwok's 3 conditions" | 'kwok';
const STATUS_KINDS: readonly StatusKind[] = [
  'ours',
  'ours, no observedGeneration',
  "ours, kwok's 3 conditions",
  'kwok',
];

const iso = (d: Date): string => d.toISOString().replace(/\.\d+Z$/, 'Z');

/** The Running and Ready status kubelet-operator writes for the benchmark's pod on a simulated node. */
function operatorStatus(p: Created, kind: StatusKind): PodStatus {
  const now = iso(new Date());
  const generation = kind === 'ours' ? { observedGeneration: 1 } : {};
  const types =
    kind === "ours, kwok's 3 conditions"
      ? ['Initialized', 'Ready', 'ContainersReady']
      : ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'];
  return {
    ...p.status,
    phase: 'Running',
    conditions: types.map((type) => ({ type, status: 'True', ...generation, lastTransitionTime: now })),
    ...generation,
    hostIP: '127.0.0.1',
    hostIPs: [{ ip: '127.0.0.1' }],
    podIP: p.podIP,
    podIPs: [{ ip: p.podIP }],
    startTime: now,
    containerStatuses: [
      {
        name: 'app',
        ready: true,
        restartCount: 0,
        image: BENCH_IMAGE,
        imageID: IMAGE_ID,
        containerID: `sim://${p.uid.replace(/-/g, '').repeat(2)}`,
        started: true,
        state: { running: { startedAt: now } },
      },
    ],
  };
}

/** kwok v0.8.0's pod-ready patch body, as the audit log of a scale run recorded it. */
function kwokPatch(p: Created): object {
  const now = new Date().toISOString().replace('Z', '000Z');
  return {
    status: {
      conditions: ['Initialized', 'Ready', 'ContainersReady'].map((type) => ({
        lastTransitionTime: now,
        status: 'True',
        type,
      })),
      containerStatuses: [
        {
          image: BENCH_IMAGE,
          name: 'app',
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: now } },
        },
      ],
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
      initContainerStatuses: null,
      phase: 'Running',
      podIP: p.podIP,
      podIPs: [{ ip: p.podIP }],
      startTime: now,
    },
  };
}

/** The scale benchmark's pod, labelled with its round so that the round can delete its pods at once. */
function podOf(name: string, round: string): object {
  const pod = benchPod(name, NAMESPACE, NODE) as { metadata: { labels: Record<string, string> } };
  return { ...pod, metadata: { ...pod.metadata, labels: { ...pod.metadata.labels, round } } };
}

async function clientOf(kubeconfig: string, userAgent: string): Promise<KubeClient> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return KubeClient.fromKubeConfig(kc, { unlimited: true, userAgent });
}

/** CPU seconds kube-apiserver and etcd use while `work` runs (after a pause for what came before). */
async function measured(
  bc: BenchCluster,
  work: () => Promise<void>,
): Promise<{ apiserverSec: number; etcdSec: number }> {
  const pid = (name: string): number => {
    const c = bc.cp.processes().find((p) => p.name === name);
    if (!c) throw new Error(`no ${name} in the control plane`);
    return c.pid;
  };
  const cpu = (name: string): number => {
    const s = readProc(pid(name));
    if (!s) throw new Error(`cannot read /proc of ${name}`);
    return s.cpuSec;
  };
  await new Promise((r) => setTimeout(r, 2000));
  const [a0, e0] = [cpu('kube-apiserver'), cpu('etcd')];
  await work();
  return { apiserverSec: cpu('kube-apiserver') - a0, etcdSec: cpu('etcd') - e0 };
}

const kwokDir = (await ensureKwok()).dir;
// Events are left out of the audit log unless asked (bench/lib/audit.ts); --audit-events measures them audited.
const bc = await startBenchCluster({ kwokDir, auditEvents: process.argv.includes('--audit-events') });
const perRequest = new Map<string, { apiserverMs: number[]; etcdMs: number[] }>();
const record = (kind: string, requests: number, m: { apiserverSec: number; etcdSec: number }): void => {
  const r = perRequest.get(kind) ?? { apiserverMs: [], etcdMs: [] };
  r.apiserverMs.push((m.apiserverSec * 1000) / requests);
  r.etcdMs.push((m.etcdSec * 1000) / requests);
  perRequest.set(kind, r);
};
try {
  const ours = await clientOf(bc.operator.kubeconfig, 'kubelet-operator');
  const kwok = await clientOf(bc.kwok!.kubeconfig, 'kwok/v0.8.0 (linux/amd64)');
  const statusClient = restPodStatusClient(ours);
  const events = ours.withPool(EVENT_CONNECTIONS);
  const clock = new RealClock();
  await ensureNamespace(bc.driver, NAMESPACE);
  for (let round = 0; round < ROUNDS; round++) {
    const tag = `w${round}`;
    const names = Array.from({ length: PODS * STATUS_KINDS.length }, (_, i) => `${tag}-${i}`);
    const created: Created[] = [];
    record(
      'pod create (the driver)',
      names.length,
      await measured(bc, () =>
        forEachConcurrently(names, IN_FLIGHT, async (name) => {
          const pod = await bc.driver.request<{ metadata: { uid: string }; status: PodStatus }>({
            method: 'POST',
            path: `/api/v1/namespaces/${NAMESPACE}/pods`,
            body: podOf(name, tag),
          });
          const i = created.length;
          created.push({
            name,
            uid: pod.metadata.uid,
            status: pod.status,
            podIP: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
          });
        }),
      ),
    );
    // Each round starts with another kind: what the creates left the API server's collector to do lands on
    // the first kind measured, and must not land on one kind only.
    const order = STATUS_KINDS.map((_, k) => STATUS_KINDS[(k + round) % STATUS_KINDS.length]!);
    for (const [k, kind] of order.entries()) {
      const pods = created.slice(k * PODS, (k + 1) * PODS);
      // Built before the clock starts: what is measured is the API server's work, not ours.
      const bodies = pods.map((p) =>
        kind === 'kwok'
          ? kwokPatch(p)
          : (createPodStatusPatch(p.uid, p.status, operatorStatus(p, kind)) as PodStatusPatch),
      );
      const work = pods.map((p, i) => ({ p, body: bodies[i]! }));
      record(
        `status write, ${kind}`,
        pods.length,
        await measured(bc, () =>
          forEachConcurrently(work, IN_FLIGHT, async ({ p, body }) => {
            if (kind === 'kwok') {
              await kwok.request({
                method: 'PATCH',
                path: `/api/v1/namespaces/${NAMESPACE}/pods/${p.name}/status`,
                body,
                contentType: PatchTypes.strategic,
              });
            } else {
              await statusClient.patchPodStatus(NAMESPACE, p.name, p.uid, body as PodStatusPatch);
            }
          }),
        ),
      );
    }
    // A recorder per 100 pods, as each VirtualNode of `scale` has its own: one recorder queues at most 1,000
    // Events (as the kubelet's broadcaster), and 3 N would overflow it.
    const eventPods = created.slice(0, PODS);
    const recorders: EventRecorder[] = [];
    for (let i = 0; i < eventPods.length; i += PODS_PER_NODE) {
      recorders.push(new EventRecorder(restEventSink(events), clock, `vn-${i / PODS_PER_NODE}`));
    }
    record(
      "Event create (a pod start's Pulled, Created, Started)",
      eventPods.length * POD_START_EVENTS.length,
      await measured(bc, async () => {
        eventPods.forEach((p, i) => {
          const ref = {
            kind: 'Pod',
            apiVersion: 'v1',
            namespace: NAMESPACE,
            name: p.name,
            uid: p.uid,
            fieldPath: 'spec.containers{app}',
          };
          const recorder = recorders[Math.floor(i / PODS_PER_NODE)]!;
          for (const [reason, message] of POD_START_EVENTS) recorder.event(ref, 'Normal', reason, message);
        });
        await Promise.all(recorders.map((r) => r.flush()));
      }),
    );
    const written = recorders.reduce((n, r) => n + r.stats.created, 0);
    if (written !== eventPods.length * POD_START_EVENTS.length) {
      throw new Error(`${written} of ${eventPods.length * POD_START_EVENTS.length} Events written`);
    }
    await bc.driver.request({
      method: 'DELETE',
      path: `/api/v1/namespaces/${NAMESPACE}/pods?labelSelector=round%3D${tag}`,
      body: { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 },
    });
    console.log(`round ${round + 1} of ${ROUNDS} done`);
  }
  ours.close();
  kwok.close();
} finally {
  await bc.stop();
}

const ms = (kind: string): { api: number; etcd: number } => {
  const r = perRequest.get(kind)!;
  return { api: median(r.apiserverMs), etcd: median(r.etcdMs) };
};
console.log(
  `\n${PODS} pods a kind, ${ROUNDS} rounds, ${IN_FLIGHT} in flight; CPU per request, median of the rounds ` +
    '(each round in brackets)\n',
);
console.log(
  formatTable(
    ['write', 'kube-apiserver', 'etcd'],
    [...perRequest].map(([kind, r]) => [
      kind,
      `${num(median(r.apiserverMs), 3, 'ms')} (${r.apiserverMs.map((v) => v.toFixed(3)).join(', ')})`,
      `${num(median(r.etcdMs), 3, 'ms')} (${r.etcdMs.map((v) => v.toFixed(3)).join(', ')})`,
    ]),
  ),
);
const status = ms('status write, ours');
const event = ms("Event create (a pod start's Pulled, Created, Started)");
const theirs = ms('status write, kwok');
console.log(
  `\na pod start's writes besides the driver's create: ours (1 status write + 3 Events) ` +
    `${num(status.api + 3 * event.api, 2, 'ms')} of kube-apiserver and ${num(status.etcd + 3 * event.etcd, 2, 'ms')} ` +
    `of etcd; kwok (1 status write) ${num(theirs.api, 2, 'ms')} and ${num(theirs.etcd, 2, 'ms')}`,
);
