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
 * - podCertificate: the key and issued chain of the source's PodCertificateRequest, held by the node's
 *   podcertificate manager (../podcertificate/) and fetched by the caller per source index: the key and the
 *   chain together at credentialBundlePath (the PRIVATE KEY block first), the key alone at keyPath, the chain
 *   alone at certificateChainPath, each written when its path is set. Modes as for a token. While none is
 *   issued (or the request was denied or failed) the manager's error fails the volume, and the pod waits
 *   with FailedMount as on a kubelet; a refreshed certificate reaches the files at the next set-up.
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
import type { CredentialBundle } from '../podcertificate/projection.js';
import {
  DEFAULT_MODE,
  type FetchError,
  type FileProjection,
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
  /** The credentials of the volume's podCertificate sources by source index, or why there are none. */
  podCertificates?: ReadonlyMap<number, CredentialBundle | FetchError>;
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

/** The indices of the volume's podCertificate sources, whose credentials the caller fetches. */
export function podCertificateSourceIndices(source: ProjectedVolumeSource): number[] {
  const out: number[] = [];
  (source.sources ?? []).forEach((s, i) => {
    if (s.podCertificate) out.push(i);
  });
  return out;
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

  // A token's or a credential's file: 0600 and the pod's fsUser when it has one (or an fsGroup).
  const credentialFile = (data: Buffer): FileProjection => ({
    data,
    mode: fsUser !== undefined || fsGroup !== undefined ? 0o600 : defaultMode,
    ...(fsUser !== undefined ? { fsUser } : {}),
  });

  // The kubelet's switch takes the first field set, in this order; a source with none is ignored.
  for (const [index, s] of (source.sources ?? []).entries()) {
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
        payload.set(tp.path, credentialFile(Buffer.from(token, 'utf8')));
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
      const bundle = inputs.podCertificates?.get(index);
      if (bundle === undefined)
        errors.push(`the credentials of podCertificate source ${index} were not fetched`);
      else if (isFetchError(bundle)) errors.push(bundle.error);
      else {
        const key = Buffer.from(bundle.privateKey, 'utf8');
        const chain = Buffer.from(bundle.certChain, 'utf8');
        if (pc.credentialBundlePath)
          payload.set(pc.credentialBundlePath, credentialFile(Buffer.concat([key, chain])));
        if (pc.keyPath) payload.set(pc.keyPath, credentialFile(key));
        if (pc.certificateChainPath) payload.set(pc.certificateChainPath, credentialFile(chain));
      }
    }
  }
  return errors.length > 0 ? failure(errors) : success(payload);
}
