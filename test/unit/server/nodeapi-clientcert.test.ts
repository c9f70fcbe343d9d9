import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleCertificates, verifyClientChain } from '../../../src/server/nodeapi/clientcert.js';

describe('client certificates verified against the client CA bundle in use (ReloadKubeletClientCAFile)', function () {
  this.timeout(20_000);
  let dir: string;
  const certs = new Map<string, X509Certificate>();
  const file = (f: string): string => path.join(dir, f);
  const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: 'pipe' });
  const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

  /** `name`, signed by `issuer` (self-signed when absent), with `ext` lines. */
  function make(name: string, issuer: string | undefined, ext: string): void {
    writeFileSync(file(`${name}.ext`), ext);
    if (!issuer) {
      openssl(
        ['req', '-x509', ...EC, '-keyout', file(`${name}.key`), '-out', file(`${name}.crt`)].concat([
          '-days',
          '2',
          '-subj',
          `/CN=${name}`,
          '-extensions',
          'v3',
          '-config',
          file(`${name}.cnf`),
        ]),
      );
    } else {
      openssl([
        'req',
        '-new',
        ...EC,
        '-keyout',
        file(`${name}.key`),
        '-out',
        file(`${name}.csr`),
        '-subj',
        `/CN=${name}`,
      ]);
      openssl(
        [
          'x509',
          '-req',
          '-in',
          file(`${name}.csr`),
          '-CA',
          file(`${issuer}.crt`),
          '-CAkey',
          file(`${issuer}.key`),
        ].concat([
          '-days',
          '2',
          '-set_serial',
          String(certs.size + 10),
          '-extfile',
          file(`${name}.ext`),
          '-out',
          file(`${name}.crt`),
        ]),
      );
    }
    certs.set(name, new X509Certificate(readFileSync(file(`${name}.crt`))));
  }
  const ca = (name: string): void => {
    writeFileSync(
      file(`${name}.cnf`),
      '[req]\ndistinguished_name=dn\n[dn]\n[v3]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n',
    );
    make(name, undefined, '');
  };

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'clientcert-'));
    ca('ca-a');
    ca('ca-b');
    const leafExt = 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n';
    make('alice', 'ca-a', `${leafExt}extendedKeyUsage=clientAuth\n`);
    make('server-only', 'ca-a', `${leafExt}extendedKeyUsage=serverAuth\n`);
    make('no-eku', 'ca-a', leafExt);
    make('inter', 'ca-a', 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n');
    make('bob', 'inter', `${leafExt}extendedKeyUsage=clientAuth\n`);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('accepts a chain to the bundle and nothing else', () => {
    const c = (n: string): X509Certificate => certs.get(n)!;
    const now = Date.now();
    const cases: { name: string; chain: string[]; roots: string[]; at?: number; want: string | undefined }[] =
      [
        { name: 'signed by a bundle CA', chain: ['alice'], roots: ['ca-a'], want: undefined },
        {
          name: 'signed by the second CA of the bundle',
          chain: ['alice'],
          roots: ['ca-b', 'ca-a'],
          want: undefined,
        },
        {
          name: 'the bundle no longer holds its CA',
          chain: ['alice'],
          roots: ['ca-b'],
          want: 'certificate signed by unknown authority',
        },
        { name: 'no extended key usage', chain: ['no-eku'], roots: ['ca-a'], want: undefined },
        {
          name: 'server auth only',
          chain: ['server-only'],
          roots: ['ca-a'],
          want: 'certificate specifies an incompatible key usage',
        },
        { name: 'through a sent intermediate', chain: ['bob', 'inter'], roots: ['ca-a'], want: undefined },
        {
          name: 'intermediate not sent',
          chain: ['bob'],
          roots: ['ca-a'],
          want: 'certificate signed by unknown authority',
        },
        {
          name: 'sent intermediate and root',
          chain: ['bob', 'inter', 'ca-a'],
          roots: ['ca-a'],
          want: undefined,
        },
        {
          name: 'a chain that does not link',
          chain: ['bob', 'alice'],
          roots: ['ca-a'],
          want: 'certificate signed by unknown authority',
        },
        {
          name: 'expired',
          chain: ['alice'],
          roots: ['ca-a'],
          at: now + 10 * 86_400_000,
          want: 'certificate has expired or is not yet valid: CN=alice',
        },
        { name: 'no certificate', chain: [], roots: ['ca-a'], want: 'no client certificate' },
      ];
    for (const t of cases) {
      expect(verifyClientChain(t.chain.map(c), t.roots.map(c), t.at ?? now), t.name).to.equal(t.want);
    }
  });

  it('reads the certificates of a PEM bundle', () => {
    const pem = Buffer.concat([
      readFileSync(file('ca-a.key')),
      readFileSync(file('ca-a.crt')),
      readFileSync(file('ca-b.crt')),
    ]);
    expect(bundleCertificates(pem).map((x) => x.subject)).to.deep.equal(['CN=ca-a', 'CN=ca-b']);
  });
});
