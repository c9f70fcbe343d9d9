/**
 * Verifying a client certificate against the client CA bundle in use now, at each request, as the kubelet's
 * x509 authenticator does with a reloaded --client-ca-file (ReloadKubeletClientCAFile): a connection made
 * before the bundle changed is judged by the new bundle, not by what its handshake found.
 *
 * Contract: pure (no I/O; time is passed in). A certificate is accepted when it is within its validity, may
 * be used for client auth (no extended key usage, clientAuth or any), and chains to a certificate of the
 * bundle, directly or through the intermediates the client sent, each link's signature checked.
 */
import { X509Certificate } from 'node:crypto';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EXT_KEY_USAGE = '2.5.29.37.0';
const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** The certificates of a PEM bundle; blocks that do not parse are skipped. */
export function bundleCertificates(pem: string | Buffer): X509Certificate[] {
  const out: X509Certificate[] = [];
  for (const m of pem.toString().matchAll(PEM_CERT)) {
    try {
      out.push(new X509Certificate(m[0]));
    } catch {
      // not a certificate; the bundle was checked when it was loaded
    }
  }
  return out;
}

function within(c: X509Certificate, nowMs: number): boolean {
  return Date.parse(c.validFrom) <= nowMs && nowMs <= Date.parse(c.validTo);
}

function issued(parent: X509Certificate, child: X509Certificate): boolean {
  try {
    return child.checkIssued(parent) && child.verify(parent.publicKey);
  } catch {
    return false;
  }
}

/**
 * Why `chain` (the client's certificate first, then what it sent along) is not accepted by `roots` at
 * `nowMs`, or undefined when it is.
 */
export function verifyClientChain(
  chain: readonly X509Certificate[],
  roots: readonly X509Certificate[],
  nowMs: number,
): string | undefined {
  const leaf = chain[0];
  if (!leaf) return 'no client certificate';
  const usage = leaf.keyUsage;
  if (usage && usage.length > 0 && !usage.includes(CLIENT_AUTH) && !usage.includes(ANY_EXT_KEY_USAGE)) {
    return 'certificate specifies an incompatible key usage';
  }
  for (let i = 0; i < chain.length; i++) {
    const c = chain[i]!;
    if (!within(c, nowMs)) return `certificate has expired or is not yet valid: ${c.subject}`;
    const root = roots.find(
      (r) => within(r, nowMs) && (r.fingerprint256 === c.fingerprint256 || issued(r, c)),
    );
    if (root) return undefined;
    const next = chain[i + 1];
    if (!next || !issued(next, c)) break;
  }
  return 'certificate signed by unknown authority';
}
