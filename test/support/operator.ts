/**
 * The operator in-process against a test control plane, set up the same way by the integration and e2e
 * suites: an admin client on a cluster with the VirtualNode CRD and a namespace with its `default`
 * ServiceAccount, the operator with test timings (status every second, drain recheck every 300 ms),
 * VirtualNodes created through the API, and small readers of pod and object state.
 *
 * Waiting for a Node to go Ready is `waitNodeReady` of scripts/lib/cluster.ts (re-exported here).
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ContainerStatus, Pod, PodStatus } from '../../src/api/core.js';
import { KubeClient, type KubeClientOptions } from '../../src/kube/client.js';
import { kubeletNodeFactory } from '../../src/app/kubeletnode.js';
import type { Metrics } from '../../src/metrics.js';
import { Operator } from '../../src/operator.js';
import type { ShardGate } from '../../src/operator/shard/coordinator.js';
import type { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { RealClock, type Clock } from '../../src/util/clock.js';
import { isNotFound } from '../../src/util/errors.js';
import { createLogger, silentLogger, type LogLevel, type Logger } from '../../src/util/logger.js';
import { startControlPlane, type ControlPlane } from './controlplane.js';
import { applyCrd } from './crd.js';
import { eventually } from './eventually.js';
import { testStateDir } from './statedir.js';
import { waitNodeReady } from '../../scripts/lib/cluster.js';
export { waitNodeReady };

export const VN_PATH = '/apis/kubelet-operator.dev/v1alpha1/virtualnodes';

/**
 * Applies the CRD and returns an admin client, with `namespace` (default: 'default') made ready for pods
 * by createNamespace.
 */
export async function adminClient(
  cp: ControlPlane,
  opts: { namespace?: string; client?: KubeClientOptions } = {},
): Promise<KubeClient> {
  await applyCrd(cp);
  const client = await KubeClient.fromKubeConfig(cp.adminKubeConfig(), opts.client);
  await createNamespace(client, opts.namespace ?? 'default', await clusterCA(cp));
  return client;
}

/** The cluster CA certificate (PEM), what kube-root-ca.crt publishes. */
export function clusterCA(cp: ControlPlane): Promise<string> {
  return readFile(path.join(cp.dir, 'pki', 'ca.crt'), 'utf8');
}

/**
 * Creates namespace `ns` (unless it is 'default'), its `default` ServiceAccount and its `kube-root-ca.crt`
 * ConfigMap, as the controller-manager would: without them the ServiceAccount admission plugin refuses pods,
 * and the `kube-api-access-*` volume it adds to pods cannot be mounted (the pod would wait, as on a kubelet).
 */
export async function createNamespace(client: KubeClient, ns: string, caPem?: string): Promise<void> {
  if (ns !== 'default')
    await client.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: ns } } });
  await client.request({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/serviceaccounts`,
    body: { metadata: { name: 'default' } },
  });
  if (caPem !== undefined) {
    await client.request({
      method: 'POST',
      path: `/api/v1/namespaces/${ns}/configmaps`,
      body: { metadata: { name: 'kube-root-ca.crt' }, data: { 'ca.crt': caPem } },
    });
  }
}

/** silentLogger, or a logger at the level OPERATOR_TEST_LOG names (e.g. debug). */
export function testLogger(): Logger {
  const level = process.env.OPERATOR_TEST_LOG as LogLevel | undefined;
  return level ? createLogger(level) : silentLogger;
}

/** The operator with the kubelet node factory (node API port 10250), started. */
export async function startTestOperator(opts: {
  client: KubeClient;
  clock: Clock;
  logger: Logger;
  /** The node API routing table the started nodes register in. */
  nodeApi?: NodeApiRegistry;
  metrics?: Metrics;
  /** Default '127.0.0.1'. */
  defaultInternalIP?: string;
  /** The operator's state dir (pod directories); default one per test process, removed at exit. */
  stateDir?: string;
  /** Shares VirtualNodes with other replicas by Leases (main.ts's --shard-leases). */
  shard?: ShardGate;
  /** The nodes' image GC period (default the kubelet's 5 minutes). */
  imageGCPeriodMs?: number;
}): Promise<Operator> {
  const { client, clock, logger } = opts;
  const op = new Operator({
    client,
    factory: kubeletNodeFactory({
      client,
      clock,
      logger,
      metrics: opts.metrics,
      defaultInternalIP: opts.defaultInternalIP ?? '127.0.0.1',
      nodeApiPort: 10250,
      nodeApi: opts.nodeApi,
      stateDir: opts.stateDir ?? testStateDir(),
      ...(opts.imageGCPeriodMs !== undefined ? { imageGCPeriodMs: opts.imageGCPeriodMs } : {}),
    }),
    clock,
    logger,
    statusPeriodMs: 1000,
    drainRecheckMs: 300,
    ...(opts.shard ? { shard: opts.shard } : {}),
  });
  await op.start();
  return op;
}

/** Creates a VirtualNode; fails if it exists. `spec` is the VirtualNode spec. */
export async function postVirtualNode(
  client: KubeClient,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  await client.request({
    method: 'POST',
    path: VN_PATH,
    body: { apiVersion: 'kubelet-operator.dev/v1alpha1', kind: 'VirtualNode', metadata: { name }, spec },
  });
}

/**
 * Creates pod `name` (with `labels`) in namespace `ns` on `node`: one container 'c' (busybox, `sleep
 * infinity`) and a grace period of 1 s, unless `spec` says otherwise (its fields replace these).
 */
export function createPodOn(
  client: KubeClient,
  ns: string,
  node: string,
  name: string,
  spec: Record<string, unknown> = {},
  labels?: Record<string, string>,
): Promise<Pod> {
  return client.request<Pod>({
    method: 'POST',
    path: `/api/v1/namespaces/${ns}/pods`,
    body: {
      metadata: { name, ...(labels ? { labels } : {}) },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'c', image: 'busybox', command: ['sleep', 'infinity'] }],
        ...spec,
      },
    },
  });
}

/**
 * Creates a pod in namespace default on `node` whose one container 'app' (busybox) runs `sh -c <script>`
 * (grace period 1 s), and returns it once that container is running with a container ID (30 s at most).
 */
export async function createShellPod(
  client: KubeClient,
  node: string,
  name: string,
  script: string,
): Promise<Pod> {
  await client.request({
    method: 'POST',
    path: '/api/v1/namespaces/default/pods',
    body: {
      metadata: { name },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'app', image: 'busybox', command: ['sh', '-c', script] }],
      },
    },
  });
  return eventually(
    async () => {
      const p = await client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/default/pods/${name}` });
      const cs = p.status?.containerStatuses?.[0];
      return cs?.containerID && cs.state?.running ? p : undefined;
    },
    30_000,
    `pod ${name} running`,
  );
}

/** Polls pod `name` of namespace `ns` until `pred` holds for its status; returns the pod. */
export function waitPodStatus(
  client: KubeClient,
  ns: string,
  name: string,
  pred: (s: PodStatus) => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<Pod> {
  return eventually(
    async () => {
      const p = await client.request<Pod>({ method: 'GET', path: `/api/v1/namespaces/${ns}/pods/${name}` });
      return pred(p.status ?? {}) ? p : undefined;
    },
    timeoutMs,
    `${name}: ${what}`,
  );
}

/** true once GET `path` answers NotFound, undefined otherwise (for `eventually`). */
export async function isGone(client: KubeClient, path: string): Promise<true | undefined> {
  try {
    await client.request({ method: 'GET', path });
    return undefined;
  } catch (err) {
    return isNotFound(err) ? true : undefined;
  }
}

/** The status of the pod's Ready condition ('True', 'False'), if it has one. */
export const podReady = (s: PodStatus | undefined): string | undefined =>
  s?.conditions?.find((c) => c.type === 'Ready')?.status;

/** The status of one container of the pod (default: the container named 'c'). */
export const cstatus = (s: PodStatus | undefined, name = 'c'): ContainerStatus | undefined =>
  s?.containerStatuses?.find((c) => c.name === name);

/**
 * What a move or a restart must leave alone, per container: its ID, restart count and start time (two pods
 * with equal identities run the very same containers).
 */
export const containerIdentity = (p: Pod): string =>
  (p.status?.containerStatuses ?? [])
    .map((c) => `${c.name}:${c.containerID}:${c.restartCount}:${c.state?.running?.startedAt}`)
    .join(',');

/** When the pod last became Ready (undefined while it is not). */
export const readySince = (p: Pod): string | undefined =>
  p.status?.conditions?.find((c) => c.type === 'Ready' && c.status === 'True')?.lastTransitionTime;

/** A real control plane, the operator in this process, and one simulated VirtualNode Ready on it. */
export interface SimNodeEnv {
  cp: ControlPlane;
  client: KubeClient;
  op: Operator;
  /** Stops the operator, the client and the control plane (each only if it started). */
  stop(): Promise<void>;
}

/**
 * The set-up most integration files share: a control plane, an admin client, namespace `ns` when it is not
 * `default`, the operator (its nodes registered in `nodeApi` when given) and sim VirtualNode `node` on `podCIDR`,
 * waited for until Ready. Whatever started is stopped again if a later step fails.
 */
export async function startSimNodeEnv(opts: {
  node: string;
  podCIDR: string;
  ns?: string;
  nodeApi?: NodeApiRegistry;
  clock?: Clock;
  /** The operator's metrics registry, for tests that scrape the nodes' series. */
  metrics?: Metrics;
}): Promise<SimNodeEnv> {
  const cp = await startControlPlane();
  let client: KubeClient | undefined;
  let op: Operator | undefined;
  const stop = async (): Promise<void> => {
    await op?.stop();
    client?.close();
    await cp.stop();
  };
  try {
    client = await adminClient(cp);
    if (opts.ns && opts.ns !== 'default') await createNamespace(client, opts.ns);
    op = await startTestOperator({
      client,
      clock: opts.clock ?? new RealClock(),
      logger: testLogger(),
      ...(opts.nodeApi ? { nodeApi: opts.nodeApi } : {}),
      ...(opts.metrics ? { metrics: opts.metrics } : {}),
    });
    await postVirtualNode(client, opts.node, { runtime: { type: 'sim', sim: { podCIDR: opts.podCIDR } } });
    await waitNodeReady(client, opts.node);
    return { cp, client, op, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

/**
 * Waits for pod `name`'s first container to report a waiting state (the Event that says why and the status
 * patch leave the node separately: the status manager batches), and checks that the pod is Pending with the
 * container in ContainerCreating, as a pod whose volumes cannot be set up is.
 */
export async function expectContainerCreating(
  client: KubeClient,
  ns: string,
  name: string,
  timeoutMs = 30_000,
): Promise<Pod> {
  const p = await waitPodStatus(
    client,
    ns,
    name,
    (s) => s.containerStatuses?.[0]?.state?.waiting !== undefined,
    'a waiting container',
    timeoutMs,
  );
  expect(p.status?.phase).to.equal('Pending');
  expect(p.status?.containerStatuses?.[0]?.state?.waiting?.reason).to.equal('ContainerCreating');
  return p;
}
