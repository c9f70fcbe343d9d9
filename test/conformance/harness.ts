/**
 * Loads case files and evaluates cases through the per-area interpreters. Used by the CLI (runner.ts)
 * and by the mocha suite, so both count the same things.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { interpreters } from './areas/index.js';
import { Uninterpretable, type CaseFile, type ConformanceCase, type Verdict } from './types.js';

export const DEFAULT_CASE_FILE = fileURLToPath(new URL('./kubelet-cases.yaml', import.meta.url));

export interface CaseResult {
  id: string;
  area: string;
  verdict: Verdict;
}

export function loadCaseFile(path: string): CaseFile {
  const doc = parse(readFileSync(path, 'utf8')) as Record<string, unknown> | null;
  if (!doc || !Array.isArray(doc.cases)) throw new Error(`${path}: no 'cases' list`);
  const fixtures = (doc.fixtures ?? {}) as { pods?: CaseFile['fixtures']['pods'] };
  return {
    path,
    meta: (doc.meta ?? {}) as Record<string, unknown>,
    fixtures: { pods: fixtures.pods ?? {} },
    cases: doc.cases as ConformanceCase[],
  };
}

/** Never throws: a case that cannot be read or that crashes the code counts as failed with the reason. */
export async function evaluateCase(c: ConformanceCase, file: CaseFile): Promise<CaseResult> {
  const id = typeof c?.id === 'string' ? c.id : '<no id>';
  const area = typeof c?.area === 'string' ? c.area : '<no area>';
  const interpret = Object.hasOwn(interpreters, area) ? interpreters[area] : undefined;
  if (!interpret) return { id, area, verdict: { pass: false, reason: `no interpreter for area '${area}'` } };
  if (typeof c.given !== 'object' || c.given === null || typeof c.expect !== 'object' || c.expect === null) {
    return { id, area, verdict: { pass: false, reason: 'cannot interpret: case lacks given/expect' } };
  }
  try {
    return { id, area, verdict: await interpret(c, file) };
  } catch (err) {
    const reason =
      err instanceof Uninterpretable
        ? `cannot interpret: ${err.message}`
        : `error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
    return { id, area, verdict: { pass: false, reason } };
  }
}

export async function runCaseFile(path: string): Promise<CaseResult[]> {
  const file = loadCaseFile(path);
  const results: CaseResult[] = [];
  for (const c of file.cases) results.push(await evaluateCase(c, file));
  return results;
}
