// The key pair and stub PKCS#10 request of a PodCertificateRequest (keys.ts): every key type the API allows
// makes a request that openssl verifies, for the public half of the PEM key handed out; a test signer's leaf
// for it belongs to that key.
import { expect } from 'chai';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { POD_CERTIFICATE_KEY_TYPES } from '../../../../../src/api/podcertificaterequest.js';
import { generateKeyAndRequest } from '../../../../../src/kubelet/podcertificate/shell/keys.js';
import { pemEncode } from '../../../../../src/util/pem.js';
import { run } from '../../../../support/controlplane.js';
import { TestPodCertificateSigner } from '../../../../support/podcertsigner.js';

describe('podCertificate keys and stub requests', function () {
  this.timeout(60_000);
  let dir = '';
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'podcert-keys-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const expected: Record<string, { type: string; detail?: Record<string, unknown>; algorithm: RegExp }> = {
    RSA3072: { type: 'rsa', detail: { modulusLength: 3072 }, algorithm: /sha256WithRSAEncryption/ },
    RSA4096: { type: 'rsa', detail: { modulusLength: 4096 }, algorithm: /sha256WithRSAEncryption/ },
    ECDSAP256: { type: 'ec', detail: { namedCurve: 'prime256v1' }, algorithm: /ecdsa-with-SHA256/ },
    ECDSAP384: { type: 'ec', detail: { namedCurve: 'secp384r1' }, algorithm: /ecdsa-with-SHA384/ },
    ECDSAP521: { type: 'ec', detail: { namedCurve: 'secp521r1' }, algorithm: /ecdsa-with-SHA512/ },
    ED25519: { type: 'ed25519', algorithm: /ED25519/i },
  };

  for (const keyType of POD_CERTIFICATE_KEY_TYPES) {
    it(`${keyType}: an empty request openssl verifies, for the PKCS#8 key handed out`, async () => {
      const { privateKeyPem, stubRequest } = await generateKeyAndRequest(keyType);
      expect(privateKeyPem).to.match(/^-----BEGIN PRIVATE KEY-----\n[\s\S]+\n-----END PRIVATE KEY-----\n$/);
      const key = createPrivateKey(privateKeyPem);
      const want = expected[keyType]!;
      expect(key.asymmetricKeyType).to.equal(want.type);
      if (want.detail) expect(key.asymmetricKeyDetails).to.deep.include(want.detail);

      const file = path.join(dir, `${keyType}.csr`);
      await writeFile(file, pemEncode('CERTIFICATE REQUEST', stubRequest));
      const text = await run('openssl', ['req', '-in', file, '-verify', '-noout', '-text', '-pubkey']);
      expect(text.code, text.stderr).to.equal(0);
      expect(text.stdout + text.stderr).to.match(/verify OK/i);
      expect(text.stdout).to.match(want.algorithm);
      // No subject, no attributes.
      expect(text.stdout).to.match(/Subject:\s*\n/);
      expect(text.stdout).to.match(/Attributes:\s*\n\s*(a0:00|\(none\))/i);
      const pub = createPublicKey(key).export({ type: 'spki', format: 'pem' }) as string;
      expect(text.stdout).to.contain(pub.trim());

      // A signer's leaf for the request carries that public key.
      const signer = new TestPodCertificateSigner('example.com/test');
      const leaf = signer.leafFor({
        metadata: { namespace: 'ns', name: 'req-x' },
        spec: {
          signerName: signer.signerName,
          podName: 'p',
          podUID: 'u',
          serviceAccountName: 'sa',
          serviceAccountUID: 'sau',
          nodeName: 'n',
          nodeUID: 'nu',
          maxExpirationSeconds: 3600,
          stubPKCS10Request: stubRequest.toString('base64'),
        },
      });
      const cert = new X509Certificate(leaf.chain);
      expect(cert.checkPrivateKey(key)).to.equal(true);
      expect(cert.verify(new X509Certificate(signer.caPem).publicKey)).to.equal(true);
      expect(cert.subjectAltName).to.equal('URI:spiffe://cluster.local/ns/ns/sa/sa');
      expect(Date.parse(cert.validTo) - Date.parse(cert.validFrom)).to.equal(3_600_000);
    });
  }

  it('refuses a key type the API does not have, in the kubelet words', async () => {
    let err: unknown;
    try {
      await generateKeyAndRequest('DSA1024');
    } catch (e) {
      err = e;
    }
    expect((err as Error).message).to.equal('unknown key type "DSA1024"');
  });
});
