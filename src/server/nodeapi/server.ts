/**
 * The node API (the kubelet's :10250) for every VirtualNode of this process: one HTTPS server, requests
 * routed by pod to the node the pod is bound to, or by the dialled address to the node advertising it.
 *
 * Served: /healthz, /pods, /runningpods/, /containerLogs/{ns}/{pod}/{container}. Every request is
 * authenticated (client certificate from the client CA, or a bearer token via TokenReview) and authorized
 * (SubjectAccessReview on nodes/<subresource>) before routing; see auth.ts.
 *
 * Contract: a malformed path or query gets 400 with a message, an unknown pod or container 404. Log
 * streams write with backpressure (reading pauses while the socket's buffer is full), so one slow client
 * holds at most one chunk and never delays another request; a stream ends when its pod or container is
 * gone, or when the client leaves.
 */
import { once } from 'node:events';
import { access } from 'node:fs/promises';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Container, ContainerStatus, Pod } from '../../api/core.js';
import type { Runtime } from '../../runtime/types.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage, isInvalidArgument, isNotFound } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import {
  bearerToken,
  subresourcesFor,
  userFromCertSubject,
  verbFor,
  type UserInfo,
  type WebhookAuth,
} from './auth.js';
import {
  criFileLines,
  parseLines,
  parseLogOptions,
  polledLines,
  renderLogs,
  type FollowControl,
} from './logs.js';
import { normalizeAddress, type NodeApiTarget, type NodeLookup } from './registry.js';

export interface NodeApiTls {
  cert: string | Buffer;
  key: string | Buffer;
  /** CA bundle that signs accepted client certificates (the API server's kubelet client cert). */
  clientCA?: string | Buffer;
}

export interface NodeApiServerOptions {
  lookup: NodeLookup;
  auth: WebhookAuth;
  tls: NodeApiTls;
  clock: Clock;
  logger: Logger;
  /** How often a followed log is polled for new lines (default 200 ms). */
  followPollMs?: number;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A runtime that can hand out CRI-format log lines itself (SimRuntime). */
interface LineLogRuntime {
  readLogs(containerId: string): string[];
}
function hasReadLogs(rt: Runtime): rt is Runtime & LineLogRuntime {
  return typeof (rt as Partial<LineLogRuntime>).readLogs === 'function';
}

/** `<type>://<id>` -> `<id>`. */
export function stripContainerIdScheme(id: string): string {
  const i = id.indexOf('://');
  return i >= 0 ? id.slice(i + 3) : id;
}

/** Splits `/containerLogs/{ns}/{pod}/{container}`; throws 400 on any other shape. */
export function parseContainerLogsPath(path: string): { namespace: string; pod: string; container: string } {
  const parts = path.split('/').slice(2);
  if (parts.length !== 3 || parts.some((p) => p === ''))
    throw new HttpError(
      400,
      `malformed path ${JSON.stringify(path)}: want /containerLogs/{namespace}/{pod}/{container}`,
    );
  let dec: string[];
  try {
    dec = parts.map((p) => decodeURIComponent(p));
  } catch {
    throw new HttpError(400, `malformed path ${JSON.stringify(path)}: bad escape`);
  }
  return { namespace: dec[0]!, pod: dec[1]!, container: dec[2]! };
}

function findContainer(pod: Pod, name: string): { spec?: Container; status?: ContainerStatus } {
  const spec = [
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.ephemeralContainers ?? []),
  ].find((c) => c.name === name);
  const status = [
    ...(pod.status?.containerStatuses ?? []),
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.ephemeralContainerStatuses ?? []),
  ].find((c) => c.name === name);
  return { spec, status };
}

export class NodeApiServer {
  private server: https.Server | undefined;
  private readonly live = new Set<AbortController>();

  constructor(private readonly opts: NodeApiServerOptions) {}

  /** Starts listening; resolves to the bound port. */
  async listen(port: number, host: string): Promise<number> {
    const { tls } = this.opts;
    this.server = https.createServer(
      {
        cert: tls.cert,
        key: tls.key,
        ca: tls.clientCA,
        // Ask for a certificate but let a token-bearing client in without one; handle() decides.
        requestCert: tls.clientCA !== undefined,
        rejectUnauthorized: false,
      },
      (req, res) => void this.handle(req, res),
    );
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => {
        this.server!.removeListener('error', reject);
        resolve();
      });
    });
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const c of this.live) c.abort();
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => s.close(() => resolve()));
    s.closeAllConnections();
    await closed;
  }

  private async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const sock = req.socket as TLSSocket;
    if (sock.authorized) {
      const u = userFromCertSubject(sock.getPeerCertificate().subject ?? {});
      if (u) return u;
    }
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return undefined;
    return this.opts.auth.authenticateToken(token);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://node');
    } catch {
      return this.reply(res, 400, 'malformed request URL');
    }
    const path = url.pathname;
    let user: UserInfo | undefined;
    try {
      user = await this.authenticate(req);
    } catch (err) {
      this.opts.logger.warn('node API: authentication failed', { error: errorMessage(err) });
    }
    if (!user) return this.reply(res, 401, 'Unauthorized');

    const local = normalizeAddress(req.socket.localAddress);
    const isLogs = path === '/containerLogs' || path.startsWith('/containerLogs/');
    let logTarget: ReturnType<typeof parseContainerLogsPath> | undefined;
    let podNode: { node: NodeApiTarget; pod: Pod } | undefined;
    try {
      if (isLogs) {
        logTarget = parseContainerLogsPath(path);
        podNode = this.opts.lookup.nodeForPod(logTarget.namespace, logTarget.pod);
      }
    } catch (err) {
      return this.replyError(res, err);
    }
    const node = podNode?.node ?? this.opts.lookup.nodeByAddress(local) ?? this.opts.lookup.nodes()[0];
    const attrs = {
      user,
      verb: verbFor(req.method),
      nodeName: node?.nodeName ?? '',
      subresources: subresourcesFor(path),
      path,
    };
    try {
      const d = await this.opts.auth.authorize(attrs);
      if (!d.allowed) {
        return this.reply(
          res,
          403,
          `Forbidden (user=${user.username}, verb=${attrs.verb}, resource=nodes, subresource(s)=[${attrs.subresources.join(' ')}])`,
        );
      }
    } catch (err) {
      this.opts.logger.warn('node API: authorization failed', { error: errorMessage(err) });
      return this.reply(res, 500, `Authorization error (user=${user.username}): ${errorMessage(err)}`);
    }

    try {
      if (path === '/healthz') return this.reply(res, 200, 'ok');
      if (isLogs) {
        if (req.method !== 'GET' && req.method !== 'HEAD')
          throw new HttpError(405, `method ${req.method} not allowed`);
        if (!podNode) throw new HttpError(404, `pod "${logTarget!.namespace}/${logTarget!.pod}" not found`);
        return await this.containerLogs(
          req,
          res,
          podNode.node,
          podNode.pod,
          logTarget!.container,
          url.searchParams,
        );
      }
      if (path === '/pods' || path === '/pods/') {
        return this.json(res, {
          kind: 'PodList',
          apiVersion: 'v1',
          metadata: {},
          items: node ? node.pods() : [],
        });
      }
      if (path === '/runningpods' || path === '/runningpods/') {
        return this.json(res, await this.runningPods(node));
      }
      throw new HttpError(404, `no handler for ${path}`);
    } catch (err) {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      return this.replyError(res, err);
    }
  }

  private replyError(res: ServerResponse, err: unknown): void {
    if (err instanceof HttpError) return this.reply(res, err.status, err.message);
    if (isInvalidArgument(err)) return this.reply(res, 400, errorMessage(err));
    if (isNotFound(err)) return this.reply(res, 404, errorMessage(err));
    this.opts.logger.warn('node API: request failed', { error: errorMessage(err) });
    return this.reply(res, 500, errorMessage(err));
  }

  private reply(res: ServerResponse, status: number, text: string): void {
    res.writeHead(status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(`${text}\n`);
  }

  private json(res: ServerResponse, body: unknown): void {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  /** Pods as the runtime sees them (sandboxes ready, with their containers), like the kubelet's runningpods. */
  private async runningPods(node: NodeApiTarget | undefined): Promise<unknown> {
    const items: Pod[] = [];
    if (node) {
      const [sandboxes, containers] = await Promise.all([
        node.runtime.listPodSandbox({ state: 'ready' }),
        node.runtime.listContainers({ state: 'running' }),
      ]);
      for (const s of sandboxes) {
        items.push({
          metadata: { name: s.metadata.name, namespace: s.metadata.namespace, uid: s.metadata.uid },
          spec: {
            containers: containers
              .filter((c) => c.podSandboxId === s.id)
              .map((c) => ({ name: c.metadata.name, image: c.image })),
          },
        } as Pod);
      }
    }
    return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
  }

  private async containerLogs(
    req: IncomingMessage,
    res: ServerResponse,
    node: NodeApiTarget,
    pod: Pod,
    container: string,
    query: URLSearchParams,
  ): Promise<void> {
    const podName = `${pod.metadata.namespace}/${pod.metadata.name}`;
    let opts;
    try {
      opts = parseLogOptions(query, this.opts.clock.now());
    } catch (err) {
      throw new HttpError(400, errorMessage(err));
    }
    const { spec, status } = findContainer(pod, container);
    if (!spec && !status) throw new HttpError(404, `container "${container}" not found in pod "${podName}"`);
    let rawId: string | undefined;
    if (opts.previous) {
      rawId = status?.lastState?.terminated?.containerID;
      if (!rawId)
        throw new HttpError(
          400,
          `previous terminated container "${container}" in pod "${podName}" not found`,
        );
    } else {
      rawId = status?.containerID || status?.state?.terminated?.containerID;
      if (!rawId) {
        const why = status?.state?.waiting?.reason ?? 'ContainerCreating';
        throw new HttpError(400, `container "${container}" in pod "${podName}" is waiting to start: ${why}`);
      }
    }
    const id = stripContainerIdScheme(rawId);
    const rt = node.runtime;
    const uid = pod.metadata.uid;
    const ac = new AbortController();
    const ctl: FollowControl = {
      follow: opts.follow,
      signal: ac.signal,
      pollMs: this.opts.followPollMs,
      stillWriting: async () => {
        const cur = node.pod(pod.metadata.namespace ?? '', pod.metadata.name ?? '');
        if (!cur || cur.metadata.uid !== uid) return false;
        return (await rt.containerStatus(id)).state === 'running';
      },
    };
    let lines: AsyncIterable<string>;
    if (hasReadLogs(rt)) {
      try {
        rt.readLogs(id);
      } catch (err) {
        throw new HttpError(
          isNotFound(err) ? 404 : 400,
          `container "${container}" in pod "${podName}": ${errorMessage(err)}`,
        );
      }
      lines = polledLines(() => rt.readLogs(id), opts.tailLines, ctl);
    } else {
      let logPath: string;
      try {
        logPath = (await rt.containerStatus(id)).logPath;
      } catch (err) {
        throw new HttpError(
          isNotFound(err) ? 404 : 400,
          `container "${container}" in pod "${podName}": ${errorMessage(err)}`,
        );
      }
      if (!logPath) throw new HttpError(400, `container "${container}" in pod "${podName}" has no log file`);
      try {
        await access(logPath);
      } catch (err) {
        throw new HttpError(400, `failed to open log file ${logPath}: ${errorMessage(err)}`);
      }
      lines = criFileLines(logPath, opts.tailLines, ctl);
    }

    this.live.add(ac);
    const aborted = new Promise<void>((resolve) =>
      ac.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
    const onClose = (): void => ac.abort();
    res.once('close', onClose);
    try {
      res.writeHead(200, {
        'Content-Type': 'text/plain; charset=utf-8',
        'X-Content-Type-Options': 'nosniff',
      });
      if (req.method === 'HEAD') return void res.end();
      res.flushHeaders();
      for await (const chunk of renderLogs(parseLines(lines), opts)) {
        if (ac.signal.aborted) break;
        if (!res.write(chunk)) {
          // Backpressure: stop reading until the client has taken what we sent (or left).
          await Promise.race([once(res, 'drain'), aborted]);
        }
      }
      if (!res.destroyed) res.end();
    } catch (err) {
      if (!ac.signal.aborted)
        this.opts.logger.warn('node API: log stream failed', {
          pod: podName,
          container,
          error: errorMessage(err),
        });
      res.destroy();
    } finally {
      res.removeListener('close', onClose);
      this.live.delete(ac);
    }
  }
}
