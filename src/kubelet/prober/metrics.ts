/**
 * `/metrics/probes`: the kubelet's per-container probe counter, `prober_probe_total`, labelled with the
 * container, pod, namespace, pod UID, probe type (`Liveness`, `Readiness`, `Startup`) and result
 * (`successful`, `failed`, `unknown`), as the kubelet serves it on that path. A pod's series go with the
 * pod (forget), as the kubelet deletes a worker's series when the worker stops.
 *
 * Kept compact because every probed container of every pod has an entry: three numbers per container and
 * probe type, strings shared with the pod object. prom-client is not used here: a labelled child per
 * container would cost several objects each, and one node's series are rendered in one pass anyway.
 */
import type { Pod } from '../../api/core.js';
import { labelSet } from '../../util/promtext.js';
import type { ProbeType } from './types.js';

export type ProbeMetricResult = 'successful' | 'failed' | 'unknown';

export const ProberProbeTotal = 'prober_probe_total';

const TYPES: readonly ProbeType[] = ['liveness', 'readiness', 'startup'];
const TYPE_LABEL: Record<ProbeType, string> = {
  liveness: 'Liveness',
  readiness: 'Readiness',
  startup: 'Startup',
};
const RESULTS: readonly ProbeMetricResult[] = ['successful', 'failed', 'unknown'];

interface PodProbes {
  namespace: string;
  name: string;
  /** `<container>\0<probe type index>` -> counts by RESULTS index. */
  counts: Map<string, [number, number, number]>;
}

export class ProbeMetrics {
  private readonly byPod = new Map<string, PodProbes>();

  observe(probeType: ProbeType, result: ProbeMetricResult, pod: Pod, container: string): void {
    const uid = pod.metadata?.uid ?? '';
    let p = this.byPod.get(uid);
    if (!p) {
      p = { namespace: pod.metadata?.namespace ?? '', name: pod.metadata?.name ?? '', counts: new Map() };
      this.byPod.set(uid, p);
    }
    const key = `${container}\0${TYPES.indexOf(probeType)}`;
    let c = p.counts.get(key);
    if (!c) {
      c = [0, 0, 0];
      p.counts.set(key, c);
    }
    c[RESULTS.indexOf(result) as 0 | 1 | 2]++;
  }

  /** Drops a pod's series (the pod is gone). */
  forget(uid: string): void {
    this.byPod.delete(uid);
  }

  size(): number {
    return this.byPod.size;
  }

  /** The exposition text; results never seen for a container are not written (the kubelet's are lazy too). */
  render(): string {
    const lines = [
      `# HELP ${ProberProbeTotal} Probe executions of each container, by probe type and result.`,
      `# TYPE ${ProberProbeTotal} counter`,
    ];
    for (const [uid, p] of this.byPod) {
      for (const [key, counts] of p.counts) {
        const sep = key.lastIndexOf('\0');
        const container = key.slice(0, sep);
        const type = TYPE_LABEL[TYPES[Number(key.slice(sep + 1))]!];
        for (let i = 0; i < RESULTS.length; i++) {
          if (counts[i] === 0) continue;
          const labels = labelSet([
            ['container', container],
            ['namespace', p.namespace],
            ['pod', p.name],
            ['pod_uid', uid],
            ['probe_type', type],
            ['result', RESULTS[i]!],
          ]);
          lines.push(`${ProberProbeTotal}${labels} ${counts[i]}`);
        }
      }
    }
    return `${lines.join('\n')}\n`;
  }
}
