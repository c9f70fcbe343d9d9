/**
 * The kubelet's small adapters to the outside world, each replaceable in tests: pod event references over
 * the node's EventRecorder, ConfigMap/Secret lookups over the API for container environments, the HTTP GET of
 * lifecycle hooks, and the guard that keeps a stopped Kubelet's pod workers from acting.
 */
import http from 'node:http';
import https from 'node:https';
import type { Pod } from '../api/core.js';
import type { KubeClient } from '../kube/client.js';
import type { EventType, ObjectReference } from '../kube/events.js';
import { isNotFound } from '../util/errors.js';
import type { EnvSource, EventRecorderFunc } from './kuberuntime/context.js';
import type { PodSyncer } from './podworkers.js';

/** The part of EventRecorder the kubelet uses. */
export interface PodEventSink {
  event(ref: ObjectReference, type: EventType, reason: string, message: string): void;
}

/**
 * The reference the kubelet puts on pod events (ref.GetReference): kind Pod, v1, namespace, name, UID and,
 * for container events, the container's field path (`spec.containers{web}`).
 */
export function podRef(pod: Pod, fieldPath?: string): ObjectReference {
  const ref: ObjectReference = {
    kind: 'Pod',
    apiVersion: 'v1',
    namespace: pod.metadata.namespace ?? 'default',
    name: pod.metadata.name ?? '',
  };
  if (pod.metadata.uid) ref.uid = pod.metadata.uid;
  if (fieldPath) ref.fieldPath = fieldPath;
  return ref;
}

/** An EventRecorderFunc over the node's recorder (which never blocks: writes are queued). */
export function podEventRecorder(sink: PodEventSink): EventRecorderFunc {
  return (pod, type, reason, message, fieldPath) => sink.event(podRef(pod, fieldPath), type, reason, message);
}

const enc = encodeURIComponent;

interface DataObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/**
 * ConfigMaps and Secrets by GET through the rate-limited client (the kubelet's "Get" change detection
 * strategy). A missing object resolves undefined; Secret values are base64-decoded.
 */
export function restEnvSource(client: Pick<KubeClient, 'request'>): EnvSource {
  const get = async (path: string): Promise<DataObject | undefined> => {
    try {
      return await client.request<DataObject>({ method: 'GET', path });
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  };
  return {
    async getConfigMap(namespace, name) {
      const cm = await get(`/api/v1/namespaces/${enc(namespace)}/configmaps/${enc(name)}`);
      if (!cm) return undefined;
      const out: Record<string, string> = { ...(cm.data ?? {}) };
      for (const [k, v] of Object.entries(cm.binaryData ?? {}))
        out[k] = Buffer.from(v, 'base64').toString('utf8');
      return out;
    },
    async getSecret(namespace, name) {
      const s = await get(`/api/v1/namespaces/${enc(namespace)}/secrets/${enc(name)}`);
      if (!s) return undefined;
      return Object.fromEntries(
        Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      );
    },
  };
}

/**
 * The HTTP GET of an httpGet lifecycle hook: resolves with the status code (which does not decide success,
 * as in the kubelet), rejects on a transport error or when `timeoutMs` passes. Certificates are not
 * verified, as the kubelet's hook client does not verify them.
 */
export function nodeHookHttpGet(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(u, {
      method: 'GET',
      headers,
      agent: false,
      signal: AbortSignal.timeout(Math.max(1, timeoutMs)),
      ...(u.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The syncer as the pod workers see it: once stopped, a sync function that is called anyway (a worker that was
 * mid-sync and schedules its next step) parks forever instead of acting, so a stopped Kubelet never touches the
 * runtime again. Each call goes through `track`; with `yieldToLoop`, each first waits for it (and parks if the
 * Kubelet stopped meanwhile).
 */
export function guardSyncer(
  syncer: PodSyncer,
  stopped: () => boolean,
  track: <T>(p: Promise<T>) => Promise<T>,
  yieldToLoop?: () => Promise<void>,
): PodSyncer {
  const park = <T>(): Promise<T> => new Promise<T>(() => undefined);
  const guard = <T>(call: () => Promise<T>): Promise<T> => {
    if (stopped()) return park();
    if (!yieldToLoop) return track(call());
    return track(yieldToLoop().then(() => (stopped() ? park<T>() : call())));
  };
  return {
    syncPod: (ctx, type, pod, status) => guard(() => syncer.syncPod(ctx, type, pod, status)),
    syncTerminatingPod: (ctx, pod, status, grace, kill) =>
      guard(() => syncer.syncTerminatingPod(ctx, pod, status, grace, kill)),
    syncTerminatingRuntimePod: (ctx, running) => guard(() => syncer.syncTerminatingRuntimePod(ctx, running)),
    syncTerminatedPod: (ctx, pod, status) => guard(() => syncer.syncTerminatedPod(ctx, pod, status)),
  };
}

/** The sooner of two "sync again in" answers; undefined when neither has one. */
export function minDue(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}
