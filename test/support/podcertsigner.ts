// A PodCertificateRequest signer for tests, as the e2e suite's hermetic signer behaves: a CA of its own (an
// ECDSA P-256 key and a self-signed certificate) that issues each request a leaf certificate for the public key
// of its stub PKCS#10 request (SAN spiffe://cluster.local/ns/<ns>/sa/<sa>, or the path the userAnnotation
// `spiffe/path-overriding` names), valid from 2 minutes ago for min(24 h, maxExpirationSeconds), refresh
// 30 minutes before the end; or denies / fails it. Status writes are PUTs of the status subresource.
// The certificates are built here with a few lines of DER (no certificate library).
import { createPublicKey, generateKeyPairSync, randomInt, sign, type KeyObject } from 'node:crypto';
import type {
  PodCertificateRequest,
  PodCertificateRequestCondition,
} from '../../src/api/podcertificaterequest.js';
import { podCertificateRequestsPath } from '../../src/api/podcertificaterequest.js';
import type { KubeClient } from '../../src/kube/client.js';
import {
  boolean,
  contextConstructed,
  contextPrimitive,
  integer,
  octetString,
  oid,
  sequence,
  setOf,
  tlv,
  utf8String,
} from '../../src/util/asn1.js';
import { pemEncode } from '../../src/util/pem.js';

const ECDSA_WITH_SHA256 = sequence(oid('1.2.840.10045.4.3.2'));

/** The TLVs of a DER SEQUENCE's content, each as its whole encoding. */
function children(der: Buffer): Buffer[] {
  const len = (at: number): { length: number; header: number } => {
    const first = der[at + 1]!;
    if (first < 0x80) return { length: first, header: 2 };
    const n = first & 0x7f;
    let length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + der[at + 2 + i]!;
    return { length, header: 2 + n };
  };
  const outer = len(0);
  const out: Buffer[] = [];
  for (let at = outer.header; at < outer.header + outer.length;) {
    const l = len(at);
    out.push(der.subarray(at, at + l.header + l.length));
    at += l.header + l.length;
  }
  return out;
}

/** The SubjectPublicKeyInfo of a DER PKCS#10 request (version, subject, SPKI, attributes). */
export function requestPublicKeyInfo(csrDer: Buffer): Buffer {
  const info = children(csrDer)[0]!;
  return children(info)[2]!;
}

/** UTCTime of a time before 2050, to the second. */
function utcTime(ms: number): Buffer {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(s, 'ascii'));
}

const extension = (id: string, critical: boolean, value: Buffer): Buffer =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
/** A KeyUsage BIT STRING of one byte with `unused` trailing bits. */
const keyUsage = (byte: number, unused: number): Buffer => tlv(0x03, Buffer.from([unused, byte]));

function certificate(opts: {
  issuer: Buffer;
  subject: Buffer;
  spki: Buffer;
  notBefore: number;
  notAfter: number;
  extensions: Buffer[];
  signer: KeyObject;
}): Buffer {
  const tbs = sequence(
    contextConstructed(0, integer(2)),
    integer(randomInt(1, 2 ** 47)),
    ECDSA_WITH_SHA256,
    opts.issuer,
    sequence(utcTime(opts.notBefore), utcTime(opts.notAfter)),
    opts.subject,
    opts.spki,
    contextConstructed(3, sequence(...opts.extensions)),
  );
  const signature = sign('sha256', tbs, { key: opts.signer, dsaEncoding: 'der' });
  return sequence(tbs, ECDSA_WITH_SHA256, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
}

export interface IssueOptions {
  /** Default now minus 2 minutes. */
  notBefore?: number;
  /** Default min(24 h, the request's maxExpirationSeconds). */
  lifetimeMs?: number;
}

export class TestPodCertificateSigner {
  readonly caKey: KeyObject;
  /** The CA certificate, PEM (a ClusterTrustBundle's content). */
  readonly caPem: string;
  private readonly caName: Buffer;

  constructor(readonly signerName: string) {
    this.caKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    this.caName = sequence(setOf(sequence(oid('2.5.4.3'), utf8String(`${signerName} test CA`))));
    const now = Date.now();
    const der = certificate({
      issuer: this.caName,
      subject: this.caName,
      spki: createPublicKey(this.caKey).export({ type: 'spki', format: 'der' }),
      notBefore: now - 3_600_000,
      notAfter: now + 365 * 86_400_000,
      extensions: [
        extension('2.5.29.19', true, sequence(boolean(true))),
        // keyCertSign, cRLSign.
        extension('2.5.29.15', true, keyUsage(0x06, 1)),
      ],
      signer: this.caKey,
    });
    this.caPem = pemEncode('CERTIFICATE', der);
  }

  /** The leaf certificate (PEM) this signer issues for `pcr`, and its times. */
  leafFor(
    pcr: PodCertificateRequest,
    opts: IssueOptions = {},
  ): { chain: string; notBefore: number; notAfter: number; beginRefreshAt: number } {
    const spki = requestPublicKeyInfo(Buffer.from(pcr.spec.stubPKCS10Request, 'base64'));
    const notBefore = Math.floor((opts.notBefore ?? Date.now() - 120_000) / 1000) * 1000;
    const lifetimeMs =
      opts.lifetimeMs ?? Math.min(86_400_000, (pcr.spec.maxExpirationSeconds ?? 86_400) * 1000);
    const notAfter = notBefore + lifetimeMs;
    const path =
      pcr.spec.unverifiedUserAnnotations?.['spiffe/path-overriding'] ??
      `/ns/${pcr.metadata.namespace}/sa/${pcr.spec.serviceAccountName}`;
    const der = certificate({
      issuer: this.caName,
      // No subject: the identity is in the SAN, which is then critical (RFC 5280).
      subject: sequence(),
      spki,
      notBefore,
      notAfter,
      extensions: [
        extension('2.5.29.19', true, sequence()),
        // digitalSignature.
        extension('2.5.29.15', true, keyUsage(0x80, 7)),
        extension('2.5.29.37', false, sequence(oid('1.3.6.1.5.5.7.3.2'), oid('1.3.6.1.5.5.7.3.1'))),
        extension(
          '2.5.29.17',
          true,
          sequence(contextPrimitive(6, Buffer.from(`spiffe://cluster.local${path}`, 'ascii'))),
        ),
      ],
      signer: this.caKey,
    });
    return {
      chain: pemEncode('CERTIFICATE', der),
      notBefore,
      notAfter,
      beginRefreshAt: notAfter - 1_800_000,
    };
  }

  /** Issues `pcr` (PUT of its status). `decorate` may wrap the chain (text between blocks, headers). */
  async issue(
    client: KubeClient,
    pcr: PodCertificateRequest,
    opts: IssueOptions & { decorate?: (chain: string) => string } = {},
  ): Promise<{ chain: string }> {
    const leaf = this.leafFor(pcr, opts);
    await putStatus(client, pcr, {
      conditions: [condition('Issued', 'Reason', 'Issued')],
      certificateChain: opts.decorate ? opts.decorate(leaf.chain) : leaf.chain,
      notBefore: iso(leaf.notBefore),
      beginRefreshAt: iso(leaf.beginRefreshAt),
      notAfter: iso(leaf.notAfter),
    });
    return { chain: leaf.chain };
  }

  /** Denies (or fails) `pcr`. */
  async refuse(
    client: KubeClient,
    pcr: PodCertificateRequest,
    type: 'Denied' | 'Failed',
    reason: string,
    message: string,
  ): Promise<void> {
    await putStatus(client, pcr, { conditions: [condition(type, reason, message)] });
  }
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const condition = (type: string, reason: string, message: string): PodCertificateRequestCondition => ({
  type,
  status: 'True',
  reason,
  message,
  lastTransitionTime: iso(Date.now()),
});

async function putStatus(
  client: KubeClient,
  pcr: PodCertificateRequest,
  status: PodCertificateRequest['status'],
): Promise<void> {
  const ns = pcr.metadata.namespace ?? '';
  await client.request({
    method: 'PUT',
    path: `${podCertificateRequestsPath(ns)}/${pcr.metadata.name}/status`,
    body: { ...pcr, apiVersion: 'certificates.k8s.io/v1', kind: 'PodCertificateRequest', status },
  });
}

/** The requests made for pod `podName` of `namespace`, oldest first. */
export async function requestsOfPod(
  client: KubeClient,
  namespace: string,
  podName: string,
): Promise<PodCertificateRequest[]> {
  const list = await client.request<{ items: PodCertificateRequest[] }>({
    method: 'GET',
    path: podCertificateRequestsPath(namespace),
    query: { fieldSelector: `spec.podName=${podName}` },
  });
  return list.items.sort((a, b) =>
    (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''),
  );
}
