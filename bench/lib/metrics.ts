// The steady scenario's `--metrics-server` (issue #18): the operator process serves its node API, each bench
// VirtualNode has a loopback InternalIP of its own (127.1.x.y; Linux routes all of 127/8 to lo), and
// metrics-server (test/support/metricsserver.ts) scrapes every node's /metrics/resource at its own address.
// Afterwards: what the resource metrics API reports, and the cost of one scrape of one node measured from
// outside (sequential GETs over one kept-alive TLS connection, as metrics-server's Go client does).
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import path from 'node:path';
import type { KubeClient } from '../../src/kube/client.js';
import { METRICS_SERVER_USER } from '../../test/support/metricsserver.js';
import { signedLeaf } from '../../test/support/metricsserver-pki.js';
import { freePort } from './agents.js';
import type { BenchCluster } from './cluster.js';
import { percentile } from './stats.js';
import { duration, num } from './table.js';

/** A distinct loopback address per node index: 127.1.0.1 ... 127.1.0.250, 127.1.1.1, ... */
export function benchNodeIP(i: number): string {
  return `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
}

export interface BenchNodeApi {
  /** Node name -> its InternalIP. */
  ips: Map<string, string>;
  port: number;
  /** The cluster CA (signs the serving certificate and the scraper's client certificate). */
  caFile: string;
  /** A client certificate as METRICS_SERVER_USER (RBAC get nodes/metrics, from startMetricsServer). */
  client: { cert: string; key: string };
  /** Flags for the operator process. */
  operatorArgs: string[];
}

/** A key and certificate signed by the control plane's CA, in the run's scratch dir. */
function signedByClusterCA(
  bc: BenchCluster,
  name: string,
  subject: string,
  ext: string[],
): Promise<{ cert: string; key: string }> {
  const pki = path.join(bc.cp.dir, 'pki');
  return signedLeaf(
    bc.dir,
    name,
    subject,
    { cert: path.join(pki, 'ca.crt'), key: path.join(pki, 'ca.key') },
    ['basicConstraints=critical,CA:FALSE', ...ext],
  );
}

/**
 * The node API's serving certificate (one, its SANs every node's InternalIP, signed by the cluster CA, which
 * metrics-server verifies it against), a scraper's client certificate, a free port, and the operator flags.
 * The node API listens on 0.0.0.0: one listener cannot bind 100 loopback addresses, and the node API routes
 * by the local address of each connection. Only loopback addresses are ever dialled, and every request needs
 * a client certificate of the cluster CA or a token.
 */
export async function prepareNodeApi(bc: BenchCluster, nodes: readonly string[]): Promise<BenchNodeApi> {
  const ips = new Map(nodes.map((n, i) => [n, benchNodeIP(i)]));
  const sans = [...ips.values()].map((ip) => `IP:${ip}`).join(',');
  const [serving, client, port] = await Promise.all([
    signedByClusterCA(bc, 'node-api-serving', '/CN=kubelet-operator-bench-node-api', [
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=serverAuth',
      `subjectAltName=${sans}`,
    ]),
    signedByClusterCA(bc, 'node-api-scraper', `/CN=${METRICS_SERVER_USER}`, [
      'keyUsage=critical,digitalSignature',
      'extendedKeyUsage=clientAuth',
    ]),
    freePort(),
  ]);
  const caFile = path.join(bc.cp.dir, 'pki', 'ca.crt');
  return {
    ips,
    port,
    caFile,
    client,
    operatorArgs: [
      `--node-api-cert-file=${serving.cert}`,
      `--node-api-key-file=${serving.key}`,
      `--node-api-client-ca-file=${caFile}`,
      '--node-api-address=0.0.0.0',
      `--node-api-port=${port}`,
    ],
  };
}

interface MetricsList {
  items?: { metadata?: { name?: string; namespace?: string } }[];
}

/** Pods of `namespace` and nodes of `nodes` that the resource metrics API (metrics-server) reports now. */
export async function metricsApiCoverage(
  driver: KubeClient,
  namespace: string,
  nodes: readonly string[],
): Promise<{ pods: number; nodes: number; listMs: number }> {
  const t0 = Date.now();
  const [p, n] = await Promise.all([
    driver.request<MetricsList>({ method: 'GET', path: '/apis/metrics.k8s.io/v1beta1/pods' }),
    driver.request<MetricsList>({ method: 'GET', path: '/apis/metrics.k8s.io/v1beta1/nodes' }),
  ]);
  const want = new Set(nodes);
  return {
    pods: (p.items ?? []).filter((i) => i.metadata?.namespace === namespace).length,
    nodes: (n.items ?? []).filter((i) => want.has(i.metadata?.name ?? '')).length,
    listMs: Date.now() - t0,
  };
}

export interface ScrapeCost {
  node: string;
  url: string;
  /** Sequential GETs timed (after one untimed GET that opens the connection). */
  n: number;
  /** The first GET: TLS handshake, client certificate and authorization (SubjectAccessReview, cached). */
  firstMs: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  bodyBytes: number;
  /** pod_cpu_usage_seconds_total series in the body: the pods one scrape reports. */
  podSeries: number;
  status: number;
}

/** GET `url` over `agent`; the whole body read. */
function get(url: string, agent: https.Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { agent, timeout: 30_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)));
    req.on('error', reject);
  });
}

/**
 * `n` sequential GETs of https://<node's IP>:<port>/metrics/resource as METRICS_SERVER_USER over one
 * kept-alive connection, as metrics-server scrapes: wall time per GET, from the request to the last byte.
 */
export async function measureScrapeCost(api: BenchNodeApi, node: string, n = 20): Promise<ScrapeCost> {
  const ip = api.ips.get(node);
  if (!ip) throw new Error(`no InternalIP for node ${node}`);
  const [ca, cert, key] = await Promise.all([
    readFile(api.caFile),
    readFile(api.client.cert),
    readFile(api.client.key),
  ]);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca, cert, key });
  const url = `https://${ip}:${api.port}/metrics/resource`;
  try {
    let t = performance.now();
    let res = await get(url, agent);
    const firstMs = performance.now() - t;
    if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}: ${res.body.slice(0, 300)}`);
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      t = performance.now();
      res = await get(url, agent);
      times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    return {
      node,
      url,
      n,
      firstMs,
      p50Ms: percentile(times, 50),
      p99Ms: percentile(times, 99),
      maxMs: times[times.length - 1] ?? Number.NaN,
      bodyBytes: Buffer.byteLength(res.body),
      podSeries: res.body.split('\n').filter((l) => l.startsWith('pod_cpu_usage_seconds_total{')).length,
      status: res.status,
    };
  } finally {
    agent.destroy();
  }
}

/** What the steady table reports about metrics-server (undefined without --metrics-server). */
export interface MetricsServerRun {
  resolutionSeconds: number;
  /** From the call to the APIService being Available. */
  startMs: number;
  pods: number;
  podsWithMetrics: number;
  nodes: number;
  nodesWithMetrics: number;
  /** The two lists (pods, nodes) through the aggregation layer, in parallel. */
  metricsListMs: number;
  /** metrics-server's own process over the hold. */
  cpuSec: number;
  rssEndMiB: number;
  scrape: ScrapeCost;
}

/**
 * At the end of the hold: what the resource metrics API reports, then `scrapes` GETs of the first node's
 * /metrics/resource (after the hold's figures are taken, so they do not count in them).
 */
export async function metricsServerRun(o: {
  driver: KubeClient;
  api: BenchNodeApi;
  namespace: string;
  nodes: readonly string[];
  pods: number;
  resolutionSeconds: number;
  startMs: number;
  usage: { cpuSec: number; rssEndMiB: number };
  scrapes?: number;
}): Promise<MetricsServerRun> {
  const cov = await metricsApiCoverage(o.driver, o.namespace, o.nodes);
  const scrape = await measureScrapeCost(o.api, o.nodes[0]!, o.scrapes ?? 20);
  return {
    resolutionSeconds: o.resolutionSeconds,
    startMs: o.startMs,
    pods: o.pods,
    podsWithMetrics: cov.pods,
    nodes: o.nodes.length,
    nodesWithMetrics: cov.nodes,
    metricsListMs: cov.listMs,
    cpuSec: o.usage.cpuSec,
    rssEndMiB: o.usage.rssEndMiB,
    scrape,
  };
}

/** The steady table's rows about metrics-server: one row when it was off. */
export function metricsServerRows(m: MetricsServerRun | undefined, holdMs: number): string[][] {
  if (!m) return [['metrics-server', 'off']];
  const s = m.scrape;
  const core = num((m.cpuSec / (holdMs / 1000)) * 100, 1, '% of a core');
  return [
    ['metrics-server', `on, every ${m.resolutionSeconds} s (Available after ${duration(m.startMs)})`],
    ['pods in metrics.k8s.io (end of hold)', `${num(m.podsWithMetrics)} of ${num(m.pods)}`],
    ['nodes in metrics.k8s.io (end of hold)', `${num(m.nodesWithMetrics)} of ${num(m.nodes)}`],
    ['metrics API lists (pods + nodes)', duration(m.metricsListMs)],
    ['metrics-server CPU / RSS (hold)', `${num(m.cpuSec, 1, 's')} (${core}) / ${num(m.rssEndMiB, 0, 'MiB')}`],
    [
      `one scrape of ${s.node} (${num(s.podSeries)} pods) p50 / p99`,
      `${duration(s.p50Ms)} / ${duration(s.p99Ms)} (${s.n} GETs)`,
    ],
    ['  first GET (new TLS connection)', duration(s.firstMs)],
    ['  /metrics/resource body', num(s.bodyBytes / 1024, 1, 'KiB')],
  ];
}
