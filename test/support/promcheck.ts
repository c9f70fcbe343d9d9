/**
 * The node's /metrics read by an independent decoder: test/support/promcheck (Go, expfmt's protobuf decoder
 * and text parser, pinned in its go.mod and go.sum) built once from the Go module proxy and cached under
 * ~/.cache/kubelet-operator by the hash of its sources. Plus a NodeApiServer that serves a registry on
 * /metrics, without a cluster, and a GET with an Accept header that keeps the body's bytes.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, readFile, rename } from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Registry } from 'prom-client';
import { WebhookAuth } from '../../src/server/nodeapi/auth.js';
import { NodeApiRegistry } from '../../src/server/nodeapi/registry.js';
import { NodeApiServer } from '../../src/server/nodeapi/server.js';
import type { Runtime } from '../../src/runtime/types.js';
import { RealClock } from '../../src/util/clock.js';
import { silentLogger } from '../../src/util/logger.js';
import { goodTokenAuthApi, nodeServingCert } from './nodeapi.js';

const run = promisify(execFile);
const SOURCE = fileURLToPath(new URL('./promcheck/', import.meta.url));

/** The promcheck binary, built on first use (about a minute with a cold module cache). */
export async function promcheckBinary(): Promise<string> {
  const hash = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) hash.update(await readFile(path.join(SOURCE, f)));
  const dir = path.join(os.homedir(), '.cache', 'kubelet-operator', 'promcheck');
  const bin = path.join(dir, `promcheck-${hash.digest('hex').slice(0, 16)}`);
  try {
    await access(bin);
    return bin;
  } catch {
    // not built yet
  }
  await mkdir(dir, { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  await run('go', ['build', '-trimpath', '-o', tmp, '.'], {
    cwd: SOURCE,
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly -buildvcs=false' },
    timeout: 600_000,
  });
  await rename(tmp, bin);
  return bin;
}

/** A NodeApiServer for node n1 on 127.0.0.1 (a free port) serving `metrics` on /metrics. */
export async function startMetricsNodeApi(
  dir: string,
  metrics: Registry,
): Promise<{ server: NodeApiServer; port: number; cert: Buffer }> {
  const lookup = new NodeApiRegistry();
  lookup.register({
    nodeName: 'n1',
    internalIP: '127.0.0.1',
    runtime: {} as Runtime,
    pods: () => [],
    pod: () => undefined,
  });
  const { cert, key } = await nodeServingCert(dir);
  const server = new NodeApiServer({
    lookup,
    auth: new WebhookAuth(goodTokenAuthApi, new RealClock()),
    tls: { cert, key },
    clock: new RealClock(),
    logger: silentLogger,
    metrics,
  });
  const port = await server.listen(0, '127.0.0.1');
  return { server, port, cert };
}

/** GET /metrics on `host` with `accept` (none: no Accept header), as `token`. */
export function getMetrics(
  port: number,
  cert: Buffer,
  accept?: string,
  host = '127.0.0.1',
  token = 'good',
): Promise<{ status: number; contentType: string; body: Buffer }> {
  return new Promise((resolve, reject) => {
    https
      .get(
        {
          host,
          port,
          path: '/metrics',
          ca: cert,
          headers: { Authorization: `Bearer ${token}`, ...(accept !== undefined ? { Accept: accept } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              contentType: String(res.headers['content-type'] ?? ''),
              body: Buffer.concat(chunks),
            }),
          );
        },
      )
      .on('error', reject);
  });
}

/** Prometheus' Accept when it prefers the protobuf exposition (scrape_protocols with PrometheusProto first). */
export const PROMETHEUS_PROTOBUF_ACCEPT =
  'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.5,' +
  'application/openmetrics-text;version=1.0.0;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2';
