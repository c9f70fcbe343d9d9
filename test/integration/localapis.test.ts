/**
 * The kubelet's local gRPC APIs of a VirtualNode (issue #60: KubeletPodResourcesGet,
 * KubeletPodResourcesListUseActivePods, PodsAPI) against a real v1.37 kube-apiserver, on a simulated node:
 * the sockets appear under the node's root directory at start (a stale file there is replaced), a gRPC client
 * reads the pod-resources API (List shows the active pods' containers, Get a known, an unknown and a finished
 * pod, GetAllocatableResources, v1alpha1 List, the rate limit) and the pods API (ListPods, GetPod, WatchPods
 * with a pod created and deleted while watching), and the sockets are gone once the node stops.
 */
import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { localApiSockets } from '../../src/kubelet/apis/shell/server.js';
import { Metrics } from '../../src/metrics.js';
import { decodePod } from '../../src/kubelet/apis/pods/shell/podproto.js';
import type { KubeClient } from '../../src/kube/client.js';
import { nodeRootDir } from '../../src/app/podenvironment.js';
import { grpcJs, grpcProtoLoader } from '../../src/util/grpcmodules.js';
import { eventually } from '../support/eventually.js';
import {
  createPodOn,
  isGone,
  postVirtualNode,
  type SimNodeEnv,
  startSimNodeEnv,
  waitNodeReady,
  waitPodStatus,
} from '../support/operator.js';
import { testStateDir } from '../support/statedir.js';

const NODE = 'vn-localapis';
const NS = 'default';
const API = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/kubelet/apis');

type Client = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

function clientFor(proto: string, pkg: string, service: string, socket: string): Client {
  const g = grpcJs();
  const def = grpcProtoLoader().loadSync(path.join(API, proto), {
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
  });
  const root = g.loadPackageDefinition(def) as unknown as Record<
    string,
    Record<string, grpc.ServiceClientConstructor>
  >;
  const Ctor = root[pkg]![service]!;
  return new Ctor(`unix:${socket}`, g.credentials.createInsecure()) as unknown as Client;
}

function unary<T>(c: Client, method: string, req: object): Promise<T> {
  return new Promise((resolve, reject) =>
    (c[method] as (r: object, cb: (err: grpc.ServiceError | null, res: T) => void) => void).call(
      c,
      req,
      (err, res) => (err ? reject(err) : resolve(res)),
    ),
  );
}

async function grpcError(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as grpc.ServiceError;
    return { code: e.code, details: e.details };
  }
  throw new Error('the call succeeded');
}

interface PodResourcesMsg {
  name: string;
  namespace: string;
  containers: {
    name: string;
    devices: unknown[];
    cpu_ids: unknown[];
    memory: unknown[];
    dynamic_resources: unknown[];
  }[];
}

type DecodedPod = { metadata?: { name?: string; uid?: string }; status?: { phase?: string } };

describe('kubelet local gRPC APIs (real apiserver, sim node)', function () {
  this.timeout(5 * 60_000);
  let env: SimNodeEnv | undefined;
  let client: KubeClient;
  const sockets = localApiSockets(nodeRootDir(testStateDir(), NODE));
  let podResources: Client;
  let podResourcesAlpha: Client;
  let pods: Client;
  let webUID = '';
  const metrics = new Metrics();
  /** This node's series of the local APIs' counters, as the registry serves them. */
  const scrape = async (prefix: string): Promise<string[]> =>
    (await metrics.registry.metrics())
      .split('\n')
      .filter((l) => l.startsWith(prefix) && l.includes(`node="${NODE}"`));

  before(async () => {
    env = await startSimNodeEnv({ node: 'vn-localapis-other', podCIDR: '10.84.0.0/24', metrics });
    client = env.client;
    // A stale file where the socket goes, as a crashed process leaves one: the node's start replaces it.
    await mkdir(path.dirname(sockets.podResources), { recursive: true });
    await writeFile(sockets.podResources, 'stale');
    await postVirtualNode(client, NODE, { runtime: { type: 'sim', sim: { podCIDR: '10.84.1.0/24' } } });
    await waitNodeReady(client, NODE);
    podResources = clientFor('podresources/v1.proto', 'v1', 'PodResourcesLister', sockets.podResources);
    podResourcesAlpha = clientFor(
      'podresources/v1alpha1.proto',
      'v1alpha1',
      'PodResourcesLister',
      sockets.podResources,
    );
    pods = clientFor('pods/v1alpha1.proto', 'v1alpha1', 'Pods', sockets.pods);

    await createPodOn(client, NS, NODE, 'web', {
      initContainers: [
        { name: 'setup', image: 'busybox', command: ['sh', '-c', 'exit 0'] },
        { name: 'proxy', image: 'busybox', command: ['sleep', 'infinity'], restartPolicy: 'Always' },
      ],
      containers: [
        { name: 'app', image: 'busybox', command: ['sleep', 'infinity'] },
        { name: 'helper', image: 'busybox', command: ['sleep', 'infinity'] },
      ],
    });
    await createPodOn(client, NS, NODE, 'done', {
      restartPolicy: 'Never',
      containers: [{ name: 'c', image: 'busybox', command: ['sh', '-c', 'exit 0'] }],
    });
    webUID =
      (await waitPodStatus(client, NS, 'web', (s) => s.phase === 'Running', 'Running')).metadata.uid ?? '';
    await waitPodStatus(client, NS, 'done', (s) => s.phase === 'Succeeded', 'Succeeded');
  });

  after(async () => {
    for (const c of [podResources, podResourcesAlpha, pods]) c?.close();
    await env?.stop();
  });

  it('serves both sockets under the node root, the stale file replaced', async () => {
    expect((await stat(sockets.podResources)).isSocket()).to.equal(true);
    expect((await stat(sockets.pods)).isSocket()).to.equal(true);
    expect(sockets.podResources.endsWith(`/nodes/${NODE}/pod-resources/kubelet.sock`)).to.equal(true);
    expect(sockets.pods.endsWith(`/nodes/${NODE}/pods-api/pods-api.sock`)).to.equal(true);
  });

  it('pod-resources v1 List: the active pods with their sidecars and containers, nothing exclusive', async () => {
    const res = await eventually(
      async () => {
        const r = await unary<{ pod_resources: PodResourcesMsg[] }>(podResources, 'List', {});
        // The finished pod leaves the list once its worker has terminated it.
        return r.pod_resources.some((p) => p.name === 'done') ? undefined : r;
      },
      30_000,
      'List without the finished pod',
    );
    const web = res.pod_resources.find((p) => p.name === 'web');
    expect(web?.namespace).to.equal(NS);
    expect(web?.containers.map((c) => c.name)).to.deep.equal(['proxy', 'app', 'helper']);
    for (const c of web?.containers ?? [])
      expect([c.devices, c.cpu_ids, c.memory, c.dynamic_resources]).to.deep.equal([[], [], [], []]);
  });

  it('pod-resources v1 Get: a running pod, an unknown one and a finished one', async () => {
    const got = await unary<{ pod_resources: PodResourcesMsg }>(podResources, 'Get', {
      pod_name: 'web',
      pod_namespace: NS,
    });
    expect(got.pod_resources.containers.map((c) => c.name)).to.deep.equal(['proxy', 'app', 'helper']);
    const g = grpcJs();
    expect(
      await grpcError(unary(podResources, 'Get', { pod_name: 'nope', pod_namespace: NS })),
    ).to.deep.equal({
      code: g.status.UNKNOWN,
      details: `pod nope in namespace ${NS} not found`,
    });
    expect(
      await grpcError(unary(podResources, 'Get', { pod_name: 'done', pod_namespace: NS })),
    ).to.deep.equal({
      code: g.status.UNKNOWN,
      details: `pod done in namespace ${NS} not found`,
    });
  });

  it('pod-resources v1 GetAllocatableResources and v1alpha1 List', async () => {
    expect(await unary(podResources, 'GetAllocatableResources', {})).to.deep.equal({
      devices: [],
      cpu_ids: [],
      memory: [],
    });
    const alpha = await unary<{ pod_resources: { name: string; containers: { name: string }[] }[] }>(
      podResourcesAlpha,
      'List',
      {},
    );
    expect(alpha.pod_resources.find((p) => p.name === 'web')?.containers.map((c) => c.name)).to.deep.equal([
      'app',
      'helper',
    ]);
  });

  it('pod-resources metrics: kubelet_pod_resources_endpoint_* by server_api_version after the calls above', async () => {
    // List n >= 1 times (until the finished pod left), Get 3 (two not found), GetAllocatableResources 1,
    // v1alpha1 List 1; List and GetAllocatableResources never fail.
    const lines = await scrape('kubelet_pod_resources_endpoint_');
    const list = Number(
      lines
        .find((l) => l.startsWith('kubelet_pod_resources_endpoint_requests_list{'))
        ?.split(' ')
        .at(-1),
    );
    expect(list).to.be.at.least(1);
    expect(lines).to.deep.equal([
      `kubelet_pod_resources_endpoint_requests_total{node="${NODE}",server_api_version="v1"} ${list + 4}`,
      `kubelet_pod_resources_endpoint_requests_total{node="${NODE}",server_api_version="v1alpha1"} 1`,
      `kubelet_pod_resources_endpoint_requests_list{node="${NODE}",server_api_version="v1"} ${list}`,
      `kubelet_pod_resources_endpoint_requests_get_allocatable{node="${NODE}",server_api_version="v1"} 1`,
      `kubelet_pod_resources_endpoint_requests_get{node="${NODE}",server_api_version="v1"} 3`,
      `kubelet_pod_resources_endpoint_errors_get{node="${NODE}",server_api_version="v1"} 2`,
    ]);
  });

  it('pod-resources rate limit: a burst of 40 calls, some refused with ResourceExhausted', async () => {
    await new Promise((r) => setTimeout(r, 200)); // the bucket refills
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, () => unary(podResources, 'GetAllocatableResources', {})),
    );
    const refused = results.filter(
      (r) => r.status === 'rejected' && (r.reason as grpc.ServiceError).details === 'rejected by rate limit',
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    expect(ok.length).to.be.at.least(10);
    expect(refused.length).to.be.greaterThan(0);
    expect(ok.length + refused.length).to.equal(40);
  });

  it('pods API: ListPods and GetPod answer the pods with their status, GetPod NotFound for an unknown UID', async () => {
    await new Promise((r) => setTimeout(r, 200));
    const list = await unary<{ pods: Buffer[] }>(pods, 'ListPods', {});
    const decoded = list.pods.map((b) => decodePod(b) as DecodedPod);
    const uids = decoded.map((p) => p.metadata?.uid ?? '');
    expect(uids).to.deep.equal([...uids].sort());
    expect(decoded.find((p) => p.metadata?.name === 'web')?.status?.phase).to.equal('Running');
    const one = await unary<{ pod: Buffer }>(pods, 'GetPod', { podUID: webUID });
    expect((decodePod(one.pod) as DecodedPod).metadata?.name).to.equal('web');
    expect(await grpcError(unary(pods, 'GetPod', { podUID: 'no-such-uid' }))).to.deep.equal({
      code: grpcJs().status.NOT_FOUND,
      details: 'pod with UID no-such-uid not found',
    });
  });

  it('pods API: WatchPods lists, then sees a pod come and go', async () => {
    const events: { type: string; pod?: DecodedPod }[] = [];
    const stream = (
      pods.WatchPods as (r: object) => grpc.ClientReadableStream<{ type: string; pod: Buffer }>
    ).call(pods, {});
    stream.on('data', (e: { type: string; pod: Buffer }) =>
      events.push({ type: e.type, ...(e.pod.length > 0 ? { pod: decodePod(e.pod) as DecodedPod } : {}) }),
    );
    stream.on('error', () => undefined);
    try {
      await eventually(
        async () => events.some((e) => e.type === 'INITIAL_SYNC_COMPLETE') || undefined,
        10_000,
        'sync',
      );
      const initial = events.splice(0);
      expect(initial.at(-1)?.type).to.equal('INITIAL_SYNC_COMPLETE');
      expect(initial.filter((e) => e.type === 'ADDED').map((e) => e.pod?.metadata?.name)).to.include('web');

      await createPodOn(client, NS, NODE, 'watched');
      await eventually(
        async () =>
          events.some((e) => e.pod?.metadata?.name === 'watched' && e.pod.status?.phase === 'Running') ||
          undefined,
        30_000,
        'watched Running',
      );
      const first = events.find((e) => e.pod?.metadata?.name === 'watched');
      expect(first?.type).to.equal('ADDED');
      await client.request({ method: 'DELETE', path: `/api/v1/namespaces/${NS}/pods/watched` });
      await eventually(
        async () =>
          events.some((e) => e.type === 'DELETED' && e.pod?.metadata?.name === 'watched') || undefined,
        30_000,
        'watched DELETED',
      );
      await eventually(() => isGone(client, `/api/v1/namespaces/${NS}/pods/watched`), 30_000, 'watched gone');
    } finally {
      stream.cancel();
    }
  });

  it('pods API metrics: kubelet_pod_requests_* by server_api_version and status_code after the calls above', async () => {
    await eventually(
      async () => (await scrape('kubelet_pod_requests_watch_total')).length > 0 || undefined,
      10_000,
      'the cancelled watch counted',
    );
    expect(await scrape('kubelet_pod_requests_')).to.deep.equal([
      `kubelet_pod_requests_total{node="${NODE}",server_api_version="v1alpha1",status_code="OK"} 2`,
      `kubelet_pod_requests_total{node="${NODE}",server_api_version="v1alpha1",status_code="NotFound"} 1`,
      `kubelet_pod_requests_total{node="${NODE}",server_api_version="v1alpha1",status_code="Canceled"} 1`,
      `kubelet_pod_requests_list_total{node="${NODE}",server_api_version="v1alpha1",status_code="OK"} 1`,
      `kubelet_pod_requests_get_total{node="${NODE}",server_api_version="v1alpha1",status_code="OK"} 1`,
      `kubelet_pod_requests_get_total{node="${NODE}",server_api_version="v1alpha1",status_code="NotFound"} 1`,
      `kubelet_pod_requests_watch_total{node="${NODE}",server_api_version="v1alpha1",status_code="Canceled"} 1`,
    ]);
  });

  it('removes the sockets when the node stops', async () => {
    await env?.op.stop();
    expect(existsSync(sockets.podResources)).to.equal(false);
    expect(existsSync(sockets.pods)).to.equal(false);
  });
});
