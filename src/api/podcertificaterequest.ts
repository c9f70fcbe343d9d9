/**
 * certificates.k8s.io/v1 PodCertificateRequest (GA in Kubernetes 1.37), the subset a kubelet writes and reads,
 * in JSON wire shape: what it asks a signer for on behalf of one pod's podCertificate projected volume source,
 * and the status the signer writes back.
 */
import type { ObjectMeta } from './core.js';

export const PCR_API_VERSION = 'certificates.k8s.io/v1';
/** The collection of one namespace's requests. */
export const podCertificateRequestsPath = (namespace: string): string =>
  `/apis/certificates.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/podcertificaterequests`;
/** Every namespace's requests (lists and watches, with a field selector). */
export const ALL_PODCERTIFICATEREQUESTS_PATH = '/apis/certificates.k8s.io/v1/podcertificaterequests';

/** The key types a podCertificate source may ask for (core/v1 PodCertificateProjection.keyType). */
export const POD_CERTIFICATE_KEY_TYPES = [
  'RSA3072',
  'RSA4096',
  'ECDSAP256',
  'ECDSAP384',
  'ECDSAP521',
  'ED25519',
] as const;
export type PodCertificateKeyType = (typeof POD_CERTIFICATE_KEY_TYPES)[number];

export interface PodCertificateRequestSpec {
  signerName: string;
  podName: string;
  podUID: string;
  serviceAccountName: string;
  serviceAccountUID: string;
  nodeName: string;
  nodeUID: string;
  /** The API server defaults it to 86400 (24 h). */
  maxExpirationSeconds?: number;
  /** An empty PKCS#10 request signed with the pod's new key (DER, base64 in JSON): the key and its proof. */
  stubPKCS10Request: string;
  unverifiedUserAnnotations?: Record<string, string>;
}

/** metav1.Condition. */
export interface PodCertificateRequestCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface PodCertificateRequestStatus {
  /** At most one of Issued, Denied, Failed, each with status True. */
  conditions?: PodCertificateRequestCondition[];
  /** PEM CERTIFICATE blocks: the leaf first, then intermediates. */
  certificateChain?: string;
  notBefore?: string;
  beginRefreshAt?: string;
  notAfter?: string;
}

export interface PodCertificateRequest {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: PodCertificateRequestSpec;
  status?: PodCertificateRequestStatus;
}
