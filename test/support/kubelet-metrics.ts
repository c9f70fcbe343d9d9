/**
 * The metric families the kubelet documents for `/metrics/resource` and `/metrics/probes` (the Kubernetes
 * metrics reference: name, type, label names), written down here as facts to hold our output against, and a
 * small parser of the Prometheus text format for the tests.
 */
export interface DocumentedFamily {
  name: string;
  type: 'counter' | 'gauge';
  labels: string[];
}

export const KubeletResourceMetrics: readonly DocumentedFamily[] = [
  { name: 'container_cpu_usage_seconds_total', type: 'counter', labels: ['container', 'namespace', 'pod'] },
  { name: 'container_memory_working_set_bytes', type: 'gauge', labels: ['container', 'namespace', 'pod'] },
  { name: 'container_start_time_seconds', type: 'gauge', labels: ['container', 'namespace', 'pod'] },
  { name: 'node_cpu_usage_seconds_total', type: 'counter', labels: [] },
  { name: 'node_memory_working_set_bytes', type: 'gauge', labels: [] },
  { name: 'pod_cpu_usage_seconds_total', type: 'counter', labels: ['namespace', 'pod'] },
  { name: 'pod_memory_working_set_bytes', type: 'gauge', labels: ['namespace', 'pod'] },
  { name: 'resource_scrape_error', type: 'gauge', labels: [] },
  { name: 'scrape_error', type: 'gauge', labels: [] },
];

export const KubeletProbeMetrics: readonly DocumentedFamily[] = [
  {
    name: 'prober_probe_total',
    type: 'counter',
    labels: ['container', 'namespace', 'pod', 'pod_uid', 'probe_type', 'result'],
  },
];

export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestampMs?: number;
}

export interface ParsedExposition {
  types: Map<string, string>;
  samples: ParsedSample[];
}

/** Parses the text format (HELP, TYPE and sample lines); throws on a line it cannot read. */
export function parseExposition(text: string): ParsedExposition {
  const types = new Map<string, string>();
  const samples: ParsedSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue;
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) {
      types.set(t[1]!, t[2]!);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;
    let l: RegExpExecArray | null;
    while ((l = re.exec(m[2] ?? '')) !== null)
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const s: ParsedSample = { name: m[1]!, labels, value: Number(m[3]) };
    if (m[4] !== undefined) s.timestampMs = Number(m[4]);
    samples.push(s);
  }
  return { types, samples };
}
