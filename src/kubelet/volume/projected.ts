/**
 * The content of a projected volume (pkg/volume/projected collectData): the files of each source, in list
 * order, merged into one payload; a later source's file replaces an earlier one at the same path (API
 * validation only warns about overlapping paths).
 *
 * - configMap / secret: their volume's rules (configmap.ts, secret.ts) with the projected defaultMode; a
 *   missing object is an error unless that source is optional.
 * - downwardAPI: downwardapi.ts with the projected defaultMode.
 * - serviceAccountToken: the token the token manager issued for the pod's service account (resolved by the
 *   caller, see `serviceAccountTokenRequests`). Its mode is the defaultMode, except 0600 when the pod has an
 *   fsUser or an fsGroup: the file then belongs to that user (FsUser), and SetVolumeOwnership widens it to
 *   0640 for the group.
 * - clusterTrustBundle: the trust anchors of one named ClusterTrustBundle or of a signer's selected ones
 *   (../clustertrustbundle.ts), fetched by the caller, in a file of the defaultMode.
 * - podCertificate: not supported by this kubelet; an error naming it.
 * Every source is tried; all errors are returned together (utilerrors.NewAggregate).
 */
import type { Pod } from '../../api/core.js';
import type { ProjectedVolumeSource, ServiceAccountTokenProjection } from '../../api/volumes.js';
import { type ConfigMapLookup, configMapNotFoundMessage, configMapPayload } from './configmap.js';
import {
  type ClusterTrustBundle,
  type ClusterTrustBundleProjection,
  type TrustBundleQuery,
  trustAnchorsFor,
  trustBundleQuery,
} from '../clustertrustbundle.js';
import { collectDownwardAPIData } from './downwardapi.js';
import { fsGroupFrom, fsUserFrom } from './fsuser.js';
import {
  DEFAULT_MODE,
  type FetchError,
  type Payload,
  type PayloadResult,
  failure,
  isFetchError,
  success,
} from './payload.js';
import { type SecretLookup, secretNotFoundMessage, secretPayload } from './secret.js';

/** The API server's default token lifetime for a serviceAccountToken projection. */
export const DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600;

export interface ProjectedInputs {
  pod: Pod;
  /** Lookups by name; a name absent from the map means the object does not exist. */
  configMaps: ReadonlyMap<string, ConfigMapLookup>;
  secrets: ReadonlyMap<string, SecretLookup>;
  /** Tokens by `tokenRequestKey`, or the token manager's error. */
  tokens: ReadonlyMap<string, string | FetchError>;
  /** Node allocatable, for downwardAPI limits a container leaves unset. */
  nodeAllocatable?: Readonly<Record<string, string | number>>;
  /** ClusterTrustBundles by `trustBundleKey` of their query, or the error fetching them. */
  trustBundles?: ReadonlyMap<string, readonly ClusterTrustBundle[] | FetchError>;
}

/** The key of a clusterTrustBundle source's fetch: by name, or every bundle (the signer's are picked here). */
export function trustBundleKey(q: TrustBundleQuery): string {
  return 'name' in q ? `name:${q.name}` : 'all';
}

/** The fetches the volume's clusterTrustBundle sources need, each once. */
export function trustBundleQueries(source: ProjectedVolumeSource): TrustBundleQuery[] {
  const out = new Map<string, TrustBundleQuery>();
  for (const s of source.sources ?? []) {
    const q = s.clusterTrustBundle
      ? trustBundleQuery(s.clusterTrustBundle as unknown as ClusterTrustBundleProjection)
      : undefined;
    if (q) out.set(trustBundleKey(q), q);
  }
  return [...out.values()];
}

/** What a token request for this projection asks for: audience and lifetime (the bound pod is the volume's). */
export function tokenRequestKey(p: ServiceAccountTokenProjection): string {
  return JSON.stringify([p.audience ?? '', p.expirationSeconds ?? DEFAULT_TOKEN_EXPIRATION_SECONDS]);
}

/** The token requests the volume needs, one per distinct `tokenRequestKey`, in source order. */
export function serviceAccountTokenRequests(source: ProjectedVolumeSource): ServiceAccountTokenProjection[] {
  const seen = new Set<string>();
  const out: ServiceAccountTokenProjection[] = [];
  for (const s of source.sources ?? []) {
    if (!s.serviceAccountToken) continue;
    const key = tokenRequestKey(s.serviceAccountToken);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(s.serviceAccountToken);
  }
  return out;
}

/** The ConfigMaps and Secrets the volume refers to, each name once, for the caller to look up. */
export function projectedSourceNames(source: ProjectedVolumeSource): {
  configMaps: string[];
  secrets: string[];
} {
  const configMaps = new Set<string>();
  const secrets = new Set<string>();
  for (const s of source.sources ?? []) {
    if (s.secret) secrets.add(s.secret.name ?? '');
    else if (s.configMap) configMaps.add(s.configMap.name ?? '');
  }
  return { configMaps: [...configMaps], secrets: [...secrets] };
}

function unsupportedSourceMessage(kind: string, path: unknown): string {
  const where = typeof path === 'string' ? ` (path ${JSON.stringify(path)})` : '';
  return `projected volume source ${kind}${where} is not supported by this node`;
}

/** collectData: the merged payload of every source, or all their errors. */
export function makeProjectedPayload(source: ProjectedVolumeSource, inputs: ProjectedInputs): PayloadResult {
  const defaultMode = source.defaultMode ?? DEFAULT_MODE;
  const fsUser = fsUserFrom(inputs.pod);
  const fsGroup = fsGroupFrom(inputs.pod);
  const payload: Payload = new Map();
  const errors: string[] = [];
  const merge = (r: PayloadResult): void => {
    if (!r.ok) errors.push(...r.errors);
    else for (const [k, v] of r.payload) payload.set(k, v);
  };

  // The kubelet's switch takes the first field set, in this order; a source with none is ignored.
  for (const s of source.sources ?? []) {
    if (s.secret) {
      const name = s.secret.name ?? '';
      const optional = s.secret.optional === true;
      const secret = inputs.secrets.get(name);
      if (isFetchError(secret)) errors.push(secret.error);
      else if (secret === undefined && !optional) errors.push(secretNotFoundMessage(name));
      else merge(secretPayload(s.secret.items, secret ?? {}, defaultMode, optional));
    } else if (s.configMap) {
      const name = s.configMap.name ?? '';
      const optional = s.configMap.optional === true;
      const configMap = inputs.configMaps.get(name);
      if (isFetchError(configMap)) errors.push(configMap.error);
      else if (configMap === undefined && !optional) errors.push(configMapNotFoundMessage(name));
      else merge(configMapPayload(s.configMap.items, configMap ?? {}, defaultMode, optional));
    } else if (s.downwardAPI) {
      merge(collectDownwardAPIData(s.downwardAPI.items, defaultMode, inputs));
    } else if (s.serviceAccountToken) {
      const tp = s.serviceAccountToken;
      const token = inputs.tokens.get(tokenRequestKey(tp));
      if (token === undefined) {
        errors.push(`no service account token was requested for projected path ${JSON.stringify(tp.path)}`);
      } else if (isFetchError(token)) {
        errors.push(token.error);
      } else {
        payload.set(tp.path, {
          data: Buffer.from(token, 'utf8'),
          mode: fsUser !== undefined || fsGroup !== undefined ? 0o600 : defaultMode,
          ...(fsUser !== undefined ? { fsUser } : {}),
        });
      }
    } else if (s.clusterTrustBundle) {
      const p = s.clusterTrustBundle as unknown as ClusterTrustBundleProjection;
      const q = trustBundleQuery(p);
      const fetched = q ? inputs.trustBundles?.get(trustBundleKey(q)) : [];
      if (fetched === undefined)
        errors.push(`ClusterTrustBundles for projected path ${JSON.stringify(p.path)} were not fetched`);
      else if (isFetchError(fetched)) errors.push(fetched.error);
      else {
        const r = trustAnchorsFor(p, fetched);
        if (r.ok)
          payload.set(p.path, {
            data: Buffer.from(r.pem, 'utf8'),
            mode: defaultMode,
            ...(fsUser !== undefined ? { fsUser } : {}),
          });
        else errors.push(r.error);
      }
    } else if (s.podCertificate) {
      const pc = s.podCertificate;
      errors.push(
        unsupportedSourceMessage('podCertificate', pc['credentialBundlePath'] ?? pc['certificateChainPath']),
      );
    }
  }
  return errors.length > 0 ? failure(errors) : success(payload);
}
