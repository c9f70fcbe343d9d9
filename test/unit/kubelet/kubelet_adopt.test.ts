// Adoption without restarts (issue #19 part 2, src/kubelet/kubelet_adopt.ts): Kubelet A runs pods on its own
// simulated runtime and stops (its process is gone: the runtime with it); Kubelet B starts over a fresh
// simulated runtime and the same API, and rebuilds the runtime from the pods' statuses. Nothing is created,
// started or pulled again, no restart count moves, and B writes no status: the one it generates is the API's.
import { expect } from 'chai';
import type { Pod, PodStatus } from '../../../src/api/core.js';
import type { RequestOptions } from '../../../src/kube/client.js';
import { Kubelet, type KubeletDeps } from '../../../src/kubelet/shell/kubelet.js';
import { adoptionPlan } from '../../../src/kubelet/kubelet_adopt.js';
import { MemoryVolumeFS } from '../../../src/kubelet/volume/memfs.js';
import { MemoryMounter } from '../../../src/kubelet/volume/shell/mounter.js';
import { SimRuntime } from '../../../src/runtime/sim/index.js';
import { FakeClock } from '../../../src/util/clock.js';
import { KindError } from '../../../src/util/errors.js';
import { MemoryLogger } from '../../../src/util/logger.js';
import { flush } from './kubelet-fixtures.js';
import { admissionNode } from './lifecycle/admission-fixtures.js';

const NODE = 'n1';
const NS = 'ns';

type JSONObject = Record<string, unknown>;
const isObject = (v: unknown): v is JSONObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const MERGE_KEYS: Record<string, string> = { conditions: 'type', podIPs: 'ip', hostIPs: 'ip' };

/** Applies a status strategic merge patch as the API server does, for the lists and maps PodStatus has. */
function applyPatch(target: JSONObject, patch: JSONObject, mergeKeys: Record<string, string>): void {
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$setElementOrder/')) continue;
    const mergeKey = mergeKeys[key];
    if (value === null) {
      delete target[key];
    } else if (mergeKey && Array.isArray(value)) {
      const list = ((target[key] as JSONObject[] | undefined) ?? []).map((e) => structuredClone(e));
      for (const entry of value as JSONObject[]) {
        const at = list.findIndex((e) => e[mergeKey] === entry[mergeKey]);
        if (entry.$patch === 'delete') {
          if (at >= 0) list.splice(at, 1);
        } else if (at >= 0) {
          applyPatch(list[at]!, entry, {});
        } else {
          list.push(structuredClone(entry));
        }
      }
      const order = patch[`$setElementOrder/${key}`] as JSONObject[] | undefined;
      if (order) {
        const rank = (e: JSONObject) => {
          const i = order.findIndex((o) => o[mergeKey] === e[mergeKey]);
          return i < 0 ? order.length : i;
        };
        list.sort((a, b) => rank(a) - rank(b));
      }
      target[key] = list;
    } else if (isObject(value) && isObject(target[key])) {
      applyPatch(target[key], value, {});
    } else {
      target[key] = structuredClone(value);
    }
  }
}

/** Pods and ConfigMaps in memory; status PATCHes applied and counted per writer (`writer` names the Kubelet). */
class FakeAPI {
  readonly pods = new Map<string, Pod>();
  readonly configMaps = new Map<string, Record<string, string>>();
  readonly patches: { writer: string; pod: string; body: unknown }[] = [];
  writer = '';
  private rv = 10;

  async request<T>(req: RequestOptions): Promise<T> {
    const parts = req.path.split('/');
    const [kind, name] = [parts[5], parts[6] ?? ''];
    if (kind === 'configmaps') {
      const data = this.configMaps.get(name);
      if (!data) throw new KindError('NotFound', `configmaps "${name}" not found`);
      return { metadata: { name, namespace: NS }, data: { ...data } } as T;
    }
    if (kind === 'pods') {
      const pod = this.pods.get(name);
      if (!pod) throw new KindError('NotFound', `pods "${name}" not found`);
      if (req.method === 'PATCH') {
        const body = req.body as { status: JSONObject };
        this.patches.push({ writer: this.writer, pod: name, body });
        const status = structuredClone(pod.status ?? {}) as JSONObject;
        applyPatch(status, body.status, MERGE_KEYS);
        pod.status = status as PodStatus;
        pod.metadata.resourceVersion = String(++this.rv);
      }
      return structuredClone(pod) as T;
    }
    throw new KindError('NotFound', `${req.path} not found`);
  }
}

function mkPod(name: string, spec: Partial<Pod['spec']>): Pod {
  return {
    metadata: {
      uid: `uid-${name}`,
      name,
      namespace: NS,
      creationTimestamp: '2026-01-01T00:00:00Z',
      resourceVersion: '1',
    },
    spec: { nodeName: NODE, terminationGracePeriodSeconds: 1, containers: [], ...spec },
    status: { phase: 'Pending' },
  };
}

const IMAGE = 'busybox:1.36';
const sleeper = { image: IMAGE, command: ['sleep', 'infinity'] };

function testPods(): Pod[] {
  return [
    mkPod('init', {
      initContainers: [{ name: 'setup', image: IMAGE, command: ['sh', '-c', 'echo ready; exit 0'] }],
      containers: [{ name: 'app', ...sleeper }],
    }),
    mkPod('restarted', { containers: [{ name: 'app', ...sleeper }] }),
    mkPod('tcp', {
      containers: [
        {
          name: 'web',
          image: IMAGE,
          command: ['httpd', '-f', '-p', '8080'],
          ports: [{ containerPort: 8080 }],
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
        },
      ],
    }),
    mkPod('config', {
      volumes: [{ name: 'cfg', configMap: { name: 'settings' } }],
      containers: [
        {
          name: 'reader',
          ...sleeper,
          env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode' } } }],
          volumeMounts: [{ name: 'cfg', mountPath: '/etc/cfg' }],
          readinessProbe: { exec: { command: ['cat', '/etc/cfg/mode'] }, periodSeconds: 1 },
        },
      ],
    }),
    // One container ran to a failure whose message came from its log; the other still runs.
    mkPod('message', {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'failed',
          image: IMAGE,
          command: ['sh', '-c', 'echo boom >&2; exit 3'],
          terminationMessagePolicy: 'FallbackToLogsOnError',
        },
        { name: 'still', ...sleeper },
      ],
    }),
  ];
}

/** One process of the operator serving node n1: its own runtime and node files, the shared API. */
function kubeletOn(clock: FakeClock, api: FakeAPI, name: string, opts: { podCIDR?: string } = {}) {
  const fs = new MemoryVolumeFS();
  const runtime = new SimRuntime({
    clock,
    idSeed: NODE,
    nodeIP: '10.1.0.1',
    files: fs,
    ...(opts.podCIDR ? { podCIDR: opts.podCIDR } : {}),
  });
  const calls: string[] = [];
  const target = runtime as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const m of ['runPodSandbox', 'createContainer', 'startContainer', 'pullImage'] as const) {
    const fn = target[m]!.bind(runtime);
    target[m] = (...args: unknown[]) => {
      calls.push(m);
      return fn(...args);
    };
  }
  const events: string[] = [];
  const logger = new MemoryLogger();
  const deps: KubeletDeps = {
    nodeName: NODE,
    nodeIP: '10.1.0.1',
    runtime,
    runtimeKind: 'sim',
    client: {
      request: <T>(req: RequestOptions) => {
        api.writer = name;
        return api.request<T>(req);
      },
    },
    podInformer: {
      waitForSync: () => Promise.resolve(),
      byIndex: (_i: string, node: string) =>
        [...api.pods.values()].filter((p) => p.spec.nodeName === node).map((p) => structuredClone(p)),
    },
    recorder: { event: (_ref, type, reason, message) => events.push(`${type} ${reason}: ${message}`) },
    clock,
    logger,
    node: () => admissionNode({ cpu: 4000, pods: 20 }, NODE),
    settings: { podNetwork: 'cni', podLogsRoot: '/var/log/pods', cgroupRoot: '/kubepods' },
    podEnvironment: { podsDir: '/var/lib/kubelet/pods', fs, mounter: new MemoryMounter() },
  };
  return { kubelet: new Kubelet(deps), runtime, calls, events, logger };
}

async function run(clock: FakeClock, ms: number, step = 100): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(step);
    await flush();
  }
}

async function started(k: Kubelet, clock: FakeClock): Promise<void> {
  k.start();
  for (let i = 0; i < 100; i++) {
    await flush();
    if (await Promise.race([k.ready.then(() => true), Promise.resolve(false)])) return;
    clock.advance(10);
  }
  await k.ready;
}

const statuses = (api: FakeAPI): Record<string, PodStatus> =>
  Object.fromEntries([...api.pods].map(([n, p]) => [n, structuredClone(p.status ?? {})]));

/** Every container ID and restart count a pod's status shows, current and last. */
function idsOf(status: PodStatus): string[] {
  return [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].flatMap((s) => [
    `${s.name}#${s.restartCount} ${s.containerID ?? '-'}`,
    ...(s.lastState?.terminated ? [`${s.name} last ${s.lastState.terminated.containerID ?? '-'}`] : []),
  ]);
}

/** Runs the test pods to Running and Ready on Kubelet A (one container killed once), then stops A. */
async function ranOnA(clock: FakeClock, api: FakeAPI) {
  api.configMaps.set('settings', { mode: 'fast' });
  for (const p of testPods()) api.pods.set(p.metadata.name!, p);
  const a = kubeletOn(clock, api, 'A');
  await started(a.kubelet, clock);
  await run(clock, 5_000);
  const app = (await a.runtime.listContainers()).find(
    (c) => c.labels['io.kubernetes.pod.name'] === 'restarted' && c.state === 'running',
  );
  await a.runtime.stopContainer(app!.id, 0);
  await run(clock, 20_000);
  const before = statuses(api);
  for (const [name, s] of Object.entries(before)) {
    expect(s.phase, name).to.equal('Running');
    const ready = name === 'message' ? 'False' : 'True';
    expect(s.conditions?.find((c) => c.type === 'Ready')?.status, name).to.equal(ready);
  }
  expect(before.message!.containerStatuses![0]!.state?.terminated).to.deep.include({
    exitCode: 3,
    reason: 'Error',
    message: 'boom\n',
  });
  expect(before.restarted!.containerStatuses![0]!.restartCount).to.equal(1);
  expect(before.restarted!.containerStatuses![0]!.lastState?.terminated?.containerID).to.match(/^sim:\/\//);
  expect(before.init!.initContainerStatuses![0]!.state?.terminated?.reason).to.equal('Completed');
  await a.kubelet.stop(0);
  await a.runtime.close(); // the process that held it is gone
  return before;
}

describe('Kubelet adoption of a simulated runtime from API statuses', () => {
  it('adopts every pod: no container created or started twice, no Events, no status write', async () => {
    const clock = new FakeClock();
    const api = new FakeAPI();
    const before = await ranOnA(clock, api);

    const b = kubeletOn(clock, api, 'B');
    const patchesBefore = api.patches.length;
    await started(b.kubelet, clock);
    await run(clock, 35_000); // three full status reconciles, many probe periods, relists and resyncs

    expect(b.calls, 'runtime calls that make things').to.deep.equal([]);
    expect(b.events.filter((e) => /\b(Created|Started|Pulled|Pulling|Killing)\b/.test(e))).to.deep.equal([]);
    expect(b.events).to.deep.equal([]);
    expect(api.patches.slice(patchesBefore), 'status writes by B').to.deep.equal([]);
    const after = statuses(api);
    expect(after).to.deep.equal(before);
    for (const [name, s] of Object.entries(after)) expect(idsOf(s), name).to.deep.equal(idsOf(before[name]!));
    expect(b.logger.lines.filter((l) => l.level === 'warn')).to.deep.equal([]);

    // What B runs is what the statuses say, on the IPs they say, with the volume files in place.
    const running = (await b.runtime.listContainers({ state: 'running' })).map((c) => `sim://${c.id}`);
    const listed = Object.values(after).flatMap((s) =>
      (s.containerStatuses ?? []).filter((c) => c.state?.running).map((c) => c.containerID ?? ''),
    );
    expect(running.sort()).to.deep.equal(listed.sort());
    const sandboxes = await b.runtime.listPodSandbox();
    const ips = await Promise.all(
      sandboxes.map(async (s) => (await b.runtime.podSandboxStatus(s.id)).network?.ip),
    );
    expect(ips.sort()).to.deep.equal(
      Object.values(after)
        .map((s) => s.podIP)
        .sort(),
    );
    // B's own probes ran (they are what keeps Ready true from here on), the exec one reading the volume.
    for (const name of ['tcp', 'config']) {
      const id = after[name]!.containerStatuses![0]!.containerID!;
      expect(b.kubelet.results.readiness.get(id), name).to.equal('success');
    }
    const reader = (await b.runtime.listContainers()).find((c) => c.metadata.name === 'reader')!;
    const cat = await b.runtime.execSync(reader.id, ['cat', '/etc/cfg/mode'], 5);
    expect([cat.exitCode, cat.stdout.toString()]).to.deep.equal([0, 'fast']);

    // And B goes on as a kubelet: a container that dies now is restarted once, counting on from the status.
    const app = (await b.runtime.listContainers({ state: 'running' })).find(
      (c) => c.labels['io.kubernetes.pod.name'] === 'restarted',
    )!;
    await b.runtime.stopContainer(app.id, 0);
    await run(clock, 15_000);
    expect(b.calls.filter((c) => c === 'createContainer')).to.have.length(1);
    expect(api.pods.get('restarted')!.status!.containerStatuses![0]!.restartCount).to.equal(2);
    expect(
      api.pods.get('restarted')!.status!.containerStatuses![0]!.lastState?.terminated?.containerID,
    ).to.equal(`sim://${app.id}`);
    await b.kubelet.stop(0);
    await b.runtime.close();
  });

  it('starts a pod afresh, with a warning, when its status IP is not one the runtime can take', async () => {
    const clock = new FakeClock();
    const api = new FakeAPI();
    const before = await ranOnA(clock, api);
    const tcp = api.pods.get('tcp')!;
    tcp.status = { ...tcp.status, podIP: '192.168.7.7', podIPs: [{ ip: '192.168.7.7' }] };

    const b = kubeletOn(clock, api, 'B');
    await started(b.kubelet, clock);
    await run(clock, 15_000);

    const warned = b.logger.lines.filter((l) => l.level === 'warn');
    expect(warned.map((l) => [l.msg, l.meta.pod])).to.deep.equal([
      ['could not adopt pod from its API status; it starts afresh', `${NS}/tcp`],
    ]);
    expect(String(warned[0]!.meta.err)).to.contain('192.168.7.7');
    // Only that pod was made again; the others are untouched.
    expect(b.calls.filter((c) => c === 'runPodSandbox')).to.have.length(1);
    expect(b.calls.filter((c) => c === 'createContainer')).to.have.length(1);
    const after = statuses(api);
    expect(after.tcp!.podIP).to.match(/^10\.88\./);
    expect(after.tcp!.containerStatuses![0]!.containerID).to.not.equal(
      before.tcp!.containerStatuses![0]!.containerID,
    );
    for (const name of ['init', 'restarted', 'config', 'message'])
      expect(after[name], name).to.deep.equal(before[name]);
    // The rolled-back adoption left nothing behind: one sandbox per pod.
    expect(await b.runtime.listPodSandbox()).to.have.length(5);
    await b.kubelet.stop(0);
    await b.runtime.close();
  });

  it('plans the instances a status describes, oldest first, and refuses one that does not add up', () => {
    const pod = mkPod('p', {
      initContainers: [{ name: 'init', image: IMAGE }],
      containers: [
        { name: 'a', image: IMAGE },
        { name: 'b', image: IMAGE },
        { name: 'c', image: IMAGE },
      ],
    });
    const at = '2026-01-01T00:00:05Z';
    const ms = Date.parse(at);
    const terminated = (id: string, exitCode = 1) => ({
      terminated: { exitCode, reason: 'Error', startedAt: at, finishedAt: at, containerID: `sim://${id}` },
    });
    pod.status = {
      phase: 'Running',
      initContainerStatuses: [
        { name: 'init', ready: true, restartCount: 0, containerID: 'sim://i0', state: terminated('i0', 0) },
      ],
      containerStatuses: [
        {
          name: 'a',
          ready: true,
          restartCount: 3,
          containerID: 'sim://a3',
          state: { running: { startedAt: at } },
          lastState: terminated('a2'),
        },
        {
          name: 'b',
          ready: false,
          restartCount: 2,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: terminated('b2'),
        },
        { name: 'c', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } },
      ],
    };
    const plan = adoptionPlan(pod, 'sim')!;
    expect(plan.map((i) => [i.container.name, i.restartCount, i.fixed.id, i.fixed.state])).to.deep.equal([
      ['init', 0, 'i0', 'exited'],
      ['a', 2, 'a2', 'exited'],
      ['a', 3, 'a3', 'running'],
      ['b', 2, 'b2', 'exited'],
    ]);
    expect(plan[2]!.fixed.startedAtMs).to.equal(ms);
    expect(plan[1]!.fixed).to.deep.include({ exitCode: 1, reason: 'Error', finishedAtMs: ms });
    expect(adoptionPlan(pod, 'containerd')).to.equal(undefined);

    const broken = (edit: (s: PodStatus) => void) => {
      const p = structuredClone(pod);
      edit(p.status!);
      return () => adoptionPlan(p, 'sim');
    };
    expect(broken((s) => (s.containerStatuses![0]!.containerID = 'containerd://x'))).to.throw(
      KindError,
      'not of runtime sim',
    );
    expect(broken((s) => (s.containerStatuses![0]!.restartCount = 0))).to.throw(KindError, 'does not fit');
    expect(broken((s) => (s.containerStatuses![0]!.state = { running: { startedAt: 'soon' } }))).to.throw(
      KindError,
      'RFC3339',
    );
    expect(broken((s) => (s.containerStatuses![0]!.name = 'z'))).to.throw(KindError, 'spec does not have');
  });
});
