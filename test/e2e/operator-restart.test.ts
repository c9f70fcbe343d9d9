/**
 * Restart safety of the real operator process: `node --import tsx src/main.ts` runs against a real
 * kube-apiserver with a `cri` VirtualNode on a real containerd. Three pods (one with a readiness probe) run
 * and go Ready; the process is SIGKILLed and a new one started. The new process adopts what is there: no
 * container is created twice, no sandbox is added, the pods stay Ready, and once converged a 60 s steady
 * window sees no pods/status write at all (counted twice: in the API server's audit log, which also shows
 * no-op patches, and as status changes on a watch). The new process deletes a pod; then it is killed too and
 * the VirtualNode deleted while no process runs: the third process drains it and removes its Node and Lease,
 * leaving nothing behind in the API, in containerd or in the cgroup tree.
 *
 * The processes' logs go to files in a temp dir; KEEP_OPERATOR_LOGS=1 keeps them (their path is printed).
 */
import { expect } from 'chai';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod, PodStatus } from '../../src/api/core.js';
import type { Lease } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { CriRuntime } from '../../src/runtime/cri/client.js';
import { ContainerNameLabel, PodUIDLabel } from '../../src/runtime/labels.js';
import { canonicalJSON } from '../../src/util/canonical.js';
import {
  criRuntimeSpec,
  startContainerd,
  type TestContainerd,
  podCgroupDirs,
  waitNoObjectsOfNode,
} from '../support/containerd.js';
import { auditLogIn, POD_STATUS_AUDIT_POLICY, podStatusWrites, type AuditEvent } from '../support/audit.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { killLive, OperatorProcess } from '../support/operatorprocess.js';
import {
  adminClient,
  isGone,
  podReady as ready,
  postVirtualNode,
  VN_PATH,
  waitNodeReady,
} from '../support/operator.js';

const NODE = 'vn-restart';
const NS = 'restart-e2e';
const LEASE_PATH = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${NODE}`;
const STEADY_WINDOW_MS = 60_000;
const POD_NAMES = ['sleeper-a', 'sleeper-b', 'probed'] as const;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('kubelet-operator process restart on containerd (real apiserver, real process)', function () {
  this.timeout(6 * 60_000);
  let cp: ControlPlane | undefined;
  let ctd: TestContainerd | undefined;
  let client: KubeClient;
  let cri: CriRuntime | undefined;
  let dir = '';
  let logRoot = '';
  let auditLog = '';
  const procs: OperatorProcess[] = [];
  const watchAbort = new AbortController();
  /** Every pod event of the namespace, with its arrival time and whether the status changed. */
  const seen: { at: number; type: string; name: string; statusChanged: boolean; status: PodStatus }[] = [];
  const uids = new Map<string, string>();
  let killedAt = 0;
  let failed = false;

  const podPath = (name: string) => `/api/v1/namespaces/${NS}/pods/${name}`;
  const getPod = (name: string) => client.request<Pod>({ method: 'GET', path: podPath(name) });
  const gone = (p: string): Promise<true | undefined> => isGone(client, p);
  const startOperator = (): OperatorProcess => {
    const p = new OperatorProcess(path.join(dir, `operator-${procs.length + 1}.log`), cp!.kubeconfigPath);
    procs.push(p);
    return p;
  };
  const statusWrites = (since: number, until = Infinity): AuditEvent[] =>
    podStatusWrites(auditLog, NS, since, until);
  /** Containers and sandboxes of one pod in containerd. */
  const runtimeOf = async (uid: string) => {
    const [sandboxes, containers] = await Promise.all([
      cri!.listPodSandbox({ labelSelector: { [PodUIDLabel]: uid } }),
      cri!.listContainers({ labelSelector: { [PodUIDLabel]: uid } }),
    ]);
    return {
      sandboxes: sandboxes.map((s) => `${s.id}:${s.metadata.attempt}:${s.state}`).sort(),
      containers: containers
        .map((c) => `${c.labels[ContainerNameLabel]}:${c.metadata.attempt}:${c.id}:${c.state}`)
        .sort(),
    };
  };

  before(async function () {
    this.timeout(20 * 60_000); // cold binaries build, package install
    dir = await mkdtemp(path.join(tmpdir(), 'ko-op-restart-'));
    logRoot = path.join(dir, 'pod-logs');
    const audit = await auditLogIn(dir, POD_STATUS_AUDIT_POLICY);
    auditLog = audit.auditLog;
    [cp, ctd] = await Promise.all([
      startControlPlane({ apiserverArgs: audit.apiserverArgs }),
      startContainerd(),
    ]);
    cri = new CriRuntime({ endpoint: ctd.endpoint });
    client = await adminClient(cp, { namespace: NS, client: { qps: 200, burst: 400 } });
    // The watch that sees every pod status change for the whole test.
    const last = new Map<string, string>();
    void client
      .watch(
        `/api/v1/namespaces/${NS}/pods`,
        { timeoutSeconds: 1800 },
        (e) => {
          const pod = e.object as Pod;
          const name = pod.metadata?.name ?? '';
          const status = canonicalJSON(pod.status ?? {});
          seen.push({
            at: Date.now(),
            type: e.type,
            name,
            statusChanged: last.get(name) !== status,
            status: pod.status ?? {},
          });
          last.set(name, status);
        },
        watchAbort.signal,
      )
      .catch(() => undefined);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(5 * 60_000);
    watchAbort.abort();
    await Promise.all(procs.map((p) => p.kill('SIGKILL')));
    killLive();
    if (failed) for (const p of procs) console.error(`--- ${p.logPath} (tail)\n${p.tail(40)}`);
    await cri?.close().catch(() => undefined);
    client?.close();
    await Promise.allSettled([cp?.stop(), ctd?.stop()]);
    if (process.env.KEEP_OPERATOR_LOGS) console.error(`operator logs kept in ${dir}`);
    else if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the first process serves a cri VirtualNode and runs three pods to Ready', async () => {
    await startOperator().waitReady();
    await postVirtualNode(client, NODE, { runtime: criRuntimeSpec(ctd!, logRoot) });
    await waitNodeReady(client, NODE, 60_000);
    for (const name of POD_NAMES) {
      const container: Record<string, unknown> = {
        name: 'c',
        image: ctd!.images.busybox,
        imagePullPolicy: 'IfNotPresent',
        command: ['sleep', '3600'],
      };
      if (name === 'probed') {
        container.command = ['sh', '-c', 'touch /tmp/ready; exec sleep 3600'];
        container.readinessProbe = { exec: { command: ['test', '-f', '/tmp/ready'] }, periodSeconds: 2 };
      }
      const pod = await client.request<Pod>({
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/pods`,
        body: {
          metadata: { name },
          spec: {
            nodeName: NODE,
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            containers: [container],
          },
        },
      });
      uids.set(name, pod.metadata.uid!);
    }
    for (const name of POD_NAMES) {
      await eventually(
        async () => {
          const p = await getPod(name);
          return p.status?.phase === 'Running' && ready(p.status) === 'True' ? p : undefined;
        },
        60_000,
        `${name} Running and Ready`,
      );
    }
  });

  it('after SIGKILL a new process adopts everything: nothing created twice, pods stay Ready, no status writes', async () => {
    const before = new Map<string, Awaited<ReturnType<typeof runtimeOf>>>();
    for (const [name, uid] of uids) {
      const rt = await runtimeOf(uid);
      expect(rt.sandboxes, `${name} sandboxes`).to.have.length(1);
      expect(rt.containers, `${name} containers`).to.have.length(1);
      expect(rt.containers[0]).to.match(/^c:0:[0-9a-f]{64}:running$/);
      before.set(name, rt);
    }
    const leaseBefore = await client.request<Lease>({ method: 'GET', path: LEASE_PATH });

    const first = procs[0]!;
    expect(await first.kill('SIGKILL')).to.equal(null);
    killedAt = Date.now();
    const second = startOperator();
    await second.waitReady();

    // The new process holds the node: its Lease is renewed again.
    await eventually(
      async () => {
        const l = await client.request<Lease>({ method: 'GET', path: LEASE_PATH });
        return Date.parse(l.spec.renewTime!) > Math.max(killedAt, Date.parse(leaseBefore.spec.renewTime!))
          ? l
          : undefined;
      },
      30_000,
      'the Lease renewed by the new process',
    );
    // Converged: every pod Ready and no pod status change for 10 s (the new kubelet has probed and synced).
    await eventually(
      async () => {
        for (const name of POD_NAMES) if (ready((await getPod(name)).status) !== 'True') return undefined;
        const lastChange = Math.max(killedAt, ...seen.filter((s) => s.statusChanged).map((s) => s.at));
        return Date.now() - lastChange >= 10_000 ? true : undefined;
      },
      90_000,
      'pods Ready with no status change for 10 s',
    );
    const converged = Date.now();
    const writesWhileConverging = statusWrites(killedAt, converged);

    await sleep(STEADY_WINDOW_MS);
    const windowEnd = Date.now();

    // No pods/status request at all in the window (the audit log shows no-op patches too).
    const writes = statusWrites(converged, windowEnd);
    expect(
      writes.map((w) => `${w.stageTimestamp} ${w.verb} ${w.objectRef?.name} by ${w.userAgent}`),
      'pods/status writes in the steady window',
    ).to.deep.equal([]);
    const changes = seen.filter((s) => s.at >= converged && s.at < windowEnd && s.statusChanged);
    expect(
      changes.map((c) => `${c.type} ${c.name}`),
      'status changes in the steady window',
    ).to.deep.equal([]);
    // Since the kill, no pod ever stopped being Ready or Running.
    const dips = seen.filter(
      (s) => s.at >= killedAt && (ready(s.status) !== 'True' || s.status.phase !== 'Running'),
    );
    expect(
      dips.map((d) => `${d.type} ${d.name} Ready=${ready(d.status)} phase=${d.status.phase}`),
      'pods that dipped after the restart',
    ).to.deep.equal([]);
    // Adoption itself writes nothing either: the new process computes the very status that is stored.
    expect(
      writesWhileConverging.map(
        (w) => `${w.stageTimestamp} ${w.verb} ${w.objectRef?.name} by ${w.userAgent}`,
      ),
      'pods/status writes while the new process adopted the pods',
    ).to.deep.equal([]);

    // Nothing was created twice: the very same sandboxes and containers, still attempt 0 and running.
    for (const [name, uid] of uids) expect(await runtimeOf(uid), name).to.deep.equal(before.get(name));
    for (const name of POD_NAMES) {
      const p = await getPod(name);
      expect(p.status?.containerStatuses?.[0]?.restartCount, name).to.equal(0);
      expect(p.status?.containerStatuses?.[0]?.containerID).to.equal(
        `containerd://${before.get(name)!.containers[0]!.split(':')[2]}`,
      );
    }
    // The old process is gone; the new one keeps running.
    expect(first.running).to.equal(false);
    expect(second.running).to.equal(true);
  });

  it('the new process deletes a pod; a VirtualNode deleted while no process runs is drained and removed by the next', async () => {
    // A pod deleted under the adopting process: killed, removed, its object gone.
    await client.request({ method: 'DELETE', path: podPath('sleeper-a') });
    await eventually(() => gone(podPath('sleeper-a')), 60_000, 'sleeper-a gone');
    expect(await runtimeOf(uids.get('sleeper-a')!)).to.deep.equal({ sandboxes: [], containers: [] });

    // The process dies; the VirtualNode is deleted meanwhile. Its finalizer holds it, its pods keep running.
    const second = procs[1]!;
    expect(second.running, second.tail()).to.equal(true);
    await second.kill('SIGKILL');
    await client.request({ method: 'DELETE', path: `${VN_PATH}/${NODE}` });
    await sleep(2000);
    const pending = await client.request<{ metadata: { deletionTimestamp?: string } }>({
      method: 'GET',
      path: `${VN_PATH}/${NODE}`,
    });
    expect(pending.metadata.deletionTimestamp).to.be.a('string');
    for (const name of ['sleeper-b', 'probed']) expect(ready((await getPod(name)).status)).to.equal('True');

    // The next process finishes the job: drains the pods through its kubelet, removes the Node and Lease.
    const third = startOperator();
    await third.waitReady();
    for (const name of ['sleeper-b', 'probed'])
      await eventually(() => gone(podPath(name)), 60_000, `${name} gone`);
    await eventually(() => gone(`${VN_PATH}/${NODE}`), 60_000, 'VirtualNode gone');
    expect(await gone(`/api/v1/nodes/${NODE}`)).to.equal(true);
    expect(await gone(LEASE_PATH)).to.equal(true);
    await waitNoObjectsOfNode(cri!, NODE);
    expect(await cri!.listPodSandbox()).to.deep.equal([]);
    expect(await cri!.listContainers()).to.deep.equal([]);
    for (const [name, uid] of uids)
      await eventually(
        () => (podCgroupDirs(ctd!.cgroupParentPrefix, uid).length === 0 ? true : undefined),
        20_000,
        `${name} cgroup removed`,
      );
    expect(existsSync(logRoot) ? readdirSync(logRoot) : []).to.deep.equal([]);
    // The process keeps running with nothing to serve, and shuts down cleanly on SIGTERM.
    expect(third.running, third.tail()).to.equal(true);
    expect(await third.kill('SIGTERM')).to.equal(0);
  });
});
