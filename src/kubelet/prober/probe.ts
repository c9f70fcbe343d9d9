/**
 * What every probe protocol shares (kubelet: pkg/probe/probe.go and util.go): the result of one execution
 * with its output, the output limit, the User-Agent, and the port and address forms. Pure.
 */
import type { ContainerPort } from '../../api/core.js';
import { KindError } from '../../util/errors.js';

/** The User-Agent of the kubelet's probes (`kube-probe/<major>.<minor>`). */
export const ProbeUserAgent = 'kube-probe/1.33';
/** Probe output is cut to this many bytes, as the kubelet reads at most 10 KiB of a body or an exec. */
export const MaxProbeOutputBytes = 10 * 1024;

/** One execution's result, before events: the kubelet's probe.Result and its output. */
export interface ProbeExecution {
  result: 'success' | 'warning' | 'failure' | 'unknown';
  output: string;
}

/** `text` cut to MaxProbeOutputBytes bytes. */
export function truncateOutput(text: string): string {
  const buf = Buffer.from(text);
  return buf.length <= MaxProbeOutputBytes ? text : buf.subarray(0, MaxProbeOutputBytes).toString();
}

/** Go's net.JoinHostPort: an IPv6 host in brackets. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * A port reference (kubelet probe.ResolveContainerPort): a number, a numeric string, or the name of one of
 * the container's ports. InvalidArgument for an unknown name or a number outside 1..65535.
 */
export function resolveProbePort(
  port: number | string | undefined,
  ports: readonly ContainerPort[] | undefined,
): number {
  let n: number;
  if (typeof port === 'number') n = port;
  else if (typeof port === 'string') {
    const named = (ports ?? []).find((p) => p.name === port);
    n = named ? named.containerPort : /^\d+$/.test(port) ? Number(port) : NaN;
    if (Number.isNaN(n)) throw new KindError('InvalidArgument', `port ${port} not found`, { port });
  } else n = NaN;
  if (!Number.isInteger(n) || n <= 0 || n >= 65536) {
    throw new KindError('InvalidArgument', `invalid port number: ${String(port)}`, { port });
  }
  return n;
}
