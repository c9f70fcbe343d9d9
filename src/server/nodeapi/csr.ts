/**
 * What a kubelet puts in the CertificateSigningRequest for its serving certificate, built without a
 * certificate library: a PKCS#10 request (RFC 2986) with subject `O=system:nodes, CN=system:node:<node>`
 * and the node's addresses as subjectAltNames (IPs as IP SANs, names as DNS SANs), signed with an ECDSA
 * P-256 key; plus when to renew an issued certificate (the kubelet certificate manager's jittered 70-90 %
 * of its lifetime).
 *
 * Contract: no I/O. Bad input (no SANs, an address that is neither an IP nor a DNS name, a key that is
 * not EC P-256) throws InvalidArgument.
 */
import { createPublicKey, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { KindError } from '../../util/errors.js';
import { pemEncode } from '../../util/pem.js';
import {
  bitString,
  contextConstructed,
  contextPrimitive,
  integer,
  octetString,
  oid,
  sequence,
  setOf,
  utf8String,
} from '../../util/asn1.js';

export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
/** Usages of a kubelet serving certificate with a non-RSA key (no key encipherment). */
export const KUBELET_SERVING_USAGES = ['digital signature', 'server auth'] as const;

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
};

export interface ServingNames {
  /** IP SANs (v4 or v6). */
  ips: string[];
  /** DNS SANs. */
  dnsNames: string[];
}

const DNS_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/i;

/** Splits node addresses into IP and DNS SANs, deduplicated, in order. */
export function servingNames(addresses: readonly string[]): ServingNames {
  const ips: string[] = [];
  const dnsNames: string[] = [];
  for (const a of addresses) {
    if (isIP(a)) {
      if (!ips.includes(a)) ips.push(a);
    } else if (DNS_NAME.test(a)) {
      if (!dnsNames.includes(a)) dnsNames.push(a);
    } else {
      throw new KindError(
        'InvalidArgument',
        `node address ${JSON.stringify(a)} is neither an IP nor a DNS name`,
      );
    }
  }
  if (ips.length + dnsNames.length === 0)
    throw new KindError('InvalidArgument', 'a serving certificate needs at least one address');
  return { ips, dnsNames };
}

/** The 4 or 16 bytes of an IP address. */
export function ipBytes(ip: string): Buffer {
  const v = isIP(ip);
  if (v === 4) return Buffer.from(ip.split('.').map(Number));
  if (v !== 6) throw new KindError('InvalidArgument', `not an IP address: ${ip}`);
  let s = ip;
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two hex groups.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    const b = v4[1]!.split('.').map(Number);
    s = `${s.slice(0, v4.index)}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, tail] = s.split('::') as [string, string | undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** The node's identity as the kubelet-serving signer and approvers expect it. */
export function servingSubject(nodeName: string): { commonName: string; organization: string } {
  return { commonName: `system:node:${nodeName}`, organization: 'system:nodes' };
}

/**
 * A DER-encoded PKCS#10 request for `names`, with the subject `O=<organization>, CN=<commonName>`, for the
 * public half of `privateKey` (EC P-256), signed with ecdsa-with-SHA256.
 */
export function buildCsrDer(
  privateKey: KeyObject,
  subject: { commonName: string; organization: string },
  names: ServingNames,
): Buffer {
  if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new KindError('InvalidArgument', 'the serving key must be EC P-256');
  if (names.ips.length + names.dnsNames.length === 0)
    throw new KindError('InvalidArgument', 'a serving certificate needs at least one address');
  const rdn = (type: string, value: string): Buffer => setOf(sequence(oid(type), utf8String(value)));
  const name = sequence(rdn(OID.organization, subject.organization), rdn(OID.commonName, subject.commonName));
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  // GeneralNames: dNSName [2] IA5String, iPAddress [7] OCTET STRING (both IMPLICIT).
  const generalNames = sequence(
    ...names.dnsNames.map((d) => contextPrimitive(2, Buffer.from(d, 'ascii'))),
    ...names.ips.map((ip) => contextPrimitive(7, ipBytes(ip))),
  );
  const extensions = sequence(sequence(oid(OID.subjectAltName), octetString(generalNames)));
  const attributes = contextConstructed(0, sequence(oid(OID.extensionRequest), setOf(extensions)));
  const info = sequence(integer(0), name, spki, attributes);
  const signature = sign('sha256', info, { key: privateKey, dsaEncoding: 'der' });
  return sequence(info, sequence(oid(OID.ecdsaWithSHA256)), bitString(signature));
}

/** PEM armour for DER bytes. */
export const toPem = pemEncode;

/**
 * When to request a new certificate: at a uniformly random point between 70 % and 90 % of the validity
 * window (the kubelet certificate manager's jitter), so that many nodes do not renew at once. `random`
 * is in [0, 1).
 */
export function renewalDeadline(notBeforeMs: number, notAfterMs: number, random: number): number {
  const total = Math.max(0, notAfterMs - notBeforeMs);
  return notBeforeMs + Math.floor((total * (7 + 2 * Math.min(Math.max(random, 0), 1))) / 10);
}
