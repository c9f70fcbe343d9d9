// Counting API requests from the API server's side: kube-apiserver writes a Metadata-level audit log (one
// JSON event per line), and each agent under test has its own client identity. The same count applies to
// our operator and to kwok, so neither side's own bookkeeping is trusted.
//
// An ordinary request is counted once, at stage ResponseComplete (or Panic). A watch is counted when it
// starts (ResponseStarted), because a long watch completes only when it ends, possibly after the window.
//
// Events are left out of the log unless asked for, as Kubernetes' own audit policy for production control
// planes (cluster/gce's) leaves them out for their cost: an audited Event cost the API server about 0.1 ms
// more, a seventh of the create (bench:write-cost with and without --audit-events), so auditing the Events
// charged the benchmark's own bookkeeping to the side that writes them, as a kubelet does. They are counted
// from the Event objects instead (tallyEvents: one create per object, count - 1 patches), outside every window.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

/**
 * Audit policy: nothing from the users in `ignoreUsers`, nothing about core Events unless `events`, Metadata
 * for everything else.
 */
export function auditPolicy(ignoreUsers: readonly string[], opts: { events?: boolean } = {}): string {
  return [
    'apiVersion: audit.k8s.io/v1',
    'kind: Policy',
    'omitStages: [RequestReceived]',
    'rules:',
    `  - level: None`,
    `    users: [${ignoreUsers.map((u) => JSON.stringify(u)).join(', ')}]`,
    '  - level: None',
    '    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/metrics"]',
    ...(opts.events ? [] : ['  - level: None', '    resources: [{ group: "", resources: ["events"] }]']),
    '  - level: Metadata',
    '',
  ].join('\n');
}

/** The fields of one audit event that the counts need. */
export interface AuditRecord {
  user: string;
  verb: string;
  /** `pods`, `pods/status`, `leases`, ...; the request URI for a non-resource request. */
  resource: string;
  stage: string;
  /** requestReceivedTimestamp, epoch ms. */
  atMs: number;
  code: number;
}

interface RawEvent {
  stage?: string;
  verb?: string;
  requestURI?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string };
  responseStatus?: { code?: number };
  requestReceivedTimestamp?: string;
}

/** One line of the audit log; undefined for a line that is not an audit event. */
export function parseAuditLine(line: string): AuditRecord | undefined {
  if (!line.startsWith('{')) return undefined;
  let e: RawEvent;
  try {
    e = JSON.parse(line) as RawEvent;
  } catch {
    return undefined;
  }
  if (!e.stage || !e.verb || !e.requestReceivedTimestamp) return undefined;
  const ref = e.objectRef;
  const resource = ref?.resource
    ? ref.subresource
      ? `${ref.resource}/${ref.subresource}`
      : ref.resource
    : (e.requestURI ?? '');
  return {
    user: e.user?.username ?? '',
    verb: e.verb,
    resource,
    stage: e.stage,
    atMs: Date.parse(e.requestReceivedTimestamp),
    code: e.responseStatus?.code ?? 0,
  };
}

/** Whether this event is the one that counts its request (see the module comment). */
export function countsRequest(r: AuditRecord): boolean {
  if (r.verb === 'watch') return r.stage === 'ResponseStarted';
  return r.stage === 'ResponseComplete' || r.stage === 'Panic';
}

export interface RequestCounts {
  total: number;
  /** `verb resource` -> count, e.g. `patch pods/status`. */
  byKind: Record<string, number>;
}

/** Requests by `user` received in [fromMs, toMs). */
export function countRequests(
  records: Iterable<AuditRecord>,
  user: string,
  fromMs: number,
  toMs: number,
): RequestCounts {
  const byKind: Record<string, number> = {};
  let total = 0;
  for (const r of records) {
    if (r.user !== user || r.atMs < fromMs || r.atMs >= toMs || !countsRequest(r)) continue;
    total++;
    const k = `${r.verb} ${r.resource}`;
    byKind[k] = (byKind[k] ?? 0) + 1;
  }
  return { total, byKind };
}

/** Sum of the counts whose kind matches `pattern` (e.g. /^patch pods\/status$/). */
export function countOf(counts: RequestCounts, pattern: RegExp): number {
  let n = 0;
  for (const [k, v] of Object.entries(counts.byKind)) if (pattern.test(k)) n += v;
  return n;
}

/** The kinds that are pod status writes: `patch` or `update` of `pods/status`. */
export const STATUS_WRITE = /^(patch|update) pods\/status$/;

/** Event writes (audited only with `events`, see auditPolicy). */
export const EVENT_WRITE = /^(create|patch) events$/;

/** The requests that are not Event writes (the same whether the log recorded Events or not). */
export function requestsBesidesEvents(counts: RequestCounts): number {
  return counts.total - countOf(counts, EVENT_WRITE);
}

/** Requests per pod: all of them, or those whose kind matches `pattern`; NaN without counts. */
export function requestsPerPod(c: RequestCounts | undefined, pods: number, pattern?: RegExp): number {
  return c ? (pattern ? countOf(c, pattern) : c.total) / pods : Number.NaN;
}

/** Reads every counting record of an audit log file (other stages are dropped to keep memory small). */
export async function readAuditLog(file: string): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  const rl = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
  for await (const line of rl) {
    const r = parseAuditLine(line);
    if (r && countsRequest(r)) out.push(r);
  }
  return out;
}
