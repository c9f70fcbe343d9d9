/**
 * exec, attach and portForward on the node API, as the kubelet serves them: the path names the pod (and
 * the container), the query the command and the streams; the runtime hands out a URL on its streaming
 * server (CRI Exec/Attach/PortForward) and the upgrade is proxied there byte for byte (upgradeproxy.ts),
 * so SPDY and WebSocket both work without this process speaking either.
 *
 * Paths: /exec/{ns}/{pod}[/{uid}]/{container}, /attach/{ns}/{pod}[/{uid}]/{container},
 * /portForward/{ns}/{pod}[/{uid}].
 * Query (exec, attach): `command` (repeated; exec only, required), `input`|`stdin`, `output`|`stdout`,
 * `error`|`stderr`, `tty` with values 1/true or 0/false. At least one stream; with a tty stderr is dropped
 * (the terminal merges it into stdout), as the kubelet does. portForward over WebSocket: `port`
 * (repeated or comma-separated, 1-65535) is required; SPDY clients name ports per stream instead.
 *
 * Contract: parsing is pure and throws HttpError 400 with a message; resolve() throws 404 for an unknown
 * pod UID or container, 400 for a container or sandbox that is not running, 501 when the runtime has no
 * streaming server (the simulated runtime).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Pod } from '../../api/core.js';
import { ContainerNameLabel, PodUIDLabel } from '../../runtime/labels.js';
import { errorKind, errorMessage } from '../../util/errors.js';
import { HttpError } from './httperror.js';
import type { NodeApiTarget } from './registry.js';

export type StreamingKind = 'exec' | 'attach' | 'portForward';

const KINDS: readonly StreamingKind[] = ['exec', 'attach', 'portForward'];

export interface StreamingPath {
  kind: StreamingKind;
  namespace: string;
  pod: string;
  /** The pod UID when the path carries one: the request is for that incarnation of the pod only. */
  uid?: string;
  /** exec and attach only. */
  container?: string;
}

export interface StreamOptions {
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

/** What a streaming request asks the runtime for, after validation. */
export type StreamingRequestOptions =
  | { kind: 'exec'; cmd: string[]; streams: StreamOptions }
  | { kind: 'attach'; streams: StreamOptions }
  | { kind: 'portForward'; ports: number[] };

/** The streaming kind a path belongs to (`/exec`, `/exec/...`), else undefined. */
export function streamingKindOf(path: string): StreamingKind | undefined {
  return KINDS.find((k) => path === `/${k}` || path.startsWith(`/${k}/`));
}

function shapes(kind: StreamingKind): string {
  return kind === 'portForward'
    ? '/portForward/{namespace}/{pod}[/{uid}]'
    : `/${kind}/{namespace}/{pod}[/{uid}]/{container}`;
}

/** Splits a streaming path; throws 400 on any other shape. */
export function parseStreamingPath(path: string): StreamingPath {
  const kind = streamingKindOf(path);
  if (!kind) throw new HttpError(400, `malformed path ${JSON.stringify(path)}: not a streaming path`);
  const parts = path.split('/').slice(2);
  const counts = kind === 'portForward' ? [2, 3] : [3, 4];
  if (!counts.includes(parts.length) || parts.some((p) => p === ''))
    throw new HttpError(400, `malformed path ${JSON.stringify(path)}: want ${shapes(kind)}`);
  let dec: string[];
  try {
    dec = parts.map((p) => decodeURIComponent(p));
  } catch {
    throw new HttpError(400, `malformed path ${JSON.stringify(path)}: bad escape`);
  }
  const [namespace, pod] = [dec[0]!, dec[1]!];
  if (kind === 'portForward') return { kind, namespace, pod, ...(dec.length === 3 ? { uid: dec[2]! } : {}) };
  return dec.length === 4
    ? { kind, namespace, pod, uid: dec[2]!, container: dec[3]! }
    : { kind, namespace, pod, container: dec[2]! };
}

/** A stream flag under either of its names; absent is false, anything but 1/true/0/false is a 400. */
function flag(q: URLSearchParams, names: readonly string[]): boolean {
  let on = false;
  for (const name of names) {
    for (const v of q.getAll(name)) {
      if (v === '1' || v === 'true') on = true;
      else if (v !== '0' && v !== 'false')
        throw new HttpError(400, `query parameter ${name}: want 1 or 0, got ${JSON.stringify(v)}`);
    }
  }
  return on;
}

/** The streams of an exec or attach request (the kubelet's remotecommand options). */
export function parseStreamOptions(q: URLSearchParams): StreamOptions {
  const tty = flag(q, ['tty']);
  const o: StreamOptions = {
    stdin: flag(q, ['input', 'stdin']),
    stdout: flag(q, ['output', 'stdout']),
    // A terminal carries stderr in stdout; the kubelet drops the separate stream rather than failing.
    stderr: flag(q, ['error', 'stderr']) && !tty,
    tty,
  };
  if (!o.stdin && !o.stdout && !o.stderr)
    throw new HttpError(400, 'you must specify at least 1 of stdin, stdout, stderr');
  return o;
}

/** Ports of a port-forward request: required over WebSocket (the query), optional for SPDY. */
export function parsePortForwardPorts(q: URLSearchParams, webSocket: boolean): number[] {
  const values = q.getAll('port');
  if (values.length === 0) {
    if (webSocket) throw new HttpError(400, 'query parameter "port" is required');
    return [];
  }
  const ports: number[] = [];
  for (const v of values) {
    if (v === '') throw new HttpError(400, 'query parameter "port" cannot be empty');
    for (const p of v.split(',')) {
      const n = /^\d{1,5}$/.test(p) ? Number(p) : NaN;
      if (!(n >= 1 && n <= 65535))
        throw new HttpError(400, `query parameter "port": ${JSON.stringify(p)} is not a port (1-65535)`);
      ports.push(n);
    }
  }
  return ports;
}

/** Validates the query of a streaming request for its kind. */
export function parseStreamingQuery(
  kind: StreamingKind,
  q: URLSearchParams,
  webSocket: boolean,
): StreamingRequestOptions {
  switch (kind) {
    case 'exec': {
      const cmd = q.getAll('command');
      if (cmd.length === 0) throw new HttpError(400, 'query parameter "command" is required for exec');
      return { kind, cmd, streams: parseStreamOptions(q) };
    }
    case 'attach':
      return { kind, streams: parseStreamOptions(q) };
    case 'portForward':
      return { kind, ports: parsePortForwardPorts(q, webSocket) };
    default: {
      const never: never = kind;
      throw new HttpError(400, `unknown streaming kind ${String(never)}`);
    }
  }
}

function headerHas(v: string | string[] | undefined, token: string): boolean {
  const all = Array.isArray(v) ? v.join(',') : (v ?? '');
  return all
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .includes(token);
}

/** Whether the request asks to switch protocols at all (Connection: Upgrade plus an Upgrade header). */
export function isUpgradeRequest(h: IncomingHttpHeaders): boolean {
  return headerHas(h.connection, 'upgrade') && (h.upgrade ?? '') !== '';
}

/** A WebSocket handshake (as opposed to SPDY's `Upgrade: SPDY/3.1`). */
export function isWebSocketRequest(h: IncomingHttpHeaders): boolean {
  return headerHas(h.connection, 'upgrade') && headerHas(h.upgrade, 'websocket');
}

/** Maps a runtime error to the status a client sees. */
function runtimeError(err: unknown, what: string): HttpError {
  const msg = `${what}: ${errorMessage(err)}`;
  switch (errorKind(err)) {
    case 'NotFound':
      return new HttpError(404, msg);
    case 'InvalidArgument':
    case 'Conflict':
      return new HttpError(400, msg);
    case 'Unimplemented':
      return new HttpError(501, msg);
    case 'Unavailable':
      return new HttpError(503, msg);
    default:
      return new HttpError(500, msg);
  }
}

/**
 * Asks the node's runtime for the streaming URL of a validated request: the running container of that
 * name (the newest, if a restart left two) or the pod's ready sandbox.
 */
export async function resolveStreamingUrl(
  node: NodeApiTarget,
  pod: Pod,
  path: StreamingPath,
  opts: StreamingRequestOptions,
): Promise<string> {
  const podName = `${pod.metadata.namespace}/${pod.metadata.name}`;
  const uid = pod.metadata.uid ?? '';
  if (path.uid !== undefined && path.uid !== uid)
    throw new HttpError(404, `pod "${podName}" with UID ${path.uid} not found`);
  const rt = node.runtime;
  if (opts.kind === 'portForward') {
    let sandboxes;
    try {
      sandboxes = await rt.listPodSandbox({ state: 'ready', labelSelector: { [PodUIDLabel]: uid } });
    } catch (err) {
      throw runtimeError(err, `pod "${podName}"`);
    }
    const sandbox = [...sandboxes].sort((a, b) => (b.createdAt > a.createdAt ? 1 : -1))[0];
    if (!sandbox) throw new HttpError(400, `pod "${podName}" has no running sandbox`);
    try {
      return (await rt.portForward(sandbox.id, opts.ports)).url;
    } catch (err) {
      throw runtimeError(err, `port-forward to pod "${podName}"`);
    }
  }
  const name = path.container ?? '';
  const spec = [
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.ephemeralContainers ?? []),
  ].find((c) => c.name === name);
  if (!spec) throw new HttpError(404, `container "${name}" not found in pod "${podName}"`);
  let containers;
  try {
    containers = await rt.listContainers({
      state: 'running',
      labelSelector: { [PodUIDLabel]: uid, [ContainerNameLabel]: name },
    });
  } catch (err) {
    throw runtimeError(err, `container "${name}" in pod "${podName}"`);
  }
  const container = [...containers].sort((a, b) => (b.createdAt > a.createdAt ? 1 : -1))[0];
  if (!container) throw new HttpError(400, `container "${name}" in pod "${podName}" is not running`);
  const req = { containerId: container.id, ...opts.streams };
  try {
    return opts.kind === 'exec' ? (await rt.exec({ ...req, cmd: opts.cmd })).url : (await rt.attach(req)).url;
  } catch (err) {
    throw runtimeError(err, `${opts.kind} in container "${name}" of pod "${podName}"`);
  }
}
