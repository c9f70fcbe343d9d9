/** A plain object (not null, not an array): the shape of a decoded JSON or YAML mapping. */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
