/**
 * A whole cluster whose only node agent is kubelet-operator: real etcd, kube-apiserver, kube-scheduler and
 * kube-controller-manager, and in-process operators serving simulated VirtualNodes. Everything goes through
 * kubectl or the API client (no private hooks): workloads are created with kubectl, the scheduler binds
 * them, the controllers react to what our kubelet reports.
 *
 * Nodes: `sim-1` and `sim-2` are served by the main operator; `sim-3` by a second operator that the
 * node-failure scenario stops (its Lease and node status go stale, as when a kubelet dies) and restarts.
 */
import { expect } from 'chai';
import type { Pod } from '../../src/api/core.js';
import type { Node } from '../../src/api/node.js';
import { KubeClient } from '../../src/kube/client.js';
import type { Operator } from '../../src/operator.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import {
  applyCrd,
  createVirtualNode,
  nodeReady,
  startOperator,
  waitNodeReady,
} from '../../scripts/lib/cluster.js';
import { kubectl, startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';

const NS = 'cluster-test';
const SIM_NODES = ['sim-1', 'sim-2', 'sim-3'];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface List<T> {
  items: T[];
}
interface Deployment {
  metadata: { name: string; generation?: number };
  spec: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    availableReplicas?: number;
    unavailableReplicas?: number;
  };
}
interface Job {
  status?: {
    succeeded?: number;
    failed?: number;
    conditions?: { type: string; status: string; reason?: string }[];
  };
}
interface CoreEvent {
  reason?: string;
  message?: string;
  type?: string;
  count?: number;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  involvedObject: { name?: string; fieldPath?: string };
}

/** A container that exits promptly on SIGTERM (a trap in a loop), like a well-behaved server. */
const GRACEFUL = ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'];

describe('cluster: kubelet-operator as the only node agent (scheduler + controller-manager)', function () {
  this.timeout(10 * 60_000);
  let cp: ControlPlane;
  let client: KubeClient;
  const clock = new RealClock();
  let main: Operator | undefined;
  let spare: Operator | undefined;

  const k = async (args: string[], input?: string): Promise<string> => {
    const r = await kubectl(cp, ['-n', NS, ...args], input);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout;
  };
  const apply = (obj: unknown): Promise<string> => k(['apply', '-f', '-'], JSON.stringify(obj));
  const get = <T>(p: string): Promise<T> => client.request<T>({ method: 'GET', path: p });
  const pods = async (selector: string): Promise<Pod[]> =>
    (await get<List<Pod>>(`/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(selector)}`))
      .items;
  const deployment = (name: string): Promise<Deployment> =>
    get<Deployment>(`/apis/apps/v1/namespaces/${NS}/deployments/${name}`);
  const job = (name: string): Promise<Job> => get<Job>(`/apis/batch/v1/namespaces/${NS}/jobs/${name}`);
  const node = (name: string): Promise<Node> => get<Node>(`/api/v1/nodes/${name}`);
  const events = async (pod: string): Promise<CoreEvent[]> =>
    (
      await get<List<CoreEvent>>(
        `/api/v1/namespaces/${NS}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${pod}`)}`,
      )
    ).items;
  const ready = (p: Pod): boolean =>
    p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const startSpare = async (): Promise<Operator> =>
    startOperator({ client, clock, logger: silentLogger, servedBy: 'spare', statusPeriodMs: 2000 });

  before(async function () {
    this.timeout(5 * 60_000);
    cp = await startControlPlane({ scheduler: true, controllerManager: true });
    await applyCrd(cp);
    client = await KubeClient.fromKubeConfig(cp.adminKubeConfig());
    main = await startOperator({
      client,
      clock,
      logger: silentLogger,
      servedBy: 'main',
      statusPeriodMs: 2000,
    });
    spare = await startSpare();
    for (const [i, name] of SIM_NODES.entries()) {
      await createVirtualNode(client, name, name === 'sim-3' ? 'spare' : 'main', {
        // Each node its own pod range, as a cluster's node IPAM would hand out: pod IPs are cluster-wide.
        runtime: { type: 'sim', sim: { podCIDR: `10.88.${i + 1}.0/24` } },
        labels: { 'cluster-test/pool': name === 'sim-3' ? 'spare' : 'main' },
        heartbeat: { renewIntervalSeconds: 2, leaseDurationSeconds: 10, statusUpdateFrequencySeconds: 2 },
      });
    }
    await Promise.all(SIM_NODES.map((n) => waitNodeReady(client, n)));
    await kubectl(cp, ['create', 'namespace', NS]);
    // Pods need the namespace's default ServiceAccount, which the controller-manager creates.
    await eventually(() => get(`/api/v1/namespaces/${NS}/serviceaccounts/default`), 30_000, 'default SA');
  });

  after(async function () {
    this.timeout(60_000);
    await spare?.stop();
    await main?.stop();
    client?.close();
    await cp?.stop();
  });

  it('scales a Deployment 1 -> 20 -> 0: every pod Ready, spread by the scheduler, deleted gracefully', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'scale', namespace: NS },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'scale' } },
        template: {
          metadata: { labels: { app: 'scale' } },
          spec: {
            terminationGracePeriodSeconds: 10,
            nodeSelector: { 'cluster-test/pool': 'main' },
            containers: [{ name: 'app', image: 'busybox:1.36', command: GRACEFUL }],
          },
        },
      },
    });
    const first = await eventually(
      async () => {
        const ps = await pods('app=scale');
        return ps.length === 1 && ready(ps[0]!) ? ps[0]! : undefined;
      },
      30_000,
      'one Ready pod',
    );

    // kubectl get pods -o wide: node, IP and readiness as a kubelet's pods show them.
    const wide = await k(['get', 'pods', '-l', 'app=scale', '-o', 'wide', '--no-headers']);
    const cols = wide.trim().split(/\s+/);
    expect(cols[1], wide).to.equal('1/1');
    expect(cols[2], wide).to.equal('Running');
    expect(cols[5], wide)
      .to.equal(first.status?.podIP)
      .and.match(/^\d+\.\d+\.\d+\.\d+$/);
    expect(cols[6], wide)
      .to.equal(first.spec?.nodeName)
      .and.match(/^sim-[12]$/);

    // kubectl describe: Scheduled from the scheduler, the rest from kubelet, in the kubelet's words.
    const name = first.metadata.name!;
    const describe = await k(['describe', 'pod', name]);
    expect(describe).to.match(/Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned/);
    expect(describe).to.match(/Normal\s+Pulling\s+.*kubelet\s+Pulling image "busybox:1\.36"/);
    expect(describe).to.match(/Normal\s+Pulled\s+.*kubelet\s+Successfully pulled image "busybox:1\.36" in /);
    expect(describe).to.match(/Normal\s+Created\s+.*kubelet\s+Created container: app/);
    expect(describe).to.match(/Normal\s+Started\s+.*kubelet\s+Started container app/);
    const evs = await events(name);
    const started = evs.find((e) => e.reason === 'Started');
    expect(started?.source).to.deep.equal({ component: 'kubelet', host: first.spec?.nodeName });
    expect(started?.involvedObject.fieldPath).to.equal('spec.containers{app}');

    await k(['scale', 'deployment/scale', '--replicas=20']);
    const all = await eventually(
      async () => {
        const ps = await pods('app=scale');
        return ps.length === 20 && ps.every(ready) ? ps : undefined;
      },
      90_000,
      '20 Ready pods',
      500,
    );
    const byNode = new Map<string, number>();
    for (const p of all) byNode.set(p.spec!.nodeName!, (byNode.get(p.spec!.nodeName!) ?? 0) + 1);
    expect([...byNode.keys()].sort()).to.deep.equal(['sim-1', 'sim-2']);
    expect(new Set(all.map((p) => p.status?.podIP)).size, 'distinct pod IPs').to.equal(20);
    const upMs = Date.now() - t0;

    await k(['scale', 'deployment/scale', '--replicas=0']);
    const killed = all[0]!.metadata.name!;
    await eventually(async () => (await pods('app=scale')).length === 0, 60_000, 'all pods gone', 500);
    const killing = (await events(killed)).find((e) => e.reason === 'Killing');
    expect(killing?.message).to.equal('Stopping container app');
    expect(killing?.source?.component).to.equal('kubelet');
    console.log(`      scale: 1 -> 20 Ready in ${upMs} ms, -> 0 in ${Date.now() - t0 - upMs} ms`);
  });

  it('rolls a Deployment out to a new image, gated by readiness (maxUnavailable respected)', async () => {
    const t0 = Date.now();
    const template = (image: string) => ({
      metadata: {
        labels: { app: 'roll' },
        // The simulated httpd answers its readiness probe only 1.5 s after it starts.
        annotations: {
          'sim.kubelet-operator.dev/behaviour.web': '{"ports": {"8080": {"readyAfterMs": 1500}}}',
        },
      },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'web',
            image,
            command: ['httpd', '-f', '-p', '8080'],
            readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    });
    const deploy = (image: string) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'roll', namespace: NS },
      spec: {
        replicas: 4,
        minReadySeconds: 0,
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
        selector: { matchLabels: { app: 'roll' } },
        template: template(image),
      },
    });
    await apply(deploy('busybox:1.36'));
    await k(['rollout', 'status', 'deployment/roll', '--timeout=60s']);

    await apply(deploy('busybox:1.37'));
    let minReady = Infinity;
    let sawUnready = false;
    let done = false;
    const sampler = (async () => {
      while (!done) {
        const ps = (await pods('app=roll')).filter((p) => !p.metadata.deletionTimestamp);
        const r = ps.filter(ready).length;
        minReady = Math.min(minReady, r);
        if (ps.some((p) => !ready(p))) sawUnready = true;
        await sleep(150);
      }
    })();
    await k(['rollout', 'status', 'deployment/roll', '--timeout=90s']);
    done = true;
    await sampler;
    const d = await deployment('roll');
    expect(d.status).to.include({ replicas: 4, updatedReplicas: 4, readyReplicas: 4, availableReplicas: 4 });
    expect(sawUnready, 'new pods were observed not yet Ready').to.equal(true);
    // maxUnavailable 1 of 4: never fewer than 3 Ready pods while the rollout waits on readiness.
    expect(minReady).to.be.at.least(3);
    const images = (await pods('app=roll')).filter((p) => !p.metadata.deletionTimestamp);
    expect(images.map((p) => p.spec?.containers[0]?.image)).to.deep.equal(Array(4).fill('busybox:1.37'));
    await k(['delete', 'deployment/roll', '--wait=false']);
    console.log(`      rollout: ${Date.now() - t0} ms, min Ready during rollout ${minReady}/4`);
  });

  it('a Job whose first pod fails retries (restartPolicy Never, a new pod) and completes', async () => {
    // The failed attempt count reaches the pod through the job controller's annotation; `exit 0024` is
    // 24 (fail) on the first attempt and `exit 1024` = 0 (success, exit codes are mod 256) on the second.
    const t0 = Date.now();
    await apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'retry', namespace: NS },
      spec: {
        completionMode: 'Indexed',
        completions: 1,
        backoffLimitPerIndex: 2,
        template: {
          metadata: { labels: { job: 'retry' } },
          spec: {
            restartPolicy: 'Never',
            containers: [
              {
                name: 'work',
                image: 'busybox:1.36',
                command: ['sh', '-c', 'exit ${FAILURES}024'],
                env: [
                  {
                    name: 'FAILURES',
                    valueFrom: {
                      fieldRef: {
                        fieldPath: "metadata.annotations['batch.kubernetes.io/job-index-failure-count']",
                      },
                    },
                  },
                ],
              },
            ],
          },
        },
      },
    });
    await eventually(
      async () =>
        (await job('retry')).status?.conditions?.some((c) => c.type === 'Complete' && c.status === 'True'),
      90_000,
      'Job retry Complete',
      500,
    );
    const ps = await pods('job=retry');
    expect(ps.map((p) => p.status?.phase).sort()).to.deep.equal(['Failed', 'Succeeded']);
    const failed = ps.find((p) => p.status?.phase === 'Failed')!;
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated).to.include({
      exitCode: 24,
      reason: 'Error',
    });
    const ok = ps.find((p) => p.status?.phase === 'Succeeded')!;
    expect(ok.status?.containerStatuses?.[0]?.state?.terminated).to.include({
      exitCode: 0,
      reason: 'Completed',
    });
    expect((await job('retry')).status).to.include({ succeeded: 1, failed: 1 });
    console.log(`      retried Job complete in ${Date.now() - t0} ms`);
  });

  it('a Job with restartPolicy OnFailure restarts its container in place, counts it, then fails', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'onfailure', namespace: NS },
      spec: {
        backoffLimit: 1,
        template: {
          metadata: { labels: { job: 'onfailure' } },
          spec: {
            restartPolicy: 'OnFailure',
            containers: [{ name: 'work', image: 'busybox:1.36', command: ['sh', '-c', 'exit 3'] }],
          },
        },
      },
    });
    const pod = await eventually(
      async () =>
        (await pods('job=onfailure')).find((p) => (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1),
      60_000,
      'a restarted container',
      500,
    );
    expect(pod.status?.containerStatuses?.[0]?.lastState?.terminated).to.include({
      exitCode: 3,
      reason: 'Error',
    });
    const backoff = await eventually(
      async () => (await events(pod.metadata.name!)).find((e) => e.reason === 'BackOff'),
      30_000,
      'a BackOff event',
    );
    expect(backoff.type).to.equal('Warning');
    expect(backoff.message).to.equal(
      `Back-off restarting failed container work in pod ${pod.metadata.name}_${NS}(${pod.metadata.uid})`,
    );
    await eventually(
      async () =>
        (await job('onfailure')).status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True'),
      60_000,
      'Job onfailure Failed',
      500,
    );
    console.log(`      OnFailure Job failed after in-place restarts in ${Date.now() - t0} ms`);
  });

  it('a Job with restartPolicy Never that fails is Failed, its pod phase Failed', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'never', namespace: NS },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels: { job: 'never' } },
          spec: {
            restartPolicy: 'Never',
            containers: [
              { name: 'work', image: 'busybox:1.36', command: ['sh', '-c', 'echo boom >&2; exit 7'] },
            ],
          },
        },
      },
    });
    const cond = await eventually(
      async () =>
        (await job('never')).status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True'),
      60_000,
      'Job never Failed',
      500,
    );
    expect(cond.reason).to.equal('BackoffLimitExceeded');
    const ps = await pods('job=never');
    expect(ps).to.have.length(1);
    expect(ps[0]!.status?.phase).to.equal('Failed');
    expect(ps[0]!.status?.containerStatuses?.[0]?.state?.terminated).to.include({
      exitCode: 7,
      reason: 'Error',
    });
    console.log(`      failing Job Failed in ${Date.now() - t0} ms`);
  });

  it('a DaemonSet runs one pod on every VirtualNode', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: {
            terminationGracePeriodSeconds: 5,
            containers: [{ name: 'agent', image: 'busybox:1.36', command: GRACEFUL }],
          },
        },
      },
    });
    const ps = await eventually(
      async () => {
        const all = await pods('app=agent');
        return all.length === SIM_NODES.length && all.every(ready) ? all : undefined;
      },
      60_000,
      'a Ready daemon pod per node',
      500,
    );
    expect(ps.map((p) => p.spec?.nodeName).sort()).to.deep.equal(SIM_NODES);
    await k(['delete', 'daemonset/agent', '--wait=true', '--timeout=60s']);
    await eventually(async () => (await pods('app=agent')).length === 0, 60_000, 'daemon pods gone', 500);
    console.log(`      DaemonSet: ${Date.now() - t0} ms`);
  });

  it('a taint on a VirtualNode keeps untolerated pods off its Node', async () => {
    const t0 = Date.now();
    const taint = { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' };
    const patchTaints = (taints: unknown[]) =>
      kubectl(cp, [
        'patch',
        'virtualnode',
        'sim-2',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { taints } }),
      ]);
    expect((await patchTaints([taint])).code).to.equal(0);
    await eventually(
      async () => (await node('sim-2')).spec?.taints?.some((t) => t.key === 'dedicated'),
      30_000,
      'the taint on Node sim-2',
    );
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'untolerated', namespace: NS },
      spec: {
        replicas: 6,
        selector: { matchLabels: { app: 'untolerated' } },
        template: {
          metadata: { labels: { app: 'untolerated' } },
          spec: {
            terminationGracePeriodSeconds: 5,
            nodeSelector: { 'cluster-test/pool': 'main' },
            containers: [{ name: 'app', image: 'busybox:1.36', command: GRACEFUL }],
          },
        },
      },
    });
    const ps = await eventually(
      async () => {
        const all = await pods('app=untolerated');
        return all.length === 6 && all.every(ready) ? all : undefined;
      },
      60_000,
      '6 Ready pods',
      500,
    );
    expect(new Set(ps.map((p) => p.spec?.nodeName))).to.deep.equal(new Set(['sim-1']));
    await k(['delete', 'deployment/untolerated', '--wait=false']);
    expect((await patchTaints([])).code).to.equal(0);
    await eventually(async () => !(await node('sim-2')).spec?.taints?.length, 30_000, 'taint removed');
    console.log(`      taint: ${Date.now() - t0} ms`);
  });

  it('restarts a container whose liveness probe starts failing, counting restarts and saying why', async () => {
    const t0 = Date.now();
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'liveness',
        namespace: NS,
        // The simulated server answers 500 from 2 s after each start.
        annotations: {
          'sim.kubelet-operator.dev/behaviour.web': '{"ports": {"8080": {"failAfterMs": 2000}}}',
        },
      },
      spec: {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'web',
            image: 'busybox:1.36',
            command: ['httpd', '-f', '-p', '8080'],
            livenessProbe: {
              httpGet: { path: '/healthz', port: 8080 },
              periodSeconds: 1,
              failureThreshold: 2,
            },
          },
        ],
      },
    });
    const pod = await eventually(
      async () => {
        const p = await get<Pod>(`/api/v1/namespaces/${NS}/pods/liveness`);
        return (p.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1 ? p : undefined;
      },
      60_000,
      'a liveness restart',
      500,
    );
    expect(pod.status?.phase).to.equal('Running');
    const evs = await events('liveness');
    const unhealthy = evs.find((e) => e.reason === 'Unhealthy');
    expect(unhealthy?.type).to.equal('Warning');
    expect(unhealthy?.message).to.equal('Liveness probe failed: HTTP probe failed with statuscode: 500');
    const killing = evs.find((e) => e.reason === 'Killing');
    expect(killing?.message).to.equal('Container web failed liveness probe, will be restarted');
    expect(killing?.source?.component).to.equal('kubelet');
    const describe = await k(['describe', 'pod', 'liveness']);
    expect(describe).to.match(/Warning\s+Unhealthy\s+.*kubelet\s+Liveness probe failed: HTTP probe failed/);
    expect(describe).to.match(/Restart Count:\s+[1-9]/);
    await k(['delete', 'pod', 'liveness', '--wait=false']);
    console.log(`      liveness restart after ${Date.now() - t0} ms`);
  });

  it('a node whose agent stops goes NotReady, its pods are evicted after their toleration, then it recovers', async () => {
    const t0 = Date.now();
    const tolerations = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'].map((key) => ({
      key,
      operator: 'Exists',
      effect: 'NoExecute',
      tolerationSeconds: 5,
    }));
    await apply({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'pinned', namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'pinned' } },
        template: {
          metadata: { labels: { app: 'pinned' } },
          spec: {
            terminationGracePeriodSeconds: 5,
            nodeSelector: { 'kubernetes.io/hostname': 'sim-3' },
            tolerations,
            containers: [{ name: 'app', image: 'busybox:1.36', command: GRACEFUL }],
          },
        },
      },
    });
    const before = await eventually(
      async () => {
        const ps = await pods('app=pinned');
        return ps.length === 2 && ps.every(ready) ? ps : undefined;
      },
      60_000,
      '2 Ready pinned pods',
      500,
    );

    await spare!.stop();
    spare = undefined;
    const stoppedAt = Date.now();
    // The node lifecycle controller notices the stale Lease after its grace period (50 s by default).
    const unknown = await eventually(
      async () => {
        const n = await node('sim-3');
        return n.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'Unknown')
          ? n
          : undefined;
      },
      120_000,
      'Node sim-3 Ready=Unknown',
      1000,
    );
    const cond = unknown.status!.conditions!.find((c) => c.type === 'Ready')!;
    expect(cond.reason).to.equal('NodeStatusUnknown');
    expect(cond.message).to.equal('Kubelet stopped posting node status.');
    const notReadyMs = Date.now() - stoppedAt;
    await eventually(
      async () => (await node('sim-3')).spec?.taints?.some((t) => t.key === 'node.kubernetes.io/unreachable'),
      30_000,
      'the unreachable taint',
    );
    // Evicted after tolerationSeconds: 5 (marked for deletion; they finish terminating once a kubelet is back).
    await eventually(
      async () => {
        const ps = await pods('app=pinned');
        return before.every(
          (b) => ps.find((p) => p.metadata.uid === b.metadata.uid)?.metadata.deletionTimestamp,
        );
      },
      60_000,
      'the pinned pods evicted',
      500,
    );
    const evicted = (await events(before[0]!.metadata.name!)).find(
      (e) => e.reason === 'TaintManagerEviction',
    );
    expect(evicted?.message).to.match(/^Marking for deletion Pod /);

    spare = await startSpare();
    await waitNodeReady(client, 'sim-3', 60_000);
    await eventually(
      async () => {
        const ps = await pods('app=pinned');
        return (
          ps.length === 2 &&
          ps.every(ready) &&
          ps.every((p) => !before.some((b) => b.metadata.uid === p.metadata.uid))
        );
      },
      90_000,
      'replacement pods Ready on the recovered node, the evicted ones gone',
      500,
    );
    expect(nodeReady(await node('sim-3'))).to.equal(true);
    // The lifecycle controller lifts the unreachable taint on its next pass over the Ready node.
    await eventually(
      async () => ((await node('sim-3')).spec?.taints ?? []).length === 0,
      30_000,
      'Node sim-3 untainted',
    );
    console.log(
      `      node failure: NotReady after ${notReadyMs} ms, evicted and recovered in ${Date.now() - t0} ms total`,
    );
  });
});
