// Pods for the benchmarks: one spec for every side, creation through the API server with bounded concurrency,
// and a watch that records when each pod was first seen Running and Ready, how often its status changed,
// and when it was gone. Times are epoch ms on this machine's clock (the driver's view).
import type { KubeClient } from '../../src/kube/client.js';
import { SimBehaviourAnnotation } from '../../src/runtime/sim/profile.js';
import { forEachConcurrently } from '../../src/util/pool.js';

export interface PodLike {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; deletionTimestamp?: string };
  status?: {
    phase?: string;
    conditions?: { type?: string; status?: string }[];
    containerStatuses?: { ready?: boolean; state?: Record<string, unknown> }[];
  };
}

/** The benchmark pod's image. */
export const BENCH_IMAGE = 'registry.k8s.io/e2e-test-images/agnhost:2.53';

/** The Events a kubelet records for the benchmark pod's start (reason, message), in order. */
export const POD_START_EVENTS = [
  ['Pulled', `Container image "${BENCH_IMAGE}" already present on machine`],
  ['Created', 'Created container: app'],
  ['Started', 'Started container app'],
] as const;

/**
 * The benchmark pod: an agnhost netexec server on 8080 with a TCP readiness probe. On the simulated runtime
 * the annotation says that port answers; kwok ignores both the annotation and the probe (it marks pods
 * Ready as soon as its stage fires), which the report notes.
 */
export function benchPod(name: string, namespace: string, nodeName: string, probePeriodSeconds = 10): object {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace,
      labels: { app: 'bench' },
      annotations: { [SimBehaviourAnnotation]: '{"ports":{"8080":{}}}' },
    },
    spec: {
      nodeName,
      // No projected token volume: kwok would ignore it, and a token request per pod is not what this measures.
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'app',
          image: BENCH_IMAGE,
          args: ['netexec', '--http-port=8080'],
          ports: [{ containerPort: 8080 }],
          readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: probePeriodSeconds },
        },
      ],
    },
  };
}

/** Running with condition Ready=True: what "Ready" means in every figure. */
export function isRunningReady(p: PodLike): boolean {
  return (
    p.status?.phase === 'Running' &&
    (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

/**
 * The part of a status that a reader sees as a state: phase, condition statuses, each container's state kind
 * and readiness. Two statuses with the same key differ only in details (timestamps, messages).
 */
export function statusKey(p: PodLike): string {
  const s = p.status ?? {};
  const conds = (s.conditions ?? []).map((c) => `${c.type}=${c.status}`).sort();
  const ctrs = (s.containerStatuses ?? []).map((c) => `${Object.keys(c.state ?? {}).join('')}:${c.ready}`);
  return JSON.stringify([s.phase ?? '', conds, ctrs]);
}

export interface PodRecord {
  createdAt?: number;
  readyAt?: number;
  goneAt?: number;
  /** Watch events whose status differed from the previous one. */
  statusUpdates: number;
  /** Of those, the ones whose statusKey changed (a new state, not a new detail). */
  stateChanges: number;
  lastStatus?: string;
  lastKey?: string;
}

/**
 * Creates the namespace and its `default` ServiceAccount (no controller-manager runs here to create it, and
 * the ServiceAccount admission plugin refuses pods without it).
 */
export async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  const ignoreExists = (err: unknown): void => {
    if (!(err instanceof Error && err.message.includes('AlreadyExists'))) throw err;
  };
  await client
    .request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name } } })
    .catch(ignoreExists);
  await client
    .request({
      method: 'POST',
      path: `/api/v1/namespaces/${name}/serviceaccounts`,
      body: { metadata: { name: 'default' } },
    })
    .catch(ignoreExists);
}

/** Watches the pods of one namespace from the moment it is started (the namespace should be empty). */
export class PodWatch {
  readonly pods = new Map<string, PodRecord>();
  /** Pods seen Running and Ready so far (count(readyAt) without a walk over 100,000 records). */
  readyCount = 0;
  private readonly abort = new AbortController();
  private readonly listeners = new Set<(name: string, pod: PodLike) => void>();
  private done: Promise<void> = Promise.resolve();
  private error: unknown;

  constructor(
    private readonly client: KubeClient,
    readonly namespace: string,
  ) {}

  record(name: string): PodRecord {
    let r = this.pods.get(name);
    if (!r) this.pods.set(name, (r = { statusUpdates: 0, stateChanges: 0 }));
    return r;
  }

  async start(): Promise<void> {
    const path = `/api/v1/namespaces/${this.namespace}/pods`;
    const list = await this.client.request<{ metadata: { resourceVersion: string } }>({
      method: 'GET',
      path,
      query: { limit: 1 },
    });
    let rv = list.metadata.resourceVersion;
    const loop = async (): Promise<void> => {
      while (!this.abort.signal.aborted) {
        try {
          await this.client.watch(
            path,
            { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds: 3600 },
            (e) => {
              const pod = e.object as PodLike;
              if (pod.metadata?.resourceVersion) rv = pod.metadata.resourceVersion;
              if (e.type === 'BOOKMARK' || !pod.metadata?.name) return;
              this.observe(e.type, pod, Date.now());
            },
            this.abort.signal,
          );
        } catch (err) {
          if (this.abort.signal.aborted) return;
          this.error = err;
          return;
        }
      }
    };
    this.done = loop();
  }

  /** Calls `fn` with every pod object the watch sees from now on; returns the unsubscribe. */
  onPod(fn: (name: string, pod: PodLike) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private observe(type: string, pod: PodLike, now: number): void {
    for (const fn of this.listeners) fn(pod.metadata!.name!, pod);
    const r = this.record(pod.metadata!.name!);
    if (type === 'DELETED') {
      r.goneAt ??= now;
      return;
    }
    const status = JSON.stringify(pod.status ?? {});
    if (r.lastStatus !== undefined && status !== r.lastStatus) {
      r.statusUpdates++;
      const key = statusKey(pod);
      if (key !== r.lastKey) r.stateChanges++;
    }
    r.lastStatus = status;
    r.lastKey = statusKey(pod);
    if (r.readyAt === undefined && isRunningReady(pod)) {
      r.readyAt = now;
      this.readyCount++;
    }
  }

  /** Resolves once `pred` holds for `count` pods; resolves false on timeout. Throws if the watch failed. */
  async waitFor(pred: (r: PodRecord) => boolean, count: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.error) throw this.error;
      let n = 0;
      for (const r of this.pods.values()) if (pred(r)) n++;
      if (n >= count) return true;
      if (Date.now() > deadline) return false;
      await new Promise((res) => setTimeout(res, 100));
    }
  }

  count(pred: (r: PodRecord) => boolean): number {
    let n = 0;
    for (const r of this.pods.values()) if (pred(r)) n++;
    return n;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.done;
  }
}

/**
 * Creates the pods; records each one's creation time as the moment its POST was sent (the API server's
 * creationTimestamp has only second precision), so the latency includes the create call itself.
 */
export async function createPods(
  client: KubeClient,
  watch: PodWatch,
  pods: readonly { name: string; node: string }[],
  concurrency: number,
  makePod: (name: string, namespace: string, node: string) => object = benchPod,
  /** At most this many creates started per second, evenly spaced (unset: no bound besides `concurrency`). */
  ratePerSec?: number,
): Promise<void> {
  const path = `/api/v1/namespaces/${watch.namespace}/pods`;
  // A steady stream, as a real cluster's scheduler would bind them.
  const slot = pacer(ratePerSec);
  await forEachConcurrently(pods, concurrency, async ({ name, node }) => {
    await slot();
    const sent = Date.now();
    await client.request({ method: 'POST', path, body: makePod(name, watch.namespace, node) });
    watch.record(name).createdAt ??= sent;
  });
}

/**
 * Waits for the next of evenly spaced slots, `ratePerSec` a second from the first call (no wait when unset):
 * the i-th caller starts at first + i / rate.
 */
export function pacer(ratePerSec: number | undefined): () => Promise<void> {
  let start = 0;
  let started = 0;
  return async () => {
    if (!ratePerSec) return;
    if (started === 0) start = Date.now();
    const due = start + (started++ * 1000) / ratePerSec;
    if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
  };
}

/**
 * Deletes the pods one DELETE each (graceful: the pods' own grace period), at most `concurrency` at once and
 * `ratePerSec` started a second when set. A single deletecollection of 10,000 pods outlasts the API server's
 * request timeout.
 */
export async function deletePods(
  client: KubeClient,
  namespace: string,
  names: readonly string[],
  concurrency: number,
  ratePerSec?: number,
): Promise<void> {
  const slot = pacer(ratePerSec);
  await forEachConcurrently(names, concurrency, async (name) => {
    await slot();
    await client
      .request({ method: 'DELETE', path: `/api/v1/namespaces/${namespace}/pods/${name}` })
      .catch((err: unknown) => {
        if (!(err instanceof Error && err.message.includes('NotFound'))) throw err;
      });
  });
}

/** pod names `<prefix>-<node index>-<pod index>` spread evenly over `nodes`. */
export function podPlan(
  nodes: readonly string[],
  perNode: number,
  prefix: string,
): { name: string; node: string }[] {
  const out: { name: string; node: string }[] = [];
  // Interleave nodes so every node receives pods from the start, as a scheduler would spread them.
  for (let j = 0; j < perNode; j++)
    for (let i = 0; i < nodes.length; i++) out.push({ name: `${prefix}-${i}-${j}`, node: nodes[i]! });
  return out;
}
