/**
 * The API server's audit log as tests read it: a policy file and an empty log in a temp dir, the
 * kube-apiserver flags that write it synchronously (blocking mode, so an event is in the file once the
 * request returned), and readers of the completed requests.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * pods/status writes at Metadata level (who wrote, when), then `extraRules` (YAML list items indented as
 * these), and nothing else.
 */
export function podStatusAuditPolicy(extraRules = ''): string {
  return `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [patch, update]
    resources:
      - group: ''
        resources: [pods/status]
${extraRules}  - level: None
`;
}

/** Only pods/status writes, at Metadata level (who wrote, when). */
export const POD_STATUS_AUDIT_POLICY = podStatusAuditPolicy();

export interface AuditEvent {
  verb: string;
  stage: string;
  userAgent?: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
  stageTimestamp: string;
  responseStatus?: { code?: number };
  /** At level Request and above. */
  requestObject?: unknown;
}

/**
 * Writes `policy` and an empty log under `dir`; returns the log's path and the flags for kube-apiserver.
 * `blocking` (default) writes each event before the response; `batch` buffers them (for thousands of
 * requests a test makes quickly; read the log only after a second or two).
 */
export async function auditLogIn(
  dir: string,
  policy: string,
  mode: 'blocking' | 'batch' = 'blocking',
): Promise<{ auditLog: string; apiserverArgs: string[] }> {
  const auditLog = path.join(dir, 'audit.log');
  const policyPath = path.join(dir, 'audit-policy.yaml');
  await writeFile(policyPath, policy);
  await writeFile(auditLog, '');
  return {
    auditLog,
    apiserverArgs: [
      `--audit-policy-file=${policyPath}`,
      `--audit-log-path=${auditLog}`,
      `--audit-log-mode=${mode}`,
    ],
  };
}

/** Every completed request in the log, in file order. */
export function completedRequests(auditLog: string): AuditEvent[] {
  return readFileSync(auditLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) => e.stage === 'ResponseComplete');
}

/** The pods/status writes of namespace `ns` that completed in [since, until). */
export function podStatusWrites(auditLog: string, ns: string, since: number, until = Infinity): AuditEvent[] {
  return completedRequests(auditLog).filter((e) => {
    const at = Date.parse(e.stageTimestamp);
    return (
      e.objectRef?.resource === 'pods' &&
      e.objectRef.subresource === 'status' &&
      e.objectRef.namespace === ns &&
      at >= since &&
      at < until
    );
  });
}
