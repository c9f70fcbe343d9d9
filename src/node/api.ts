/**
 * The API calls the node module makes, behind a small interface so the controllers can run against an
 * in-memory fake in unit tests and against the KubeClient in production (the heartbeat calls,
 * NodeHeartbeatAPI, on a client without a rate limit: see NodeAgentConfig.heartbeatApi). Every method fails
 * with a KindError (`NotFound`, `AlreadyExists`, `Conflict`, `Unavailable`, ...); callers branch on the kind.
 * Returned objects belong to the caller.
 */
import type { KubeClient } from '../kube/client.js';
import { PartialObjectMetadataJSON, PatchTypes } from '../kube/client.js';
import type { CoreEvent, EventSink, EventType, ObjectReference } from '../kube/events.js';
import type { Lease, Node } from '../api/node.js';

/** Namespace of the node heartbeat Leases. */
export const NODE_LEASE_NAMESPACE = 'kube-node-lease';

export interface NodeAPI {
  /** `fromCache` reads with resourceVersion=0 (the API server's watch cache), as the kubelet's status loop does. */
  getNode(name: string, opts?: { fromCache?: boolean }): Promise<Node>;
  createNode(node: Node): Promise<Node>;
  /** JSON merge patch on the Node (metadata and spec); a `metadata.resourceVersion` in it makes it conditional. */
  patchNode(name: string, patch: unknown): Promise<Node>;
  /** Strategic merge patch on `nodes/<name>/status`. */
  patchNodeStatus(name: string, patch: unknown): Promise<Node>;
  /** With `uid`, deletes only that incarnation of the Node (a precondition); otherwise whatever has the name. */
  deleteNode(name: string, opts?: { uid?: string }): Promise<void>;

  getLease(name: string): Promise<Lease>;
  createLease(lease: Lease): Promise<Lease>;
  /** PUT with the lease's resourceVersion: fails with `Conflict` when someone else wrote it in between. */
  updateLease(lease: Lease): Promise<Lease>;
  deleteLease(name: string): Promise<void>;
}

/**
 * The calls of the heartbeats: the Lease renewal and the node status update (its GET and its PATCH). The
 * kubelet makes them on a client of their own without a rate limit, so they never queue behind other work.
 */
export type NodeHeartbeatAPI = Pick<
  NodeAPI,
  'getNode' | 'patchNodeStatus' | 'getLease' | 'createLease' | 'updateLease'
>;

/** The part of EventRecorder the node module uses. */
export interface NodeEventRecorder {
  event(ref: ObjectReference, type: EventType, reason: string, message: string): void;
}

export interface NodeLogger {
  info(msg: string, meta?: Record<string, unknown>): void;
  warn(msg: string, meta?: Record<string, unknown>): void;
}

export const silentLogger: NodeLogger = { info: () => {}, warn: () => {} };

/**
 * The reference the kubelet puts on Node events: kind Node, no namespace, and the node *name* as UID
 * (kubelet.go: nodeRef), so events stay attached across Node re-creation.
 */
export function nodeRef(nodeName: string): ObjectReference {
  return { kind: 'Node', name: nodeName, uid: nodeName };
}

const enc = encodeURIComponent;

/**
 * `api` with its reads of the API server's cache (`fromCache`, the status loop's first try each round) answered
 * from `cached` when it holds the Node: the process's Node watch holds what that read would answer, and a
 * thousand nodes each reading their Node every 10 s sent a hundred GETs a second through the heartbeat pool.
 * Reads that must see the latest write (retries, registration) still go to the API server. The Node handed
 * out is the watch's own object: callers only read it (the status setters copy what they change).
 */
export function withCachedNodeReads<A extends Pick<NodeAPI, 'getNode'>>(
  api: A,
  cached: (name: string) => Node | undefined,
): A {
  return {
    ...api,
    getNode: (name, opts) => {
      const node = opts?.fromCache ? cached(name) : undefined;
      return node ? Promise.resolve(node) : api.getNode(name, opts);
    },
  };
}

/** NodeAPI over the REST API. */
export function restNodeAPI(client: KubeClient): NodeAPI {
  const nodePath = (name: string): string => `/api/v1/nodes/${enc(name)}`;
  const leasePath = (name: string): string =>
    `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases/${enc(name)}`;
  return {
    getNode: (name, opts) =>
      client.request<Node>({
        method: 'GET',
        path: nodePath(name),
        query: opts?.fromCache ? { resourceVersion: '0' } : undefined,
      }),
    createNode: (node) => client.request<Node>({ method: 'POST', path: '/api/v1/nodes', body: node }),
    patchNode: (name, patch) =>
      client.request<Node>({
        method: 'PATCH',
        path: nodePath(name),
        body: patch,
        contentType: PatchTypes.merge,
      }),
    patchNodeStatus: (name, patch) =>
      client.request<Node>({
        method: 'PATCH',
        path: `${nodePath(name)}/status`,
        body: patch,
        contentType: PatchTypes.strategic,
      }),
    deleteNode: async (name, opts) => {
      await client.request({
        method: 'DELETE',
        path: nodePath(name),
        body: opts?.uid
          ? { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: opts.uid } }
          : undefined,
      });
    },
    getLease: (name) => client.request<Lease>({ method: 'GET', path: leasePath(name) }),
    createLease: (lease) =>
      client.request<Lease>({
        method: 'POST',
        path: `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`,
        body: lease,
      }),
    updateLease: (lease) =>
      client.request<Lease>({ method: 'PUT', path: leasePath(lease.metadata.name ?? ''), body: lease }),
    deleteLease: async (name) => {
      await client.request({ method: 'DELETE', path: leasePath(name) });
    },
  };
}

/** EventSink over the REST API (core/v1 Events). */
export function restEventSink(client: KubeClient): EventSink {
  return {
    async create(namespace: string, event: CoreEvent): Promise<void> {
      await client.request({
        method: 'POST',
        path: `/api/v1/namespaces/${enc(namespace)}/events`,
        body: event,
        // Nothing of the answer is read: the server need not encode, nor send, more than the metadata.
        accept: PartialObjectMetadataJSON,
        ignoreAnswer: true,
      });
    },
    async patch(namespace: string, name: string, patch: Partial<CoreEvent>): Promise<void> {
      await client.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${enc(namespace)}/events/${enc(name)}`,
        body: patch,
        contentType: PatchTypes.merge,
        accept: PartialObjectMetadataJSON,
        ignoreAnswer: true,
      });
    },
  };
}
