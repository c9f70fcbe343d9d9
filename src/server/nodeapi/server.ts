/**
 * The node API (the kubelet's :10250) for every VirtualNode of this process: one HTTPS server, requests
 * routed by pod to the node the pod is bound to, or by the dialled address to the node advertising it.
 *
 * Served: /healthz, /metrics, /stats/summary, /metrics/resource, /metrics/probes (stats.ts), /pods, /runningpods/,
 * /containerLogs/{ns}/{pod}/{container} (containerlogs.ts), /logs/ (the node's log directory, nodelogs.ts),
 * /configz, /flagz and /statusz (configz.ts,
 * zpages.ts), and on the HTTP upgrade event /exec, /attach and /portForward (streaming.ts, proxied by
 * upgradeproxy.ts; a v5 WebSocket exec or attach is translated to the runtime's SPDY by streamtranslator.ts
 * and a tunnelled port-forward WebSocket carried by streamtunnel.ts, see wsstream.ts). TLS is terminated in
 * front (tlsfront.ts), with the certificate of the node whose address was dialled. Every request is
 * authenticated (client certificate from the client CA, or a bearer token via TokenReview) and authorized
 * (SubjectAccessReview on nodes/<subresource>) before routing; see auth.ts.
 *
 * Contract: a malformed path or query gets 400 with a message, an unknown pod or container 404. Log
 * streams write with backpressure (reading pauses while the socket's buffer is full), so one slow client
 * holds at most one chunk and never delays another request; a stream ends when its pod or container is
 * gone, or when the client leaves.
 */
import { X509Certificate } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server as NetServer, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { Counter, type Registry } from 'prom-client';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Pod } from '../../api/core.js';
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
import { bundleCertificates, verifyClientChain } from './clientcert.js';
import { HttpError } from './httperror.js';
import { parseContainerLogsPath, serveContainerLogs } from './containerlogs.js';
import { CONFIGZ_PATH, configzBody, kubeletFlags, type NodeApiSettings } from './configz.js';
import type { HttpAnswer } from './negotiate.js';
import { NODE_LOGS_PREFIX, serveNodeLogs } from './nodelogs.js';
import { normalizeAddress, type NodeApiTarget, type NodeLookup } from './registry.js';
import { SpdyClientSession } from './spdy.js';
import {
  isWebSocketRequest,
  parseStreamingPath,
  parseStreamingQuery,
  resolveStreamingUrl,
  streamingKindOf,
  type StreamingKind,
  type StreamingPath,
  type StreamingRequestOptions,
} from './streaming.js';
import { translateStreams } from './streamtranslator.js';
import { tunnelStreams } from './streamtunnel.js';
import { isStatsPath, serveStats } from './stats.js';
import {
  AddressTlsListener,
  staticCertificate,
  type ClientCaSource,
  type ServingCertificateSource,
} from './tlsfront.js';
import { dialSpdyUpgrade, UpgradeProxy, writeRawResponse } from './upgradeproxy.js';
import {
  offeredProtocols,
  SpdyRemoteCommandProtocol,
  streamingModeOf,
  StreamProtocolV5,
  TunnelingPrefix,
  tunneledSpdyProtocols,
  type StreamingMode,
} from './wsstream.js';
import {
  FLAGZ_PATH,
  STATUSZ_PATH,
  ZPAGE_DELIMITERS,
  aggregatePaths,
  flagzAnswer,
  kubeletVersionInfo,
  statuszAnswer,
} from './zpages.js';
import { KUBELET_VERSION } from '../../node/nodestatus.js';
import {
  encodeDelimited,
  gatherFamilies,
  negotiateExposition,
  PROTO_DELIMITED_CONTENT_TYPE,
} from '../../util/prometheus/exposition.js';

export interface NodeApiTls {
  /** One serving certificate for every address (files); or give `source`. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Serving certificates by the local address dialled (e.g. CSR-issued per node); wins over cert/key. */
  source?: ServingCertificateSource;
  /** Told when a connection is closed for want of a certificate for its address (see tlsfront.ts). */
  onRefused?(localAddress: string): void;
  /**
   * CA bundle that signs accepted client certificates (the API server's kubelet client cert); a function
   * gives the current one of a reloaded file (ReloadKubeletClientCAFile).
   */
  clientCA?: ClientCaSource;
}

export interface NodeApiServerOptions {
  lookup: NodeLookup;
  auth: WebhookAuth;
  tls: NodeApiTls;
  clock: Clock;
  logger: Logger;
  /** How often a followed log is polled for new lines (default 200 ms). */
  followPollMs?: number;
  /** Served on /metrics (Prometheus text), authorized as nodes/metrics. */
  metrics?: Registry;
  /**
   * The server's own settings and the operator's flags, for /configz and /flagz (main.ts fills it from the
   * flags). Default: the address and port listened on, and nothing else known.
   */
  settings?: NodeApiSettings;
}

export { HttpError };
export { parseContainerLogsPath, stripContainerIdScheme } from './containerlogs.js';

interface Admitted {
  /** The node the request is for (its pod's node, else the dialled one); undefined when none is served. */
  node: NodeApiTarget | undefined;
  podNode: { node: NodeApiTarget; pod: Pod } | undefined;
}

/** The largest request head served (Go's http.DefaultMaxHeaderBytes). */
export const MaxRequestHeadBytes = 1 << 20;

/** The kubelet's label values for WebSocket streaming requests. */
export type WebSocketSubresource = 'exec' | 'attach' | 'portforward';

function webSocketSubresource(kind: StreamingKind): WebSocketSubresource {
  return kind === 'portForward' ? 'portforward' : kind;
}

export class NodeApiServer {
  private server: http.Server | undefined;
  /** Accepts TCP, picks the certificate by the dialled address, hands TLS sockets to `server`. */
  private front: AddressTlsListener | undefined;
  private readonly sockets = new Set<Socket>();
  private readonly live = new Set<AbortController>();
  /** exec/attach/portForward sessions proxied to the runtimes' streaming servers (streaming.ts). */
  private readonly upgrades: UpgradeProxy;
  /** WebSocket handshakes of the streams this node serves itself (translated or tunnelled). */
  private readonly wss = new WebSocketServer({
    noServer: true,
    perMessageDeflate: false,
    clientTracking: false,
  });
  /** The subprotocol each such handshake answers with (set just before it). */
  private readonly wsProtocols = new WeakMap<IncomingMessage, string>();
  /** Open translated and tunnelled sessions: their WebSocket and the runtime's socket. */
  private readonly wsSessions = new Set<{ ws?: WebSocket; runtime: Duplex }>();
  private readonly wsCounts: Record<WebSocketSubresource, number> = { exec: 0, attach: 0, portforward: 0 };
  private readonly wsCounter: Counter<'subresource'> | undefined;
  private settings: NodeApiSettings | undefined;
  /** Per connection: the reloaded client CA bundle its certificate was last judged by, and the verdict. */
  private readonly verifiedBy = new WeakMap<TLSSocket, { bundle: string | Buffer; ok: boolean }>();
  /** The certificates of each reloaded client CA bundle seen. */
  private readonly bundleRoots = new WeakMap<Buffer, X509Certificate[]>();
  /** /flagz's separator: drawn once, as the kubelet caches its text page. */
  private readonly flagzSeparator = pick(ZPAGE_DELIMITERS);

  constructor(private readonly opts: NodeApiServerOptions) {
    this.upgrades = new UpgradeProxy({ logger: opts.logger });
    this.settings = opts.settings;
    // The protocol is answered here: ws refuses the tunnelling ones (`SPDY/3.1+...` is not an HTTP token).
    this.wss.on('headers', (headers: string[], req: IncomingMessage) => {
      const p = this.wsProtocols.get(req);
      if (p) headers.push(`Sec-WebSocket-Protocol: ${p}`);
    });
    const registry = opts.metrics;
    if (registry) {
      const name = 'kubelet_websocket_streaming_requests_total';
      this.wsCounter =
        (registry.getSingleMetric(name) as Counter<'subresource'> | undefined) ??
        new Counter({
          name,
          help: "WebSocket streaming requests (exec, attach, portforward) the node served itself: v5 exec and attach translated to the runtime's SPDY, port-forward tunnelled SPDY.",
          labelNames: ['subresource'],
          registers: [registry],
        });
    }
  }

  /** WebSocket streaming requests served by this node itself (not proxied to the runtime), by subresource. */
  get webSocketStreamingRequests(): Readonly<Record<WebSocketSubresource, number>> {
    return { ...this.wsCounts };
  }

  /** Starts listening; resolves to the bound port. */
  async listen(port: number, host: string): Promise<number> {
    const { tls } = this.opts;
    const source =
      tls.source ?? (tls.cert && tls.key ? staticCertificate({ cert: tls.cert, key: tls.key }) : undefined);
    if (!source) throw new HttpError(500, 'node API: no serving certificate (cert and key, or a source)');
    // Request heads up to 1 MiB, as Go's HTTP server (the kubelet's) takes: an exec's command travels in the
    // query (kubectl exec -- echo <20000 characters> is an upstream spec); Node's default is 16 KiB.
    const server = http.createServer(
      { maxHeaderSize: MaxRequestHeadBytes },
      (req, res) => void this.handle(req, res),
    );
    this.server = server;
    // TLS is done in front (tlsfront.ts); the HTTP server only ever sees finished TLS sockets.
    this.front = new AddressTlsListener({
      source,
      clientCA: tls.clientCA,
      onRefused: tls.onRefused,
      onSecureConnection: (sock) => {
        this.sockets.add(sock);
        sock.once('close', () => this.sockets.delete(sock));
        server.emit('connection', sock);
      },
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.handleUpgrade(req, socket, head);
    });
    const bound = await this.front.listen(port, host);
    this.settings ??= { address: host, port: bound, clientCAFile: '', operatorFlags: {} };
    return bound;
  }

  /** Also serves a socket that already listens (AddressTlsListener.adopt); only after listen(). */
  adopt(server: NetServer): void {
    if (!this.front) throw new Error('node API: adopt() before listen()');
    this.front.adopt(server);
  }

  async close(): Promise<void> {
    for (const c of this.live) c.abort();
    this.upgrades.closeAll();
    for (const s of this.wsSessions) {
      s.ws?.terminate();
      s.runtime.destroy();
    }
    this.wsSessions.clear();
    const front = this.front;
    this.front = undefined;
    this.server = undefined;
    for (const sock of this.sockets) sock.destroy();
    await front?.close();
  }

  private async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const sock = req.socket as TLSSocket;
    if (this.clientCertVerified(sock)) {
      const cert = sock.getPeerCertificate();
      try {
        const u = userFromCertSubject(cert.subject ?? {}, cert.raw);
        if (u) return u;
      } catch (err) {
        // As the kubelet's union authenticator: a certificate that names no valid user leaves the token.
        this.opts.logger.warn('node API: client certificate not accepted', { error: errorMessage(err) });
      }
    }
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return undefined;
    return this.opts.auth.authenticateToken(token);
  }

  /**
   * Whether the connection's client certificate is verified by the client CA bundle: the handshake's
   * verdict for a fixed bundle; for a reloaded one, the current bundle's, at each request (cached per
   * connection and bundle), as the kubelet's authenticator judges by the bundle in use.
   */
  private clientCertVerified(sock: TLSSocket): boolean {
    const source = this.opts.tls.clientCA;
    if (typeof source !== 'function') return sock.authorized;
    const bundle = source();
    if (bundle === undefined) return false;
    const known = this.verifiedBy.get(sock);
    if (known?.bundle === bundle) return known.ok;
    let roots = typeof bundle === 'string' ? undefined : this.bundleRoots.get(bundle);
    if (!roots) {
      roots = bundleCertificates(bundle);
      if (typeof bundle !== 'string') this.bundleRoots.set(bundle, roots);
    }
    const chain: X509Certificate[] = [];
    const leaf = sock.getPeerX509Certificate();
    if (leaf) chain.push(leaf);
    // What the client sent along, as OpenSSL links it (a self-signed end points at itself).
    for (
      let c = sock.getPeerCertificate(true).issuerCertificate, n = 0;
      leaf && c?.raw && n < 8 && !c.raw.equals(chain[chain.length - 1]!.raw);
      c = c.issuerCertificate, n++
    ) {
      chain.push(new X509Certificate(c.raw));
    }
    const ok = chain.length > 0 && verifyClientChain(chain, roots, this.opts.clock.now()) === undefined;
    this.verifiedBy.set(sock, { bundle, ok });
    return ok;
  }

  /**
   * Authenticates (401) and authorizes (403) a request as the kubelet does, against the node serving the
   * pod that `podOf` names (a 400 when it throws), else the node whose address the client dialled.
   */
  private async admit(
    req: IncomingMessage,
    path: string,
    podOf: () => { namespace: string; pod: string } | undefined,
  ): Promise<Admitted> {
    let user: UserInfo | undefined;
    try {
      user = await this.authenticate(req);
    } catch (err) {
      this.opts.logger.warn('node API: authentication failed', { error: errorMessage(err) });
    }
    if (!user) throw new HttpError(401, 'Unauthorized');

    const ref = podOf();
    const podNode = ref ? this.opts.lookup.nodeForPod(ref.namespace, ref.pod) : undefined;
    const local = normalizeAddress(req.socket.localAddress);
    const node = podNode?.node ?? this.opts.lookup.nodeByAddress(local) ?? this.opts.lookup.nodes()[0];
    const attrs = {
      user,
      verb: verbFor(req.method),
      nodeName: node?.nodeName ?? '',
      subresources: subresourcesFor(path),
      path,
    };
    let allowed: boolean;
    try {
      allowed = (await this.opts.auth.authorize(attrs)).allowed;
    } catch (err) {
      this.opts.logger.warn('node API: authorization failed', { error: errorMessage(err) });
      throw new HttpError(500, `Authorization error (user=${user.username}): ${errorMessage(err)}`);
    }
    if (!allowed)
      throw new HttpError(
        403,
        `Forbidden (user=${user.username}, verb=${attrs.verb}, resource=nodes, subresource(s)=[${attrs.subresources.join(' ')}])`,
      );
    return { node, podNode };
  }

  /**
   * exec, attach and portForward: admitted like any request, then validated, resolved to the runtime's
   * streaming URL and proxied there. Every failure before the upgrade is a plain HTTP error response.
   */
  private async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // Until the proxy owns the socket, a reset must not become an unhandled 'error'.
    const onError = (): void => void socket.destroy();
    socket.on('error', onError);
    try {
      let url: URL;
      try {
        url = new URL(req.url ?? '/', 'https://node');
      } catch {
        throw new HttpError(400, 'malformed request URL');
      }
      const path = url.pathname;
      const kind = streamingKindOf(path);
      const { podNode } = await this.admit(req, path, () => (kind ? parseStreamingPath(path) : undefined));
      if (!kind) throw new HttpError(400, `${path} does not support protocol upgrades`);
      const target = parseStreamingPath(path);
      const mode = streamingModeOf(kind, req.headers);
      // A tunnelled port-forward names its ports in the SPDY streams, as SPDY clients do.
      const opts = parseStreamingQuery(
        kind,
        url.searchParams,
        mode === 'proxy' && isWebSocketRequest(req.headers),
      );
      if (!podNode) throw new HttpError(404, `pod "${target.namespace}/${target.pod}" not found`);
      const streamUrl = await resolveStreamingUrl(podNode.node, podNode.pod, target, opts);
      if (socket.destroyed) return;
      if (mode !== 'proxy')
        return await this.serveWebSocket(mode, req, socket, head, streamUrl, target, opts, onError);
      socket.removeListener('error', onError);
      this.upgrades.proxy(req, socket, head, streamUrl);
    } catch (err) {
      let e: HttpError;
      if (err instanceof HttpError) e = err;
      else if (isInvalidArgument(err)) e = new HttpError(400, errorMessage(err));
      else if (isNotFound(err)) e = new HttpError(404, errorMessage(err));
      else {
        this.opts.logger.warn('node API: streaming request failed', { error: errorMessage(err) });
        e = new HttpError(500, errorMessage(err));
      }
      writeRawResponse(socket, e.status, e.message);
    }
  }

  /**
   * A WebSocket stream this node serves itself (ExtendWebSocketsToKubelet): the SPDY upgrade to the runtime
   * first (its refusal reaches the client as a plain HTTP error), then the WebSocket handshake, then the
   * translation (v5 exec/attach) or the tunnel (port-forward).
   */
  private async serveWebSocket(
    mode: Exclude<StreamingMode, 'proxy'>,
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    streamUrl: string,
    target: StreamingPath,
    opts: StreamingRequestOptions,
    onError: () => void,
  ): Promise<void> {
    const logger = this.opts.logger;
    const what = `${target.kind} ${target.namespace}/${target.pod}${target.container ? `/${target.container}` : ''}`;
    const offered = offeredProtocols(req.headers);
    const up = await dialSpdyUpgrade(
      streamUrl,
      mode === 'translate' ? [SpdyRemoteCommandProtocol] : tunneledSpdyProtocols(offered),
    );
    if (!up.ok) {
      logger.warn('node API: the runtime refused the SPDY upgrade', {
        stream: what,
        status: up.status,
        error: up.body,
      });
      return writeRawResponse(socket, up.status, up.body);
    }
    if (socket.destroyed) return void up.socket.destroy();
    if (mode === 'translate' && up.protocol !== SpdyRemoteCommandProtocol) {
      up.socket.destroy();
      return writeRawResponse(
        socket,
        502,
        `the runtime's streaming server chose remotecommand protocol ${JSON.stringify(up.protocol)}, not ${SpdyRemoteCommandProtocol}`,
      );
    }
    const wsProtocol =
      mode === 'translate' ? StreamProtocolV5 : up.protocol ? `${TunnelingPrefix}${up.protocol}` : '';
    if (wsProtocol) this.wsProtocols.set(req, wsProtocol);
    delete req.headers['sec-websocket-protocol'];
    const session: { ws?: WebSocket; runtime: Duplex } = { runtime: up.socket };
    this.wsSessions.add(session);
    up.socket.once('close', () => this.wsSessions.delete(session));
    // A handshake ws refuses (it answers 400 itself) never reaches the callback: drop the runtime's side.
    socket.once('close', () => {
      if (!session.ws) up.socket.destroy();
    });
    socket.removeListener('error', onError);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      session.ws = ws;
      const sub = webSocketSubresource(target.kind);
      this.wsCounts[sub]++;
      this.wsCounter?.inc({ subresource: sub });
      logger.debug('node API: WebSocket stream served by the node', {
        stream: what,
        mode,
        protocol: wsProtocol,
      });
      if (mode === 'translate' && opts.kind !== 'portForward')
        translateStreams(ws, new SpdyClientSession(up.socket, up.head), {
          streams: opts.streams,
          logger,
          what,
        });
      else tunnelStreams(ws, up.socket, up.head, logger, what);
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'https://node');
    } catch {
      return this.reply(res, 400, 'malformed request URL');
    }
    const path = url.pathname;
    const isLogs = path === '/containerLogs' || path.startsWith('/containerLogs/');
    const stream = streamingKindOf(path);
    let logTarget: ReturnType<typeof parseContainerLogsPath> | undefined;
    let admitted: Admitted;
    try {
      admitted = await this.admit(req, path, () => {
        if (isLogs) return (logTarget = parseContainerLogsPath(path));
        return stream ? parseStreamingPath(path) : undefined;
      });
    } catch (err) {
      return this.replyError(res, err);
    }
    const { node, podNode } = admitted;

    try {
      if (path === '/healthz') return this.reply(res, 200, 'ok');
      if (path === '/metrics') return await this.serveMetrics(req, res);
      if (isStatsPath(path))
        return await serveStats(req, res, path, url.searchParams, node, this.opts.logger);
      // The streaming paths are served on the server's 'upgrade' event only (handleUpgrade).
      if (stream) throw new HttpError(400, `Upgrade request required (${stream} needs SPDY or WebSocket)`);
      if (isLogs) {
        if (req.method !== 'GET' && req.method !== 'HEAD')
          throw new HttpError(405, `method ${req.method} not allowed`);
        if (!podNode) throw new HttpError(404, `pod "${logTarget!.namespace}/${logTarget!.pod}" not found`);
        return await serveContainerLogs(
          req,
          res,
          { ...podNode, container: logTarget!.container, query: url.searchParams },
          {
            clock: this.opts.clock,
            logger: this.opts.logger,
            followPollMs: this.opts.followPollMs,
            live: this.live,
          },
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
      if (path === CONFIGZ_PATH || path === FLAGZ_PATH || path === STATUSZ_PATH)
        return this.serveZPage(req, res, url, node);
      // The node's log directory (NodeLogQuery; nodelogs.ts): /logs itself is outside the prefix.
      if (path === '/logs' || path.startsWith(NODE_LOGS_PREFIX)) {
        if (!node?.logDir || path === '/logs') throw new HttpError(404, '404 page not found');
        const raw = (req.url ?? '/').split('?')[0]!;
        return await serveNodeLogs(req, res, raw, url.search.slice(1), node.logDir);
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

  /**
   * /configz, /flagz and /statusz of the node the request is for (as every method: the kubelet's handlers
   * take any). Without the node's settings /configz and /flagz are 404, as a kubelet without them has none.
   */
  private serveZPage(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    node: NodeApiTarget | undefined,
  ): void {
    const path = url.pathname;
    const negotiation = {
      accept: req.headers.accept,
      query: url.searchParams,
      rawQuery: url.search.slice(1),
      userAgent: req.headers['user-agent'],
    };
    let answer: HttpAnswer;
    if (path === STATUSZ_PATH) {
      answer = statuszAnswer(
        negotiation,
        {
          startTime: node?.startTime ?? processStart,
          now: this.opts.clock.now(),
          goVersion: '',
          ...kubeletVersionInfo(KUBELET_VERSION),
          paths: aggregatePaths([
            ...(node?.kubeletSettings ? [CONFIGZ_PATH, FLAGZ_PATH] : []),
            '/healthz',
            ...(this.opts.metrics || node?.stats ? ['/metrics'] : []),
          ]),
        },
        pick(ZPAGE_DELIMITERS),
      );
    } else {
      const settings = node?.kubeletSettings?.();
      const server = this.settings;
      if (!settings || !server) throw new HttpError(404, `no handler for ${path}`);
      answer =
        path === CONFIGZ_PATH
          ? {
              status: 200,
              headers: { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' },
              body: configzBody(settings, server),
            }
          : flagzAnswer(negotiation, kubeletFlags(settings, server), this.flagzSeparator);
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }

  /**
   * The process's registry, as the kubelet's /metrics (promhttp): the delimited protobuf exposition, native
   * histogram buckets included, when the Accept header asks for it; the text format 0.0.4 otherwise.
   */
  private async serveMetrics(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const registry = this.opts.metrics;
    if (!registry) throw new HttpError(404, 'no metrics registry');
    if (negotiateExposition(req.headers.accept) === 'protobuf-delimited') {
      const body = encodeDelimited(await gatherFamilies(registry));
      res.writeHead(200, { 'Content-Type': PROTO_DELIMITED_CONTENT_TYPE, 'Content-Length': body.length });
      res.end(body);
      return;
    }
    const text = await registry.metrics();
    res.writeHead(200, { 'Content-Type': registry.contentType });
    res.end(text);
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
}

/** When this process started, to the second (what a kubelet's /statusz reports as its start). */
const processStart = Math.floor((Date.now() - process.uptime() * 1000) / 1000) * 1000;

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}
