/**
 * TLS in front of the node API that picks the serving certificate by the local address a connection
 * arrived on. The API server dials a Node's InternalIP, and TLS sends no server name for an IP address,
 * so SNI cannot tell the nodes apart; the address they each advertise can. One TCP listener accepts every
 * connection, asks the certificate source for that address's certificate, and hands the socket to a
 * (non-listening) tls.Server holding it, which does the handshake and client-certificate verification.
 *
 * Contract: a connection for which the source has no certificate (a CSR not approved yet) is closed
 * before the handshake and reported to `onRefused`; it never affects another connection. A certificate
 * object that changes (renewal, a file reloaded) gets a fresh TLS context for new connections, and so does
 * a new client CA bundle object; live ones keep theirs.
 */
import net from 'node:net';
import tls, { type TLSSocket } from 'node:tls';
import { normalizeAddress } from './registry.js';

export interface ServingCertificate {
  /** PEM certificate (chain). */
  cert: string | Buffer;
  /** PEM private key. */
  key: string | Buffer;
}

export interface ServingCertificateSource {
  /** The certificate for connections to `localAddress`, or undefined when there is none (yet). */
  certificateFor(localAddress: string): ServingCertificate | undefined;
}

/** One certificate for every address (--node-api-cert-file/--node-api-key-file). */
export function staticCertificate(c: ServingCertificate): ServingCertificateSource {
  return { certificateFor: () => c };
}

/** A client CA bundle (PEM), or where to ask for the current one. */
export type ClientCaSource = string | Buffer | (() => string | Buffer | undefined);

export interface AddressTlsListenerOptions {
  source: ServingCertificateSource;
  /**
   * CA bundle for client certificates; when set, clients are asked for one (not required). A function is
   * asked at each connection (a bundle reloaded from its file): a new bundle object gets new TLS contexts.
   */
  clientCA?: ClientCaSource;
  /** Receives each connection once its handshake is done. */
  onSecureConnection(socket: TLSSocket): void;
  /** A connection closed because no certificate is available for its local address. */
  onRefused?(localAddress: string): void;
}

export class AddressTlsListener {
  private server: net.Server | undefined;
  /** Listening sockets opened elsewhere and handed over (adopt). */
  private readonly adopted = new Set<net.Server>();
  /** A TLS server per certificate object, made for the client CA bundle object it holds. */
  private readonly contexts = new WeakMap<
    ServingCertificate,
    { clientCA: string | Buffer | undefined; server: tls.Server }
  >();
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly opts: AddressTlsListenerOptions) {}

  /** Starts listening; resolves to the bound port. */
  async listen(port: number, host: string): Promise<number> {
    const server = net.createServer((raw) => this.accept(raw));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.removeListener('error', reject);
        resolve();
      });
    });
    return (server.address() as net.AddressInfo).port;
  }

  /**
   * Serves the connections of a socket that already listens: one opened by another process (a node's
   * address inside a network namespace this process is not in) and handed over, as socket activation
   * does. Its connections are treated as this listener's own; close() closes it too.
   */
  adopt(server: net.Server): void {
    this.adopted.add(server);
    server.on('connection', (raw: net.Socket) => this.accept(raw));
    server.on('error', () => undefined);
  }

  /** Stops listening and destroys every open connection. */
  async close(): Promise<void> {
    const servers = [...(this.server ? [this.server] : []), ...this.adopted];
    this.server = undefined;
    this.adopted.clear();
    const closed = Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    for (const sock of this.sockets) sock.destroy();
    await closed;
  }

  private accept(raw: net.Socket): void {
    const local = normalizeAddress(raw.localAddress);
    this.sockets.add(raw);
    raw.once('close', () => this.sockets.delete(raw));
    raw.on('error', () => raw.destroy());
    const cert = this.opts.source.certificateFor(local);
    if (!cert) {
      raw.destroy();
      this.opts.onRefused?.(local);
      return;
    }
    this.serverFor(cert).emit('connection', raw);
  }

  private serverFor(cert: ServingCertificate): tls.Server {
    const ca = this.opts.clientCA;
    const clientCA = typeof ca === 'function' ? ca() : ca;
    const known = this.contexts.get(cert);
    if (known && known.clientCA === clientCA) return known.server;
    const s = tls.createServer(
      {
        cert: cert.cert,
        key: cert.key,
        ca: clientCA,
        // Ask for a certificate but let a token-bearing client in without one; the handler decides.
        requestCert: clientCA !== undefined,
        rejectUnauthorized: false,
      },
      (sock) => this.opts.onSecureConnection(sock),
    );
    // A failed handshake only ends that connection.
    s.on('tlsClientError', (_err, sock) => sock.destroy());
    this.contexts.set(cert, { clientCA, server: s });
    return s;
  }
}
