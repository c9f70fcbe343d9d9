import { expect } from 'chai';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { AddressTlsListener } from '../../../src/server/nodeapi/tlsfront.js';
import { eventually } from '../../support/eventually.js';
import { selfSignedCert } from '../../support/nodeapi.js';

/** Connects with TLS to host:port and resolves to the CN of the certificate the server presented. */
function servedCN(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let cn = '';
    const sock = tls.connect({ host, port, rejectUnauthorized: false }, () => {
      cn = String(sock.getPeerCertificate().subject?.CN);
      sock.resume();
    });
    // The server ends the connection once it has it: the handshake was done on both sides.
    sock.once('end', () => resolve(cn));
    sock.once('error', reject);
  });
}

describe('AddressTlsListener', function () {
  this.timeout(20_000);
  let dir: string;
  const certs = new Map<string, { cert: Buffer; key: Buffer }>();

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tlsfront-'));
    for (const [addr, cn] of [
      ['127.0.0.1', 'listened'],
      ['127.0.0.2', 'adopted'],
    ] as const) {
      const keyOut = path.join(dir, `${cn}.key`);
      const certOut = path.join(dir, `${cn}.crt`);
      await selfSignedCert({ keyOut, certOut, subject: `/CN=${cn}`, days: 1 });
      certs.set(addr, { cert: await readFile(certOut), key: await readFile(keyOut) });
    }
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('serves an adopted listening socket by the address it listens on, and closes it with its own', async () => {
    const accepted: string[] = [];
    const front = new AddressTlsListener({
      source: { certificateFor: (local) => certs.get(local) },
      onSecureConnection: (sock) => {
        accepted.push(sock.localAddress ?? '');
        sock.end();
      },
    });
    const port = await front.listen(0, '127.0.0.1');
    // A socket opened elsewhere (in the harness: inside a node's network namespace) and handed over.
    const other = net.createServer();
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.2', resolve));
    front.adopt(other);
    const otherPort = (other.address() as net.AddressInfo).port;

    expect(await servedCN('127.0.0.1', port)).to.equal('listened');
    expect(await servedCN('127.0.0.2', otherPort)).to.equal('adopted');
    await eventually(() => (accepted.length === 2 ? true : undefined), 5_000, 'both connections handed on');
    expect(accepted).to.have.members(['127.0.0.1', '127.0.0.2']);

    await front.close();
    expect(other.listening).to.equal(false);
  });
});
