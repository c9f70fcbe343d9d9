/**
 * The kubelet's ClusterTrustBundle manager (pkg/kubelet/clustertrustbundle), without I/O: what a projected
 * volume's `clusterTrustBundle` source holds, from the bundles the caller fetched.
 *
 * - By `name`: that one bundle; a missing bundle is an error unless the source is optional (then an empty file).
 * - By `signerName`: every bundle of that signer whose labels match `labelSelector`. An unset selector matches
 *   nothing, an empty one everything (metav1.LabelSelectorAsSelector). No match is an error unless optional.
 * - Neither: an error.
 * The result is the bundles' PEM blocks, de-duplicated by their bytes and written again as `CERTIFICATE`
 * blocks in one stable order (sorted by their bytes: the kubelet shuffles that order once per process start,
 * which no consumer may depend on).
 */
import { matchesLabelSelector, type LabelSelector } from '../api/labelselector.js';
import { pemBlocks, pemEncode } from '../util/pem.js';

/** A ClusterTrustBundle (certificates.k8s.io/v1) as far as a projection reads it. */
export interface ClusterTrustBundle {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { signerName?: string; trustBundle: string };
}

/** A projected volume's `clusterTrustBundle` source. */
export interface ClusterTrustBundleProjection {
  name?: string;
  signerName?: string;
  labelSelector?: LabelSelector | null;
  optional?: boolean;
  path: string;
}

/** What a projection needs fetched: one bundle by name, or the signer's bundles. */
export type TrustBundleQuery = { name: string } | { signerName: string };

export function trustBundleQuery(p: ClusterTrustBundleProjection): TrustBundleQuery | undefined {
  if (p.name) return { name: p.name };
  if (p.signerName) return { signerName: p.signerName };
  return undefined;
}

/** The file's content, or the kubelet's error for it. `fetched`: the query's bundles (NotFound: none). */
export function trustAnchorsFor(
  p: ClusterTrustBundleProjection,
  fetched: readonly ClusterTrustBundle[],
): { ok: true; pem: string } | { ok: false; error: string } {
  const optional = p.optional === true;
  if (p.name) {
    const ctb = fetched.find((b) => b.metadata.name === p.name);
    if (!ctb) {
      return optional
        ? { ok: true, pem: '' }
        : {
            ok: false,
            error: `while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "${p.name}" not found`,
          };
    }
    return { ok: true, pem: normalizeTrustAnchors([ctb.spec.trustBundle]) };
  }
  if (p.signerName) {
    const selected = fetched.filter(
      (b) =>
        b.spec.signerName === p.signerName &&
        p.labelSelector != null &&
        matchesLabelSelector(p.labelSelector, b.metadata.labels ?? {}),
    );
    if (selected.length === 0) {
      return optional
        ? { ok: true, pem: '' }
        : {
            ok: false,
            error: 'combination of signerName and labelSelector matched zero ClusterTrustBundles',
          };
    }
    return { ok: true, pem: normalizeTrustAnchors(selected.map((b) => b.spec.trustBundle)) };
  }
  return { ok: false, error: 'ClusterTrustBundle projection requires either name or signerName to be set' };
}

/** Every PEM block's bytes in `bundles`, de-duplicated, as CERTIFICATE blocks in sorted order. */
export function normalizeTrustAnchors(bundles: readonly string[]): string {
  const anchors = new Map<string, Buffer>();
  for (const text of bundles) for (const b of pemBlocks(text)) anchors.set(b.der.toString('latin1'), b.der);
  return [...anchors.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, der]) => pemEncode('CERTIFICATE', der))
    .join('');
}
