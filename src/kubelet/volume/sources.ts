/**
 * The API objects volumes are made from: ConfigMaps and Secrets (the kubelet's configmap and secret managers),
 * and the claims and PersistentVolumes of persistentVolumeClaim volumes. Read by GET and cached for a short TTL,
 * shared by every pod of the node (see util/objectcache.ts for why not a watch). The operator's ServiceAccount
 * needs `get` on configmaps, secrets, persistentvolumeclaims and persistentvolumes, nothing more.
 */
import type { KubeClient } from '../../kube/client.js';
import type { PersistentVolume, PersistentVolumeClaim } from '../../api/volumes.js';
import type { Clock } from '../../util/clock.js';
import type { ClusterTrustBundle } from '../clustertrustbundle.js';
import type { CredentialBundle, ProjectionKey } from '../podcertificate/projection.js';
import { isNotFound } from '../../util/errors.js';
import { ObjectCache, type ObjectGetter } from '../util/objectcache.js';

/** A ConfigMap's contents as the API returns them (`binaryData` values in base64). */
export interface ConfigMapObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** A Secret's contents as the API returns them (values in base64); type and identity for image pull secrets. */
export interface SecretObject {
  data?: Record<string, string>;
  type?: string;
  metadata?: { uid?: string; namespace?: string; name?: string };
}

export interface VolumeSources {
  /** `maxAgeMs`: how stale a cached copy may be (a resync asks for fresher copies than a first mount). */
  getConfigMap(namespace: string, name: string, maxAgeMs?: number): Promise<ConfigMapObject | undefined>;
  getSecret(namespace: string, name: string, maxAgeMs?: number): Promise<SecretObject | undefined>;
  getPersistentVolumeClaim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined>;
  getPersistentVolume(name: string): Promise<PersistentVolume | undefined>;
  /** A ClusterTrustBundle by name (undefined: none such), for clusterTrustBundle projections. */
  getClusterTrustBundle?(name: string): Promise<ClusterTrustBundle | undefined>;
  /** Every ClusterTrustBundle (the projection picks a signer's by its selector). */
  listClusterTrustBundles?(): Promise<ClusterTrustBundle[]>;
  /**
   * The key and chain of a podCertificate projection, from the node's podcertificate manager (which keeps
   * them in memory: no API read). Rejects with the kubelet's words while there are none (not issued yet,
   * denied, failed). Per node: withPodCertificates adds it to the sources the node's volumes read.
   */
  getPodCertificateCredentialBundle?(key: ProjectionKey): Promise<CredentialBundle>;
}

/**
 * `base` with the credential bundles of a node's podcertificate manager (`bundle` throws the kubelet's error
 * while a projection has none). `base` may be shared by every node of the process; it is not changed.
 */
export function withPodCertificates(
  base: VolumeSources,
  bundle: (key: ProjectionKey) => CredentialBundle,
): VolumeSources {
  const { getClusterTrustBundle, listClusterTrustBundles } = base;
  return {
    getConfigMap: (ns, name, maxAgeMs) => base.getConfigMap(ns, name, maxAgeMs),
    getSecret: (ns, name, maxAgeMs) => base.getSecret(ns, name, maxAgeMs),
    getPersistentVolumeClaim: (ns, name) => base.getPersistentVolumeClaim(ns, name),
    getPersistentVolume: (name) => base.getPersistentVolume(name),
    ...(getClusterTrustBundle
      ? { getClusterTrustBundle: (name) => getClusterTrustBundle.call(base, name) }
      : {}),
    ...(listClusterTrustBundles ? { listClusterTrustBundles: () => listClusterTrustBundles.call(base) } : {}),
    getPodCertificateCredentialBundle: async (key) => bundle(key),
  };
}

/** How long a fetched ConfigMap or Secret is served to a pod resync without asking again. */
export const DefaultObjectTTLMs = 10_000;

const enc = encodeURIComponent;
/** ClusterTrustBundles are GA (certificates.k8s.io/v1) in the Kubernetes this operator targets. */
const CTB_PATH = '/apis/certificates.k8s.io/v1/clustertrustbundles';

function restGetter<T>(
  client: Pick<KubeClient, 'request'>,
  pathOf: (ns: string, name: string) => string,
): ObjectGetter<T> {
  return {
    async get(namespace, name) {
      try {
        // Low priority: these GETs stand in for the kubelet's watches and must not delay pod status writes.
        return await client.request<T>({ method: 'GET', path: pathOf(namespace, name), priority: 'low' });
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
  };
}

/**
 * ConfigMaps and Secrets by one uncached GET each, at low priority (they stand in for the kubelet's watches):
 * NotFound resolves undefined, any other failure rejects. What restVolumeSources caches.
 */
export function restDataGetters(client: Pick<KubeClient, 'request'>): {
  configMaps: ObjectGetter<ConfigMapObject>;
  secrets: ObjectGetter<SecretObject>;
} {
  return {
    configMaps: restGetter(client, (ns, n) => `/api/v1/namespaces/${enc(ns)}/configmaps/${enc(n)}`),
    secrets: restGetter(client, (ns, n) => `/api/v1/namespaces/${enc(ns)}/secrets/${enc(n)}`),
  };
}

/** VolumeSources over GETs through the operator's rate-limited client, each object cached for `ttlMs`. */
export function restVolumeSources(
  client: Pick<KubeClient, 'request'>,
  clock: Pick<Clock, 'now'>,
  ttlMs = DefaultObjectTTLMs,
): VolumeSources & { prune(): void } {
  const data = restDataGetters(client);
  const configMaps = new ObjectCache<ConfigMapObject>(data.configMaps, clock, ttlMs);
  const secrets = new ObjectCache<SecretObject>(data.secrets, clock, ttlMs);
  const claims = new ObjectCache<PersistentVolumeClaim>(
    restGetter(client, (ns, n) => `/api/v1/namespaces/${enc(ns)}/persistentvolumeclaims/${enc(n)}`),
    clock,
    ttlMs,
  );
  const volumes = new ObjectCache<PersistentVolume>(
    restGetter(client, (_ns, n) => `/api/v1/persistentvolumes/${enc(n)}`),
    clock,
    ttlMs,
  );
  const trustBundles = new ObjectCache<ClusterTrustBundle>(
    restGetter(client, (_ns, n) => `${CTB_PATH}/${enc(n)}`),
    clock,
    ttlMs,
  );
  // The whole list, cached as one object (the kubelet keeps an informer of them).
  const trustBundleList = new ObjectCache<{ items: ClusterTrustBundle[] }>(
    restGetter(client, () => CTB_PATH),
    clock,
    ttlMs,
  );
  return {
    getConfigMap: (ns, name, maxAgeMs) => configMaps.get(ns, name, maxAgeMs),
    getClusterTrustBundle: (name) => trustBundles.get('', name),
    listClusterTrustBundles: async () => (await trustBundleList.get('', ''))?.items ?? [],
    getSecret: (ns, name, maxAgeMs) => secrets.get(ns, name, maxAgeMs),
    getPersistentVolumeClaim: (ns, name) => claims.get(ns, name),
    getPersistentVolume: (name) => volumes.get('', name),
    prune: () => {
      for (const c of [configMaps, secrets, claims, volumes, trustBundles, trustBundleList]) c.prune();
    },
  };
}
