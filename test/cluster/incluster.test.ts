// What users run: the operator's own image (npm run image), loaded into the containerd of our cri VirtualNodes
// and installed with `kubectl apply -k manifests/overlays/local`. Its two replicas run on those nodes as
// uid 65532 with a read-only root file system, reach the API server through the `kubernetes` Service with
// their projected tokens, pass their probes, get node API serving certificates by CSR, and serve the sim
// VirtualNodes of manifests/examples/ (shared by shard Leases). Deleting a replica moves its VirtualNode to
// the other; `kubectl apply -k` of a second image tag rolls both replicas over with no served pod restarted
// and no Node NotReady. Needs root on Linux (containerd, the pod network).
import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import { KubeClient } from '../../src/kube/client.js';
import { nodeReady } from '../../scripts/lib/cluster.js';
import { kubectl } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { shardHolders } from '../support/shards.js';
import { podReady } from './env.js';
import {
  EXAMPLE_SIM_VIRTUAL_NODE,
  LOCAL_OVERLAY,
  OPERATOR_NAMESPACE,
  runImageScript,
} from '../../scripts/lib/incluster.js';
import { startUpstreamCluster, type UpstreamCluster } from '../upstream/cluster.js';

const OPERATOR_SELECTOR = 'app.kubernetes.io/name=kubelet-operator';
/** manifests/examples/virtualnode-sim.yaml's node, and a second one like it for the other replica. */
const SIM_NODES = ['sim-1', 'sim-2'];
const WORKLOAD_NS = 'default';

const conditionTime = (p: Pod, type: string): number =>
  Date.parse(p.status?.conditions?.find((c) => c.type === type)?.lastTransitionTime ?? '');

/** What a served pod's containers are: restarting one changes a container ID or its restart count. */
function containerIdentity(p: Pod): string {
  return (p.status?.containerStatuses ?? [])
    .map((c) => `${c.name}:${c.containerID ?? ''}:${c.restartCount}`)
    .join(',');
}

describe('the operator in the cluster, from its own image (manifests/overlays/local)', function () {
  this.timeout(900_000);
  let cluster: UpstreamCluster;
  let client: KubeClient;
  let overlayDir: string;
  const run = async (args: string[], input?: string): Promise<string> => {
    const r = await kubectl(cluster.cp, args, input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
    return r.stdout;
  };
  const operatorPods = async (): Promise<Pod[]> =>
    (
      await client.request<{ items: Pod[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${OPERATOR_NAMESPACE}/pods`,
        query: { labelSelector: OPERATOR_SELECTOR },
      })
    ).items;
  const workload = async (): Promise<Pod[]> =>
    (
      await client.request<{ items: Pod[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${WORKLOAD_NS}/pods`,
        query: { labelSelector: 'app=served' },
      })
    ).items;
  const nodes = async (): Promise<Node[]> =>
    (await client.request<{ items: Node[] }>({ method: 'GET', path: '/api/v1/nodes' })).items;

  before(async () => {
    // The image first (cached: seconds when nothing changed), so a build failure is not a cluster failure.
    await runImageScript(['build']);
    cluster = await startUpstreamCluster({
      runtime: 'cri',
      nodes: 2,
      logDir: await mkdtemp(path.join(tmpdir(), 'ko-incluster-')),
      // Each cri node's containerd gets the operator's image under its tags (0.1.0 and dev).
      importImages: async (sock) => {
        await runImageScript(['import', sock]);
      },
      // Where overlays/local places the operator: our cri nodes.
      nodeLabels: { 'kubelet-operator.dev/runtime': 'cri' },
    });
    client = await KubeClient.fromKubeConfig(cluster.cp.adminKubeConfig());
    overlayDir = await mkdtemp(path.join(tmpdir(), 'ko-incluster-overlay-'));
  });

  after(async () => {
    client?.close();
    if (overlayDir) await rm(overlayDir, { recursive: true, force: true });
    await cluster?.stop();
  });

  it('installs with kubectl apply -k: both replicas Ready on cri VirtualNodes, as uid 65532, read-only', async () => {
    await run(['apply', '-k', LOCAL_OVERLAY]);
    const pods = await eventually(
      async () => {
        const ps = await operatorPods();
        return ps.length === 2 && ps.every(podReady) ? ps : undefined;
      },
      240_000,
      'two Ready operator pods',
      500,
    );
    for (const p of pods) {
      expect(cluster.nodeNames).to.include(p.spec?.nodeName);
      const c = p.spec!.containers[0]!;
      expect(c.image).to.equal('docker.io/library/kubelet-operator:0.1.0');
      expect(c.securityContext?.readOnlyRootFilesystem).to.equal(true);
      expect(p.spec?.securityContext?.runAsUser).to.equal(65532);
      expect(p.status?.containerStatuses?.[0]?.restartCount).to.equal(0);
      const ms = conditionTime(p, 'Ready') - conditionTime(p, 'PodScheduled');
      console.log(
        `      operator pod ${p.metadata!.name} on ${p.spec!.nodeName}: scheduled -> Ready ${ms} ms`,
      );
    }
    // Both replicas announced themselves: they reached the API server through the `kubernetes` Service.
    const leases = await run(['-n', OPERATOR_NAMESPACE, 'get', 'leases', '-o', 'name']);
    for (const p of pods) expect(leases).to.contain(`lease.coordination.k8s.io/replica-${p.metadata!.name}`);
  });

  it('serves sim VirtualNodes of its own, one per replica, whose Deployment runs', async () => {
    const example = await readFile(EXAMPLE_SIM_VIRTUAL_NODE, 'utf8');
    await run(['apply', '-f', '-'], example);
    await run(['apply', '-f', '-'], example.replace(/name: sim-1/, 'name: sim-2'));
    await eventually(
      async () => {
        const ns = (await nodes()).filter((n) => SIM_NODES.includes(n.metadata!.name!));
        return ns.length === 2 && ns.every(nodeReady);
      },
      120_000,
      'sim-1 and sim-2 Ready',
      500,
    );
    // Shared: each replica holds one (fair share of two among two).
    const holders = await eventually(
      async () => {
        const h = await shardHolders(client, OPERATOR_NAMESPACE);
        const names = SIM_NODES.map((n) => h.get(n));
        return names.every(Boolean) && names[0] !== names[1] ? h : undefined;
      },
      60_000,
      'one sim VirtualNode per replica',
      500,
    );
    const pods = (await operatorPods()).map((p) => p.metadata!.name);
    for (const n of SIM_NODES) expect(pods).to.include(holders.get(n));
    // Their node API certificates came by CSR (approved here as an admin would; signed by the controller-manager).
    await eventually(
      async () => {
        const csrs = JSON.parse(await run(['get', 'csr', '-o', 'json'])) as {
          items: { spec: { username: string; signerName: string }; status?: { certificate?: string } }[];
        };
        return csrs.items.some(
          (c) =>
            c.spec.signerName === 'kubernetes.io/kubelet-serving' &&
            c.spec.username === `system:serviceaccount:${OPERATOR_NAMESPACE}:kubelet-operator` &&
            c.status?.certificate,
        );
      },
      60_000,
      'an issued serving certificate for the operator',
      500,
    );
    await run(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'served', namespace: WORKLOAD_NS },
        spec: {
          replicas: 4,
          selector: { matchLabels: { app: 'served' } },
          template: {
            metadata: { labels: { app: 'served' } },
            spec: {
              nodeSelector: { 'topology.kubernetes.io/zone': 'sim-a' },
              // One pod per sim node at least, both replicas' nodes in use.
              topologySpreadConstraints: [
                {
                  maxSkew: 1,
                  topologyKey: 'kubernetes.io/hostname',
                  whenUnsatisfiable: 'DoNotSchedule',
                  labelSelector: { matchLabels: { app: 'served' } },
                },
              ],
              containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
            },
          },
        },
      }),
    );
    const running = await eventually(
      async () => {
        const ps = await workload();
        return ps.length === 4 && ps.every(podReady) ? ps : undefined;
      },
      120_000,
      '4 Ready pods on the sim VirtualNodes',
      500,
    );
    expect(new Set(running.map((p) => p.spec!.nodeName))).to.deep.equal(new Set(SIM_NODES));
    // The API server reaches the replica's node API (on its pod IP, the sim node's InternalIP).
    const logs = await kubectl(cluster.cp, ['-n', WORKLOAD_NS, 'logs', running[0]!.metadata!.name!]);
    expect(logs.code, logs.stderr).to.equal(0);
  });

  it("moves a deleted replica's VirtualNode to another replica within one Lease duration", async () => {
    const before = await shardHolders(client, OPERATOR_NAMESPACE);
    const victim = before.get('sim-2')!;
    const survivor = before.get('sim-1')!;
    const served = new Map((await workload()).map((p) => [p.metadata!.uid, containerIdentity(p)]));
    const start = Date.now();
    // Without waiting for the pod's end: the replica hands back on SIGTERM, the other takes over.
    await run(['-n', OPERATOR_NAMESPACE, 'delete', 'pod', victim, '--wait=false']);
    let notReady = 0;
    // The survivor takes it, or the Deployment's replacement replica if that joined first (the survivor's
    // share is then one node): either is a move off the deleted replica. Who held it, as seen, for the log.
    const seen: string[] = [];
    const holder = await eventually(
      async () => {
        notReady += (await nodes()).filter(
          (n) => SIM_NODES.includes(n.metadata!.name!) && !nodeReady(n),
        ).length;
        const h = (await shardHolders(client, OPERATOR_NAMESPACE)).get('sim-2') ?? '';
        if (seen[seen.length - 1] !== h) seen.push(h);
        return h && h !== victim ? h : undefined;
      },
      40_000,
      `sim-2 held by a replica other than ${victim}`,
      250,
    ).catch((err: unknown) => {
      throw new Error(
        `${(err as Error).message}; holders seen: ${seen.map((h) => h || '(none)').join(' -> ')}`,
      );
    });
    console.log(
      `      sim-2 moved from ${victim} to ${holder === survivor ? 'the other replica' : `the replacement ${holder}`} in ${Date.now() - start} ms`,
    );
    expect(notReady, 'sim Nodes seen NotReady').to.equal(0);
    const after = await workload();
    for (const p of after)
      expect(containerIdentity(p), p.metadata!.name).to.equal(served.get(p.metadata!.uid));
    // The Deployment's replacement replica comes up and takes its fair share back.
    await eventually(
      async () => {
        const ps = await operatorPods();
        const h = await shardHolders(client, OPERATOR_NAMESPACE);
        return ps.filter(podReady).length === 2 && h.get('sim-1') !== h.get('sim-2');
      },
      180_000,
      'two Ready replicas sharing again',
      500,
    );
  });

  it('rolls over to a second image tag with kubectl apply -k: no served pod restarted, no Node NotReady', async () => {
    const served = new Map((await workload()).map((p) => [p.metadata!.uid, containerIdentity(p)]));
    const old = new Set((await operatorPods()).map((p) => p.metadata!.name));
    await writeFile(
      path.join(overlayDir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        // kustomize takes bases by relative path only.
        `  - ${path.relative(overlayDir, LOCAL_OVERLAY)}`,
        'images:',
        '  - name: docker.io/library/kubelet-operator',
        '    newTag: dev',
        '',
      ].join('\n'),
    );
    const start = Date.now();
    await run(['apply', '-k', overlayDir]);
    let notReady = 0;
    // Per sim VirtualNode, when it was last seen held, and the longest stretch it was seen without a holder.
    const heldAt = new Map(SIM_NODES.map((n) => [n, Date.now()]));
    let handOverMs = 0;
    await eventually(
      async () => {
        notReady += (await nodes()).filter(
          (n) => SIM_NODES.includes(n.metadata!.name!) && !nodeReady(n),
        ).length;
        const h = await shardHolders(client, OPERATOR_NAMESPACE);
        const now = Date.now();
        for (const n of SIM_NODES) {
          if (h.get(n)) heldAt.set(n, now);
          else handOverMs = Math.max(handOverMs, now - heldAt.get(n)!);
        }
        const ps = await operatorPods();
        return (
          ps.length === 2 &&
          ps.every((p) => !old.has(p.metadata!.name) && podReady(p)) &&
          ps.every((p) => p.spec!.containers[0]!.image === 'docker.io/library/kubelet-operator:dev') &&
          SIM_NODES.every((n) => ps.some((p) => p.metadata!.name === h.get(n)))
        );
      },
      300_000,
      'both replicas replaced by the dev tag and holding the sim VirtualNodes',
      500,
    );
    console.log(
      `      rolled over in ${Date.now() - start} ms; longest a sim VirtualNode was seen without a holder: ${handOverMs} ms`,
    );
    expect(notReady, 'sim Nodes seen NotReady').to.equal(0);
    const after = await workload();
    expect(after).to.have.length(served.size);
    for (const p of after)
      expect(containerIdentity(p), p.metadata!.name).to.equal(served.get(p.metadata!.uid));
  });
});
