/**
 * A TCP forwarder from `listenHost:listenPort` to `target` (host:port), bytes as they are (TLS passes through).
 * The test control plane listens on loopback only; pods on the run's bridge reach it through this, on the
 * bridge's host address.
 */
import net from 'node:net';

export interface TcpProxy {
  port: number;
  close(): Promise<void>;
}

export async function startTcpProxy(
  listenHost: string,
  target: { host: string; port: number },
): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
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
  });
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
