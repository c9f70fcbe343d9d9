/**
 * The probe executions (kubelet: pkg/kubelet/prober/prober.go and pkg/probe/{exec,http,tcp,grpc}): the
 * shell half of the prober. `createProbeRunner` returns the ProbeRunner the workers call; it runs exec
 * probes through the runtime's ExecSync, httpGet with node:http(s), tcpSocket with node:net and grpc with
 * the standard health service over @grpc/grpc-js. On the simulated runtime, network probes ask the
 * simulation (`probePort`) instead of opening sockets to addresses that do not exist.
 *
 * Outcomes and wording follow the kubelet:
 * - a failure records a Warning `Unhealthy` event `<Type> probe failed: <output>`; a warning (an HTTP
 *   redirect that was not followed) records `ProbeWarning` `<Type> probe warning: <output>` and counts as
 *   success;
 * - an execution error (the probe could not be run: unknown container, bad port) is retried up to three
 *   times, then recorded as `<Type> probe errored: <error>` and rejected, so the worker throws the result
 *   away.
 */
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { Container, ContainerPort, ContainerStatus, Pod, Probe } from '../../api/core.js';
import type { Runtime } from '../../runtime/types.js';
import { formatGoDuration } from '../../util/duration.js';
import { errorMessage, isDeadlineExceeded, KindError } from '../../util/errors.js';
import type { EventRecorderFunc } from '../kuberuntime/context.js';
import { probeTiming, type ProbeOutcome } from './doprobe.js';
import { containerIDKey } from './results.js';
import type { ProbeType } from './types.js';
import type { ProbeRunner } from './worker.js';

/** The User-Agent of the kubelet's probes (`kube-probe/<major>.<minor>`). */
export const ProbeUserAgent = 'kube-probe/1.33';
/** Probe output is cut to this many bytes, as the kubelet reads at most 10 KiB of a body or an exec. */
export const MaxProbeOutputBytes = 10 * 1024;
/** Attempts of one probe execution when it errors (kubelet: maxProbeRetries). */
export const MaxProbeRetries = 3;
const MaxRedirects = 10;

/** One execution's result, before events: the kubelet's probe.Result and its output. */
export interface ProbeExecution {
  result: 'success' | 'warning' | 'failure' | 'unknown';
  output: string;
}

/** What the simulated runtime answers for a network probe (SimRuntime.probePort). */
export type PortProber = (
  containerId: string,
  port: number,
  kind: 'http' | 'tcp',
) => { result: 'success' | 'failure'; output: string };

export interface ProbeRunnerDeps {
  runtime: Pick<Runtime, 'execSync'>;
  /** Records events about the pod (kubelet wording); must not throw or block. */
  record: EventRecorderFunc;
  /** When set, http, tcp and grpc probes ask it instead of the network (the simulated runtime). */
  portProber?: PortProber;
  /** Called once per finished probe, for metrics (kubelet: prober_probe_total). */
  onProbe?: (probeType: ProbeType, result: 'successful' | 'failed' | 'unknown') => void;
  logger?: { info(msg: string, meta?: Record<string, unknown>): void };
}

/** The capitalised probe type the kubelet's messages use (`Liveness probe failed: ...`). */
export function probeTypeTitle(t: ProbeType): string {
  return t.charAt(0).toUpperCase() + t.slice(1);
}

/** A port reference: a number, a numeric string, or the name of a container port. */
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

function joinHostPort(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

function truncate(text: string): string {
  const buf = Buffer.from(text);
  return buf.length <= MaxProbeOutputBytes ? text : buf.subarray(0, MaxProbeOutputBytes).toString();
}

function containerSpec(pod: Pod, name: string): Container | undefined {
  return (
    pod.spec.containers.find((c) => c.name === name) ?? pod.spec.initContainers?.find((c) => c.name === name)
  );
}

function fieldPathOf(pod: Pod, name: string): string | undefined {
  if (pod.spec.containers.some((c) => c.name === name)) return `spec.containers{${name}}`;
  if (pod.spec.initContainers?.some((c) => c.name === name)) return `spec.initContainers{${name}}`;
  return undefined;
}

// ---- exec ----------------------------------------------------------------------------------------

/** kubelet exec prober: exit 0 = success, another exit = failure with the combined output, timeout = failure. */
export async function execProbe(
  runtime: Pick<Runtime, 'execSync'>,
  runtimeContainerId: string,
  command: readonly string[],
  timeoutSeconds: number,
): Promise<ProbeExecution> {
  try {
    const r = await runtime.execSync(runtimeContainerId, [...command], timeoutSeconds);
    const output = truncate(r.stdout.toString() + r.stderr.toString());
    return { result: r.exitCode === 0 ? 'success' : 'failure', output };
  } catch (err) {
    // The CRI client turns DeadlineExceeded into a timeout error; the exec prober reports it as a failure.
    if (isDeadlineExceeded(err))
      return { result: 'failure', output: `command ${JSON.stringify(command.join(' '))} timed out` };
    throw err;
  }
}

// ---- http ----------------------------------------------------------------------------------------

/** The probe URL (kubelet formatURL): scheme, host (the probe's or the pod IP), port, path with its query. */
export function probeURL(action: NonNullable<Probe['httpGet']>, host: string, port: number): URL {
  const scheme = (action.scheme ?? 'HTTP').toLowerCase();
  let path = action.path ?? '';
  if (path !== '' && !path.startsWith('/')) path = `/${path}`;
  return new URL(`${scheme}://${joinHostPort(host, port)}${path}`);
}

/** Probe headers: the spec's (repeated names kept), then User-Agent and Accept unless the spec set them. */
export function probeHeaders(action: NonNullable<Probe['httpGet']>): Record<string, string[]> {
  const headers: Record<string, string[]> = {};
  for (const h of action.httpHeaders ?? []) {
    const key = Object.keys(headers).find((k) => k.toLowerCase() === h.name.toLowerCase()) ?? h.name;
    (headers[key] ??= []).push(h.value);
  }
  const has = (name: string): boolean =>
    Object.keys(headers).some((k) => k.toLowerCase() === name.toLowerCase());
  if (!has('User-Agent')) headers['User-Agent'] = [ProbeUserAgent];
  if (!has('Accept')) headers['Accept'] = ['*/*'];
  return headers;
}

interface RawResponse {
  status: number;
  location: string | undefined;
  body: string;
}

/** Go's net/http error text for a failed dial or a client timeout, as the kubelet puts it in the output. */
function goHTTPError(url: URL, err: unknown, timedOut: boolean): string {
  const where = `Get ${JSON.stringify(url.toString())}`;
  if (timedOut) return `${where}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)`;
  const code = (err as { code?: unknown })?.code;
  const addr = joinHostPort(
    url.hostname.replace(/^\[|\]$/g, ''),
    Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
  );
  if (code === 'ECONNREFUSED') return `${where}: dial tcp ${addr}: connect: connection refused`;
  if (code === 'EHOSTUNREACH') return `${where}: dial tcp ${addr}: connect: no route to host`;
  if (code === 'ECONNRESET') return `${where}: read tcp ${addr}: read: connection reset by peer`;
  return `${where}: ${errorMessage(err)}`;
}

function requestOnce(url: URL, headers: Record<string, string[]>, signal: AbortSignal): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const outgoing: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(headers)) {
      if (k.toLowerCase() === 'host') outgoing['Host'] = v[0] ?? '';
      else outgoing[k] = v.length === 1 ? (v[0] ?? '') : v;
    }
    const req = mod.request(url, {
      method: 'GET',
      headers: outgoing,
      signal,
      agent: false,
      // The kubelet's probes skip certificate verification (InsecureSkipVerify).
      ...(url.protocol === 'https:' ? { rejectUnauthorized: false } : {}),
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (size < MaxProbeOutputBytes) chunks.push(c);
        size += c.length;
      });
      res.on('end', () => {
        const location = res.headers.location;
        resolve({
          status: res.statusCode ?? 0,
          location,
          body: truncate(Buffer.concat(chunks).toString('utf8')),
        });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * kubelet http prober: 2xx is success (output: the body); 3xx that was not followed is a warning
 * (`Probe terminated redirects, Response body: ...`); anything else is a failure
 * (`HTTP probe failed with statuscode: <code>`); a transport error or timeout is a failure with Go's error
 * text. Redirects are followed to the same host only, at most 10 times.
 */
export async function httpProbe(
  url: URL,
  headers: Record<string, string[]>,
  timeoutMs: number,
): Promise<ProbeExecution> {
  const signal = AbortSignal.timeout(Math.max(1, timeoutMs));
  let current = url;
  for (let redirects = 0; ; redirects++) {
    let res: RawResponse;
    try {
      res = await requestOnce(current, headers, signal);
    } catch (err) {
      return { result: 'failure', output: goHTTPError(current, err, signal.aborted) };
    }
    const isRedirect = [301, 302, 303, 307, 308].includes(res.status) && res.location !== undefined;
    if (isRedirect) {
      let next: URL;
      try {
        next = new URL(res.location as string, current);
      } catch (err) {
        return {
          result: 'failure',
          output: `Get ${JSON.stringify(current.toString())}: ${errorMessage(err)}`,
        };
      }
      if (next.hostname === url.hostname) {
        if (redirects + 1 >= MaxRedirects) {
          return {
            result: 'failure',
            output: `Get ${JSON.stringify(next.toString())}: stopped after 10 redirects`,
          };
        }
        current = next;
        continue;
      }
      // A redirect to another host is not followed: its response is the answer.
    }
    if (res.status >= 200 && res.status < 400) {
      if (res.status >= 300)
        return { result: 'warning', output: `Probe terminated redirects, Response body: ${res.body}` };
      return { result: 'success', output: res.body };
    }
    return { result: 'failure', output: `HTTP probe failed with statuscode: ${res.status}` };
  }
}

// ---- tcp -----------------------------------------------------------------------------------------

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

// ---- grpc ----------------------------------------------------------------------------------------

/** grpc.health.v1.HealthCheckResponse.ServingStatus names by number. */
const ServingStatus = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'] as const;

/** HealthCheckRequest { string service = 1; } in protobuf wire form. */
export function encodeHealthCheckRequest(service: string): Buffer {
  const s = Buffer.from(service, 'utf8');
  if (s.length === 0) return Buffer.alloc(0);
  const len: number[] = [];
  let n = s.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([0x0a, ...len]), s]);
}

/** HealthCheckResponse { ServingStatus status = 1; } from protobuf wire form; unknown fields are skipped. */
export function decodeHealthCheckResponse(buf: Buffer): number {
  let i = 0;
  let status = 0;
  const varint = (): number => {
    let v = 0;
    let shift = 0;
    for (;;) {
      const b = buf[i++];
      if (b === undefined) throw new KindError('InvalidArgument', 'truncated health check response');
      v += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return v;
      shift += 7;
    }
  };
  while (i < buf.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) status = v;
    } else if (wire === 2) {
      const len = varint(); // read before adding: `i += varint()` would add to the old index
      i += len;
    } else if (wire === 5) i += 4;
    else if (wire === 1) i += 8;
    else throw new KindError('InvalidArgument', `unexpected wire type ${wire} in health check response`);
  }
  return status;
}

/**
 * kubelet grpc prober: Check on grpc.health.v1.Health over an insecure connection; SERVING is success
 * (`service healthy`), any other status, a failed connection or a failed call is a failure worded as the
 * kubelet words it.
 */
export async function grpcProbe(
  host: string,
  port: number,
  service: string,
  timeoutMs: number,
): Promise<ProbeExecution> {
  const addr = joinHostPort(host, port);
  const timeout = formatGoDuration(timeoutMs);
  const deadline = Date.now() + timeoutMs;
  const client = new grpc.Client(addr, grpc.credentials.createInsecure(), {
    'grpc.primary_user_agent': ProbeUserAgent,
  });
  try {
    const connected = await new Promise<Error | undefined>((resolve) =>
      client.waitForReady(deadline, resolve),
    );
    if (connected) {
      return {
        result: 'failure',
        output: `timeout: failed to connect service ${JSON.stringify(addr)} within ${timeout}: context deadline exceeded`,
      };
    }
    const response = await new Promise<{ err: grpc.ServiceError | null; status?: number }>((resolve) => {
      client.makeUnaryRequest(
        '/grpc.health.v1.Health/Check',
        (s: string) => encodeHealthCheckRequest(s),
        (b: Buffer) => decodeHealthCheckResponse(b),
        service,
        new grpc.Metadata(),
        { deadline },
        (err, status) => resolve({ err, status }),
      );
    });
    if (response.err) {
      const e = response.err;
      if (e.code === grpc.status.UNIMPLEMENTED) {
        return {
          result: 'failure',
          output: `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${e.details}`,
        };
      }
      if (e.code === grpc.status.DEADLINE_EXCEEDED) {
        return { result: 'failure', output: `timeout: health rpc did not complete within ${timeout}` };
      }
      return { result: 'failure', output: `error: health rpc probe failed: ${e.message}` };
    }
    const status = response.status ?? 0;
    if (status !== 1) {
      const name = ServingStatus[status] ?? String(status);
      return { result: 'failure', output: `service unhealthy (responded with ${JSON.stringify(name)})` };
    }
    return { result: 'success', output: 'service healthy' };
  } finally {
    client.close();
  }
}

// ---- the runner ----------------------------------------------------------------------------------

/** One execution of `probe` against the container; rejects when the probe cannot be run at all. */
async function runProbeOnce(
  deps: ProbeRunnerDeps,
  probe: Probe,
  pod: Pod,
  container: Container,
  runtimeId: string,
): Promise<ProbeExecution> {
  const timeoutSeconds = probeTiming(probe).timeoutSeconds;
  const timeoutMs = timeoutSeconds * 1000;
  const podIP = pod.status?.podIP ?? '';
  if (probe.exec) return execProbe(deps.runtime, runtimeId, probe.exec.command ?? [], timeoutSeconds);
  if (probe.httpGet) {
    const port = resolveProbePort(probe.httpGet.port, container.ports);
    const host = probe.httpGet.host || podIP;
    const url = probeURL(probe.httpGet, host || '0.0.0.0', port);
    if (deps.portProber) {
      const r = deps.portProber(runtimeId, port, 'http');
      if (r.result === 'success') return { result: 'success', output: '' };
      const output = r.output.startsWith('dial ')
        ? `Get ${JSON.stringify(url.toString())}: ${r.output}`
        : r.output;
      return { result: 'failure', output };
    }
    if (!host) throw new KindError('Unavailable', 'the pod has no IP to probe yet');
    return httpProbe(url, probeHeaders(probe.httpGet), timeoutMs);
  }
  if (probe.tcpSocket) {
    const port = resolveProbePort(probe.tcpSocket.port, container.ports);
    const host = probe.tcpSocket.host || podIP;
    if (deps.portProber) return deps.portProber(runtimeId, port, 'tcp');
    if (!host) throw new KindError('Unavailable', 'the pod has no IP to probe yet');
    return tcpProbe(host, port, timeoutMs);
  }
  if (probe.grpc) {
    const port = resolveProbePort(probe.grpc.port, undefined);
    if (deps.portProber) {
      const r = deps.portProber(runtimeId, port, 'tcp');
      if (r.result === 'success') return { result: 'success', output: 'service healthy' };
      return {
        result: 'failure',
        output: `timeout: failed to connect service ${JSON.stringify(joinHostPort(podIP, port))} within ${formatGoDuration(timeoutMs)}: context deadline exceeded`,
      };
    }
    if (!podIP) throw new KindError('Unavailable', 'the pod has no IP to probe yet');
    return grpcProbe(podIP, port, probe.grpc.service ?? '', timeoutMs);
  }
  throw new KindError('InvalidArgument', `missing probe handler for container ${container.name}`);
}

/**
 * The ProbeRunner for the prober manager: runs the probe (retrying execution errors up to three times),
 * records the kubelet's events, and resolves to the worker's outcome. Rejects only on an execution error.
 */
export function createProbeRunner(deps: ProbeRunnerDeps): ProbeRunner {
  return async (
    probe: Probe,
    pod: Pod,
    containerStatus: ContainerStatus,
    containerID: string,
    probeType: ProbeType,
  ): Promise<ProbeOutcome> => {
    const title = probeTypeTitle(probeType);
    const name = containerStatus.name;
    const fieldPath = fieldPathOf(pod, name);
    const event = (reason: string, message: string): void => {
      try {
        deps.record(pod, 'Warning', reason, message, fieldPath);
      } catch {
        // Events are best effort; a recorder problem must not change the probe's outcome.
      }
    };
    const container = containerSpec(pod, name);
    let lastError: unknown = new KindError('NotFound', `container ${name} is not in the pod spec`);
    let execution: ProbeExecution | undefined;
    if (container) {
      for (let attempt = 0; attempt < MaxProbeRetries && !execution; attempt++) {
        try {
          execution = await runProbeOnce(deps, probe, pod, container, containerIDKey(containerID));
        } catch (err) {
          lastError = err;
        }
      }
    }
    if (!execution) {
      event('Unhealthy', `${title} probe errored: ${errorMessage(lastError)}`);
      deps.onProbe?.(probeType, 'unknown');
      deps.logger?.info('probe errored', { probeType, container: name, err: errorMessage(lastError) });
      throw lastError;
    }
    switch (execution.result) {
      case 'success':
        deps.onProbe?.(probeType, 'successful');
        return 'success';
      case 'warning':
        event('ProbeWarning', `${title} probe warning: ${execution.output}`);
        deps.onProbe?.(probeType, 'successful');
        return 'warning';
      case 'failure':
        event('Unhealthy', `${title} probe failed: ${execution.output}`);
        deps.onProbe?.(probeType, 'failed');
        return 'failure';
      case 'unknown':
        deps.onProbe?.(probeType, 'unknown');
        return 'failure';
      default: {
        const never: never = execution.result;
        throw new KindError('Internal', `unknown probe result ${String(never)}`);
      }
    }
  };
}
