/**
 * The plugins whose contents are files made from API data (kubelet: pkg/volume/{configmap,secret,downwardapi,
 * projected}): the source objects are read (cached), turned into a payload (src/kubelet/volume/), and written
 * with the atomic writer into an emptyDir-style directory, which is a tmpfs for secret and projected volumes as
 * on a kubelet. The pod's fsGroup then owns the files. They are mounted read-only into containers, and SetUp
 * runs again at every pod sync, so updates of the sources (and of the pod's labels and annotations) reach the
 * files; an unchanged payload writes nothing.
 */
import type { Pod } from '../../api/core.js';
import type {
  ConfigMapVolumeSource,
  DownwardAPIVolumeSource,
  ProjectedVolumeSource,
  SecretVolumeSource,
} from '../../api/volumes.js';
import { errorMessage } from '../../util/errors.js';
import type { ClusterTrustBundle, TrustBundleQuery } from '../clustertrustbundle.js';
import type { CredentialBundle, ProjectionKey } from '../podcertificate/projection.js';
import { AtomicWriter } from './atomicwriter.js';
import { makeConfigMapPayload, type ConfigMapLookup } from './configmap.js';
import { makeDownwardAPIPayload } from './downwardapi.js';
import { fsGroupFrom } from './fsuser.js';
import { setVolumeOwnership } from './ownership.js';
import type { FetchError, PayloadResult } from './payload.js';
import {
  makeProjectedPayload,
  podCertificateSourceIndices,
  projectedSourceNames,
  serviceAccountTokenRequests,
  trustBundleKey,
  trustBundleQueries,
  tokenRequestKey,
} from './projected.js';
import { decodeSecretData, makeSecretPayload, type SecretLookup } from './secret.js';
import { emptyDirMemorySize, setUpWrapperDir } from './emptydir.js';
import { podVolumeDir, PluginDirs, type PluginDir } from './podpaths.js';
import { mountFailure, type PluginContext, type SetUpRequest, type SetUpResult } from './plugin.js';

async function lookupConfigMap(
  ctx: PluginContext,
  namespace: string,
  name: string,
  maxAgeMs: number | undefined,
): Promise<ConfigMapLookup> {
  try {
    return await ctx.sources.getConfigMap(namespace, name, maxAgeMs);
  } catch (err) {
    return { error: `failed to get configmap ${JSON.stringify(name)}: ${errorMessage(err)}` };
  }
}

async function lookupSecret(
  ctx: PluginContext,
  namespace: string,
  name: string,
  maxAgeMs: number | undefined,
): Promise<SecretLookup> {
  try {
    const s = await ctx.sources.getSecret(namespace, name, maxAgeMs);
    return s ? decodeSecretData(s) : undefined;
  } catch (err) {
    return { error: `failed to get secret ${JSON.stringify(name)}: ${errorMessage(err)}` };
  }
}

async function lookupTrustBundles(
  ctx: PluginContext,
  q: TrustBundleQuery,
): Promise<readonly ClusterTrustBundle[] | FetchError> {
  const { getClusterTrustBundle, listClusterTrustBundles } = ctx.sources;
  try {
    if ('name' in q) {
      if (!getClusterTrustBundle) return { error: 'ClusterTrustBundles are not available to this node' };
      const b = await getClusterTrustBundle.call(ctx.sources, q.name);
      return b ? [b] : [];
    }
    if (!listClusterTrustBundles) return { error: 'ClusterTrustBundles are not available to this node' };
    return await listClusterTrustBundles.call(ctx.sources);
  } catch (err) {
    return { error: `while getting ClusterTrustBundles: ${errorMessage(err)}` };
  }
}

/** The credentials of a podCertificate source from the node's podcertificate manager, or why there are none. */
async function lookupPodCertificate(
  ctx: PluginContext,
  key: ProjectionKey,
): Promise<CredentialBundle | FetchError> {
  const { getPodCertificateCredentialBundle } = ctx.sources;
  if (!getPodCertificateCredentialBundle)
    return { error: 'podCertificate projected volume sources are not served on this node' };
  try {
    return await getPodCertificateCredentialBundle.call(ctx.sources, key);
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

async function payloadFor(ctx: PluginContext, req: SetUpRequest): Promise<PayloadResult> {
  const pod = req.pod;
  const ns = pod.metadata.namespace ?? '';
  const vol = req.volume;
  switch (req.kind) {
    case 'configMap': {
      const src = vol.configMap as ConfigMapVolumeSource;
      return makeConfigMapPayload(src, await lookupConfigMap(ctx, ns, src.name ?? '', req.maxAgeMs));
    }
    case 'secret': {
      const src = vol.secret as SecretVolumeSource;
      return makeSecretPayload(src, await lookupSecret(ctx, ns, src.secretName ?? '', req.maxAgeMs));
    }
    case 'downwardAPI':
      return makeDownwardAPIPayload(vol.downwardAPI as DownwardAPIVolumeSource, {
        pod,
        nodeAllocatable: ctx.nodeAllocatable(),
      });
    case 'projected': {
      const src = vol.projected as ProjectedVolumeSource;
      const names = projectedSourceNames(src);
      const configMaps = new Map<string, ConfigMapLookup>();
      const secrets = new Map<string, SecretLookup>();
      const tokens = new Map<string, string | FetchError>();
      const trustBundles = new Map<string, readonly ClusterTrustBundle[] | FetchError>();
      const podCertificates = new Map<number, CredentialBundle | FetchError>();
      const projection = {
        namespace: ns,
        podName: pod.metadata.name ?? '',
        podUID: pod.metadata.uid ?? '',
        volumeName: vol.name,
      };
      await Promise.all([
        ...podCertificateSourceIndices(src).map(async (sourceIndex) => {
          podCertificates.set(sourceIndex, await lookupPodCertificate(ctx, { ...projection, sourceIndex }));
        }),
        ...trustBundleQueries(src).map(async (q) => {
          trustBundles.set(trustBundleKey(q), await lookupTrustBundles(ctx, q));
        }),
        ...names.configMaps.map(async (n) => {
          const v = await lookupConfigMap(ctx, ns, n, req.maxAgeMs);
          if (v !== undefined) configMaps.set(n, v);
        }),
        ...names.secrets.map(async (n) => {
          const v = await lookupSecret(ctx, ns, n, req.maxAgeMs);
          if (v !== undefined) secrets.set(n, v);
        }),
        ...serviceAccountTokenRequests(src).map(async (p) => {
          try {
            tokens.set(tokenRequestKey(p), await ctx.tokens(pod, p));
          } catch (err) {
            tokens.set(tokenRequestKey(p), { error: errorMessage(err) });
          }
        }),
      ]);
      return makeProjectedPayload(src, {
        pod,
        configMaps,
        secrets,
        tokens,
        trustBundles,
        podCertificates,
        nodeAllocatable: ctx.nodeAllocatable(),
      });
    }
    default:
      return {
        ok: false,
        message: `not a data volume: ${req.kind}`,
        errors: [`not a data volume: ${req.kind}`],
      };
  }
}

function pluginDirOf(kind: SetUpRequest['kind']): PluginDir {
  switch (kind) {
    case 'configMap':
      return PluginDirs.configMap;
    case 'secret':
      return PluginDirs.secret;
    case 'downwardAPI':
      return PluginDirs.downwardAPI;
    default:
      return PluginDirs.projected;
  }
}

/**
 * SetUp of a configMap, secret, downwardAPI or projected volume. A failure leaves the previous contents (if any)
 * in place: a running pod keeps its last good files while its source is broken, as on a kubelet.
 */
export async function setUpDataVolume(ctx: PluginContext, req: SetUpRequest): Promise<SetUpResult> {
  const uid = req.pod.metadata.uid ?? '';
  const dir = podVolumeDir(ctx.podsDir, uid, pluginDirOf(req.kind), req.volume.name);
  const payload = await payloadFor(ctx, req);
  if (!payload.ok) return mountFailure(payload.message);
  // Secrets and projected volumes (tokens) live in memory, never on the node's disk.
  const medium = req.kind === 'secret' || req.kind === 'projected' ? 'Memory' : '';
  // Sized as a Memory emptyDir (node allocatable, capped by the pod's memory limit), as the kubelet sizes it.
  const size = medium === 'Memory' ? emptyDirMemorySize(req.pod, {}, ctx.nodeAllocatable()) : undefined;
  const dirErr = await setUpWrapperDir(ctx, dir, medium, size, false);
  if (dirErr) return mountFailure(dirErr);
  const pod: Pod = req.pod;
  const writer = new AtomicWriter({
    fs: ctx.fs,
    targetDir: dir,
    now: () => ctx.clock.now(),
    logContext: `pod ${pod.metadata.namespace}/${pod.metadata.name} volume ${req.volume.name}`,
  });
  const fsGroup = fsGroupFrom(pod);
  try {
    await writer.write(payload.payload, async () => {
      // As the kubelet: the whole volume, since the first write creates files outside the timestamped dir.
      await setVolumeOwnership(ctx.fs, dir, { fsGroup, readOnly: true });
    });
  } catch (err) {
    return mountFailure(errorMessage(err));
  }
  return { ok: true, volume: { hostPath: dir, readOnly: true, selinuxRelabel: true } };
}
