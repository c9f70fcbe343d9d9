/**
 * Chaos 3, containerd restarted under churn. One operator process serves a `cri` VirtualNode on a real
 * containerd (host network, busybox). Four steady pods run; a driver creates a pod every second and deletes
 * the oldest beyond six. Meanwhile containerd itself is stopped (its shims and containers keep running) and
 * started again once the Node has been seen NotReady and at least 5 s have passed. What this proves:
 * - the Node goes NotReady while the runtime is down (its status is computed every 2 s here) and Ready again
 *   after it is back;
 * - no pod has two sandboxes or two containers of one name in containerd (listed by pod UID), no container
 *   showed two IDs in a status, and no restart count rose. One rise is the kubelet's own: a pod being deleted
 *   whose container's SIGKILL lands just as containerd goes down comes back as UNKNOWN in containerd 1.6, and the
 *   kubelet then reports it terminated (ContainerStatusUnknown) with its count one up. Such rises are counted
 *   and printed apart, and nothing else may raise a count;
 * - the steady pods are untouched: the same sandbox and container IDs, still running, still Ready;
 * - the churn converges: the alive pods Running and Ready, the deleted ones gone from the API and from
 *   containerd.
 */
import { expect } from 'chai';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { CriRuntime } from '../../src/runtime/cri/client.js';
import { ContainerNameLabel, PodUIDLabel } from '../../src/runtime/labels.js';
import { criRuntimeSpec, startContainerd, type TestContainerd } from '../support/containerd.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { removeStateDir } from '../support/statedir.js';
import { adminClient, postVirtualNode, waitNodeReady } from '../support/operator.js';
import { killLive, OperatorProcess } from '../support/operatorprocess.js';
import { Churn } from './lib/churn.js';
import { createPod, deletePod, listPods, sleeperPod } from './lib/cluster.js';
import { bareID, NodeLedger, podIsReady, PodLedger } from './lib/ledger.js';
import { Measurements } from './lib/report.js';
import { ResumingWatch } from './lib/watch.js';

const NODE = 'vn-ctrd-chaos';
const NS = 'chaos-containerd';
const STEADY = ['steady-0', 'steady-1', 'steady-2', 'steady-3'];
const MIN_DOWN_MS = 5_000;

/** A pod's objects in containerd: its sandboxes, and its containers by name. */
interface InRuntime {
  sandboxes: string[];
  containers: Map<string, string[]>;
}

describe('chaos: containerd restarted under pod churn (cri, 1 operator process)', function () {
  this.timeout(8 * 60_000);
  let cp: ControlPlane | undefined;
  let ctd: TestContainerd | undefined;
  let cri: CriRuntime | undefined;
  let client: KubeClient;
  let dir = '';
  let op: OperatorProcess | undefined;
  let failed = false;
  const pods = new PodLedger();
  const nodes = new NodeLedger();
  const watches: { stop(): Promise<void> }[] = [];
  const m = new Measurements('containerd restart under churn');
  /** Stopped in `after` too: a failure half way must not leave it creating pods (and mocha waiting). */
  let activeChurn: Churn | undefined;

  /** Every sandbox and container in containerd, by pod UID. */
  const runtimeByPod = async (): Promise<Map<string, InRuntime>> => {
    const [sandboxes, containers] = await Promise.all([cri!.listPodSandbox(), cri!.listContainers()]);
    const out = new Map<string, InRuntime>();
    const of = (uid: string): InRuntime => {
      let r = out.get(uid);
      if (!r) out.set(uid, (r = { sandboxes: [], containers: new Map() }));
      return r;
    };
    for (const s of sandboxes) of(s.labels[PodUIDLabel] ?? '?').sandboxes.push(`${s.id}:${s.state}`);
    for (const c of containers) {
      const r = of(c.labels[PodUIDLabel] ?? '?');
      const name = c.labels[ContainerNameLabel] ?? '?';
      r.containers.set(name, [...(r.containers.get(name) ?? []), `${c.id}:${c.state}`]);
    }
    return out;
  };

  before(async function () {
    this.timeout(20 * 60_000); // a cold machine installs containerd and builds the binaries
    dir = await mkdtemp(path.join(tmpdir(), 'ko-chaos-ctrd-'));
    [cp, ctd] = await Promise.all([startControlPlane(), startContainerd()]);
    cri = new CriRuntime({ endpoint: ctd.endpoint });
    client = await adminClient(cp, { namespace: NS, client: { qps: 200, burst: 400 } });
    const podWatch = new ResumingWatch<Pod>(client, `/api/v1/namespaces/${NS}/pods`, pods.observe);
    const nodeWatch = new ResumingWatch<Node>(client, '/api/v1/nodes', nodes.observe);
    await Promise.all([podWatch.start(), nodeWatch.start()]);
    watches.push(podWatch, nodeWatch);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(5 * 60_000);
    activeChurn?.stop();
    m.print();
    await Promise.all(watches.map((w) => w.stop()));
    if (failed && op) console.error(`--- ${op.logPath}\n${op.tail(40)}`);
    await op?.kill('SIGKILL');
    killLive();
    await cri?.close().catch(() => undefined);
    client?.close();
    await Promise.allSettled([cp?.stop(), ctd?.stop()]);
    if (failed || process.env.KEEP_OPERATOR_LOGS) console.log(`      operator logs kept in ${dir}`);
    else await removeStateDir(dir); // the mounts under it first (a cri node root is a shared bind mount)
  });

  it('serves a cri VirtualNode with four steady pods Running and Ready', async () => {
    op = new OperatorProcess(path.join(dir, 'operator.log'), cp!.kubeconfigPath, [
      '--log-level=info',
      `--state-dir=${path.join(dir, 'state')}`,
    ]);
    await op.waitReady();
    await postVirtualNode(client, NODE, {
      runtime: criRuntimeSpec(ctd!, path.join(dir, 'pod-logs')),
      heartbeat: { statusUpdateFrequencySeconds: 2 },
    });
    await waitNodeReady(client, NODE, 60_000);
    for (const name of STEADY) await createPod(client, NS, sleeperPod(name, NODE, ctd!.images.busybox));
    await eventually(
      async () => {
        const list = await listPods(client, NS);
        return list.length === STEADY.length && list.every(podIsReady) ? true : undefined;
      },
      60_000,
      'the steady pods Ready',
    );
  });

  it('containerd stopped and started while pods come and go: NotReady then Ready, nothing doubled, steady pods untouched', async () => {
    const steadyBefore = new Map((await listPods(client, NS)).map((p) => [p.metadata.uid ?? '', p]));
    const runtimeBefore = await runtimeByPod();
    const churn = new Churn({
      maxAlive: 6,
      ratePerSecond: 1,
      concurrency: 4,
      name: (i) => `churn-${String(i).padStart(3, '0')}`,
      create: async (name) => {
        await createPod(client, NS, sleeperPod(name, NODE, ctd!.images.busybox));
      },
      delete: (name) => deletePod(client, NS, name),
    });
    activeChurn = churn;
    const churning = churn.run();
    // Churn first, so that pods are at every stage when the runtime goes.
    await eventually(() => churn.created >= 10, 60_000, '10 churn pods created');

    // The socket goes away as soon as containerd gets SIGTERM, before its process has exited: time from then.
    const stoppedAt = Date.now();
    let exitedAt = 0;
    let notReadyAt = 0;
    let startingAt = 0;
    await ctd!.restartDaemon(async () => {
      exitedAt = Date.now();
      notReadyAt = await eventually(
        () => nodes.samples(NODE).find((s) => s.at >= stoppedAt && s.status !== 'True')?.at,
        30_000,
        'the Node NotReady while containerd is down',
        50,
      ).catch(async (err: unknown) => {
        const n = await client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${NODE}` });
        const ready = n.status?.conditions?.find((c) => c.type === 'Ready');
        console.log(
          `      ${String(err)}; the Node says ${JSON.stringify(ready)}; samples ${JSON.stringify(nodes.samples(NODE))}`,
        );
        return 0;
      });
      // A measured hold: at least MIN_DOWN_MS down in all.
      await new Promise((r) => setTimeout(r, Math.max(0, stoppedAt + MIN_DOWN_MS - Date.now())));
      startingAt = Date.now();
    });
    const upAt = Date.now();
    const readyAgainAt = await eventually(
      () => nodes.samples(NODE).find((s) => s.at >= upAt && s.status === 'True')?.at,
      60_000,
      'the Node Ready again',
      50,
    );
    const createdAtRestart = churn.created;
    await eventually(() => churn.created >= createdAtRestart + 10, 60_000, '10 more churn pods');
    churn.stop();
    await churning;

    // Converged: the alive pods Ready, the deleted ones gone from the API.
    const alive = new Set([...STEADY, ...churn.alive]);
    const converged = await eventually(
      async () => {
        const list = await listPods(client, NS);
        return list.length === alive.size &&
          list.every((p) => alive.has(p.metadata.name ?? '') && podIsReady(p))
          ? list
          : undefined;
      },
      120_000,
      `the ${alive.size} alive pods Ready and the deleted ones gone`,
      250,
    );
    const convergedAt = Date.now();
    const liveUIDs = new Set(converged.map((p) => p.metadata.uid ?? ''));
    // ...and from containerd.
    const runtime = await eventually(
      async () => {
        const r = await runtimeByPod();
        return [...r.keys()].every((uid) => liveUIDs.has(uid)) ? r : undefined;
      },
      60_000,
      'nothing of the deleted pods left in containerd',
    );

    const doubled: string[] = [];
    for (const p of converged) {
      const r = runtime.get(p.metadata.uid ?? '');
      if (!r || r.sandboxes.length !== 1 || !r.sandboxes[0]!.endsWith(':ready'))
        doubled.push(`${p.metadata.name}: sandboxes ${r?.sandboxes.join(' ') ?? 'none'}`);
      for (const [name, ids] of r?.containers ?? [])
        if (ids.length !== 1 || !ids[0]!.endsWith(':running'))
          doubled.push(`${p.metadata.name}/${name}: ${ids.join(' ')}`);
      const running = (p.status?.containerStatuses ?? []).map((c) => bareID(c.containerID ?? ''));
      const listed = [...(r?.containers.values() ?? [])].flat().map((x) => x.split(':')[0]);
      if (running.join() !== listed.join())
        doubled.push(`${p.metadata.name}: status ${running} vs ${listed}`);
    }
    const touched: string[] = [];
    for (const [uid, p] of steadyBefore) {
      const now = converged.find((q) => q.metadata.uid === uid);
      const was = runtimeBefore.get(uid);
      const is = runtime.get(uid);
      if (
        !now ||
        JSON.stringify(now.status?.containerStatuses?.map((c) => [c.containerID, c.restartCount])) !==
          JSON.stringify(p.status?.containerStatuses?.map((c) => [c.containerID, c.restartCount])) ||
        JSON.stringify(was?.sandboxes) !== JSON.stringify(is?.sandboxes) ||
        JSON.stringify([...(was?.containers ?? [])]) !== JSON.stringify([...(is?.containers ?? [])])
      )
        touched.push(p.metadata.name ?? uid);
    }

    m.add('churn pods created / deleted', `${churn.created} / ${churn.deleted}`);
    m.add('create / delete request failures', `${churn.createFailures} / ${churn.deleteFailures}`);
    m.addMs('SIGTERM -> containerd exited', exitedAt - stoppedAt);
    m.addMs('containerd down (SIGTERM -> started again)', startingAt - stoppedAt);
    m.addMs('stop -> Node seen NotReady', notReadyAt - stoppedAt);
    m.addMs('containerd answering -> Node seen Ready', readyAgainAt - upAt);
    m.addMs('churn end -> converged', convergedAt - churn.finishedAt);
    m.add(
      'Node Ready samples',
      nodes
        .samples(NODE)
        .map((s) => s.status)
        .join(' '),
    );
    m.add('pods with doubled sandboxes or containers', doubled.length);
    m.add(
      'containers restarted / with two IDs',
      `${pods.restarted().length} / ${pods.createdTwice().length}`,
    );
    m.add(
      'deleted pods whose containerd lost a container (count +1, as the kubelet)',
      pods.lostByRuntime().join(', ') || 0,
    );
    m.add('steady pods touched', touched.length);

    expect(notReadyAt, 'NotReady seen').to.be.greaterThan(0);
    expect(doubled, 'pods with other than one sandbox and one container of each name').to.deep.equal([]);
    expect(pods.createdTwice(), 'containers that showed two IDs').to.deep.equal([]);
    const restarted = pods.restarted();
    // On a failure, what the operator logged about those pods explains it.
    const restartLog = restarted.map((r) => op!.grep([`${NS}/${r.split('/')[0]}"`], 25)).join('\n');
    expect(restarted, `restarted containers; the operator's log of them:\n${restartLog}`).to.deep.equal([]);
    expect(touched, 'steady pods whose sandbox or containers changed').to.deep.equal([]);
    expect(op!.running, op!.tail()).to.equal(true);
  });
});
