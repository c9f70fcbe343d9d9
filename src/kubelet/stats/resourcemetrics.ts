/**
 * `/metrics/resource`: the kubelet's resource metrics, what metrics-server scrapes from every node. Rendered
 * from a Summary (summary.ts) in the Prometheus text format, each sample stamped with the time its reading
 * was taken (metrics-server computes CPU rates from those times, not from when it scraped).
 *
 * The metric names, types and label names are the kubelet's (a unit test holds them against the list the
 * kubelet documents); the help texts are ours. A figure the Summary lacks is left out, as the kubelet does.
 * `scrape_error` (deprecated in the kubelet, still served) and `resource_scrape_error` are 1 when the
 * runtime could not be read; the rest is then empty.
 */
import { labelSet as labels } from '../../util/promtext.js';
import type { Summary } from './types.js';

interface Family {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  samples: string[];
}

export const ResourceMetricNames = {
  nodeCpu: 'node_cpu_usage_seconds_total',
  nodeMemory: 'node_memory_working_set_bytes',
  containerCpu: 'container_cpu_usage_seconds_total',
  containerMemory: 'container_memory_working_set_bytes',
  containerStart: 'container_start_time_seconds',
  podCpu: 'pod_cpu_usage_seconds_total',
  podMemory: 'pod_memory_working_set_bytes',
  scrapeError: 'scrape_error',
  resourceScrapeError: 'resource_scrape_error',
} as const;

function sample(name: string, lbls: string, value: number, timeMs?: number): string {
  const ts = timeMs === undefined ? '' : ` ${Math.floor(timeMs)}`;
  return `${name}${lbls} ${formatValue(value)}${ts}`;
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** The exposition text for `summary`, or only the scrape error when the summary could not be built. */
export function renderResourceMetrics(summary: Summary | undefined): string {
  const N = ResourceMetricNames;
  const f = (name: string, type: Family['type'], help: string): Family => ({ name, type, help, samples: [] });
  const nodeCpu = f(N.nodeCpu, 'counter', 'CPU time the node used, in core-seconds, since it started.');
  const nodeMem = f(N.nodeMemory, 'gauge', 'Working set memory of the node, in bytes.');
  const ctrCpu = f(N.containerCpu, 'counter', 'CPU time the container used, in core-seconds.');
  const ctrMem = f(N.containerMemory, 'gauge', 'Working set memory of the container, in bytes.');
  const ctrStart = f(
    N.containerStart,
    'gauge',
    'When the container started, in seconds since the Unix epoch.',
  );
  const podCpu = f(N.podCpu, 'counter', 'CPU time the pod used, in core-seconds.');
  const podMem = f(N.podMemory, 'gauge', 'Working set memory of the pod, in bytes.');
  const err = summary === undefined ? 1 : 0;
  const scrapeErr = f(
    N.scrapeError,
    'gauge',
    '1 when reading the container runtime failed, else 0 (deprecated name).',
  );
  const resScrapeErr = f(
    N.resourceScrapeError,
    'gauge',
    '1 when reading the container runtime failed, else 0.',
  );
  scrapeErr.samples.push(sample(N.scrapeError, '', err));
  resScrapeErr.samples.push(sample(N.resourceScrapeError, '', err));

  if (summary) {
    const n = summary.node;
    if (n.cpu?.usageCoreNanoSeconds !== undefined)
      nodeCpu.samples.push(sample(N.nodeCpu, '', n.cpu.usageCoreNanoSeconds / 1e9, n.cpu.time));
    if (n.memory?.workingSetBytes !== undefined)
      nodeMem.samples.push(sample(N.nodeMemory, '', n.memory.workingSetBytes, n.memory.time));
    for (const p of summary.pods) {
      const { name: pod, namespace } = p.podRef;
      for (const c of p.containers) {
        const l = labels([
          ['container', c.name],
          ['namespace', namespace],
          ['pod', pod],
        ]);
        if (c.startTime > 0)
          ctrStart.samples.push(sample(N.containerStart, l, c.startTime / 1000, c.startTime));
        if (c.cpu?.usageCoreNanoSeconds !== undefined)
          ctrCpu.samples.push(sample(N.containerCpu, l, c.cpu.usageCoreNanoSeconds / 1e9, c.cpu.time));
        if (c.memory?.workingSetBytes !== undefined)
          ctrMem.samples.push(sample(N.containerMemory, l, c.memory.workingSetBytes, c.memory.time));
      }
      const l = labels([
        ['namespace', namespace],
        ['pod', pod],
      ]);
      if (p.cpu?.usageCoreNanoSeconds !== undefined)
        podCpu.samples.push(sample(N.podCpu, l, p.cpu.usageCoreNanoSeconds / 1e9, p.cpu.time));
      if (p.memory?.workingSetBytes !== undefined)
        podMem.samples.push(sample(N.podMemory, l, p.memory.workingSetBytes, p.memory.time));
    }
  }

  const out: string[] = [];
  for (const fam of [ctrCpu, ctrMem, ctrStart, nodeCpu, nodeMem, podCpu, podMem, resScrapeErr, scrapeErr]) {
    out.push(`# HELP ${fam.name} ${fam.help}`, `# TYPE ${fam.name} ${fam.type}`, ...fam.samples);
  }
  return `${out.join('\n')}\n`;
}
