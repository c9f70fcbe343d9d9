/**
 * The kubelet's local gRPC APIs for one VirtualNode, each on a unix socket under the node's root directory
 * (`<stateDir>/nodes/<node>`, where the kubelet uses --root-dir):
 *
 * - pod-resources (KubeletPodResourcesGet): `pod-resources/kubelet.sock`, v1 List, Get and
 *   GetAllocatableResources and v1alpha1 List (kubelet: server.ListenAndServePodResources);
 * - pods (PodsAPI): `pods-api/pods-api.sock`, v1alpha1 ListPods, GetPod and WatchPods (kubelet:
 *   server.ListenAndServePodsServer).
 *
 * This is the shell: it binds the sockets (a stale socket file from an earlier process is replaced), turns the
 * pure answers of podresources/answers.ts and pods/answers.ts into gRPC replies, limits the unary calls of each
 * server to the kubelet's 100 per second with a burst of 10 (ResourceExhausted "rejected by rate limit"), and
 * removes the sockets when the node stops. A socket that cannot be served is a warning in the log; the node
 * runs on without it.
 */
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import type { Pod, PodStatus } from '../../../api/core.js';
import type { PodRequestsCounter, PodResourcesEndpointCounter } from '../../../metrics.js';
import { TokenBucket } from '../../../kube/tokenbucket.js';
import type { Clock } from '../../../util/clock.js';
import { errorMessage } from '../../../util/errors.js';
import { grpcJs, loadProtoPackage } from '../../../util/grpcmodules.js';
import type { Logger } from '../../../util/logger.js';
import { asPodUID } from '../../container/types.js';
import type { Kubelet } from '../../shell/kubelet.js';
import {
  allocatableResources,
  getPodResources,
  listPodResources,
  listPodResourcesV1alpha1,
  POD_RESOURCES_BURST,
  POD_RESOURCES_DIR,
  POD_RESOURCES_QPS,
  POD_RESOURCES_SOCKET,
  type Answer,
  type ApiError,
  type GetPodResourcesRequest,
  type KubeletPodsView,
} from '../podresources/answers.js';
import {
  getPod,
  initialWatchEvents,
  listPods,
  PodWatchBroadcaster,
  PODS_API_BURST,
  PODS_API_DIR,
  PODS_API_QPS,
  PODS_API_SOCKET,
  statusStoredEvent,
  type KubeletPodsAPIView,
  type PodWatchEvent,
} from '../pods/answers.js';
import { encodePod } from '../pods/shell/podproto.js';

function protoPath(rel: string): string {
  return fileURLToPath(new URL(rel, import.meta.url));
}

type ServiceDefs = Record<string, grpc.ServiceDefinition>;

/** The three services' definitions from our protos. */
function loadServices(): ServiceDefs {
  const load = (file: string) =>
    loadProtoPackage(protoPath(file)) as unknown as Record<
      string,
      Record<string, grpc.ServiceClientConstructor>
    >;
  return {
    podResourcesV1: load('../podresources/v1.proto').v1!.PodResourcesLister!.service,
    podResourcesV1alpha1: load('../podresources/v1alpha1.proto').v1alpha1!.PodResourcesLister!.service,
    pods: load('../pods/v1alpha1.proto').v1alpha1!.Pods!.service,
  };
}

/** The node root's socket paths (kubelet: getPodResourcesDir, getPodsAPIDir and util.LocalEndpoint). */
export function localApiSockets(rootDir: string): { podResources: string; pods: string } {
  return {
    podResources: path.join(rootDir, POD_RESOURCES_DIR, POD_RESOURCES_SOCKET),
    pods: path.join(rootDir, PODS_API_DIR, PODS_API_SOCKET),
  };
}

export interface KubeletLocalApisDeps {
  /** The node's root directory. */
  rootDir: string;
  podResources: KubeletPodsView;
  pods: KubeletPodsAPIView;
  clock: Clock;
  logger: Logger;
  /** Subscribes to the status manager's stored statuses; returns the unsubscribe. */
  onStatusStored?: (n: KubeletLocalApis['podStatusStored']) => () => void;
  /** Counts one of kubelet_pod_resources_endpoint_* for a server API version; none without metrics. */
  podResourcesMetrics?: PodResourcesMetrics;
  /** The pods API's request and dropped-event counters; none without metrics. */
  podsApiMetrics?: PodsApiMetrics;
}

export interface PodsApiMetrics {
  /** One of kubelet_pod_requests_* by server API version and gRPC status code name (OK, NotFound, ...). */
  requests(counter: PodRequestsCounter, serverApiVersion: string, statusCode: string): void;
  /** kubelet_pod_watch_events_dropped_total. */
  watchEventDropped(): void;
}

export type PodResourcesMetrics = (
  counter: PodResourcesEndpointCounter,
  serverApiVersion: 'v1' | 'v1alpha1',
) => void;

/**
 * The local APIs of one Kubelet: what they read is its pod manager, pod workers and status manager;
 * `sourcesReady` says whether its pod source (the node's pod informer) has been listed.
 */
export function kubeletLocalApis(
  kubelet: Pick<Kubelet, 'podManager' | 'podWorkers' | 'statusManager'>,
  o: {
    rootDir: string;
    sourcesReady: () => boolean;
    clock: Clock;
    logger: Logger;
    podResourcesMetrics?: PodResourcesMetrics;
    podsApiMetrics?: PodsApiMetrics;
    /** The device manager's devices for the pod-resources API; absent: none. */
    devices?: KubeletPodsView['devices'];
    /** The DRA manager's claims for the pod-resources API; absent: none. */
    dynamicResources?: KubeletPodsView['dynamicResources'];
  },
): KubeletLocalApis {
  const { podManager, podWorkers, statusManager } = kubelet;
  return new KubeletLocalApis({
    rootDir: o.rootDir,
    clock: o.clock,
    logger: o.logger,
    podResources: {
      pods: () => podManager.getPods(),
      podByName: (namespace, name) => podManager.getPodByFullName(namespace, name),
      workerState: (uid) => podWorkers.state(asPodUID(uid)),
      statusPhase: (uid) => statusManager.getPodPhase(asPodUID(uid)),
      ...(o.devices ? { devices: o.devices } : {}),
      ...(o.dynamicResources ? { dynamicResources: o.dynamicResources } : {}),
    },
    pods: {
      pods: () => podManager.getPods(),
      podByUID: (uid) => podManager.getPodByUID(asPodUID(uid)),
      cachedStatus: (uid) => statusManager.peekPodStatus(asPodUID(uid)),
      sourcesReady: o.sourcesReady,
    },
    onStatusStored: (n) => statusManager.addPodUpdateNotifier(n),
    ...(o.podResourcesMetrics && { podResourcesMetrics: o.podResourcesMetrics }),
    ...(o.podsApiMetrics && { podsApiMetrics: o.podsApiMetrics }),
  });
}

type UnaryHandler = (
  call: grpc.ServerUnaryCall<unknown, unknown>,
  callback: grpc.sendUnaryData<unknown>,
) => void;

export class KubeletLocalApis {
  private readonly servers: { server: grpc.Server; socket: string }[] = [];
  private readonly broadcaster = new PodWatchBroadcaster();
  private stopped = false;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly d: KubeletLocalApisDeps) {}

  /** Binds both sockets. Never throws: a socket that cannot be served is logged and left out. */
  async start(): Promise<void> {
    this.unsubscribe = this.d.onStatusStored?.((pod, status, first, finished) =>
      this.podStatusStored(pod, status, first, finished),
    );
    const sockets = localApiSockets(this.d.rootDir);
    await this.serve('pod-resources', sockets.podResources, (s, defs) => {
      const limit = this.limiter(POD_RESOURCES_QPS, POD_RESOURCES_BURST);
      const v = this.d.podResources;
      const counted = podResourcesCounted(this.d.podResourcesMetrics);
      s.addService(defs.podResourcesV1!, {
        List: limit(counted('v1', 'list', () => ({ ok: listPodResources(v) }))),
        Get: limit(counted('v1', 'get', (req) => getPodResources(v, req as GetPodResourcesRequest))),
        GetAllocatableResources: limit(
          counted('v1', 'get_allocatable', () => ({ ok: allocatableResources(v) })),
        ),
      });
      // The kubelet's v1alpha1 List counts only kubelet_pod_resources_endpoint_requests_total.
      s.addService(defs.podResourcesV1alpha1!, {
        List: limit(counted('v1alpha1', undefined, () => ({ ok: listPodResourcesV1alpha1(v) }))),
      });
    });
    await this.serve('pods', sockets.pods, (s, defs) => {
      const limit = this.limiter(PODS_API_QPS, PODS_API_BURST);
      const v = this.d.pods;
      const counted = podsApiCounted(this.d.podsApiMetrics);
      s.addService(defs.pods!, {
        ListPods: limit(
          counted('ListPods', () => encoded(listPods(v), (pods) => ({ pods: pods.map(encodePod) }))),
        ),
        GetPod: limit(
          counted('GetPod', (req) =>
            encoded(getPod(v, (req as { podUID?: string }).podUID), (p) => ({ pod: encodePod(p) })),
          ),
        ),
        WatchPods: (call: grpc.ServerWritableStream<unknown, unknown>) => this.watch(call),
      });
    });
  }

  /**
   * The status manager stored a status (StatusManager.addPodUpdateNotifier): the pods API's watchers hear of
   * it. Nothing is built while nobody watches.
   */
  podStatusStored(pod: Pod, status: Readonly<PodStatus>, firstStatus: boolean, podIsFinished: boolean): void {
    if (this.broadcaster.size === 0) return;
    this.broadcaster.broadcast(statusStoredEvent(pod, status, firstStatus, podIsFinished));
  }

  /** Closes the servers (watchers are ended) and removes the sockets. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    this.broadcaster.closeAll();
    for (const { server, socket } of this.servers.splice(0)) {
      server.forceShutdown();
      await rm(socket, { force: true }).catch(() => undefined);
    }
  }

  private async serve(
    name: string,
    socket: string,
    register: (server: grpc.Server, defs: ServiceDefs) => void,
  ): Promise<void> {
    try {
      await mkdir(path.dirname(socket), { recursive: true, mode: 0o750 });
      // The kubelet's CreateListener: a socket file left by an earlier process is removed first.
      await rm(socket, { force: true });
      const g = grpcJs();
      const server = new g.Server();
      register(server, loadServices());
      await new Promise<void>((resolve, reject) =>
        server.bindAsync(`unix:${socket}`, g.ServerCredentials.createInsecure(), (err) =>
          err ? reject(err) : resolve(),
        ),
      );
      if (this.stopped) {
        server.forceShutdown();
        await rm(socket, { force: true });
        return;
      }
      this.servers.push({ server, socket });
      this.d.logger.info(`serving the ${name} API`, { socket });
    } catch (err) {
      this.d.logger.warn(`cannot serve the ${name} API`, { socket, err: errorMessage(err) });
    }
  }

  /** Wraps a unary answer with the server's rate limit and the answer-to-reply conversion. */
  private limiter(qps: number, burst: number): (answer: (req: unknown) => Answer<unknown>) => UnaryHandler {
    const bucket = new TokenBucket(this.d.clock, qps, burst);
    return (answer) => (call, callback) => {
      if (!bucket.tryAcquire())
        return callback(grpcError({ code: 'ResourceExhausted', message: 'rejected by rate limit' }));
      let a: Answer<unknown>;
      try {
        a = answer(call.request);
      } catch (err) {
        a = { error: { code: 'Internal', message: errorMessage(err) } };
      }
      if ('error' in a) callback(grpcError(a.error));
      else callback(null, a.ok);
    };
  }

  /** WatchPods: the pods as ADDED, INITIAL_SYNC_COMPLETE, then what the status manager stores. */
  private watch(call: grpc.ServerWritableStream<unknown, unknown>): void {
    const m = this.d.podsApiMetrics;
    // The kubelet counts a watch when it ends, by how it ended.
    let ended = false;
    const end = (statusCode: string): void => {
      if (ended) return;
      ended = true;
      if (m) countPodsApiRequest(m, 'WatchPods', statusCode);
    };
    const fail = (e: ApiError): void => {
      end(e.code);
      call.emit('error', grpcError(e));
    };
    const initial = initialWatchEvents(this.d.pods);
    if ('error' in initial) return fail(initial.error);
    try {
      for (const e of initial.ok) call.write(watchMessage(e));
    } catch (err) {
      m?.watchEventDropped();
      return fail({
        code: 'Internal',
        message: `error marshalling initial watch event pod: ${errorMessage(err)}`,
      });
    }
    if (this.stopped) return fail({ code: 'ResourceExhausted', message: 'watch client channel closed' });
    const unregister = this.broadcaster.register({
      pending: () => call.writableLength,
      deliver: (e) => {
        try {
          call.write(watchMessage(e));
        } catch (err) {
          unregister();
          m?.watchEventDropped();
          fail({ code: 'Internal', message: `error marshalling watch event pod: ${errorMessage(err)}` });
        }
      },
      onDrop: () => {
        // A watcher too slow to keep up (not the server stopping) is a dropped one.
        if (!this.stopped) m?.watchEventDropped();
        fail({ code: 'ResourceExhausted', message: 'watch client channel closed' });
      },
    });
    call.on('cancelled', () => {
      end('Canceled');
      unregister();
    });
    call.on('close', unregister);
  }
}

/**
 * A pod-resources endpoint's answer counted as the kubelet's servers count it, once past the rate limit:
 * requests_total and the endpoint's requests, and the endpoint's errors when it answers an error.
 */
export function podResourcesCounted(
  count: PodResourcesMetrics | undefined,
): (
  version: 'v1' | 'v1alpha1',
  endpoint: 'list' | 'get' | 'get_allocatable' | undefined,
  answer: (req: unknown) => Answer<unknown>,
) => (req: unknown) => Answer<unknown> {
  return (version, endpoint, answer) => {
    if (!count) return answer;
    return (req) => {
      count('requests_total', version);
      if (endpoint) count(`requests_${endpoint}`, version);
      let a: Answer<unknown>;
      try {
        a = answer(req);
      } catch (err) {
        if (endpoint) count(`errors_${endpoint}`, version);
        throw err;
      }
      if ('error' in a && endpoint) count(`errors_${endpoint}`, version);
      return a;
    };
  };
}

/** A pods API request counted as the kubelet's interceptors do: requests_total and the method's own counter. */
export function countPodsApiRequest(
  m: PodsApiMetrics,
  method: 'ListPods' | 'GetPod' | 'WatchPods',
  statusCode: string,
): void {
  m.requests('total', PODS_API_VERSION, statusCode);
  m.requests(POD_REQUESTS_BY_METHOD[method], PODS_API_VERSION, statusCode);
}

const PODS_API_VERSION = 'v1alpha1';
const POD_REQUESTS_BY_METHOD = {
  ListPods: 'list_total',
  GetPod: 'get_total',
  WatchPods: 'watch_total',
} as const;

/**
 * A pods API unary answer counted once past the rate limit (the kubelet's limiter runs before its metrics
 * interceptor), by its gRPC status code name: OK, or the error's (a throw is Internal, as the limiter answers).
 */
export function podsApiCounted(
  m: PodsApiMetrics | undefined,
): (
  method: 'ListPods' | 'GetPod',
  answer: (req: unknown) => Answer<unknown>,
) => (req: unknown) => Answer<unknown> {
  return (method, answer) => {
    if (!m) return answer;
    return (req) => {
      let a: Answer<unknown>;
      try {
        a = answer(req);
      } catch (err) {
        countPodsApiRequest(m, method, 'Internal');
        throw err;
      }
      countPodsApiRequest(m, method, 'error' in a ? a.error.code : 'OK');
      return a;
    };
  };
}

function watchMessage(e: PodWatchEvent): { type: string; pod: Uint8Array } {
  return { type: e.type, pod: e.pod ? encodePod(e.pod) : new Uint8Array() };
}

function encoded<T>(a: Answer<T>, f: (t: T) => unknown): Answer<unknown> {
  return 'error' in a ? a : { ok: f(a.ok) };
}

function grpcError(e: ApiError): Partial<grpc.StatusObject> {
  return { code: grpcJs().status[GRPC_CODE[e.code]], details: e.message };
}

const GRPC_CODE = {
  Unknown: 'UNKNOWN',
  NotFound: 'NOT_FOUND',
  FailedPrecondition: 'FAILED_PRECONDITION',
  ResourceExhausted: 'RESOURCE_EXHAUSTED',
  Internal: 'INTERNAL',
} as const;
