/**
 * `/metrics/probes`: the kubelet's per-container probe counter, `prober_probe_total`, labelled with the
 * container, pod, namespace, pod UID, probe type (`Liveness`, `Readiness`, `Startup`) and result
 * (`successful`, `failed`, `unknown`), as the kubelet serves it on that path. A pod's series go with the
 * pod (forget), as the kubelet deletes a worker's series when the worker stops.
 *
 * Kept compact because every probed container of every pod has an entry: one flat object per container
 * and probe type holding its three counts, chained per pod, with every string shared with the pod object.
 * prom-client is not used here: a labelled child per container would cost several objects each, and one
 * node's series are rendered in one pass anyway.
 */
import type { Pod } from '../../api/core.js';
import { labelSet } from '../../util/promtext.js';
import type { ProbeType } from './types.js';

export type ProbeMetricResult = 'successful' | 'failed' | 'unknown';

export const ProberProbeTotal = 'prober_probe_total';

const TYPE_LABEL: Record<ProbeType, string> = {
  liveness: 'Liveness',
  readiness: 'Readiness',
  startup: 'Startup',
};
const RESULTS: readonly ProbeMetricResult[] = ['successful', 'failed', 'unknown'];

/**
 * The counts of one container and probe type of one pod. The first row of a pod carries the pod's
 * namespace and name for all of them (as first observed); `next` chains the pod's further rows in the
 * order they were first observed. Counts only grow.
 */
interface Row extends Record<ProbeMetricResult, number> {
  readonly namespace: string;
  readonly name: string;
  readonly container: string;
  readonly probeType: ProbeType;
  next: Row | undefined;
}

export class ProbeMetrics {
  /** Pod UID -> the pod's first row. */
  private readonly byPod = new Map<string, Row>();

  observe(probeType: ProbeType, result: ProbeMetricResult, pod: Pod, container: string): void {
    const uid = pod.metadata?.uid ?? '';
    let row = this.byPod.get(uid);
    if (!row) {
      row = newRow(pod, container, probeType);
      this.byPod.set(uid, row);
    } else {
      while (row.container !== container || row.probeType !== probeType) {
        if (!row.next) {
          row.next = newRow(pod, container, probeType);
        }
        row = row.next;
      }
    }
    row[result]++;
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
    for (const [uid, first] of this.byPod) {
      for (let row: Row | undefined = first; row; row = row.next) {
        for (const result of RESULTS) {
          if (row[result] === 0) continue;
          const labels = labelSet([
            ['container', row.container],
            ['namespace', first.namespace],
            ['pod', first.name],
            ['pod_uid', uid],
            ['probe_type', TYPE_LABEL[row.probeType]],
            ['result', result],
          ]);
          lines.push(`${ProberProbeTotal}${labels} ${row[result]}`);
        }
      }
    }
    return `${lines.join('\n')}\n`;
  }
}

/** A row with zero counts; the namespace and name of later rows are unused but keep one object shape. */
function newRow(pod: Pod, container: string, probeType: ProbeType): Row {
  return {
    namespace: pod.metadata?.namespace ?? '',
    name: pod.metadata?.name ?? '',
    container,
    probeType,
    successful: 0,
    failed: 0,
    unknown: 0,
    next: undefined,
  };
}
