/**
 * The tcp prober (kubelet: pkg/probe/tcp): a connection that opens within the timeout is success;
 * otherwise a failure with Go's dial error.
 */
import net from 'node:net';
import { errorMessage } from '../../../util/errors.js';
import { joinHostPort, type ProbeExecution } from '../probe.js';

/** kubelet tcp prober: a connection that opens within the timeout is success; otherwise Go's dial error. */
export function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeExecution> {
  const addr = joinHostPort(host, port);
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (r: ProbeExecution): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(
      () => done({ result: 'failure', output: `dial tcp ${addr}: i/o timeout` }),
      Math.max(1, timeoutMs),
    );
    socket.once('connect', () => done({ result: 'success', output: '' }));
    socket.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'ECONNREFUSED'
          ? 'connect: connection refused'
          : err.code === 'EHOSTUNREACH'
            ? 'connect: no route to host'
            : errorMessage(err);
      done({ result: 'failure', output: `dial tcp ${addr}: ${why}` });
    });
  });
}
