// The Kubelet under a FakeClock, on the simulated runtime, with an in-memory pod source and API: what the
// Kubelet tests share.
import type { Pod } from '../../../src/api/core.js';
import type { RequestOptions } from '../../../src/kube/client.js';
import type { KubeletDeps } from '../../../src/kubelet/shell/kubelet.js';
import type { Kubelet } from '../../../src/kubelet/shell/kubelet.js';
import { MemoryVolumeFS } from '../../../src/kubelet/volume/memfs.js';
import { MemoryMounter } from '../../../src/kubelet/volume/shell/mounter.js';
import { SimRuntime } from '../../../src/runtime/sim/index.js';
import type { ContainerConfig, PodSandboxConfig } from '../../../src/runtime/types.js';
import { FakeClock } from '../../../src/util/clock.js';
import { KindError } from '../../../src/util/errors.js';
import { silentLogger } from '../../../src/util/logger.js';
import { admissionNode } from './lifecycle/admission-fixtures.js';

export const NODE = 'n1';

export function mkPod(uid: string, extra: Partial<Pod['spec']> = {}): Pod {
  return {
    metadata: {
      uid,
      name: `p-${uid}`,
      namespace: 'ns',
      creationTimestamp: '2026-01-01T00:00:00Z',
      resourceVersion: '1',
    },
    spec: {
      nodeName: NODE,
      terminationGracePeriodSeconds: 1,
      containers: [{ name: 'app', image: 'img:1' }],
      ...extra,
    },
    status: { phase: 'Pending' },
  };
}

/** Pods by name; GET answers from it, PATCH and DELETE are recorded. */
export class FakeAPI {
  pods = new Map<string, Pod>();
  patches: string[] = [];
  deletes: string[] = [];
  async request<T>(req: RequestOptions): Promise<T> {
    const name = req.path.split('/')[6] ?? '';
    if (req.path.includes('/pods/')) {
      const pod = this.pods.get(name);
      if (!pod) throw new KindError('NotFound', `pods "${name}" not found`);
      if (req.method === 'PATCH') {
        this.patches.push(name);
        const body = req.body as { status: Pod['status'] };
        pod.status = { ...pod.status, phase: body.status?.phase ?? pod.status?.phase };
      }
      if (req.method === 'DELETE') this.deletes.push(name);
      return structuredClone(pod) as T;
    }
    throw new KindError('NotFound', 'not found');
  }
}

export const flush = async (n = 20): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

export async function advance(clock: FakeClock, ms: number, step = 100): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(step);
    await flush();
  }
}

/** `files`: the node keeps pod directories in memory, volumes included, which the containers see. */
export function setup(opts: { profiles?: unknown; images?: string[]; files?: boolean } = {}) {
  const clock = new FakeClock();
  const fs = opts.files ? new MemoryVolumeFS() : undefined;
  const runtime = new SimRuntime({
    clock,
    images: opts.images ?? ['img:1'],
    nodeIP: '10.1.0.1',
    profiles: opts.profiles,
    ...(fs ? { files: fs } : {}),
  });
  const creates: string[] = [];
  const create = runtime.createContainer.bind(runtime);
  runtime.createContainer = (id: string, c: ContainerConfig, sb: PodSandboxConfig) => {
    creates.push(`${sb.metadata.name}/${c.metadata.name}`);
    return create(id, c, sb);
  };
  const api = new FakeAPI();
  const informer = {
    waitForSync: () => Promise.resolve(),
    byIndex: (_index: string, node: string) => [...api.pods.values()].filter((p) => p.spec.nodeName === node),
  };
  const events: string[] = [];
  /** `type reason: message` of every Event. */
  const eventMessages: string[] = [];
  const deps = (): KubeletDeps => ({
    nodeName: NODE,
    nodeIP: '10.1.0.1',
    runtime,
    runtimeKind: 'sim',
    client: api,
    podInformer: informer,
    recorder: {
      event: (_ref, type, reason, message) => {
        events.push(`${type} ${reason}`);
        eventMessages.push(`${type} ${reason}: ${message}`);
      },
    },
    clock,
    logger: silentLogger,
    node: () => admissionNode({ cpu: 4000, pods: 10 }, NODE),
    settings: { podNetwork: 'cni', podLogsRoot: '/tmp/unused-logs', cgroupRoot: '/kubepods' },
    ...(fs ? { podEnvironment: { podsDir: '/var/lib/kubelet/pods', fs, mounter: new MemoryMounter() } } : {}),
  });
  return { clock, runtime, creates, api, deps, events, eventMessages, fs };
}

export async function start(k: Kubelet, clock: FakeClock): Promise<void> {
  k.start();
  for (let i = 0; i < 50; i++) {
    await flush();
    const done = await Promise.race([k.ready.then(() => true), Promise.resolve(false)]);
    if (done) return;
    clock.advance(10);
  }
  await k.ready;
}
