/**
 * Sharding by Leases with real operator processes (`node --import tsx src/main.ts --shard-leases`) against
 * one real kube-apiserver, ten simulated VirtualNodes with two pods each:
 * - two replicas split the nodes 5/5;
 * - a third joins: 4/3/3, and no pod restarts (same container IDs, restart counts, start times; Ready never
 *   drops);
 * - the replica holding four gets SIGTERM: it hands its nodes back and the other two hold all ten within
 *   one shard Lease duration, again without a pod restart;
 * - the API server's audit log shows that every pods/status write came from the replica holding the pod's
 *   node at that moment (the shard Leases' holder history, from the same log), so no two replicas ever
 *   wrote status for one pod at overlapping times.
 *
 * The processes' logs go to a temp dir; KEEP_OPERATOR_LOGS=1 keeps it (its path is printed).
 */
import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { Lease, Node } from '../../src/api/node.js';
import type { KubeClient } from '../../src/kube/client.js';
import { leaseRole } from '../../src/operator/shard/api.js';
import { benchPod } from '../../bench/lib/pods.js';
import { auditLogIn, completedRequests, podStatusAuditPolicy } from '../support/audit.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import {
  adminClient,
  containerIdentity,
  createNamespace,
  postVirtualNode,
  readySince,
} from '../support/operator.js';
import type { OperatorProcess } from '../support/operatorprocess.js';
import { killLive } from '../support/operatorprocess.js';
import { SHARD_NS, shardReplica, shardHolders, splitOf, waitSplit } from '../support/shards.js';

const NS = 'shard-it';
const NODES = Array.from({ length: 10 }, (_, i) => `vn-shard-${i}`);
const LEASE_DURATION_S = 15;

/** pods/status writes, and the shard Leases' writes with their bodies (who held what, when). */
const AUDIT_POLICY = podStatusAuditPolicy(`  - level: Request
    verbs: [create, update, delete]
    namespaces: [${SHARD_NS}]
    resources:
      - group: coordination.k8s.io
        resources: [leases]
`);

describe('sharding VirtualNodes across operator replicas (real apiserver, real processes)', function () {
  this.timeout(8 * 60_000);
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let dir = '';
  let auditLog = '';
  let failed = false;
  const replicas = new Map<string, OperatorProcess>();

  const startReplica = (id: string): OperatorProcess => {
    const p = shardReplica(dir, cp!.kubeconfigPath, id, []);
    replicas.set(id, p);
    return p;
  };

  const holders = (): Promise<Map<string, string>> => shardHolders(client, SHARD_NS);

  const pods = async (): Promise<Pod[]> =>
    (await client.request<{ items: Pod[] }>({ method: 'GET', path: `/api/v1/namespaces/${NS}/pods` })).items;

  const allReady = async (): Promise<Pod[] | undefined> => {
    const list = await pods();
    return list.length === NODES.length * 2 && list.every((p) => readySince(p) !== undefined)
      ? list
      : undefined;
  };

  /** Fails unless every pod keeps its containers and its Ready transition time. */
  async function expectNoRestart(before: Pod[]): Promise<void> {
    const now = new Map((await pods()).map((p) => [p.metadata.name, p]));
    for (const p of before) {
      const q = now.get(p.metadata.name)!;
      expect(containerIdentity(q), `${p.metadata.name} containers`).to.equal(containerIdentity(p));
      expect(readySince(q), `${p.metadata.name} Ready since`).to.equal(readySince(p));
    }
  }

  async function expectNodesReady(): Promise<void> {
    for (const n of NODES) {
      const node = await client.request<Node>({ method: 'GET', path: `/api/v1/nodes/${n}` });
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      expect(ready?.status, `${n} Ready`).to.equal('True');
    }
  }

  before(async function () {
    this.timeout(10 * 60_000);
    dir = await mkdtemp(path.join(tmpdir(), 'ko-shard-'));
    const audit = await auditLogIn(dir, AUDIT_POLICY);
    auditLog = audit.auditLog;
    cp = await startControlPlane({ apiserverArgs: audit.apiserverArgs });
    client = await adminClient(cp, { namespace: NS, client: { qps: 200, burst: 400 } });
    await createNamespace(client, SHARD_NS);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async () => {
    await Promise.all([...replicas.values()].map((p) => p.kill('SIGTERM')));
    killLive();
    client?.close();
    await cp?.stop();
    if (failed || process.env.KEEP_OPERATOR_LOGS) console.log(`operator logs kept in ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  });

  it('two replicas split ten VirtualNodes 5/5 and run their pods', async () => {
    await Promise.all([startReplica('replica-a').waitReady(), startReplica('replica-b').waitReady()]);
    for (const name of NODES) await postVirtualNode(client, name, { runtime: { type: 'sim' } });
    for (const node of NODES) {
      await client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/pods`,
        body: benchPod(`${node}-web`, NS, node, 2),
      });
      await client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/pods`,
        body: {
          metadata: { name: `${node}-job` },
          spec: {
            nodeName: node,
            initContainers: [{ name: 'init', image: 'busybox', command: ['sh', '-c', 'true'] }],
            containers: [{ name: 'app', image: 'busybox', command: ['sleep', '3600'] }],
          },
        },
      });
    }
    await waitSplit(client, '5/5');
    await eventually(allReady, 90_000, 'all 20 pods Ready');
    await expectNodesReady();
  });

  it('a third replica joins: 4/3/3, no pod restarts, Nodes stay Ready', async () => {
    const before = (await allReady())!;
    await startReplica('replica-c').waitReady();
    await waitSplit(client, '4/3/3');
    // The moved nodes' pods are adopted, and stay so.
    await eventually(allReady, 30_000, 'all pods Ready after the move');
    await new Promise((r) => setTimeout(r, 5_000));
    await expectNoRestart(before);
    await expectNodesReady();
  });

  it('SIGTERM: the leaving replica hands its nodes back, the others hold all ten within one Lease duration', async () => {
    const before = (await allReady())!;
    const h = await holders();
    const [leaving] = [...replicas.keys()].filter(
      (id) => [...h.values()].filter((x) => x === id).length === 4,
    );
    expect(leaving, 'the replica holding four').to.be.a('string');
    const sent = Date.now();
    const code = await replicas.get(leaving!)!.kill('SIGTERM');
    expect(code, 'exit code after SIGTERM').to.equal(0);
    replicas.delete(leaving!);
    const movedAt = await eventually(
      async () => {
        const now = await holders();
        return now.size === NODES.length && ![...now.values()].includes(leaving!) ? Date.now() : undefined;
      },
      LEASE_DURATION_S * 1000,
      'the nodes to move',
    );
    console.log(`      moved ${4} nodes in ${movedAt - sent} ms after SIGTERM`);
    expect(splitOf(await holders())).to.equal('5/5');
    await eventually(allReady, 30_000, 'all pods Ready after the move');
    await new Promise((r) => setTimeout(r, 5_000));
    await expectNoRestart(before);
    await expectNodesReady();
  });

  it('the audit log: every pod status write came from the holder of its node at that moment', () => {
    const events = completedRequests(auditLog)
      .filter((e) => (e.responseStatus?.code ?? 0) < 300)
      .sort((a, b) => (a.stageTimestamp < b.stageTimestamp ? -1 : 1));
    // Holder of each VirtualNode over time, from the shard Lease writes.
    const holder = new Map<string, string>();
    const replicaOf = (ua: string | undefined): string => /replica\/(\S+)/.exec(ua ?? '')?.[1] ?? '';
    let writes = 0;
    const moves = new Set<string>();
    for (const e of events) {
      if (e.objectRef?.resource === 'leases') {
        const role = e.requestObject ? leaseRole(e.requestObject as Lease) : undefined;
        if (role?.role !== 'virtualnode') continue;
        const next =
          e.verb === 'delete' ? '' : ((e.requestObject as Lease | undefined)?.spec.holderIdentity ?? '');
        if ((holder.get(role.node) ?? '') !== next && next) moves.add(`${role.node}->${next}`);
        holder.set(role.node, next);
        continue;
      }
      if (e.objectRef?.resource !== 'pods' || e.objectRef.namespace !== NS) continue;
      const node = NODES.find((n) => e.objectRef?.name?.startsWith(`${n}-`));
      if (!node) continue;
      writes++;
      expect(replicaOf(e.userAgent), `writer of ${e.objectRef.name} at ${e.stageTimestamp}`).to.equal(
        holder.get(node),
      );
    }
    console.log(`      ${writes} status writes checked against ${moves.size} holder changes`);
    expect(writes).to.be.greaterThan(NODES.length * 2);
  });
});
