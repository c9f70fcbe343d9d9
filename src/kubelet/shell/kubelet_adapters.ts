/**
 * The kubelet's small adapters to the outside world, each replaceable in tests: pod event references over
 * the node's EventRecorder, ConfigMap/Secret lookups for container environments (over the node's cached
 * VolumeSources, or by plain GETs), the HTTP GET of lifecycle hooks, and the guard that keeps a stopped
 * Kubelet's pod workers from acting.
 */
import http from 'node:http';

import https from 'node:https';

import type { Pod } from '../../api/core.js';
import type { KubeClient } from '../../kube/client.js';
import type { EventRecorder, ObjectReference } from '../../kube/events.js';
import type { EventRecorderFunc } from '../container/ref.js';
import type { EnvSource } from '../kuberuntime/shell/context.js';
import type { PodSyncer } from '../podworkers.js';
import {
  restDataGetters,
  type ConfigMapObject,
  type SecretObject,
  type VolumeSources,
} from '../volume/sources.js';

/** The part of EventRecorder the kubelet uses. */
export type PodEventSink = Pick<EventRecorder, 'event'>;

/**
 * The reference the kubelet puts on pod events (ref.GetReference): kind Pod, v1, namespace, name, UID and,
 * for container events, the container's field path (`spec.containers{web}`).
 */
export function podRef(pod: Pod, fieldPath?: string): ObjectReference {
  const namespace = pod.metadata.namespace ?? 'default';
  const name = pod.metadata.name ?? '';
  const uid = pod.metadata.uid;
  // Each shape as one literal, so its fields stay inside the object (the event correlator keeps a pod's
  // first ref).
  if (uid && fieldPath) return { kind: 'Pod', apiVersion: 'v1', namespace, name, uid, fieldPath };
  if (uid) return { kind: 'Pod', apiVersion: 'v1', namespace, name, uid };
  if (fieldPath) return { kind: 'Pod', apiVersion: 'v1', namespace, name, fieldPath };
  return { kind: 'Pod', apiVersion: 'v1', namespace, name };
}

/** An EventRecorderFunc over the node's recorder (which never blocks: writes are queued). */
export function podEventRecorder(sink: PodEventSink): EventRecorderFunc {
  return (pod, type, reason, message, fieldPath) => sink.event(podRef(pod, fieldPath), type, reason, message);
}

/** A ConfigMap's data with its binaryData decoded (UTF-8), as env vars see it. */
function configMapEnv(cm: ConfigMapObject): Record<string, string> {
  const out: Record<string, string> = { ...(cm.data ?? {}) };
  for (const [k, v] of Object.entries(cm.binaryData ?? {}))
    out[k] = Buffer.from(v, 'base64').toString('utf8');
  return out;
}

/** A Secret's data base64-decoded (UTF-8), as env vars see it. */
function secretEnv(s: SecretObject): Record<string, string> {
  return Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}

/**
 * Container environments read through the node's VolumeSources, the cache volumes read through too (the
 * kubelet hands its configmap and secret managers to both): a ConfigMap or Secret that many containers refer
 * to, or that does not exist, costs one GET per TTL however often pods retry. What VolumeSources resolves
 * undefined (NotFound) is undefined here; its other failures reject. Each call returns a fresh record.
 */
export function volumeEnvSource(sources: Pick<VolumeSources, 'getConfigMap' | 'getSecret'>): EnvSource {
  return {
    async getConfigMap(namespace, name) {
      const cm = await sources.getConfigMap(namespace, name);
      return cm ? configMapEnv(cm) : undefined;
    },
    async getSecret(namespace, name) {
      const s = await sources.getSecret(namespace, name);
      return s ? secretEnv(s) : undefined;
    },
  };
}

/**
 * ConfigMaps and Secrets by a GET per lookup, uncached (the kubelet's "Get" change detection strategy): the
 * fallback of a Kubelet whose pod environment has no VolumeSources. A missing object resolves undefined;
 * other failures reject; binaryData and Secret values are base64-decoded.
 */
export function restEnvSource(client: Pick<KubeClient, 'request'>): EnvSource {
  const { configMaps, secrets } = restDataGetters(client);
  return volumeEnvSource({
    getConfigMap: (namespace, name) => configMaps.get(namespace, name),
    getSecret: (namespace, name) => secrets.get(namespace, name),
  });
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
