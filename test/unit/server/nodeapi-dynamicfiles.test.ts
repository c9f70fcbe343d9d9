import { expect } from 'chai';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import {
  DynamicFileContent,
  parseCaBundle,
  parseServingPair,
  reloadDecision,
  type Parsed,
} from '../../../src/server/nodeapi/dynamicfiles.js';
import { AddressTlsListener } from '../../../src/server/nodeapi/tlsfront.js';
import { FakeClock } from '../../../src/util/clock.js';
import { MemoryLogger } from '../../../src/util/logger.js';
import { eventually } from '../../support/eventually.js';
import { selfSignedCert } from '../../support/nodeapi.js';

describe('node API certificate files read again (ReloadKubeletServerCertificateFile, ReloadKubeletClientCAFile)', function () {
  this.timeout(20_000);
  let dir: string;
  const pairs = new Map<string, { cert: Buffer; key: Buffer }>();
  const file = (f: string): string => path.join(dir, f);

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'dynamicfiles-'));
    for (const cn of ['one', 'two']) {
      await selfSignedCert({
        keyOut: file(`${cn}.key`),
        certOut: file(`${cn}.crt`),
        subject: `/CN=${cn}`,
        days: 1,
        ext: ['subjectAltName=IP:127.0.0.1'],
      });
      pairs.set(cn, { cert: await readFile(file(`${cn}.crt`)), key: await readFile(file(`${cn}.key`)) });
    }
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('accepts a certificate with its own key, refuses a mismatched, empty or garbled pair', () => {
    const one = pairs.get('one')!;
    const two = pairs.get('two')!;
    const cases: { name: string; cert: Buffer; key: Buffer; ok: boolean }[] = [
      { name: 'matching', cert: one.cert, key: one.key, ok: true },
      { name: "another certificate's key", cert: one.cert, key: two.key, ok: false },
      { name: 'empty certificate', cert: Buffer.alloc(0), key: one.key, ok: false },
      { name: 'empty key', cert: one.cert, key: Buffer.alloc(0), ok: false },
      { name: 'half a certificate', cert: one.cert.subarray(0, 100), key: one.key, ok: false },
    ];
    for (const c of cases) expect(parseServingPair(c.cert, c.key).ok, c.name).to.equal(c.ok);
    expect(parseServingPair(Buffer.alloc(0), one.key)).to.deep.equal({
      ok: false,
      error: 'missing content for serving cert',
    });
  });

  it('accepts a CA bundle of one or more certificates, skipping other blocks; refuses one without', () => {
    const one = pairs.get('one')!;
    const two = pairs.get('two')!;
    // The DER's first bytes zeroed: no longer a SEQUENCE, whatever the random key made the rest.
    const bad = Buffer.from(one.cert.toString().replace(/(-----BEGIN CERTIFICATE-----\n)..../, '$1AAAA'));
    expect(bad.equals(one.cert)).to.equal(false);
    const cases: { name: string; pem: Buffer; ok: boolean }[] = [
      { name: 'one certificate', pem: one.cert, ok: true },
      { name: 'two certificates', pem: Buffer.concat([one.cert, two.cert]), ok: true },
      { name: 'a key and a certificate', pem: Buffer.concat([one.key, two.cert]), ok: true },
      { name: 'a key alone', pem: one.key, ok: false },
      { name: 'empty', pem: Buffer.alloc(0), ok: false },
      { name: 'not PEM', pem: Buffer.from('hello'), ok: false },
      { name: 'a garbled certificate', pem: Buffer.concat([two.cert, bad]), ok: false },
    ];
    for (const c of cases) expect(parseCaBundle(c.pem).ok, c.name).to.equal(c.ok);
  });

  it('decides keep, use or refuse, and logs a refusal once', () => {
    const parse = (b: readonly Buffer[]): Parsed<string> =>
      b[0]!.toString() === 'bad'
        ? { ok: false, error: 'bad content' }
        : { ok: true, value: b[0]!.toString() };
    const a = [Buffer.from('a')];
    const cases: {
      name: string;
      read: Buffer[] | { error: string };
      last?: string;
      want: ReturnType<typeof reloadDecision<string>>;
    }[] = [
      { name: 'same bytes', read: [Buffer.from('a')], want: { action: 'keep' } },
      { name: 'new valid bytes', read: [Buffer.from('b')], want: { action: 'use', value: 'b' } },
      {
        name: 'new invalid bytes',
        read: [Buffer.from('bad')],
        want: { action: 'refuse', error: 'bad content', log: true },
      },
      {
        name: 'the same invalid bytes again',
        read: [Buffer.from('bad')],
        last: 'bad content',
        want: { action: 'refuse', error: 'bad content', log: false },
      },
      {
        name: 'unreadable',
        read: { error: 'ENOENT' },
        last: 'bad content',
        want: { action: 'refuse', error: 'ENOENT', log: true },
      },
      {
        name: 'one file more',
        read: [Buffer.from('a'), Buffer.from('k')],
        want: { action: 'use', value: 'a' },
      },
    ];
    for (const c of cases) expect(reloadDecision(a, c.read, parse, c.last), c.name).to.deep.equal(c.want);
  });

  it('refuses to start with an invalid pair, then serves new valid files and keeps the old over invalid ones', async () => {
    const clock = new FakeClock();
    const logger = new MemoryLogger();
    const one = pairs.get('one')!;
    const two = pairs.get('two')!;
    await writeFile(file('s.crt'), one.cert);
    await writeFile(file('s.key'), two.key);
    const opts = {
      name: 'serving-cert',
      files: [file('s.crt'), file('s.key')],
      parse: ([c, k]: readonly Buffer[]) => parseServingPair(c!, k!),
      clock,
      logger,
      intervalMs: 1000,
    };
    let startErr: unknown;
    await DynamicFileContent.create(opts).catch((e: unknown) => (startErr = e));
    expect(startErr).to.have.property('kind', 'InvalidArgument');

    await writeFile(file('s.key'), one.key);
    const content = await DynamicFileContent.create(opts);
    const first = content.current();
    expect(Buffer.from(first.cert).equals(one.cert)).to.equal(true);
    const seen: unknown[] = [];
    content.onChange((v) => seen.push(v));

    // Half-written: the new certificate with the old key. Refused, logged once, the old pair stays.
    await writeFile(file('s.crt'), two.cert);
    await content.check();
    await content.check();
    expect(content.current()).to.equal(first);
    expect(logger.lines.filter((l) => l.level === 'warn')).to.have.length(1);

    // The key follows: the new pair is used, by the timer.
    await writeFile(file('s.key'), two.key);
    content.start();
    clock.advance(1000);
    await eventually(() => content.current() !== first);
    expect(Buffer.from(content.current().cert).equals(two.cert)).to.equal(true);
    expect(seen).to.have.length(1);
    expect(logger.lines.some((l) => l.msg === 'loaded new content')).to.equal(true);

    // A file gone: refused, still the same pair; the timer goes on.
    const second = content.current();
    await rm(file('s.key'));
    clock.advance(1000);
    await eventually(() => logger.lines.filter((l) => l.level === 'warn').length === 2);
    expect(content.current()).to.equal(second);
    content.stop();
    expect(clock.pendingTimers()).to.equal(0);
  });

  it('the TLS front verifies client certificates against the CA bundle in use at each connection', async () => {
    const one = pairs.get('one')!;
    const two = pairs.get('two')!;
    let ca = one.cert;
    const authorized: boolean[] = [];
    const front = new AddressTlsListener({
      source: { certificateFor: () => one },
      clientCA: () => ca,
      onSecureConnection: (sock) => {
        authorized.push(sock.authorized);
        sock.end();
      },
    });
    const port = await front.listen(0, '127.0.0.1');
    // The self-signed "two" as a client certificate: its own CA.
    const connect = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const sock = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...two }, () =>
          sock.resume(),
        );
        sock.once('end', () => resolve());
        sock.once('error', reject);
      });
    try {
      await connect();
      ca = Buffer.concat([one.cert, two.cert]);
      await connect();
      ca = one.cert;
      await connect();
    } finally {
      await front.close();
    }
    expect(authorized).to.deep.equal([false, true, false]);
  });
});
