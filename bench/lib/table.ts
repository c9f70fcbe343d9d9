// Aligned text tables for the benchmark reports: the first column left-aligned, the others right-aligned,
// every value formatted with its unit before it gets here.

/** Renders rows under a header with a rule line; short rows are padded with empty cells. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const cols = Math.max(header.length, ...rows.map((r) => r.length));
  const cell = (r: readonly string[], i: number): string => r[i] ?? '';
  const widths = Array.from({ length: cols }, (_, i) =>
    Math.max(cell(header, i).length, ...rows.map((r) => cell(r, i).length)),
  );
  const line = (r: readonly string[]): string =>
    widths
      .map((w, i) => (i === 0 ? cell(r, i).padEnd(w) : cell(r, i).padStart(w)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** A number with a fixed count of decimals and a unit; `n/a` for NaN or undefined. */
export function num(v: number | undefined, digits = 0, unit = ''): string {
  if (v === undefined || !Number.isFinite(v)) return 'n/a';
  const s = v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return unit ? `${s} ${unit}` : s;
}

/** Milliseconds, shown as ms below 10 s and as s above. */
export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return 'n/a';
  return ms < 10_000 ? num(ms, ms < 100 ? 1 : 0, 'ms') : num(ms / 1000, 1, 's');
}

/** A ratio as `1.23x`; `n/a` when not finite. */
export function times(r: number): string {
  return Number.isFinite(r) ? `${r.toFixed(2)}x` : 'n/a';
}
