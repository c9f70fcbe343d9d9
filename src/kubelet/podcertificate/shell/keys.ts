/**
 * The key pair of a PodCertificateRequest and the proof that its maker holds the private key: the kubelet
 * generates a key of the projection's keyType and signs an empty PKCS#10 certificate request (RFC 2986: no
 * subject, no attributes) with it; the API server checks that signature and the signer takes the public key
 * from it. The private key leaves as PEM (PKCS#8 `PRIVATE KEY`), for the pod's files only.
 *
 * Generation runs on libuv's thread pool (an RSA 4096 key takes a while) and never blocks the event loop.
 */
import { createPublicKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { POD_CERTIFICATE_KEY_TYPES, type PodCertificateKeyType } from '../../../api/podcertificaterequest.js';
import { contextConstructed, bitString, integer, oid, sequence, tlv } from '../../../util/asn1.js';
import { KindError } from '../../../util/errors.js';
import { goQuote } from '../../../util/goquote.js';

const generate = promisify(generateKeyPair);

interface KeyTypeRecipe {
  what: string;
  make: () => Promise<KeyObject>;
  /** The digest signed (null: Ed25519 signs the message itself). */
  hash: string | null;
  /** The request's signatureAlgorithm (AlgorithmIdentifier). */
  algorithm: Buffer;
}

const rsa = (bits: number): KeyTypeRecipe => ({
  what: `RSA ${bits} key`,
  make: async () => (await generate('rsa', { modulusLength: bits })).privateKey,
  hash: 'sha256',
  // sha256WithRSAEncryption, with its NULL parameters.
  algorithm: sequence(oid('1.2.840.113549.1.1.11'), tlv(0x05, Buffer.alloc(0))),
});

const ecdsa = (bits: 256 | 384 | 521, hash: string, signatureOid: string): KeyTypeRecipe => ({
  what: `ECDSA P${bits} key`,
  make: async () => (await generate('ec', { namedCurve: `P-${bits}` })).privateKey,
  hash,
  algorithm: sequence(oid(signatureOid)),
});

/** How each key type is made, and which signature algorithm its request carries (as Go's x509 picks it). */
const KEY_TYPES: Record<PodCertificateKeyType, KeyTypeRecipe> = {
  RSA3072: rsa(3072),
  RSA4096: rsa(4096),
  ECDSAP256: ecdsa(256, 'sha256', '1.2.840.10045.4.3.2'),
  ECDSAP384: ecdsa(384, 'sha384', '1.2.840.10045.4.3.3'),
  ECDSAP521: ecdsa(521, 'sha512', '1.2.840.10045.4.3.4'),
  ED25519: {
    what: 'Ed25519 key',
    make: async () => (await generate('ed25519')).privateKey,
    hash: null,
    algorithm: sequence(oid('1.3.101.112')),
  },
};

export function isPodCertificateKeyType(s: string): s is PodCertificateKeyType {
  return (POD_CERTIFICATE_KEY_TYPES as readonly string[]).includes(s);
}

/**
 * A DER PKCS#10 request with an empty subject and no attributes for the public half of `privateKey`, signed
 * with it (ECDSA signatures DER-encoded, RSA with PKCS #1 v1.5).
 */
export function stubCertificateRequest(privateKey: KeyObject, keyType: PodCertificateKeyType): Buffer {
  const t = KEY_TYPES[keyType];
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  const info = sequence(integer(0), sequence(), spki, contextConstructed(0, Buffer.alloc(0)));
  const signature = sign(t.hash, info, { key: privateKey, dsaEncoding: 'der' });
  return sequence(info, t.algorithm, bitString(signature));
}

export interface KeyAndRequest {
  /** PEM PKCS#8 `PRIVATE KEY`. */
  privateKeyPem: string;
  /** The DER stub request (spec.stubPKCS10Request). */
  stubRequest: Buffer;
}

/**
 * A new key of `keyType` and its stub request. Rejects with the kubelet's words for an unknown key type
 * (`unknown key type "X"`) or a generation that failed.
 */
export async function generateKeyAndRequest(keyType: string): Promise<KeyAndRequest> {
  if (!isPodCertificateKeyType(keyType))
    throw new KindError('InvalidArgument', `unknown key type ${goQuote(keyType)}`, { keyType });
  const t = KEY_TYPES[keyType];
  let key: KeyObject;
  try {
    key = await t.make();
  } catch (err) {
    throw new KindError('Internal', `while generating ${t.what}: ${(err as Error).message}`, { keyType });
  }
  return {
    privateKeyPem: key.export({ type: 'pkcs8', format: 'pem' }) as string,
    stubRequest: stubCertificateRequest(key, keyType),
  };
}
