/**
 * A forwarder from `listenHost` (a free port) to `target` (host:port). The test control plane listens on
 * loopback only; pods on the run's bridge reach it through this, on the bridge's host address.
 *
 * With `tls`, the forwarder terminates TLS itself (with that certificate) and speaks TLS to the target: busybox's
 * wget, the only HTTPS client of the test images, offers only signature algorithms kube-apiserver's Go TLS
 * refuses, while node:tls accepts them at OpenSSL security level 0. The request itself (the bearer
 * token, the path) passes through unchanged; the API server authenticates and authorizes it as ever.
 */
import net from 'node:net';
import tls from 'node:tls';

export interface TcpProxy {
  port: number;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Terminate TLS here (cert and key, PEM) and re-originate it to the target (trusting `ca`). */
  tls?: { cert: Buffer; key: Buffer; ca: Buffer };
}

export async function startTcpProxy(
  listenHost: string,
  target: { host: string; port: number },
  opts: TcpProxyOptions = {},
): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const forward = (client: net.Socket): void => {
    const t = opts.tls;
    const upstream = t
      ? tls.connect({ host: target.host, port: target.port, ca: t.ca, servername: 'localhost' })
      : net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  };
  // busybox offers only SHA-1 era signature algorithms, refused at OpenSSL's default security level.
  const server = opts.tls
    ? tls.createServer({ cert: opts.tls.cert, key: opts.tls.key, ciphers: 'DEFAULT:@SECLEVEL=0' }, forward)
    : net.createServer(forward);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, listenHost, () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
