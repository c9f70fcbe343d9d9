/**
 * The http prober (kubelet: pkg/probe/http): a GET with the kube-probe User-Agent, certificates not
 * verified, redirects followed to the same host only (at most 10); 2xx is success, a redirect not followed
 * is a warning, anything else (or a transport error, or the timeout) a failure worded as Go's client words
 * it. A runtime that answers probes itself (its pod IPs are not reachable) gets the same wording around its
 * answer.
 */
import http from 'node:http';
import https from 'node:https';
import type { Probe } from '../../../api/core.js';
import type { PortProbeOutcome } from '../../../runtime/types.js';
import { errorMessage } from '../../../util/errors.js';
import {
  joinHostPort,
  MaxProbeOutputBytes,
  ProbeUserAgent,
  truncateOutput,
  type ProbeExecution,
} from '../probe.js';

const MaxRedirects = 10;

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
          body: truncateOutput(Buffer.concat(chunks).toString('utf8')),
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

/** An http probe the runtime answered (RuntimeCapabilities.probePort): a dial error reads as Go's client's. */
export function httpProbeAnswer(url: URL, answer: PortProbeOutcome): ProbeExecution {
  if (answer.result === 'success') return { result: 'success', output: '' };
  const output = answer.output.startsWith('dial ')
    ? `Get ${JSON.stringify(url.toString())}: ${answer.output}`
    : answer.output;
  return { result: 'failure', output };
}
