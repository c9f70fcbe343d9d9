// Reading a Prometheus text exposition (our operator's /metrics, kube-apiserver's). Pure.

/** One sample of a metric: its labels and value. */
export interface PromSample {
  labels: Record<string, string>;
  value: number;
}

/**
 * The samples of metric `name` (only the exact name: `foo` does not match `foo_total` or `foo_bucket`), with
 * their labels; a line whose value is not a number is left out.
 */
export function promSamples(text: string, name: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || line.startsWith('#')) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{') continue;
    let labelText = '';
    let valueText = rest.trim();
    if (rest[0] === '{') {
      const end = rest.lastIndexOf('}');
      labelText = rest.slice(1, end);
      valueText = rest.slice(end + 1).trim();
    }
    const labels: Record<string, string> = {};
    for (const m of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[m[1]!] = m[2]!;
    const value = Number(valueText.split(' ')[0]);
    if (!Number.isNaN(value)) out.push({ labels, value });
  }
  return out;
}

/**
 * Sum of the samples of metric `name` whose labels include every pair of `labels`; NaN when none matches.
 * Only the exact name matches (`foo` does not match `foo_total` or `foo_bucket`).
 */
export function promValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const matching = promSamples(text, name).filter((s) =>
    Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  return matching.length ? matching.reduce((a, s) => a + s.value, 0) : Number.NaN;
}
