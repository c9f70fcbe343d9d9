/**
 * Chaos 2, the API server away for a minute. Two operator processes share six simulated VirtualNodes by
 * shard Leases; 24 pods run and are Ready. kube-apiserver is stopped for 60 s (etcd stays, and the server
 * comes back with the same flags, port and certificates). Both replicas lose their shard Leases on the way
 * (they cannot renew them) and take the nodes again once the server is back, adopting the pods. What this
 * proves:
 * - no operator process exits, and each answers /healthz meanwhile;
 * - no container restarts: every pod keeps its container IDs, restart counts, start times and Ready time;
 * - every Node Lease is renewed within one renew period (10 s) of the server answering /readyz again;
 * - the watches resume: a pod created on each node after the return is started and goes Ready;
 * - the pods that were there get no pods/status write at all while the replicas take their nodes again
 *   (adoption computes the very status that is stored), and once converged a 25 s window holds no
 *   pods/status write for any pod (the audit log, which also shows no-op patches) and no status change on a
 *   watch.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import { auditLogIn, POD_STATUS_AUDIT_POLICY, podStatusWrites } from '../support/audit.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { removeStateDir } from '../support/statedir.js';
import {
  adminClient,
  containerIdentity,
  createNamespace,
  postVirtualNode,
  readySince,
  waitNodeReady,
} from '../support/operator.js';
import type { OperatorProcess } from '../support/operatorprocess.js';
import { killLive } from '../support/operatorprocess.js';
import { SHARD_NS, shardReplica, shardHolders, splitOf, waitSplit } from '../support/shards.js';
import { createPod, listPods, nodeLeaseRenewals, probedPod, sleeperPod } from './lib/cluster.js';
import { podIsReady, PodLedger } from './lib/ledger.js';
import { Measurements } from './lib/report.js';
import { ResumingWatch } from './lib/watch.js';

const NS = 'chaos-apiserver';
const NODES = Array.from({ length: 6 }, (_, i) => `vn-api-${i}`);
const DOWN_MS = 60_000;
const NODE_LEASE_RENEW_MS = 10_000;
const QUIET_MS = 5_000;
const WINDOW_MS = 25_000;

describe('chaos: kube-apiserver down for 60 s (2 replicas, 6 sim nodes)', function () {
  this.timeout(8 * 60_000);
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let dir = '';
  let auditLog = '';
  let failed = false;
  const replicas = new Map<string, { proc: OperatorProcess; port: number }>();
  const pods = new PodLedger();
  let podWatch: ResumingWatch<Pod> | undefined;
  const m = new Measurements('kube-apiserver down 60 s');

  before(async function () {
    this.timeout(10 * 60_000);
    dir = await mkdtemp(path.join(tmpdir(), 'ko-chaos-api-'));
    const audit = await auditLogIn(dir, POD_STATUS_AUDIT_POLICY);
    auditLog = audit.auditLog;
    cp = await startControlPlane({ apiserverArgs: audit.apiserverArgs });
    client = await adminClient(cp, { namespace: NS, client: { qps: 200, burst: 400 } });
    await createNamespace(client, SHARD_NS);
    podWatch = new ResumingWatch<Pod>(client, `/api/v1/namespaces/${NS}/pods`, pods.observe);
    await podWatch.start();
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(2 * 60_000);
    m.print();
    await podWatch?.stop();
    if (failed)
      for (const { proc } of replicas.values()) console.error(`--- ${proc.logPath}\n${proc.tail(30)}`);
    await Promise.all([...replicas.values()].map(({ proc }) => proc.kill('SIGKILL')));
    killLive();
    client?.close();
    await cp?.stop();
    if (failed || process.env.KEEP_OPERATOR_LOGS) console.log(`      operator logs kept in ${dir}`);
    else await removeStateDir(dir); // the mounts under it first (a cri node root is a shared bind mount)
  });

  it('two replicas serve six VirtualNodes 3/3 with 24 pods Running and Ready', async () => {
    await Promise.all(
      ['replica-a', 'replica-b'].map(async (id) => {
        const proc = shardReplica(dir, cp!.kubeconfigPath, id);
        replicas.set(id, { proc, port: await proc.waitReady() });
      }),
    );
    for (const name of NODES) await postVirtualNode(client, name, { runtime: { type: 'sim' } });
    await waitSplit(client, '3/3');
    for (const n of NODES) await waitNodeReady(client, n, 60_000);
    for (const node of NODES)
      for (let i = 0; i < 4; i++) {
        const name = `${node}-${i}`;
        await createPod(client, NS, i < 2 ? probedPod(name, node, 2) : sleeperPod(name, node));
      }
    await eventually(
      async () => {
        const list = await listPods(client, NS);
        return list.length === NODES.length * 4 && list.every(podIsReady) ? true : undefined;
      },
      90_000,
      '24 pods Ready',
    );
  });

  it('60 s without an API server: nothing restarts, Leases renewed at once, watches resume, then silence', async () => {
    // A settled start: no pod status change for a while.
    await eventually(
      () => (Date.now() - Math.max(pods.lastChangeAt(), 1) >= QUIET_MS ? true : undefined),
      60_000,
      'no pod status change for 5 s',
    );
    const before = new Map((await listPods(client, NS)).map((p) => [p.metadata.name ?? '', p]));
    const leasesBefore = await nodeLeaseRenewals(client, NODES);

    let downFrom = 0;
    let downUntil = 0;
    const stopAsked = Date.now();
    const exited: string[] = [];
    const healthFailures: string[] = [];
    await cp!.restartApiServer(async () => {
      downFrom = Date.now();
      // A measured hold: the processes must ride it out, answering /healthz.
      while (Date.now() - downFrom < DOWN_MS) {
        await new Promise((r) => setTimeout(r, 1000));
        for (const [id, { proc, port }] of replicas) {
          if (!proc.running && !exited.includes(id)) exited.push(id);
          const ok = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) })
            .then((r) => r.status === 200)
            .catch(() => false);
          if (!ok) healthFailures.push(`${id} at +${Date.now() - downFrom} ms`);
        }
      }
      downUntil = Date.now();
    });
    const backAt = Date.now();
    m.addMs('SIGTERM -> kube-apiserver exited', downFrom - stopAsked);
    m.addMs('kube-apiserver not running', downUntil - downFrom);
    m.addMs('started -> /readyz 200', backAt - downUntil);

    // Every Node Lease renewed after the return, within one renew period.
    // Every Node Lease renewed since the new server process started, within one renew period of /readyz.
    // The server answers a moment before /readyz does, so a renewal may come before `backAt` (negative).
    const renewed = await eventually(
      async () => {
        const now = await nodeLeaseRenewals(client, NODES);
        return NODES.every((n) => (now.get(n) ?? 0) > downUntil) ? now : undefined;
      },
      60_000,
      'every Node Lease renewed after the return',
      200,
    );
    const lateness = NODES.map((n) => renewed.get(n)! - backAt);
    m.addMs('back -> last Node Lease renewed', Math.max(...lateness));
    m.add('back -> each Node Lease renewed (s)', lateness.map((l) => (l / 1000).toFixed(1)).join(' '));
    m.addMs('last Node Lease renewal before it exited', downFrom - Math.max(...leasesBefore.values()));

    // The watches resumed: a pod created now on each node is started.
    const createdAt = Date.now();
    for (const node of NODES) await createPod(client, NS, sleeperPod(`${node}-after`, node));
    await eventually(
      async () => {
        const list = await listPods(client, NS);
        return list.length === NODES.length * 5 && list.every(podIsReady) ? true : undefined;
      },
      60_000,
      'the pods created after the return Ready (and the others still)',
    );
    m.addMs('created after the return -> all Ready', Date.now() - createdAt);

    // Converged: shards settled and no status change for QUIET_MS; then a window with no write at all.
    const converged = await eventually(
      async () => {
        if (splitOf(await shardHolders(client, SHARD_NS)) !== '3/3') return undefined;
        return Date.now() - pods.lastChangeAt() >= QUIET_MS ? Date.now() : undefined;
      },
      120_000,
      'a 3/3 split and no pod status change for 5 s',
    );
    m.addMs('back -> converged', converged - backAt);
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const windowEnd = Date.now();

    const writesRecovering = podStatusWrites(auditLog, NS, backAt, converged);
    const adoptedWrites = writesRecovering.filter((w) => before.has(w.objectRef?.name ?? ''));
    const writesInWindow = podStatusWrites(auditLog, NS, converged, windowEnd);
    const changesInWindow = pods.changesBetween(converged, windowEnd);
    const after = new Map((await listPods(client, NS)).map((p) => [p.metadata.name ?? '', p]));
    const changed: string[] = [];
    for (const [name, p] of before) {
      const q = after.get(name);
      if (!q || containerIdentity(q) !== containerIdentity(p) || readySince(q) !== readySince(p))
        changed.push(name);
    }
    m.add('pods/status writes, back -> converged: new pods', writesRecovering.length - adoptedWrites.length);
    m.add('pods/status writes, back -> converged: the 24 others', adoptedWrites.length);
    m.add(`pods/status writes in the ${WINDOW_MS / 1000} s window`, writesInWindow.length);
    m.add('status changes in the window (watch)', changesInWindow.length);
    m.add('pods whose containers or Ready time changed', changed.length);
    m.add(
      'containers restarted / with two IDs',
      `${pods.restarted().length} / ${pods.createdTwice().length}`,
    );
    m.add('test watch reconnects / relists', `${podWatch!.reconnects} / ${podWatch!.relists}`);
    m.add('operator exits / failed /healthz', `${exited.length} / ${healthFailures.length}`);
    const logLines = [...replicas.values()].flatMap(({ proc }) =>
      readFileSync(proc.logPath, 'utf8').split('\n'),
    );
    const since = (l: string): boolean => Date.parse(/"timestamp":"([^"]+)"/.exec(l)?.[1] ?? '') >= stopAsked;
    const taken = logLines
      .filter((l) => l.includes('"serving virtual node"') && since(l))
      .map((l) => Date.parse(/"timestamp":"([^"]+)"/.exec(l)![1]!) - backAt)
      .sort((a, b) => a - b);
    m.add(
      'VirtualNodes dropped / taken again (replica logs)',
      `${logLines.filter((l) => l.includes('dropping virtual node') && since(l)).length} / ${taken.length}`,
    );
    m.add('back -> each take (s)', taken.map((t) => (t / 1000).toFixed(1)).join(' '));

    expect(exited, 'operator processes that exited').to.deep.equal([]);
    for (const [id, { proc }] of replicas) expect(proc.running, `${id} running`).to.equal(true);
    expect(healthFailures, '/healthz failures while the server was away').to.deep.equal([]);
    expect(changed, 'pods whose containers or Ready time changed').to.deep.equal([]);
    expect(pods.restarted(), 'restarted containers').to.deep.equal([]);
    expect(pods.createdTwice(), 'containers created twice').to.deep.equal([]);
    expect(Math.max(...lateness), 'back -> every Node Lease renewed (ms)').to.be.at.most(NODE_LEASE_RENEW_MS);
    expect(
      writesInWindow.map((w) => `${w.stageTimestamp} ${w.verb} ${w.objectRef?.name} by ${w.userAgent}`),
      'pods/status writes in the steady window',
    ).to.deep.equal([]);
    expect(changesInWindow, 'pod status changes in the steady window').to.deep.equal([]);
    expect(
      adoptedWrites.map((w) => `${w.stageTimestamp} ${w.verb} ${w.objectRef?.name} by ${w.userAgent}`),
      'status writes for the pods that were there before, while recovering',
    ).to.deep.equal([]);
  });
});
