/**
 * Pieces of the Prometheus text exposition format that the node API's hand-rendered families share
 * (src/kubelet/stats/resourcemetrics.ts, src/kubelet/prober/metrics.ts).
 */

/** A label value escaped as the text format wants (backslash, double quote, newline). */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** `{a="x",b="y"}` with the names in the order given (callers pass them sorted, as client_golang writes). */
export function labelSet(pairs: readonly (readonly [string, string])[]): string {
  if (pairs.length === 0) return '';
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}
