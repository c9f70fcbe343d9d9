/**
 * The node API's resource-usage paths, as the kubelet serves them:
 *
 * - `/stats/summary` (GET, or POST as older clients send it): the Summary JSON (src/kubelet/stats/json.ts);
 *   `?only_cpu_and_memory=true` leaves out filesystems, networks, volumes and the system containers but the
 *   pods' cpu and memory, as the kubelet does for that query.
 * - `/metrics/resource`: the resource metrics metrics-server scrapes. A runtime that cannot be read gives a
 *   200 with `resource_scrape_error 1` and no samples, as the kubelet's collector reports it.
 * - `/metrics/probes`: `prober_probe_total` per container.
 *
 * Authorization happened before (subresource `stats` or `metrics`, auth.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { summaryJSON } from '../../kubelet/stats/json.js';
import { renderResourceMetrics } from '../../kubelet/stats/resourcemetrics.js';
import type { Summary } from '../../kubelet/stats/types.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import { HttpError } from './httperror.js';
import type { NodeApiTarget } from './registry.js';

const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

export const StatsPaths = ['/stats/summary', '/metrics/resource', '/metrics/probes'] as const;

export function isStatsPath(path: string): boolean {
  return (StatsPaths as readonly string[]).includes(path) || path === '/stats/summary/';
}

/** Only what `only_cpu_and_memory` asks for: node and pod cpu and memory, container cpu and memory. */
function cpuAndMemoryOnly(s: Summary): Summary {
  return {
    node: {
      nodeName: s.node.nodeName,
      startTime: s.node.startTime,
      ...(s.node.cpu ? { cpu: s.node.cpu } : {}),
      ...(s.node.memory ? { memory: s.node.memory } : {}),
    },
    pods: s.pods.map((p) => ({
      podRef: p.podRef,
      startTime: p.startTime,
      containers: p.containers.map((c) => ({
        name: c.name,
        startTime: c.startTime,
        ...(c.cpu ? { cpu: c.cpu } : {}),
        ...(c.memory ? { memory: c.memory } : {}),
      })),
      ...(p.cpu ? { cpu: p.cpu } : {}),
      ...(p.memory ? { memory: p.memory } : {}),
    })),
  };
}

export async function serveStats(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: URLSearchParams,
  node: NodeApiTarget | undefined,
  logger: Logger,
): Promise<void> {
  const stats = node?.stats;
  if (!stats) throw new HttpError(404, `no handler for ${path}`);
  const isSummary = path.startsWith('/stats/');
  const allowed = isSummary ? ['GET', 'POST'] : ['GET'];
  if (!allowed.includes(req.method ?? 'GET') && req.method !== 'HEAD')
    throw new HttpError(405, `method ${req.method} not allowed`);

  if (isSummary) {
    const only = query.get('only_cpu_and_memory');
    if (only !== null && only !== 'true' && only !== 'false')
      throw new HttpError(400, `invalid only_cpu_and_memory ${JSON.stringify(only)}: must be true or false`);
    const summary = await stats.summary({ fs: only !== 'true' });
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(summaryJSON(only === 'true' ? cpuAndMemoryOnly(summary) : summary));
    return;
  }
  let text: string;
  if (path === '/metrics/probes') text = stats.probeMetrics();
  else {
    let summary: Summary | undefined;
    try {
      summary = await stats.summary({ fs: false });
    } catch (err) {
      logger.warn('node API: resource metrics: reading the runtime failed', {
        node: node.nodeName,
        error: errorMessage(err),
      });
    }
    text = renderResourceMetrics(summary);
  }
  res.writeHead(200, { 'Content-Type': PROMETHEUS_TEXT });
  res.end(text);
}
