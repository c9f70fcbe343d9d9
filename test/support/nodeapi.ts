/**
 * Helpers for tests of the node API. Through the real API server: a serving CA and certificate for the
 * nodes' loopback addresses (kube-apiserver verifies it with --kubelet-certificate-authority), the
 * apiserver flags that make it dial those addresses, a GET and a raw HTTP-upgrade client (WebSocket framing
 * included) for requests straight to the node API. Without a cluster: a self-signed certificate, and a
 * NodeApiServer on 127.0.0.1 with a stand-in for TokenReview and SubjectAccessReview.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { Registry } from 'prom-client';
import type { Pod } from '../../src/api/core.js';
import type { KubeClient } from '../../src/kube/client.js';
import type { Metrics } from '../../src/metrics.js';
import type { Operator } from '../../src/operator.js';
import { EventRecorder } from '../../src/kube/events.js';
import { restEventSink } from '../../src/node/api.js';
import { ContainerNameLabel, PodUIDLabel } from '../../src/runtime/labels.js';
import type { Container, Runtime } from '../../src/runtime/types.js';
import { WebhookAuth, type AuthApi } from '../../src/server/nodeapi/auth.js';
import { CsrServingCertificates } from '../../src/server/nodeapi/certificate.js';
import { NodeApiRegistry, type NodeStatsSource } from '../../src/server/nodeapi/registry.js';
import { NodeApiServer, type NodeApiTls } from '../../src/server/nodeapi/server.js';
import { RealClock, type Clock } from '../../src/util/clock.js';
import { silentLogger, type Logger } from '../../src/util/logger.js';
import { run, startControlPlane, type ControlPlane } from './controlplane.js';
import { adminClient, postVirtualNode, startTestOperator, waitNodeReady } from './operator.js';

async function openssl(args: string[]): Promise<void> {
  const r = await run('openssl', args);
  if (r.code !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A self-signed certificate with a new EC P-256 key (openssl req -x509); `ext` are -addext values. */
export async function selfSignedCert(o: {
  keyOut: string;
  certOut: string;
  subject: string;
  days: number;
  ext?: string[];
}): Promise<void> {
  await openssl([
    'req',
    '-x509',
    ...EC_KEY,
    '-keyout',
    o.keyOut,
    '-out',
    o.certOut,
    '-days',
    String(o.days),
    '-subj',
    o.subject,
    ...(o.ext ?? []).flatMap((e) => ['-addext', e]),
  ]);
}

export interface ServingPki {
  /** The CA that signed `cert`: pass it to kube-apiserver as --kubelet-certificate-authority. */
  ca: string;
  cert: string;
  key: string;
}

/**
 * A CA and one serving certificate, signed by it, for every node given (its IP and name in the SANs).
 * Files are written to `dir`.
 */
export async function servingPki(dir: string, nodes: { name: string; ip: string }[]): Promise<ServingPki> {
  const p = (f: string) => path.join(dir, f);
  await selfSignedCert({
    keyOut: p('ca.key'),
    certOut: p('ca.crt'),
    days: 2,
    subject: '/CN=node-serving-ca',
    ext: ['basicConstraints=critical,CA:TRUE', 'keyUsage=critical,keyCertSign'],
  });
  await openssl([
    'req',
    '-new',
    ...EC_KEY,
    '-keyout',
    p('serving.key'),
    '-out',
    p('serving.csr'),
    '-subj',
    `/O=system:nodes/CN=system:node:${nodes[0]?.name ?? 'node'}`,
  ]);
  const sans = nodes.flatMap((n) => [`IP:${n.ip}`, `DNS:${n.name}`]).join(',');
  await writeFile(
    p('serving.ext'),
    `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${sans}\n`,
  );
  await openssl([
    'x509',
    '-req',
    '-in',
    p('serving.csr'),
    '-CA',
    p('ca.crt'),
    '-CAkey',
    p('ca.key'),
    '-set_serial',
    `0x${randomBytes(8).toString('hex')}`,
    '-days',
    '2',
    '-extfile',
    p('serving.ext'),
    '-out',
    p('serving.crt'),
  ]);
  return { ca: p('ca.crt'), cert: p('serving.crt'), key: p('serving.key') };
}

/** kube-apiserver flags: verify node serving certificates with `ca`, dial Nodes at their InternalIP. */
export function nodeApiApiserverArgs(ca: string): string[] {
  return [`--kubelet-certificate-authority=${ca}`, '--kubelet-preferred-address-types=InternalIP'];
}

/** A NodeApiServer as main.ts wires it (WebhookAuth against `client`), listening on `ip`:10250. */
export async function listenNodeApi(o: {
  registry: NodeApiRegistry;
  client: AuthApi;
  clock: Clock;
  logger: Logger;
  tls: NodeApiTls;
  ip: string;
  followPollMs?: number;
  metrics?: Registry;
}): Promise<NodeApiServer> {
  const server = new NodeApiServer({
    lookup: o.registry,
    auth: new WebhookAuth(o.client, o.clock),
    tls: o.tls,
    clock: o.clock,
    logger: o.logger,
    followPollMs: o.followPollMs,
    metrics: o.metrics,
  });
  await server.listen(10250, o.ip);
  return server;
}

/**
 * CSR-issued serving certificates for the nodes in `registry`, requested and watched with `api`, with
 * Events (CertificatePending, ...) recorded on the Node through `api`; started. stop() when done.
 */
export function startCsrCertificates(
  api: KubeClient,
  clock: Clock,
  registry: NodeApiRegistry,
): CsrServingCertificates {
  const certs = new CsrServingCertificates({
    api,
    clock,
    logger: silentLogger,
    nodes: registry,
    recorderFor: (n) => new EventRecorder(restEventSink(api), clock, n, silentLogger),
  });
  certs.start();
  return certs;
}

/**
 * A GET straight to a node API (not through the API server), its certificate verified with `ca`, with
 * `Authorization: Bearer <token>` when a token is given.
 */
export function nodeApiGet(
  to: { host: string; port: number; ca: Buffer },
  p: string,
  token?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    https
      .get(
        {
          host: to.host,
          port: to.port,
          path: p,
          ca: to.ca,
          headers: token ? { Authorization: `Bearer ${token}` } : {},
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      )
      .on('error', reject);
  });
}

/**
 * A stand-in for the API server's TokenReview and SubjectAccessReview: the token 'good' is user 'u',
 * any other token is not authenticated, and every request is allowed.
 */
export const goodTokenAuthApi: AuthApi = {
  request: <T>(req: { path: string; body: unknown }): Promise<T> =>
    Promise.resolve(
      (req.path.endsWith('tokenreviews')
        ? {
            status: {
              authenticated: (req.body as { spec: { token: string } }).spec.token === 'good',
              user: { username: 'u' },
            },
          }
        : { status: { allowed: true } }) as T,
    ),
};

/**
 * A self-signed serving certificate for a node API on `ips` (CN=node, one day), written to `dir` as k.pem
 * and c.pem; the certificate is its own CA.
 */
export async function nodeServingCert(
  dir: string,
  ips: readonly string[] = ['127.0.0.1'],
): Promise<{ cert: Buffer; key: Buffer }> {
  const keyOut = path.join(dir, 'k.pem');
  const certOut = path.join(dir, 'c.pem');
  await selfSignedCert({
    keyOut,
    certOut,
    subject: '/CN=node',
    days: 1,
    ext: [`subjectAltName=${ips.map((ip) => `IP:${ip}`).join(',')}`],
  });
  return { cert: await readFile(certOut), key: await readFile(keyOut) };
}

/**
 * A NodeApiServer on 127.0.0.1 (a free port) for one node, 'n1' at 127.0.0.1, with `runtime` and `pods`
 * (looked up by namespace and name), without a cluster: a self-signed certificate for that address
 * (CN=node, written to `dir`) and goodTokenAuthApi behind its WebhookAuth.
 */
export async function startLocalNodeApi(
  dir: string,
  node: { runtime: Runtime; pods: Pod[]; stats?: NodeStatsSource },
): Promise<{ server: NodeApiServer; port: number; cert: Buffer }> {
  const registry = new NodeApiRegistry();
  registry.register({
    nodeName: 'n1',
    internalIP: '127.0.0.1',
    runtime: node.runtime,
    pods: () => node.pods,
    pod: (ns, name) => node.pods.find((p) => p.metadata.namespace === ns && p.metadata.name === name),
    ...(node.stats ? { stats: node.stats } : {}),
  });
  const { cert, key } = await nodeServingCert(dir);
  const server = new NodeApiServer({
    lookup: registry,
    auth: new WebhookAuth(goodTokenAuthApi, new RealClock()),
    tls: { cert, key },
    clock: new RealClock(),
    logger: silentLogger,
  });
  const port = await server.listen(0, '127.0.0.1');
  return { server, port, cert };
}

export interface UpgradeResult {
  /** The response's status code (101 when the upgrade went through). */
  status: number;
  /** Response head (status line and headers). */
  head: string;
  /** The response body of a refused upgrade. */
  body: string;
  /** WebSocket only: the data received per channel (k8s channel protocols: the first byte of a frame). */
  channels: Map<number, string>;
}

export interface UpgradeRequest {
  host: string;
  port: number;
  path: string;
  method?: string;
  /** TLS: the CA of the serving certificate, and the client's certificate and key. */
  ca: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** 'websocket' (default) or e.g. 'SPDY/3.1'. */
  upgrade?: string;
  /** WebSocket subprotocol, e.g. v4.channel.k8s.io. */
  protocol?: string;
  timeoutMs?: number;
}

/**
 * Sends one upgrade request and reads the answer: a refused upgrade's status and body, or, for a
 * WebSocket that was accepted, every frame until the server closes (without sending any data).
 */
export function upgradeRequest(r: UpgradeRequest): Promise<UpgradeResult> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: r.host, port: r.port, ca: r.ca, cert: r.cert, key: r.key });
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`upgrade request ${r.path}: no end after ${r.timeoutMs ?? 30_000} ms`));
    }, r.timeoutMs ?? 30_000);
    let buf = Buffer.alloc(0);
    sock.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    sock.on('secureConnect', () => {
      const upgrade = r.upgrade ?? 'websocket';
      const lines = [
        `${r.method ?? 'GET'} ${r.path} HTTP/1.1`,
        `Host: ${r.host}:${r.port}`,
        'Connection: Upgrade',
        `Upgrade: ${upgrade}`,
      ];
      if (upgrade === 'websocket') {
        lines.push('Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`);
        if (r.protocol) lines.push(`Sec-WebSocket-Protocol: ${r.protocol}`);
      }
      sock.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    sock.on('data', (d: Buffer) => (buf = Buffer.concat([buf, d])));
    sock.on('close', () => {
      clearTimeout(timer);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`upgrade request ${r.path}: no response head`));
      const head = buf.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      const rest = buf.subarray(end + 4);
      const channels = new Map<number, string>();
      if (status !== 101) return resolve({ status, head, body: rest.toString('utf8'), channels });
      try {
        for (const f of webSocketFrames(rest)) {
          if (f.opcode !== 1 && f.opcode !== 2) continue;
          if (f.payload.length === 0) continue;
          const ch = f.payload[0]!;
          channels.set(ch, (channels.get(ch) ?? '') + f.payload.subarray(1).toString('utf8'));
        }
      } catch (err) {
        return reject(err as Error);
      }
      resolve({ status, head, body: '', channels });
    });
  });
}

/** Unmasked server-to-client WebSocket frames (RFC 6455 section 5.2); a truncated last frame is dropped. */
export function webSocketFrames(b: Buffer): { opcode: number; payload: Buffer }[] {
  const frames: { opcode: number; payload: Buffer }[] = [];
  let i = 0;
  while (i + 2 <= b.length) {
    const opcode = b[i]! & 0x0f;
    let len = b[i + 1]! & 0x7f;
    const masked = (b[i + 1]! & 0x80) !== 0;
    let p = i + 2;
    if (len === 126) {
      if (p + 2 > b.length) break;
      len = b.readUInt16BE(p);
      p += 2;
    } else if (len === 127) {
      if (p + 8 > b.length) break;
      len = Number(b.readBigUInt64BE(p));
      p += 8;
    }
    if (masked) throw new Error('server sent a masked WebSocket frame');
    if (p + len > b.length) break;
    frames.push({ opcode, payload: b.subarray(p, p + len) });
    i = p + len;
  }
  return frames;
}

/**
 * A control plane whose API server trusts a serving CA of the test's own and dials nodes by InternalIP, a node
 * API on `ip`:10250 with a certificate of that CA, the operator with its nodes in the node API's registry, and
 * VirtualNode `node` (spec `spec`, its internalIP `ip`) Ready: what the node API integration files share.
 */
export interface NodeApiEnv {
  dir: string;
  servingCa: Buffer;
  cp: ControlPlane;
  client: KubeClient;
  registry: NodeApiRegistry;
  nodeApi: NodeApiServer;
  op: Operator;
  /** Stops what started, in reverse order, and removes `dir`. */
  stop(): Promise<void>;
}

export async function startNodeApiEnv(o: {
  node: string;
  ip: string;
  spec: Record<string, unknown>;
  followPollMs?: number;
  /** The operator's metrics, served on the node API's /metrics. */
  metrics?: Metrics;
}): Promise<NodeApiEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'nodeapi-env-'));
  const parts: { cp?: ControlPlane; client?: KubeClient; nodeApi?: NodeApiServer; op?: Operator } = {};
  const stop = async (): Promise<void> => {
    await parts.op?.stop();
    await parts.nodeApi?.close();
    parts.client?.close();
    await parts.cp?.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const pki = await servingPki(dir, [{ name: o.node, ip: o.ip }]);
    const cp = (parts.cp = await startControlPlane({ apiserverArgs: nodeApiApiserverArgs(pki.ca) }));
    const client = (parts.client = await adminClient(cp));
    const clock = new RealClock();
    const registry = new NodeApiRegistry();
    const nodeApi = (parts.nodeApi = await listenNodeApi({
      registry,
      client,
      clock,
      logger: silentLogger,
      tls: {
        cert: await readFile(pki.cert),
        key: await readFile(pki.key),
        // The API server's kubelet client certificate is signed by the cluster CA.
        clientCA: await readFile(path.join(cp.dir, 'pki', 'ca.crt')),
      },
      ip: o.ip,
      ...(o.followPollMs !== undefined ? { followPollMs: o.followPollMs } : {}),
      ...(o.metrics ? { metrics: o.metrics.registry } : {}),
    }));
    const op = (parts.op = await startTestOperator({
      client,
      clock,
      logger: silentLogger,
      nodeApi: registry,
      ...(o.metrics ? { metrics: o.metrics } : {}),
    }));
    await postVirtualNode(client, o.node, { ...o.spec, internalIP: o.ip });
    await waitNodeReady(client, o.node, 30_000);
    return { dir, servingCa: await readFile(pki.ca), cp, client, registry, nodeApi, op, stop };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

/** A running busybox container `c` of pod `podUID`, as the runtime lists it for the streaming handlers. */
export const runningContainer = (id: string, podSandboxId: string, podUID: string): Container => ({
  id,
  podSandboxId,
  metadata: { name: 'c', attempt: 0 },
  labels: { [PodUIDLabel]: podUID, [ContainerNameLabel]: 'c' },
  image: 'busybox',
  imageRef: 'x',
  state: 'running',
  createdAt: 1n,
  annotations: {},
});
