/**
 * The Summary as the kubelet writes it on `/stats/summary`: every `time` and `startTime` (milliseconds in
 * memory) as an RFC 3339 string in UTC with second precision, as Kubernetes serialises its times.
 */
import { formatRFC3339 } from '../../util/rfc3339.js';
import type { Summary } from './types.js';

export function summaryJSON(summary: Summary): string {
  return JSON.stringify(summary, (key, value: unknown) =>
    (key === 'time' || key === 'startTime') && typeof value === 'number' ? formatRFC3339(value) : value,
  );
}
