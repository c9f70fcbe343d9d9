/**
 * The CSR serving certificate: our own DER (checked by `openssl req -verify`), the request a kubelet makes
 * (subject, SANs, signer, usages), and the certificate manager's life (waiting -> serving -> renewing at
 * 70-90 % -> retry after a denial -> never serving an expired certificate) on a fake clock, with the
 * certificates issued by openssl from the CSR the manager posted.
 */
import { expect } from 'chai';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { derLength, integer, oid } from '../../../src/util/asn1.js';
import {
  CSR_PATH,
  CsrServingCertificates,
  ServingCertificateManager,
  csrOutcome,
  type CsrApi,
} from '../../../src/server/nodeapi/certificate.js';
import {
  buildCsrDer,
  ipBytes,
  renewalDeadline,
  servingNames,
  servingSubject,
  toPem,
} from '../../../src/server/nodeapi/csr.js';
import { FakeClock } from '../../../src/util/clock.js';
import { KindError } from '../../../src/util/errors.js';
import { silentLogger } from '../../../src/util/logger.js';
import { run } from '../../support/controlplane.js';
import { eventually } from '../../support/eventually.js';
import { selfSignedCert } from '../../support/nodeapi.js';

const DAY = 24 * 3600_000;

async function openssl(args: string[], what: string): Promise<string> {
  const r = await run('openssl', args);
  expect(r.code, `${what}: ${r.stderr}`).to.equal(0);
  return r.stdout + r.stderr;
}

describe('node API serving certificate (CSR)', function () {
  this.timeout(30_000);
  let dir: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-csr-'));
    await selfSignedCert({
      keyOut: path.join(dir, 'ca.key'),
      certOut: path.join(dir, 'ca.crt'),
      subject: '/CN=test-ca',
      days: 2,
    });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** Signs a PEM CSR with the test CA, copying its SANs, as a signer would. */
  let serial = 1;
  const sign = async (csrPem: string, days = 1): Promise<string> => {
    const n = serial++;
    await writeFile(path.join(dir, `r${n}.csr`), csrPem);
    await writeFile(
      path.join(dir, 'ext.cnf'),
      'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n',
    );
    await openssl(
      [
        'x509',
        '-req',
        '-in',
        path.join(dir, `r${n}.csr`),
        '-CA',
        path.join(dir, 'ca.crt'),
        '-CAkey',
        path.join(dir, 'ca.key'),
        '-set_serial',
        String(n),
        '-days',
        String(days),
        '-copy_extensions',
        'copy',
        '-extfile',
        path.join(dir, 'ext.cnf'),
        '-out',
        path.join(dir, `c${n}.crt`),
      ],
      'sign',
    );
    return readFile(path.join(dir, `c${n}.crt`), 'utf8');
  };

  describe('DER and the request', () => {
    it('encodes DER lengths, integers and OIDs', () => {
      expect(derLength(5)).to.deep.equal(Buffer.from([5]));
      expect(derLength(200)).to.deep.equal(Buffer.from([0x81, 200]));
      expect(derLength(0x1234)).to.deep.equal(Buffer.from([0x82, 0x12, 0x34]));
      expect(integer(0)).to.deep.equal(Buffer.from([2, 1, 0]));
      expect(integer(128)).to.deep.equal(Buffer.from([2, 2, 0, 128]));
      expect(oid('1.2.840.10045.4.3.2').toString('hex')).to.equal('06082a8648ce3d040302');
      expect(() => oid('x.1')).to.throw(/bad OID/);
      expect(() => derLength(-1)).to.throw(/bad DER length/);
    });

    it('encodes IPv4 and IPv6 addresses, and splits node addresses into IP and DNS SANs', () => {
      expect(ipBytes('127.0.0.5').toString('hex')).to.equal('7f000005');
      expect(ipBytes('fd00::1').toString('hex')).to.equal('fd000000000000000000000000000001');
      expect(ipBytes('::ffff:10.0.0.1').toString('hex')).to.equal('00000000000000000000ffff0a000001');
      expect(ipBytes('1:2:3:4:5:6:7:8').toString('hex')).to.equal('00010002000300040005000600070008');
      expect(servingNames(['10.0.0.1', 'node-a', '10.0.0.1', 'fd00::2'])).to.deep.equal({
        ips: ['10.0.0.1', 'fd00::2'],
        dnsNames: ['node-a'],
      });
      expect(() => servingNames(['bad name!'])).to.throw(/neither an IP nor a DNS name/);
      expect(() => servingNames([])).to.throw(/at least one address/);
    });

    it('builds a PKCS#10 request that openssl verifies, with the kubelet subject and the SANs', async () => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const der = buildCsrDer(
        privateKey,
        servingSubject('vn-1'),
        servingNames(['127.0.0.5', 'vn-1', 'fd00::1']),
      );
      const file = path.join(dir, 'vn-1.csr');
      await writeFile(file, toPem('CERTIFICATE REQUEST', der));
      const out = await openssl(['req', '-in', file, '-verify', '-noout', '-text'], 'verify');
      expect(out).to.match(/verify OK/i);
      expect(out).to.not.match(/failure/i);
      expect(out).to.contain('Subject: O = system:nodes, CN = system:node:vn-1');
      expect(out).to.match(/DNS:vn-1, IP Address:127\.0\.0\.5, IP Address:FD00:0:0:0:0:0:0:1/);
      expect(out).to.contain('ecdsa-with-SHA256');
      // A signature over other bytes must not verify: flip one byte of the subject.
      const tampered = Buffer.from(der);
      const at = tampered.indexOf(Buffer.from('vn-1'));
      tampered[at] = 'w'.charCodeAt(0);
      await writeFile(file, toPem('CERTIFICATE REQUEST', tampered));
      // (openssl 3 exits 0 either way; it says which on stderr.)
      const bad = await run('openssl', ['req', '-in', file, '-verify', '-noout']);
      expect(bad.stdout + bad.stderr).to.match(/verify failure/i);
    });

    it('refuses a key that is not EC P-256', () => {
      const { privateKey } = generateKeyPairSync('ed25519');
      expect(() => buildCsrDer(privateKey, servingSubject('n'), servingNames(['n']))).to.throw(/EC P-256/);
    });

    it('renews at 70-90 % of the lifetime', () => {
      expect(renewalDeadline(0, 1000, 0)).to.equal(700);
      expect(renewalDeadline(0, 1000, 0.5)).to.equal(800);
      expect(renewalDeadline(0, 1000, 0.99999)).to.equal(899);
      expect(renewalDeadline(100, 1100, 7)).to.equal(1000);
    });

    it('reads a CSR: pending, issued, denied, failed', () => {
      expect(csrOutcome({ metadata: {} })).to.deep.equal({ state: 'pending' });
      expect(
        csrOutcome({ metadata: {}, status: { conditions: [{ type: 'Approved', status: 'True' }] } }),
      ).to.deep.equal({ state: 'pending' });
      expect(
        csrOutcome({ metadata: {}, status: { certificate: Buffer.from('PEM').toString('base64') } }),
      ).to.deep.equal({ state: 'issued', certificate: 'PEM' });
      expect(
        csrOutcome({
          metadata: {},
          status: { conditions: [{ type: 'Denied', status: 'True', message: 'no' }] },
        }),
      ).to.deep.equal({ state: 'refused', reason: 'Denied', message: 'no' });
      expect(csrOutcome({ metadata: {}, status: { conditions: [{ type: 'Failed' }] } })).to.deep.include({
        reason: 'Failed',
      });
    });
  });

  describe('ServingCertificateManager', () => {
    interface Posted {
      name: string;
      body: { spec: { request: string; signerName: string; usages: string[] } };
      status: { certificate?: string; conditions?: { type: string; status: string; message?: string }[] };
    }

    /** A fake API server for CSRs: the test decides what happens to each posted request. */
    function fakeApi() {
      const posted: Posted[] = [];
      const watchers = new Set<(o: unknown) => void>();
      const api: CsrApi = {
        request: <T>(req: { method: string; path: string; body?: unknown }): Promise<T> => {
          if (req.method === 'POST' && req.path === CSR_PATH) {
            const p: Posted = {
              name: `csr-${posted.length + 1}`,
              body: req.body as Posted['body'],
              status: {},
            };
            posted.push(p);
            return Promise.resolve({ metadata: { name: p.name, resourceVersion: '1' } } as T);
          }
          return Promise.reject(new Error(`unexpected ${req.method} ${req.path}`));
        },
        watch: (_path, query, onEvent, signal) =>
          new Promise<void>((resolve) => {
            const name = String(query.fieldSelector).replace('metadata.name=', '');
            const w = (o: unknown): void => {
              if ((o as { metadata: { name: string } }).metadata.name === name)
                onEvent({ type: 'MODIFIED', object: o });
            };
            watchers.add(w);
            // Without a resourceVersion a watch starts with the current state (as the API server does).
            const p = posted.find((x) => x.name === name);
            if (!query.resourceVersion && p)
              onEvent({
                type: 'ADDED',
                object: { metadata: { name, resourceVersion: '2' }, status: p.status },
              });
            signal.addEventListener('abort', () => {
              watchers.delete(w);
              resolve();
            });
          }),
      };
      const update = (p: Posted): void => {
        for (const w of [...watchers])
          w({ metadata: { name: p.name, resourceVersion: '3' }, status: p.status });
      };
      const csrPem = (p: Posted): string => Buffer.from(p.body.spec.request, 'base64').toString('utf8');
      return {
        api,
        posted,
        issue: async (p: Posted, days = 1) => {
          p.status = {
            conditions: [{ type: 'Approved', status: 'True' }],
            certificate: Buffer.from(await sign(csrPem(p), days)).toString('base64'),
          };
          update(p);
        },
        deny: (p: Posted) => {
          p.status = { conditions: [{ type: 'Denied', status: 'True', message: 'not this one' }] };
          update(p);
        },
        csrPem,
      };
    }

    it('waits for approval (Event, nothing served), serves the issued certificate, renews at 70 %, retries a denial, drops an expired one', async () => {
      const clock = new FakeClock(Date.now());
      const events: { type: string; reason: string; message: string }[] = [];
      const fake = fakeApi();
      const m = new ServingCertificateManager({
        api: fake.api,
        clock,
        logger: silentLogger,
        recorder: { event: (_ref, type, reason, message) => events.push({ type, reason, message }) },
        nodeName: 'vn-1',
        addresses: ['127.0.0.5', 'vn-1'],
        random: () => 0,
      });
      m.start();
      try {
        const first = await eventually(() => fake.posted[0], 5000, 'the first CSR');
        expect(first.body.spec.signerName).to.equal('kubernetes.io/kubelet-serving');
        expect(first.body.spec.usages).to.deep.equal(['digital signature', 'server auth']);
        const req = path.join(dir, 'posted.csr');
        await writeFile(req, fake.csrPem(first));
        expect(await openssl(['req', '-in', req, '-verify', '-noout', '-subject'], 'posted')).to.contain(
          'CN = system:node:vn-1',
        );
        // Waiting: nothing served, the Node event names the CSR and how to approve it.
        expect(m.current()).to.equal(undefined);
        expect(m.pendingCsr).to.equal('csr-1');
        expect(events[0]).to.deep.include({ type: 'Normal', reason: 'CertificatePending' });
        expect(events[0]!.message).to.contain('kubectl certificate approve csr-1');

        await fake.issue(first);
        await m.whenServing();
        const served = m.current()!;
        const x509 = new X509Certificate(served.cert);
        expect(x509.subject).to.contain('CN=system:node:vn-1');
        expect(x509.subjectAltName).to.equal('DNS:vn-1, IP Address:127.0.0.5');
        expect(x509.checkIssued(new X509Certificate(await readFile(path.join(dir, 'ca.crt'))))).to.equal(
          true,
        );
        expect(
          x509.checkPrivateKey(await import('node:crypto').then((c) => c.createPrivateKey(served.key))),
        ).to.equal(true);
        expect(events.map((e) => e.reason)).to.include('CertificateIssued');
        expect(m.pendingCsr).to.equal(undefined);

        // No new CSR before 70 % of the lifetime (random = 0), one right after; the old cert is still served.
        const notBefore = Date.parse(x509.validFrom);
        clock.set(notBefore + 0.69 * DAY);
        clock.advance(0);
        await new Promise((r) => setTimeout(r, 50));
        expect(fake.posted).to.have.length(1);
        clock.advance(0.011 * DAY);
        const second = await eventually(() => fake.posted[1], 5000, 'the renewal CSR');
        expect(m.current()).to.equal(served);

        // A denied renewal: Warning event, then a new CSR after the 1 s back-off.
        fake.deny(second);
        await eventually(
          () => events.some((e) => e.reason === 'CertificateDenied'),
          5000,
          'the denial event',
        );
        expect(events.find((e) => e.reason === 'CertificateDenied')!.type).to.equal('Warning');
        expect(fake.posted).to.have.length(2);
        clock.advance(1000);
        const third = await eventually(() => fake.posted[2], 5000, 'the retried CSR');
        expect(m.current()).to.equal(served);

        // Still pending when the old certificate expires: nothing is served.
        clock.set(Date.parse(x509.validTo) + 1);
        expect(m.current()).to.equal(undefined);
        await fake.issue(third, 2);
        await eventually(() => m.current(), 5000, 'the renewed certificate');
        expect(m.current()!.cert).to.not.equal(served.cert);
      } finally {
        await m.stop();
      }
    });
    it('a year-long certificate renews only from 70 % of its lifetime', async () => {
      // Sleeping ~255 days in one go is the Clock's business: RealClock chains timers past Node's limit.
      const fake = new FakeClock(Date.now());
      const clock = fake;
      const api = fakeApi();
      const m = new ServingCertificateManager({
        api: api.api,
        clock,
        logger: silentLogger,
        recorder: { event: () => undefined },
        nodeName: 'vn-2',
        addresses: ['10.0.0.2'],
        random: () => 0,
      });
      m.start();
      try {
        await api.issue(await eventually(() => api.posted[0], 5000, 'the CSR'), 365);
        await m.whenServing();
        const x509 = new X509Certificate(m.current()!.cert);
        const lifetime = Date.parse(x509.validTo) - Date.parse(x509.validFrom);
        for (let day = 1; day < 0.7 * 365 - 1; day += 10) {
          fake.set(Date.parse(x509.validFrom) + day * DAY);
          await new Promise((r) => setImmediate(r));
        }
        expect(api.posted).to.have.length(1);
        fake.set(Date.parse(x509.validFrom) + 0.7 * lifetime + 1000);
        await eventually(() => api.posted[1], 5000, 'the renewal CSR');
      } finally {
        await m.stop();
      }
    });
    it('resumes a dropped watch, starts over after 410 Gone, and replaces a deleted CSR', async () => {
      const clock = new FakeClock(Date.now());
      const queries: (string | undefined)[] = [];
      let posts = 0;
      let watches = 0;
      const api: CsrApi = {
        request: <T>() =>
          Promise.resolve({ metadata: { name: `csr-${++posts}`, resourceVersion: '10' } } as T),
        watch: (_path, query, onEvent) => {
          watches++;
          queries.push(query.resourceVersion as string | undefined);
          if (watches === 1) return Promise.resolve(); // the server ended the watch (timeout)
          if (watches === 2) return Promise.reject(new KindError('Gone', 'too old resource version'));
          // Without a resourceVersion: the current state, then the CSR is garbage-collected.
          onEvent({ type: 'ADDED', object: { metadata: { name: 'csr-1', resourceVersion: '20' } } });
          onEvent({ type: 'DELETED', object: { metadata: { name: 'csr-1', resourceVersion: '21' } } });
          return Promise.resolve();
        },
      };
      const m = new ServingCertificateManager({
        api,
        clock,
        logger: silentLogger,
        recorder: { event: () => undefined },
        nodeName: 'vn-3',
        addresses: ['10.0.0.3'],
      });
      m.start();
      try {
        await eventually(() => watches >= 1, 5000, 'the first watch');
        // A watch that ended without news is resumed at once from the same version; a 410 waits 5 s and
        // starts over without a version.
        await eventually(() => watches >= 2, 5000, 'the resumed watch');
        await new Promise((r) => setTimeout(r, 20));
        clock.advance(5000);
        await eventually(() => watches >= 3, 5000, 'the watch after 410');
        expect(queries.slice(0, 3)).to.deep.equal(['10', '10', undefined]);
        // The deleted CSR is replaced by a new request after the 1 s back-off.
        await new Promise((r) => setTimeout(r, 20));
        expect(posts).to.equal(1);
        clock.advance(1000);
        await eventually(() => posts === 2, 5000, 'a new CSR');
      } finally {
        await m.stop();
      }
    });
  });

  it('closes and flushes a node recorder when the node leaves, and every one at stop()', async () => {
    const clock = new FakeClock(Date.now());
    let listener: () => void = () => undefined;
    let nodes = [
      { nodeName: 'vn-a', internalIP: '10.0.0.1' },
      { nodeName: 'vn-b', internalIP: '10.0.0.2' },
    ];
    let posts = 0;
    const api: CsrApi = {
      request: <T>() => Promise.resolve({ metadata: { name: `csr-${++posts}`, resourceVersion: '1' } } as T),
      watch: (_path, _query, _onEvent, signal) =>
        new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve())),
    };
    const log: string[] = [];
    const certs = new CsrServingCertificates({
      api,
      clock,
      logger: silentLogger,
      nodes: {
        nodes: () => nodes as never,
        nodeByAddress: (a) => nodes.find((n) => n.internalIP === a) as never,
        onChange: (fn) => {
          listener = fn;
          return () => undefined;
        },
      },
      recorderFor: (name) => ({
        event: () => undefined,
        close: () => void log.push(`close ${name}`),
        flush: async () => void log.push(`flush ${name}`),
      }),
    });
    certs.start();
    await eventually(() => posts === 2, 5000, 'a CSR per node');
    nodes = nodes.slice(1);
    listener();
    await eventually(() => log.length === 2, 5000, 'vn-a retired');
    expect(log).to.deep.equal(['close vn-a', 'flush vn-a']);
    await certs.stop();
    expect(log).to.deep.equal(['close vn-a', 'flush vn-a', 'close vn-b', 'flush vn-b']);
  });
});
