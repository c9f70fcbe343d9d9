// Kubelet against a real kube-apiserver + etcd, on the simulated runtime with the real clock: pod
// lifecycles as the rest of a cluster sees them (status, conditions, events, final delete), status writes
// only on change, and adoption by a restarted Kubelet without recreating anything.
//
// Scenarios run side by side (pods are created together and each test waits for its own pod), so the
// file takes about a minute beyond the control plane start.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { ContainerStatus, Pod, PodCondition, PodStatus } from '../../src/api/core.js';
import { KubeClient, type RequestOptions } from '../../src/kube/client.js';
import { EventRecorder, type CoreEvent } from '../../src/kube/events.js';
import { Informer, restListWatcher } from '../../src/kube/informer.js';
import { Kubelet } from '../../src/kubelet/shell/kubelet.js';
import { KubeletDefaults } from '../../src/kubelet/shell/kubelet_config.js';
import { PodsByNodeIndex, podNodeNameIndexFunc } from '../../src/kubelet/shell/podmanager.js';
import { Metrics } from '../../src/metrics.js';
import type { AdmissionNode } from '../../src/kubelet/lifecycle/admission.js';
import { restEventSink } from '../../src/node/api.js';
import { SimRuntime, simContainerBehaviourAnnotation } from '../../src/runtime/sim/index.js';
import type { ContainerConfig, PodSandboxConfig } from '../../src/runtime/types.js';
import { RealClock } from '../../src/util/clock.js';
import { isNotFound } from '../../src/util/errors.js';
import { createLogger, silentLogger } from '../../src/util/logger.js';
import { startControlPlane, type ControlPlane } from '../support/controlplane.js';
import { eventually } from '../support/eventually.js';
import { eventsOf, eventsWithReasons } from '../support/events.js';

const COLD_BUILD_TIMEOUT_MS = 20 * 60_000;
const NODE = 'vn-kubelet-int';
const NODE_IP = '127.0.0.42';
const NS = 'kubelet-int';
const IMAGE = 'registry.local/app:1';
const BUSYBOX = 'busybox:1.36';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * How soon a pod must be gone once it finished terminating. The kubelet deletes it (grace 0) at the status
 * manager's next sync after termination, which termination itself triggers (TerminatePod forces a status
 * update); the periodic full sync (KubeletDefaults.statusSyncPeriodMs, 10 s) is only the fallback. The pod
 * used exits at once on SIGTERM, so the bound is one PLEG relist for the runtime view to catch up with the
 * stop, one more for the watch and API round trips on a loaded machine, and the pods' 2 s grace period in
 * case the stop had to wait it: 4 s, well under the 10 s a kubelet without the prompt path would wait.
 */
const PROMPT_DELETE_MS = 2_000 + 2 * KubeletDefaults.plegRelistPeriodMs;

const cond = (s: PodStatus | undefined, type: string): PodCondition | undefined =>
  s?.conditions?.find((c) => c.type === type);
const cs = (s: PodStatus | undefined, name: string): ContainerStatus | undefined =>
  s?.containerStatuses?.find((c) => c.name === name);
/** The pod conditions the kubelet sets on a started pod (and the scheduler's). */
const POD_CONDITIONS = [
  'PodReadyToStartContainers',
  'Initialized',
  'ContainersReady',
  'Ready',
  'PodScheduled',
];
/** Whether container `app` waits with this reason. */
const appWaiting =
  (reason: string) =>
  (s: PodStatus): boolean =>
    cs(s, 'app')?.state?.waiting?.reason === reason;
const ics = (s: PodStatus | undefined, name: string): ContainerStatus | undefined =>
  s?.initContainerStatuses?.find((c) => c.name === name);

/**
 * Resolves just after the Kubelet's status manager starts a full sync (the periodic one: nothing else in
 * this file deletes a finished pod at the time it is used). Gives up after two periods.
 */
async function afterPeriodicStatusSync(k: Kubelet): Promise<void> {
  const sm = k.statusManager;
  const original = sm.syncBatch;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('no periodic status sync seen')),
        2 * KubeletDefaults.statusSyncPeriodMs + 1_000,
      );
      sm.syncBatch = (all: boolean) => {
        if (all) {
          clearTimeout(timer);
          resolve();
        }
        return original.call(sm, all);
      };
    });
  } finally {
    sm.syncBatch = original;
  }
}

interface Seen {
  at: number;
  status: PodStatus;
}

function podSpec(name: string, spec: Record<string, unknown>, annotations: Record<string, string> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, annotations },
    spec: {
      nodeName: NODE,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'app', image: IMAGE }],
      ...spec,
    } as Pod['spec'],
  };
}

describe('Kubelet against a real API server (simulated runtime)', function () {
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let informer: Informer<Pod>;
  let kubelet: Kubelet | undefined;
  let runtime: SimRuntime;
  let logDir: string;
  const clock = new RealClock();
  const calls: { method: string; path: string; at: number }[] = [];
  const creates: { pod: string; uid: string; container: string; attempt: number; at: number }[] = [];
  const history = new Map<string, Seen[]>();
  const created = new Map<string, number>();

  const counting = {
    request<T>(req: RequestOptions): Promise<T> {
      calls.push({ method: req.method, path: req.path, at: Date.now() });
      return client.request<T>(req);
    },
  };
  const statusPatches = (name: string, since = 0): number =>
    calls.filter(
      (c) =>
        c.method === 'PATCH' && c.path === `/api/v1/namespaces/${NS}/pods/${name}/status` && c.at >= since,
    ).length;
  const getPod = (name: string): Promise<Pod> =>
    client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${NS}/pods/${name}` });
  const createPod = async (pod: Pod): Promise<Pod> => {
    created.set(pod.metadata.name!, Date.now());
    return client.request<Pod>({ method: 'POST', path: `/api/v1/namespaces/${NS}/pods`, body: pod });
  };
  const deletePod = (name: string, gracePeriodSeconds?: number): Promise<unknown> =>
    client.request({
      method: 'DELETE',
      path: `/api/v1/namespaces/${NS}/pods/${name}`,
      ...(gracePeriodSeconds !== undefined ? { body: { gracePeriodSeconds } } : {}),
    });
  const eventsWith = (name: string, reasons: string[]): Promise<CoreEvent[]> =>
    eventsWithReasons(() => eventsOf(client, NS, name), reasons, name);
  const waitStatus = (
    name: string,
    pred: (s: PodStatus) => boolean,
    timeoutMs: number,
    what: string,
  ): Promise<PodStatus> =>
    eventually(
      async () => {
        const pod = await getPod(name);
        const s = pod.status ?? {};
        return pred(s) ? pod : undefined;
      },
      timeoutMs,
      `${name}: ${what}`,
    ).then(async (pod) => {
      // The tests read `history` after this; it is written by the informer's watch, which may still be
      // behind the GET. Wait until the watch has delivered this version too.
      const rv = BigInt(pod.metadata.resourceVersion!);
      await eventually(
        () => {
          const seen = informer.get(`${NS}/${name}`)?.metadata.resourceVersion;
          return seen !== undefined && BigInt(seen) >= rv ? true : undefined;
        },
        5_000,
        `${name}: the informer at resourceVersion ${rv}`,
      );
      return pod.status ?? {};
    });

  /** Resolves once the informer has seen `name` deleted, so every update before that is in `history`. */
  const informerSawDelete = (name: string): Promise<true> =>
    eventually(
      () => (informer.get(`${NS}/${name}`) === undefined ? true : undefined),
      5_000,
      `${name}: deletion seen by the informer`,
    );

  /** The first status in the informer's history of `name` (after `from`) that satisfies `pred`. */
  const waitSeen = (
    name: string,
    pred: (s: PodStatus) => boolean,
    timeoutMs: number,
    what: string,
    from = 0,
  ): Promise<Seen> =>
    eventually(
      () => (history.get(name) ?? []).slice(from).find((h) => pred(h.status)),
      timeoutMs,
      `${name}: ${what}`,
    );
  const indexOfSeen = (name: string, seen: Seen): number => (history.get(name) ?? []).indexOf(seen);

  const admissionNode: AdmissionNode = {
    name: NODE,
    labels: { 'kubernetes.io/hostname': NODE },
    taints: [],
    allocatable: new Map([
      ['cpu', 4000],
      ['memory', 8 * 1024 ** 3],
      ['pods', 110],
    ]),
  };

  const newKubelet = (): Kubelet => {
    const recorder = new EventRecorder(restEventSink(client), clock, NODE);
    const k = new Kubelet({
      nodeName: NODE,
      nodeIP: NODE_IP,
      runtime,
      runtimeKind: 'sim',
      client: counting,
      podInformer: informer,
      recorder,
      clock,
      logger: process.env.KUBELET_TEST_LOG
        ? createLogger(process.env.KUBELET_TEST_LOG as 'debug')
        : silentLogger,
      metrics: new Metrics(false),
      node: () => admissionNode,
      settings: {
        podNetwork: 'cni',
        podLogsRoot: logDir,
        cgroupRoot: '/kubepods',
        containerGCPeriodMs: 5_000,
      },
    });
    return k;
  };

  before(async function () {
    this.timeout(COLD_BUILD_TIMEOUT_MS);
    cp = await startControlPlane();
    client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), { qps: 200, burst: 400 });
    logDir = await mkdtemp(path.join(os.tmpdir(), 'kubelet-int-logs-'));
    await client.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: NS } } });
    // No controller-manager here: the ServiceAccount admission plugin still wants the default account.
    await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NS}/serviceaccounts`,
      body: { metadata: { name: 'default' } },
    });
    await client.request({
      method: 'POST',
      path: '/api/v1/nodes',
      body: { metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE } } },
    });

    runtime = new SimRuntime({ clock, nodeIP: NODE_IP, images: [IMAGE, BUSYBOX], idSeed: 'kubelet-int' });
    const createContainer = runtime.createContainer.bind(runtime);
    runtime.createContainer = (
      sandboxId: string,
      config: ContainerConfig,
      sandboxConfig: PodSandboxConfig,
    ) => {
      creates.push({
        pod: sandboxConfig.metadata.name,
        uid: sandboxConfig.metadata.uid,
        container: config.metadata.name,
        attempt: config.metadata.attempt,
        at: Date.now(),
      });
      return createContainer(sandboxId, config, sandboxConfig);
    };

    informer = new Informer<Pod>(
      restListWatcher<Pod>(client, '/api/v1/pods', { fieldSelector: `spec.nodeName=${NODE}` }),
      {
        clock,
        name: 'pods',
      },
    );
    informer.addIndex(PodsByNodeIndex, podNodeNameIndexFunc);
    const record = (p: Pod): void => {
      const name = p.metadata.name!;
      const list = history.get(name) ?? [];
      const status = p.status ?? {};
      if (JSON.stringify(list.at(-1)?.status) !== JSON.stringify(status))
        list.push({ at: Date.now(), status });
      history.set(name, list);
    };
    informer.addHandlers({
      add: (p) => {
        record(p);
        kubelet?.handlePodAdd(p);
      },
      update: (o, n) => {
        record(n);
        kubelet?.handlePodUpdate(n, o);
      },
      delete: (p) => kubelet?.handlePodDelete(p),
    });
    informer.start();
    await informer.waitForSync();

    kubelet = newKubelet();
    kubelet.start();
    await kubelet.ready;

    const sidecarSpec = {
      initContainers: [{ name: 'proxy', image: IMAGE, restartPolicy: 'Always' }],
    };
    await Promise.all([
      createPod(
        podSpec('plain', {
          containers: [
            {
              name: 'app',
              image: IMAGE,
              resources: {
                requests: { cpu: '100m', memory: '64Mi' },
                limits: { cpu: '100m', memory: '64Mi' },
              },
            },
          ],
        }),
      ),
      createPod(
        podSpec('init', {
          initContainers: [
            { name: 'setup', image: BUSYBOX, command: ['sh', '-c', 'sleep 1'] },
            { name: 'migrate', image: BUSYBOX, command: ['true'] },
          ],
        }),
      ),
      createPod(podSpec('sidecar', sidecarSpec)),
      createPod(
        podSpec('never-ok', {
          restartPolicy: 'Never',
          containers: [{ name: 'job', image: BUSYBOX, command: ['sh', '-c', 'sleep 1; exit 0'] }],
        }),
      ),
      createPod(
        podSpec('never-fail', {
          restartPolicy: 'Never',
          containers: [{ name: 'job', image: BUSYBOX, command: ['sh', '-c', 'sleep 1; exit 1'] }],
        }),
      ),
      createPod(
        podSpec('crash', { containers: [{ name: 'app', image: BUSYBOX, command: ['sh', '-c', 'exit 1'] }] }),
      ),
      createPod(
        podSpec(
          'ready-flip',
          {
            containers: [
              {
                name: 'web',
                image: IMAGE,
                ports: [{ name: 'http', containerPort: 8080 }],
                readinessProbe: {
                  httpGet: { path: '/healthz', port: 'http' },
                  periodSeconds: 1,
                  failureThreshold: 1,
                },
              },
            ],
          },
          {
            [simContainerBehaviourAnnotation('web')]: JSON.stringify({
              ports: { '8080': { readyAfterMs: 2500, failAfterMs: 7000 } },
            }),
          },
        ),
      ),
      createPod(
        podSpec(
          'liveness',
          {
            containers: [
              {
                name: 'app',
                image: IMAGE,
                livenessProbe: {
                  exec: { command: ['cat', '/tmp/healthy'] },
                  periodSeconds: 1,
                  failureThreshold: 2,
                },
              },
            ],
          },
          {
            [simContainerBehaviourAnnotation('app')]: JSON.stringify({
              exec: [
                {
                  argv: ['cat', '/tmp/healthy'],
                  exitCode: 1,
                  stderr: 'cat: /tmp/healthy: No such file or directory\n',
                  fromMs: 3000,
                },
              ],
            }),
          },
        ),
      ),
      createPod(podSpec('no-image', { containers: [{ name: 'app', image: 'registry.invalid/nope:1' }] })),
      createPod(
        podSpec('too-big', {
          containers: [{ name: 'app', image: IMAGE, resources: { requests: { cpu: '100' } } }],
        }),
      ),
      createPod(
        podSpec('no-config', {
          containers: [
            {
              name: 'app',
              image: IMAGE,
              env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'missing', key: 'k' } } }],
            },
          ],
        }),
      ),
    ]);
  });

  after(async function () {
    this.timeout(30_000);
    await kubelet?.stop();
    await informer?.stop();
    client?.close();
    await runtime?.close();
    if (logDir) await rm(logDir, { recursive: true, force: true });
    const failed = this.test?.parent?.tests.some((t) => t.state === 'failed') ?? false;
    await cp?.stop({ keepDir: failed });
  });

  it('runs a plain pod: Pending -> Running with the kubelet conditions and container status', async function () {
    this.timeout(20_000);
    const s = await waitStatus('plain', (st) => cond(st, 'Ready')?.status === 'True', 15_000, 'Ready');
    expect(s.phase).to.equal('Running');
    for (const t of POD_CONDITIONS) {
      expect(cond(s, t), t).to.include({ status: 'True' });
      expect(cond(s, t)!.lastTransitionTime, t).to.be.a('string');
    }
    expect(s.hostIP).to.equal(NODE_IP);
    expect(s.hostIPs).to.deep.equal([{ ip: NODE_IP }]);
    expect(s.podIP).to.match(/^10\.88\.\d+\.\d+$/);
    expect(s.podIPs).to.deep.equal([{ ip: s.podIP }]);
    expect(s.startTime).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(s.qosClass).to.equal('Guaranteed');
    const c = cs(s, 'app')!;
    expect(c.containerID).to.match(/^sim:\/\/[0-9a-f]{64}$/);
    expect(c).to.include({ ready: true, started: true, restartCount: 0 });
    expect(c.state?.running?.startedAt).to.be.a('string');
    expect(c.image).to.be.a('string');
    expect(c.imageID).to.be.a('string');
    const phases = (history.get('plain') ?? []).map((h) => h.status.phase);
    expect(phases[0]).to.equal('Pending');
    expect(phases.at(-1)).to.equal('Running');
    const events = (await eventsWith('plain', ['Pulled', 'Created', 'Started'])).map((e) => e.reason);
    expect(events).to.include.members(['Pulled', 'Created', 'Started']);
  });

  it('tracks the pod generation: status.observedGeneration and its conditions follow a spec change', async function () {
    this.timeout(30_000);
    const pod = await createPod(podSpec('generation', {}));
    expect(pod.metadata.generation).to.equal(1);
    const first = await waitStatus(
      'generation',
      (st) => cond(st, 'Ready')?.status === 'True',
      15_000,
      'Ready',
    );
    expect(first.observedGeneration).to.equal(1);
    for (const t of POD_CONDITIONS) {
      expect(cond(first, t)?.observedGeneration, t).to.equal(1);
    }
    // activeDeadlineSeconds is one of the mutable spec fields: the API server bumps the generation.
    const patched = await client.request<Pod>({
      method: 'PATCH',
      path: `/api/v1/namespaces/${NS}/pods/generation`,
      contentType: 'application/merge-patch+json',
      body: { spec: { activeDeadlineSeconds: 3600 } },
    });
    expect(patched.metadata.generation).to.equal(2);
    const second = await waitStatus(
      'generation',
      (st) => st.observedGeneration === 2,
      15_000,
      'generation 2',
    );
    expect(cond(second, 'Ready')).to.include({ status: 'True', observedGeneration: 2 });
    expect(cs(second, 'app')?.restartCount).to.equal(0);
    await deletePod('generation', 0);
  });

  it('runs init containers in order before the app', async function () {
    this.timeout(20_000);
    const s = await waitStatus(
      'init',
      (st) => st.phase === 'Running' && cond(st, 'Ready')?.status === 'True',
      15_000,
      'Running',
    );
    expect(cond(s, 'Initialized')).to.include({ status: 'True' });
    for (const name of ['setup', 'migrate']) {
      const st = ics(s, name)!;
      expect(st.state?.terminated, name).to.include({ exitCode: 0, reason: 'Completed' });
      expect(st.ready, name).to.equal(true);
    }
    expect(s.initContainerStatuses!.map((c) => c.name)).to.deep.equal(['setup', 'migrate']);
    const setupDone = Date.parse(ics(s, 'setup')!.state!.terminated!.finishedAt!);
    const migrateStarted = Date.parse(ics(s, 'migrate')!.state!.terminated!.startedAt!);
    expect(migrateStarted).to.be.at.least(setupDone);
    // While initializing, the pod was Pending with Initialized False.
    const initializing = (history.get('init') ?? []).find(
      (h) => cond(h.status, 'Initialized')?.status === 'False',
    );
    expect(initializing?.status.phase).to.equal('Pending');
  });

  it('runs a sidecar (restartable init container) next to the app', async function () {
    this.timeout(20_000);
    const s = await waitStatus('sidecar', (st) => cond(st, 'Ready')?.status === 'True', 15_000, 'Ready');
    const proxy = ics(s, 'proxy')!;
    expect(proxy.state?.running).to.not.equal(undefined);
    expect(proxy).to.include({ started: true, ready: true, restartCount: 0 });
    expect(cs(s, 'app')).to.include({ ready: true, started: true });
  });

  it('ends restartPolicy Never pods as Succeeded (exit 0) and Failed (exit 1)', async function () {
    this.timeout(25_000);
    const ok = await waitStatus('never-ok', (st) => st.phase === 'Succeeded', 20_000, 'Succeeded');
    expect(cs(ok, 'job')!.state?.terminated).to.include({ exitCode: 0, reason: 'Completed' });
    expect(cond(ok, 'Ready')).to.include({ status: 'False', reason: 'PodCompleted' });
    const bad = await waitStatus('never-fail', (st) => st.phase === 'Failed', 20_000, 'Failed');
    expect(cs(bad, 'job')!.state?.terminated).to.include({ exitCode: 1, reason: 'Error' });
    expect(cond(bad, 'Ready')).to.include({ status: 'False', reason: 'PodFailed' });
    // The status never went back from the terminal phase, and the containers were not restarted.
    expect(creates.filter((c) => c.pod === 'never-fail').length).to.equal(1);
  });

  it('crash-loops with a growing restart count, CrashLoopBackOff and the back-off honoured', async function () {
    this.timeout(45_000);
    const s = await waitStatus(
      'crash',
      (st) => (cs(st, 'app')?.restartCount ?? 0) >= 2 && appWaiting('CrashLoopBackOff')(st),
      40_000,
      'restartCount >= 2 in CrashLoopBackOff',
    );
    const app = cs(s, 'app')!;
    expect(app.state!.waiting!.message).to.match(
      /^back-off \d+s restarting failed container=app pod=crash_kubelet-int\(/,
    );
    expect(app.lastState?.terminated).to.include({ exitCode: 1, reason: 'Error' });
    expect(s.phase).to.equal('Running');
    const starts = creates.filter((c) => c.pod === 'crash').map((c) => c.at);
    expect(starts.length).to.be.at.least(3);
    // First restart at once, the second only after the 10 s back-off.
    expect(starts[2]! - starts[1]!).to.be.at.least(9_000);
    const reasons = (await eventsWith('crash', ['BackOff'])).map((e) => e.reason);
    expect(reasons).to.include('BackOff');
  });

  it('flips Ready both ways with a readiness probe', async function () {
    this.timeout(30_000);
    const ready = await waitSeen('ready-flip', (st) => cond(st, 'Ready')?.status === 'True', 15_000, 'Ready');
    expect(cs(ready.status, 'web')!.ready).to.equal(true);
    const unready = await waitSeen(
      'ready-flip',
      (st) => cond(st, 'Ready')?.status === 'False' && st.phase === 'Running',
      15_000,
      'not Ready again',
      indexOfSeen('ready-flip', ready),
    );
    expect(cs(unready.status, 'web')!.ready).to.equal(false);
    expect(cond(unready.status, 'ContainersReady')).to.include({
      status: 'False',
      reason: 'ContainersNotReady',
    });
    // Ready came 2.5 s after the start and went with the first failed probe after 7 s (period 1 s).
    expect(unready.at - ready.at).to.be.within(3_000, 7_000);
    const readySeq = (history.get('ready-flip') ?? [])
      .map((h) => cond(h.status, 'Ready')?.status)
      .filter(Boolean);
    const flips = readySeq.filter((v, i) => i > 0 && v !== readySeq[i - 1]);
    expect(flips).to.deep.equal(['True', 'False']);
    const unhealthy = (await eventsWith('ready-flip', ['Unhealthy']))
      .filter((e) => e.reason === 'Unhealthy')
      .map((e) => e.message);
    expect(unhealthy.some((m) => m.startsWith('Readiness probe failed: '))).to.equal(true);
    expect(
      unhealthy.some((m) => m === 'Readiness probe failed: HTTP probe failed with statuscode: 500'),
    ).to.equal(true);
  });

  it('restarts a container whose liveness probe fails', async function () {
    this.timeout(30_000);
    const s = await waitStatus(
      'liveness',
      (st) => (cs(st, 'app')?.restartCount ?? 0) >= 1,
      25_000,
      'restarted',
    );
    expect(cs(s, 'app')!.lastState?.terminated).to.not.equal(undefined);
    const events = await eventsWith('liveness', ['Unhealthy']);
    const unhealthy = events.find((e) => e.reason === 'Unhealthy');
    expect(unhealthy?.message).to.equal(
      'Liveness probe failed: cat: /tmp/healthy: No such file or directory\n',
    );
    expect(unhealthy?.source).to.deep.equal({ component: 'kubelet', host: NODE });
    expect(unhealthy?.involvedObject.fieldPath).to.equal('spec.containers{app}');
    const killing = events.find((e) => e.reason === 'Killing');
    expect(killing?.message).to.equal('Container app failed liveness probe, will be restarted');
  });

  it('reports ErrImagePull, then ImagePullBackOff, for an image that cannot be pulled', async function () {
    this.timeout(45_000);
    const pull = await waitSeen('no-image', appWaiting('ErrImagePull'), 15_000, 'ErrImagePull');
    expect(cs(pull.status, 'app')!.state!.waiting!.message).to.match(/registry\.invalid.*no such host/);
    const backoff = await waitSeen(
      'no-image',
      appWaiting('ImagePullBackOff'),
      40_000,
      'ImagePullBackOff',
      indexOfSeen('no-image', pull),
    );
    const s = backoff.status;
    expect(cs(s, 'app')!.state!.waiting!.message).to.match(
      /^Back-off pulling image "registry.invalid\/nope:1"/,
    );
    expect(s.phase).to.equal('Pending');
    const reasons = (await eventsWith('no-image', ['Pulling', 'Failed'])).map((e) => e.reason);
    expect(reasons).to.include.members(['Pulling', 'Failed']);
  });

  it('rejects a pod that does not fit: OutOfcpu, phase Failed, an Event', async function () {
    this.timeout(15_000);
    const s = await waitStatus('too-big', (st) => st.phase === 'Failed', 10_000, 'Failed');
    expect(s.reason).to.equal('OutOfcpu');
    expect(s.message).to.match(
      /^Pod was rejected: Node didn't have enough resource: cpu, requested: 100000, used: \d+, capacity: 4000$/,
    );
    expect(creates.filter((c) => c.pod === 'too-big')).to.deep.equal([]);
    const ev = (await eventsWith('too-big', ['OutOfcpu'])).find((e) => e.reason === 'OutOfcpu')!;
    expect(ev.type).to.equal('Warning');
  });

  it('reports CreateContainerConfigError and an Event for a missing configMap', async function () {
    this.timeout(15_000);
    const s = await waitStatus(
      'no-config',
      appWaiting('CreateContainerConfigError'),
      10_000,
      'CreateContainerConfigError',
    );
    expect(cs(s, 'app')!.state!.waiting!.message).to.equal('configmap "missing" not found');
    const ev = (await eventsWith('no-config', ['Failed'])).find((e) => e.reason === 'Failed')!;
    expect(ev.message).to.equal('Error: configmap "missing" not found');
  });

  it('patches status only on change, and not at all for a steady pod', async function () {
    this.timeout(30_000);
    for (const name of ['plain', 'sidecar', 'init', 'never-ok']) {
      await waitStatus(name, (st) => st.phase === 'Running' || st.phase === 'Succeeded', 10_000, 'settled');
    }
    const start = Date.now();
    await sleep(15_000);
    for (const name of ['plain', 'sidecar', 'init', 'never-ok']) {
      expect(statusPatches(name, start), `${name} in a steady window`).to.equal(0);
    }
    for (const name of ['plain', 'sidecar', 'init', 'never-ok', 'never-fail', 'too-big']) {
      // Each PATCH made a change the informer saw; the creation status is not ours.
      const changes = (history.get(name) ?? []).length - 1;
      const patches = statusPatches(name);
      console.log(`      ${name}: ${patches} status patches, ${changes} observed status changes`);
      expect(patches, name).to.be.at.least(1);
      expect(patches, name).to.be.at.most(changes);
    }
  });

  it('deletes gracefully: the grace period is honoured and the pod object disappears', async function () {
    this.timeout(30_000);
    // `sleep` as PID 1 ignores SIGTERM, so the stop waits the whole grace period before SIGKILL.
    await createPod(
      podSpec('graceful', {
        terminationGracePeriodSeconds: 3,
        containers: [{ name: 'app', image: BUSYBOX, command: ['sleep', '3600'] }],
      }),
    );
    await waitStatus('graceful', (st) => st.phase === 'Running', 10_000, 'Running');
    const t0 = Date.now();
    await deletePod('graceful');
    await eventually(
      async () => {
        try {
          await getPod('graceful');
          return undefined;
        } catch (err) {
          return isNotFound(err) ? true : undefined;
        }
      },
      20_000,
      'pod object gone',
    );
    const took = Date.now() - t0;
    console.log(`      graceful delete (grace 3 s) completed in ${took} ms`);
    expect(took).to.be.within(2_800, 10_000);
    await informerSawDelete('graceful');
    const last = history.get('graceful')!.at(-1)!.status;
    expect(cs(last, 'app')?.state?.terminated?.exitCode).to.equal(137);
    const reasons = (await eventsWith('graceful', ['Killing'])).map((e) => e.reason);
    expect(reasons).to.include('Killing');
    // The runtime no longer holds anything of the pod.
    const left = (await runtime.listContainers()).filter(
      (c) => c.labels['io.kubernetes.pod.name'] === 'graceful',
    );
    expect(left).to.deep.equal([]);
  });

  it('deletes finished pods promptly too', async function () {
    this.timeout(60_000);
    expect(PROMPT_DELETE_MS).to.be.below(KubeletDefaults.statusSyncPeriodMs);
    const gone = (name: string) => async (): Promise<true | undefined> => {
      try {
        await getPod(name);
        return undefined;
      } catch (err) {
        return isNotFound(err) ? true : undefined;
      }
    };

    // A pod that finishes because it is deleted: its app exits at once on SIGTERM, and the kubelet must
    // delete the API object at the status sync that follows. Asked right after a periodic full sync, the
    // next one is a whole period away, so only the prompt path meets the bound (otherwise a kubelet without
    // it would pass whenever the period happened to end inside the bound).
    await createPod(podSpec('finishing', { containers: [{ name: 'app', image: IMAGE }] }));
    await waitStatus('finishing', (st) => st.phase === 'Running', 15_000, 'Running');
    await afterPeriodicStatusSync(kubelet!);
    let t0 = Date.now();
    await deletePod('finishing');
    await eventually(gone('finishing'), PROMPT_DELETE_MS, `deleted pod gone within ${PROMPT_DELETE_MS} ms`);
    console.log(`      pod finished by its deletion removed in ${Date.now() - t0} ms`);
    await informerSawDelete('finishing');
    const last = history.get('finishing')!.at(-1)!.status;
    expect(cs(last, 'app')?.state?.terminated?.exitCode, 'stopped by SIGTERM').to.equal(143);

    // A pod that had already finished: the API server gives a terminal pod no grace period and removes it
    // itself (pod strategy CheckGracefulDelete); nothing of ours may hold it up.
    await waitStatus('never-ok', (st) => st.phase === 'Succeeded', 20_000, 'Succeeded');
    t0 = Date.now();
    await deletePod('never-ok');
    await eventually(gone('never-ok'), PROMPT_DELETE_MS, 'finished pod gone');
    console.log(`      finished pod deleted in ${Date.now() - t0} ms`);
  });

  it('survives a crash: a new Kubelet adopts the containers without recreating them, and cleans up orphans', async function () {
    this.timeout(60_000);
    await waitStatus('plain', (st) => cond(st, 'Ready')?.status === 'True', 10_000, 'Ready');
    // Crash: the Kubelet just stops; nothing is cleaned up.
    await kubelet!.stop();
    kubelet = undefined;
    const orphanUID = (await getPod('sidecar')).metadata.uid!;
    // Deleted while no Kubelet runs (force, as the API would after the grace period): its containers are orphans.
    await deletePod('sidecar', 0);
    const stableCreates = (name: string) => creates.filter((c) => c.pod === name).length;
    const before = new Map(['plain', 'init', 'ready-flip'].map((n) => [n, stableCreates(n)]));
    const since = Date.now();

    kubelet = newKubelet();
    kubelet.start();
    await kubelet.ready;
    await sleep(8_000);

    for (const [name, count] of before)
      expect(stableCreates(name), `${name} containers created again`).to.equal(count);
    const plain = await waitStatus(
      'plain',
      (st) => cond(st, 'Ready')?.status === 'True',
      10_000,
      'Ready after restart',
    );
    expect(cs(plain, 'app')!.restartCount).to.equal(0);
    expect(statusPatches('plain', since), 'plain status patches after restart').to.equal(0);
    const init = (await getPod('init')).status!;
    expect(init.phase).to.equal('Running');
    expect(statusPatches('init', since), 'init status patches after restart').to.equal(0);
    const orphans = await eventually(
      async () => {
        const left = (await runtime.listContainers()).filter(
          (c) => c.labels['io.kubernetes.pod.uid'] === orphanUID,
        );
        return left.length === 0 ? true : undefined;
      },
      15_000,
      'orphaned containers removed',
    );
    expect(orphans).to.equal(true);
    const sandboxes = (await runtime.listPodSandbox()).filter((s) => s.metadata.uid === orphanUID);
    expect(sandboxes).to.deep.equal([]);
  });
});
