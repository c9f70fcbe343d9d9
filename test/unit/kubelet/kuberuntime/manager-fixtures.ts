/** A KubeGenericRuntimeManager on a SimRuntime under a FakeClock, with recorded events and helpers. */
import type { Container, Pod } from '../../../../src/api/core.js';
import { newCrashLoopBackOff } from '../../../../src/kubelet/backoff.js';
import type { RuntimePodStatus } from '../../../../src/kubelet/container/types.js';
import { ImagePullBackOff } from '../../../../src/kubelet/images/pullbackoff.js';
import {
  KubeGenericRuntimeManager,
  type KubeGenericRuntimeManagerDeps,
  type PodSyncResult,
  type SyncPodProbes,
} from '../../../../src/kubelet/kuberuntime/shell/manager.js';
import type { ProbeResult } from '../../../../src/kubelet/prober/types.js';
import { ReasonCache } from '../../../../src/kubelet/reasoncache.js';
import { SimRuntime } from '../../../../src/runtime/sim/index.js';
import type { ContainerConfig } from '../../../../src/runtime/types.js';
import { FakeClock } from '../../../../src/util/clock.js';
import { SyncCancel } from '../../../../src/kubelet/util/synccancel.js';

export const IMAGE = 'docker.io/library/busybox:1.36';
export const NODE = 'node-a';

export interface RecordedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  fieldPath?: string;
}

/** Awaits `p` while advancing the fake clock in `stepMs` steps whenever nothing else can make progress. */
export async function drive<T>(
  clock: FakeClock,
  p: Promise<T>,
  stepMs = 100,
  maxMs = 30 * 60_000,
): Promise<T> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let waited = 0; ; waited += stepMs) {
    for (let i = 0; i < 10 && !settled; i++) await new Promise((r) => setImmediate(r));
    if (settled) return p;
    if (waited >= maxMs) throw new Error(`promise did not settle within ${maxMs} ms of fake time`);
    clock.advance(stepMs);
  }
}

export function container(
  name: string,
  command: string[] | undefined,
  extra: Partial<Container> = {},
): Container {
  return { name, image: IMAGE, imagePullPolicy: 'IfNotPresent', ...(command ? { command } : {}), ...extra };
}

let seq = 0;
export function makePod(opts: {
  containers: Container[];
  init?: Container[];
  restartPolicy?: Pod['spec']['restartPolicy'];
  grace?: number;
  annotations?: Record<string, string>;
  hostNetwork?: boolean;
}): Pod {
  const n = ++seq;
  const pod: Pod = {
    metadata: {
      name: `web-${n}`,
      namespace: 'default',
      uid: `uid-${n}`,
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
    },
    spec: { nodeName: NODE, containers: opts.containers, terminationGracePeriodSeconds: opts.grace ?? 30 },
  };
  if (opts.init) pod.spec.initContainers = opts.init;
  if (opts.restartPolicy) pod.spec.restartPolicy = opts.restartPolicy;
  if (opts.hostNetwork) pod.spec.hostNetwork = true;
  return pod;
}

export function probes(
  liveness: Record<string, ProbeResult> = {},
  startup: Record<string, ProbeResult> = {},
): SyncPodProbes {
  return { liveness: { get: (id) => liveness[id] }, startup: { get: (id) => startup[id] } };
}

export interface HarnessOptions {
  podNetwork?: 'host' | 'cni';
  images?: string[];
  profiles?: unknown;
  /** A real directory: the manager makes and removes pod log directories there, as on a containerd node. */
  logRoot?: string;
  /** Pull secrets, credential providers and pull records (KubeGenericRuntimeManagerDeps.imageCredentials). */
  imageCredentials?: KubeGenericRuntimeManagerDeps['imageCredentials'];
}

export class Harness {
  readonly clock = new FakeClock();
  readonly runtime: SimRuntime;
  readonly events: RecordedEvent[] = [];
  readonly configMaps = new Map<string, Record<string, string>>();
  readonly secrets = new Map<string, Record<string, string>>();
  readonly httpCalls: { url: string; headers: Record<string, string> }[] = [];
  readonly createdConfigs: ContainerConfig[] = [];
  httpFails = false;
  deps!: KubeGenericRuntimeManagerDeps;
  manager!: KubeGenericRuntimeManager;

  constructor(private readonly opts: HarnessOptions = {}) {
    this.runtime = new SimRuntime({
      clock: this.clock,
      images: opts.images ?? [IMAGE],
      profiles: opts.profiles,
    });
    const create = this.runtime.createContainer.bind(this.runtime);
    this.runtime.createContainer = async (sb, config, sbConfig) => {
      this.createdConfigs.push(config);
      return create(sb, config, sbConfig);
    };
    this.restart();
  }

  /** A brand-new manager (and caches) over the same runtime: what an operator restart gives. */
  restart(): KubeGenericRuntimeManager {
    this.deps = {
      runtime: this.runtime,
      clock: this.clock,
      nodeSettings: {
        nodeName: NODE,
        podLogsRoot: this.opts.logRoot ?? '/var/log/pods',
        cgroupRoot: '/kubepods',
        podNetwork: this.opts.podNetwork ?? 'cni',
        nodeIP: '10.0.0.2',
      },
      recorder: (_pod, type, reason, message, fieldPath) =>
        this.events.push({ type, reason, message, ...(fieldPath ? { fieldPath } : {}) }),
      envSource: {
        getConfigMap: async (_ns, name) => this.configMaps.get(name),
        getSecret: async (_ns, name) => this.secrets.get(name),
      },
      httpGet: async (url, headers) => {
        this.httpCalls.push({ url, headers });
        if (this.httpFails) throw new Error(`Get "${url}": dial tcp: connect: connection refused`);
        return { status: 200 };
      },
      crashLoopBackOff: newCrashLoopBackOff(),
      imagePullBackOff: new ImagePullBackOff(),
      reasonCache: new ReasonCache(),
      logger: { info: () => undefined, warn: () => undefined },
      ...(this.opts.logRoot ? { manageLogDirectories: true } : {}),
      ...(this.opts.imageCredentials ? { imageCredentials: this.opts.imageCredentials } : {}),
    };
    this.manager = new KubeGenericRuntimeManager(this.deps);
    return this.manager;
  }

  status(pod: Pod): Promise<RuntimePodStatus> {
    return this.manager.getPodStatus(pod.metadata.uid!, pod.metadata.name!, pod.metadata.namespace!);
  }

  /** One sync with a fresh runtime view, as a pod worker does after the PLEG caught up. */
  async sync(pod: Pod, p: SyncPodProbes = probes()): Promise<PodSyncResult> {
    const status = await this.status(pod);
    return drive(this.clock, this.manager.syncPod(new SyncCancel(), pod, status, p));
  }

  async kill(pod: Pod | undefined, status: RuntimePodStatus, grace?: number): Promise<PodSyncResult> {
    return drive(this.clock, this.manager.killPod(new SyncCancel(), pod, status, grace));
  }

  /** Events as `Reason: message`, then forgets them. */
  takeEvents(): string[] {
    const out = this.events.map((e) => `${e.reason}: ${e.message}`);
    this.events.length = 0;
    return out;
  }
}

/** `action target [error]` per result, for compact assertions. */
export function summary(r: PodSyncResult): string[] {
  return r.results.map((x) => `${x.action} ${x.target}${x.error ? ` ${x.error}` : ''}`);
}
