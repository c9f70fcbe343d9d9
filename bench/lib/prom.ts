// Reading a Prometheus text exposition (our operator's /metrics). Pure.

/**
 * Sum of the samples of metric `name` whose labels include every pair of `labels`; NaN when none matches.
 * Only the exact name matches (`foo` does not match `foo_total` or `foo_bucket`).
 */
export function promValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
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
    const have: Record<string, string> = {};
    for (const m of labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) have[m[1]!] = m[2]!;
    if (!Object.entries(labels).every(([k, v]) => have[k] === v)) continue;
    const v = Number(valueText.split(' ')[0]);
    if (Number.isNaN(v)) continue;
    sum += v;
    found = true;
  }
  return found ? sum : Number.NaN;
}
